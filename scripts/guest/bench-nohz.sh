#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside a stable-regime guest booted with nohz_full=1-3 as
# /payload/run.sh for scripts/bench.sh: the horizon's cost to the
# machine (interrupts, grace periods, the page horizon's age) under each
# grace-period policy, with CPUs 1-3 tickless. Prints tables; asserts
# nothing.
cd /payload || exit 1
# mode=0444: the "who arms what" rows open the device as nobody too (the
# module's default, 0600, is root's alone).
insmod perfclock.ko mode=0444 || exit 1
echo "# cmdline: $(cat /proc/cmdline)"
./perfclock_horizon_bench "$PERFCLOCK_REGIME, nohz_full=1-3" 5
