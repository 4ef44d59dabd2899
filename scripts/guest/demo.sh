#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the test guest as /payload/run.sh for scripts/demo.sh: loads
# the module and runs one scenario, "NAME EXPEDITED DEMO_FLUSH_ARGS..." in
# /payload/scenario. The JSON goes out on the serial port, each line
# prefixed "DEMO-JSON ", before demo_flush closes its events: closing the
# last perf event of a tracepoint patches kernel text (static calls), and
# under QEMU's TCG that has, rarely, livelocked a guest (soft lockups in
# text_poke_bp); the figures are kept even then, and the boot is reported.
cd /payload || exit 1
# shellcheck disable=SC3040 # busybox sh has pipefail
set -o pipefail
cs=/sys/devices/system/clocksource/clocksource0/current_clocksource
regime=$PERFCLOCK_REGIME	# settled by the guest's /init
insmod perfclock.ko || exit 1
read -r name exp args < scenario
echo "$exp" > /sys/module/perfclock/parameters/horizon_expedited
echo "== guest: $regime regime ($(cat $cs)), $(nproc) CPUs, $(uname -r); horizon_expedited=$exp"
echo "== scenario $name ($regime): demo_flush $args"
rc=0
# shellcheck disable=SC2086
./demo_flush $args --status=lines --label "$regime $name" --json - < /dev/null |
	sed 's/^/DEMO-JSON /' || rc=1
echo 0 > /sys/module/perfclock/parameters/horizon_expedited
rmmod perfclock || rc=1
exit $rc
