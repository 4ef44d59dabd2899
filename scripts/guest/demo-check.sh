#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs inside the test guest as /payload/run.sh for scripts/check-demo.sh
# (its "guest" section), which reads these lines back and checks them:
#   NODEV rc=N MESSAGE   demo_flush --clock perfclock before insmod
#   DEMO rc=N            a 2 s demo_flush --clock perfclock --load 8
#   JSON-BEGIN ... JSON-END   its --json summary
#   PRINT lines=N unordered=N switch=N   its --print output, summarized
#                        by print.awk (check-demo.sh's PRINT_AWK)
cd /payload || exit 1
cs=/sys/devices/system/clocksource/clocksource0/current_clocksource
echo "# guest: $(cat $cs), $(nproc) CPUs, $(uname -r)"
./demo_flush --clock perfclock --duration 1 > /tmp/nodev.out 2> /tmp/nodev.err
echo "NODEV rc=$? $(cat /tmp/nodev.err)"
insmod perfclock.ko || { echo "INSMOD failed"; exit 1; }
./demo_flush --clock perfclock --duration 2 --load 8 --no-status --print \
	--json /tmp/demo.json > /tmp/demo.print 2> /tmp/demo.err
echo "DEMO rc=$?"
sed 's/^/# /' /tmp/demo.err | grep -E 'events|ours|late' | head -5
echo "JSON-BEGIN"; cat /tmp/demo.json; echo "JSON-END"
echo "PRINT $(awk -f print.awk /tmp/demo.print)"
rmmod perfclock
