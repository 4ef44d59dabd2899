#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/bench-device.sh — the library's figures on a machine with many
# real CPUs and no compiler (no module either: the library's own
# horizons, --clock monotonic). Everything it runs is static and built
# beforehand on a build machine:
#
#   make -C user build/demo_flush
#   make -C bench "$PWD/build/bench/bench_reader"
#   make -C selftests "$PWD/build/selftests/perfclock_percpu_late_test"
#   cc -O2 -D_GNU_SOURCE -Iuser -static -o build/device/bench_mb_cost \
#       user/tests/bench_mb_cost.c user/build/libperfclock.a -lpthread
#
# then, as root on the machine (tracefs mounted or mountable):
#
#   scripts/bench-device.sh OUTDIR
#
# It writes OUTDIR/summary.txt (and each run's files):
#   1. scripts/percpu-bench.sh --no-guest: demo_flush's scenarios scaled
#      to the CPUs (ours on H_c against the best rule that was never
#      late, with late counts), what visiting the CPUs costs, and the
#      threaded reader's sustained events/s per number of reader threads;
#   2. selftests' perfclock_percpu_late_test with CLOCK_MONOTONIC_RAW: a
#      pinned H_c read must never be late (asserted by the test), a read
#      claimed for the neighbouring CPU must be (asserted);
#   3. user/tests/bench_mb_cost.c: what the membarrier helper costs the
#      machine with no clock, a clock asked every ms, open and idle.
# A benchmark run: only 2's verdicts are assertions; the rest are tables
# whose rows compare within one run.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${1:?usage: scripts/bench-device.sh OUTDIR}
mkdir -p "$out"
exec > >(tee "$out/summary.txt") 2>&1

echo "# bench-device: $(uname -r), $(nproc) CPUs, $(sed -n 's/^model name\t: //p' /proc/cpuinfo | head -1)"
echo "# clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)," \
	"load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
ulimit -l unlimited 2>/dev/null
echo 1 > /proc/sys/kernel/perf_event_paranoid 2>/dev/null

n=$(nproc) threads=1
for t in 2 4 8 16 32 64; do [ "$t" -le "$n" ] && threads="$threads,$t"; done

echo
echo "## 1. per-CPU horizon and threaded reader (scripts/percpu-bench.sh --no-guest)"
scripts/percpu-bench.sh --no-guest --host-seconds "${HOST_SECONDS:-8}" \
	--reader-threads "$threads" --out "$out/percpu"

echo
echo "## 2. perfclock_percpu_late_test, CLOCK_MONOTONIC_RAW, $n CPUs"
PERFCLOCK_PERCPU_CLOCK=raw PERFCLOCK_EXPECT_BARE_LATE=1 PERFCLOCK_PERCPU_SECONDS=5 \
	build/selftests/perfclock_percpu_late_test 2>&1 | tail -40

echo
echo "## 3. the membarrier helper's cost (bench_mb_cost, 5 s per state)"
build/device/bench_mb_cost 5
