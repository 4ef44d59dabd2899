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
insmod perfclock.ko || exit 1
# The bench-only module: the floor of an ioctl that returns local_clock()
# (perfclock_bench's floor-* paths); out again before the horizon benches.
insmod perfclock_floor.ko || echo "# perfclock_floor.ko did not load: no floor-* rows"
# Three runs in this boot: a ratio is compared within a run.
./perfclock_bench $regime 3
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
