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
#   SCENARIO NAME rc=N   a 3-10 s run of each of the scenarios where the older
#                        rules can fail (scripts/demo.sh has the long ones;
#                        these are scaled to this guest's 2 vCPUs), then
#   JSON-BEGIN NAME ... JSON-END NAME   its --json summary
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
# irq-mixed: irqs-on side-band records and hard-irq cpu-clock samples in
# one ring per CPU; quiet: CPU 1 hears only a ticker once a second;
# per-thread: a ring per migrating load thread.
for s in irq-mixed quiet per-thread; do
	case $s in
	# 2.5 kHz and 10 s: 3 s at 1 kHz gave 2-3 records out of order, 5 s
	# at 2.5 kHz 4 (P(none) ~ 2 % at that mean); 10 s makes it ~8.
	irq-mixed)  args="--duration 10 --load 8 --load-side-band comm --side-band -e sched:sched_switch -e sched:sched_wakeup --sample cpu-clock --sample-hz 2500 --sample-shared" ;;
	quiet)      args="--load 8 --load-cpus 1 --tick-ms 1000 -e syscalls:sys_enter_write -e syscalls:sys_enter_read" ;;
	per-thread) args="--load 8 --per-thread --migrate-every 16 -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit -e sched:sched_switch -e sched:sched_wakeup" ;;
	esac
	# shellcheck disable=SC2086
	./demo_flush --clock perfclock --duration 3 --reverse $args --no-status \
		--json /tmp/$s.json > /tmp/$s.out 2>&1
	echo "SCENARIO $s rc=$?"
	grep -E 'rings \(|^ours|^ahern|^perf-old|^schuchart|^kvm-live' /tmp/$s.out | sed 's/^/# /'
	echo "JSON-BEGIN $s"; cat /tmp/$s.json; echo "JSON-END $s"
done
rmmod perfclock
