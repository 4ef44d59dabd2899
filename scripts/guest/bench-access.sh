#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the bench guest as /payload/run.sh (scripts/bench-access.sh):
# the "who arms what" table of perfclock_horizon_bench (--access) for each
# module in the payload, one after the other in this boot: perfclock-*.ko
# in name order (e.g. perfclock-0-before.ko, perfclock-1-after.ko), so that
# rows of two modules compare on one kernel, one machine state.
cd /payload || exit 1
regime=$PERFCLOCK_REGIME
echo "# regime: $regime, $(nproc) CPUs, $(uname -r)"
rc=0
for ko in perfclock-*.ko; do
	echo "## module: $ko"
	# mode=0444: the "who arms what" rows open the device as nobody too.
	insmod "./$ko" mode=0444 || { rc=1; continue; }
	./perfclock_horizon_bench "$regime" "$(cat seconds 2>/dev/null || echo 5)" --access || rc=1
	rmmod perfclock || rc=1
done
exit $rc
