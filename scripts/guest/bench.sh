#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the test guest as /payload/run.sh for scripts/bench.sh: the
# clock paths' and the horizon's benchmarks, then the long liburcu stress
# runs, in this boot's clock regime. Prints tables; asserts nothing.
cd /payload || exit 1
regime=$PERFCLOCK_REGIME	# settled by the guest's /init
# The library's membarrier horizon first, while no module is loaded: the
# same figures as the module's horizon below, in the same boot.
./bench_membarrier $regime 5
# mode=0444: the "who arms what" rows open the device as nobody too (the
# module's default, 0600, is root's alone).
insmod perfclock.ko mode=0444 || exit 1
# The bench-only module: the floor of an ioctl that returns local_clock()
# (perfclock_bench's floor-* paths); out again before the horizon benches.
insmod perfclock_floor.ko || echo "# perfclock_floor.ko did not load: no floor-* rows"
# Three runs in this boot, each its own process (its own address space
# layout: see perfclock_bench.c); a ratio is compared within a run, then
# the median of the three runs' values of each ratio.
for run in 1 2 3; do
	./perfclock_bench $regime 1 $run
done | tee /tmp/perfclock_bench.out
awk -v regime="$regime" '
/ ratio / {
	for (i = 1; i + 2 <= NF; i++)
		if ($(i + 1) == "=" && $(i + 2) ~ /^[0-9.]+,?$/) {
			v = $(i + 2); sub(/,$/, "", v)
			if (!(($i) in n)) order[++k] = $i
			val[$i, ++n[$i]] = v
		}
}
END {
	print "# regime " regime ": each ratio, its values in the runs and their median"
	for (j = 1; j <= k; j++) {
		r = order[j]; m = n[r]; line = ""
		for (a = 1; a <= m; a++) { s[a] = val[r, a] + 0; line = line " " val[r, a] }
		for (a = 2; a <= m; a++)
			for (b = a; b > 1 && s[b - 1] > s[b]; b--) { t = s[b]; s[b] = s[b - 1]; s[b - 1] = t }
		printf "%-10s median %-28s %.2f  (runs:%s)\n", regime, r, s[int((m + 1) / 2)], line
	}
}' /tmp/perfclock_bench.out
rmmod perfclock_floor 2>/dev/null
# The horizon: barrier cost, page age, interrupts it costs; then again
# with the page kept fresh by expedited grace periods.
./perfclock_horizon_bench $regime 5
echo 1 > /sys/module/perfclock/parameters/horizon_expedited
./perfclock_horizon_bench "$regime, horizon_expedited=1" 5
echo 0 > /sys/module/perfclock/parameters/horizon_expedited
# The long liburcu runs: the clock torture, then parallel drain vs rounds.
./perfclock_stress --seconds ${STRESS_SECONDS:-120}
./perfclock_drain --seconds ${DRAIN_SECONDS:-30}
