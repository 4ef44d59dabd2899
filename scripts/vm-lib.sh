# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# Bash helpers for the host scripts that boot the test guest (check.sh,
# check-demo.sh, check-dkms.sh, check-debug.sh, check-perf.sh, demo.sh,
# bench.sh); source it. Every guest boot goes through boot(), the one
# place that knows the timeouts and when a boot is retried; its kernel
# command line is regime_append()'s, the one place that names a clock
# regime's kernel arguments.
#
#   guest_kernel            KDIR -> KVER -> VMLINUZ, installing the image
#   use_kernel SPEC         the same for a kernel named by series (6.12),
#                           release or build tree, installing it
#   kernel_label KVER       6.1, 6.12, 6.12-rt-amd64: a TAP prefix's name
#   regime_append REGIME    the kernel arguments of clock regime REGIME
#   boot REGIME OUT [...]   one guest run of scripts/vm.sh in REGIME
#
# Environment: GUEST_TIMEOUT (seconds per boot on top of what the payload
# says it runs for, default 900), BOOT_TIMEOUT (seconds for a guest to
# reach its payload, default 300), FROZEN_SECONDS (silence that makes a
# plain test run frozen, default 300), GUEST_TRIES (boots per guest when
# each failure is a known TCG one, default 3).

vm_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The Debian kernel matching the headers the module is built against.
# Sets KDIR (default: the Makefile's pick; exported), KVER (its
# UTS_RELEASE: Debian's kernel.release holds the upstream version, the
# module's vermagic this) and VMLINUZ (/boot/vmlinuz-KVER), installing
# linux-image-KVER if it is missing (scripts/deps.sh). With no KDIR and
# KVER a series, as `make demo KVER=6.12` passes it before its headers
# are installed, that series' newest kernel, installed (scripts/deps.sh
# kernel:SERIES:cloud-amd64). Fails, saying why on stderr, when there is
# no such kernel.
guest_kernel() {
	local rel
	if [ -z "${KDIR:-}" ] || [ ! -d "$KDIR" ]; then
		case ${KVER:-} in
		[0-9]*.[0-9]*.*|'') KDIR=$(make -s --no-print-directory -C "$vm_lib_dir/.." print-kdir) ;;
		[0-9]*.[0-9]*)
			rel=$("$vm_lib_dir/deps.sh" --release "$KVER:cloud-amd64") &&
				"$vm_lib_dir/deps.sh" "kernel:$KVER:cloud-amd64" >&2 || return 1
			KDIR=/lib/modules/$rel/build ;;
		esac
	fi
	export KDIR
	KVER=$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' \
		"$KDIR/include/generated/utsrelease.h" 2>/dev/null)
	VMLINUZ=/boot/vmlinuz-$KVER
	if [ -z "$KVER" ]; then
		echo "perfclock: no UTS_RELEASE in $KDIR/include/generated/utsrelease.h" >&2
		return 1
	fi
	[ -e "$VMLINUZ" ] || "$vm_lib_dir/deps.sh" "image:$KVER" >&2
}

# use_kernel SPEC: the kernel a check runs on, named the way the Makefile's
# KVER= and KDIR= name it (CHECK_KERNELS): a series (6.1, 6.12: the newest
# of that series apt offers, cloud flavour, image and headers installed
# by scripts/deps.sh kernel:SERIES:cloud-amd64), a release
# (6.12.118+deb12-rt-amd64: its headers must be installed), or a kernel
# build tree. Sets KDIR, KVER, VMLINUZ as guest_kernel does, and KLABEL
# (kernel_label). Fails, saying why on stderr.
use_kernel() {
	local spec=$1 rel
	case $spec in
	/*) KDIR=$spec ;;
	[0-9]*.[0-9]*.*) KDIR=/lib/modules/$spec/build ;;
	[0-9]*.[0-9]*)
		rel=$("$vm_lib_dir/deps.sh" --release "$spec:cloud-amd64") &&
			"$vm_lib_dir/deps.sh" "kernel:$spec:cloud-amd64" >&2 || return 1
		KDIR=/lib/modules/$rel/build ;;
	*) echo "perfclock: '$spec' names no kernel (a series such as 6.12, a release, or a directory)" >&2
	   return 1 ;;
	esac
	if [ ! -e "$KDIR/Makefile" ]; then
		echo "perfclock: no kernel build tree at $KDIR (install its linux-headers package)" >&2
		return 1
	fi
	guest_kernel || return 1
	# shellcheck disable=SC2034 # for the caller
	KLABEL=$(kernel_label "$KVER")
}

# kernel_label KVER: the series, and the flavour unless it is the cloud
# one make check boots by default: 6.1.0-57-cloud-amd64 -> 6.1,
# 6.12.118+deb12-rt-amd64 -> 6.12-rt-amd64; another kernel's release as
# it is.
kernel_label() {
	local series flavour
	series=$(sed -n 's/^\([0-9]*\.[0-9]*\)[.-].*/\1/p' <<<"$1")
	flavour=$(sed -n 's/^[0-9.]*\(-[0-9]*\|+deb[0-9]*\)-\([a-z].*\)$/\2/p' <<<"$1")
	if [ -z "$series" ] || [ -z "$flavour" ]; then
		echo "$1"
	elif [ "$flavour" = cloud-amd64 ]; then
		echo "$series"
	else
		echo "$series-$flavour"
	fi
}

# KERNEL_PROBLEMS: an extended regular expression for the console lines
# that say the guest's kernel reported a problem (vm.sh fails such a guest
# with status 3).
KERNEL_PROBLEMS='WARNING:|BUG:|Oops|general protection fault|Kernel panic|Call Trace:|UBSAN:|KASAN:|possible circular locking|INFO: task .* blocked|kmemleak:.*unreferenced|RCU stall|watchdog: BUG'

# console_text CONSOLE_LOG: the log's printable text (a serial console
# carries \r and stray control bytes).
console_text() {
	tr -cd '\11\12\40-\176' < "$1"
}

# report_frames REPORT: a kernel report's stack frames and RIP lines
# ("func+0x1/0x2 [module]"), the lines that say where a CPU was: what the
# recognisers below search for a perfclock frame.
report_frames() {
	grep -E '[A-Za-z0-9_.]+\+0x[0-9a-f]+/0x[0-9a-f]+' <<< "$1"
}

# tcg_patching_lockup CONSOLE_LOG: true if the guest panicked on a soft
# lockup whose report (from the watchdog line to the panic) shows kernel
# text patching and no perfclock frame. Only stack frames and RIP lines
# count ("func+0x1/0x2 [module]"): the report's "Modules linked in: perfclock"
# line and a test program's name in "Comm:" or "[perfclock_...:PID]" say
# nothing about where the CPU is stuck (scripts/test-vm-lib.sh).
#
# Text patching shows in one of two ways:
# - a frame of the patcher (text_poke_bp_batch() waiting for the other
#   CPUs, a static call or jump label update, stop_machine);
# - the patching done, a CPU stuck on the patched site itself: its kernel
#   RIP's "Code:" marks a forward jmp (<eb> with a displacement below
#   0x80, or <e9> with a positive rel32), the encoding
#   arch/x86/kernel/jump_label.c gives an enabled static branch. A
#   forward jump cannot hold a CPU for the watchdog's 20 s on hardware;
#   under TCG a vCPU that keeps running a stale translation of the old
#   bytes can; that is our reading, not proven. Seen in CI's stable demo
#   guest: both vCPUs at syscall_trace_enter+0xe9 for 26 s, by its offset
#   most likely trace_sys_enter()'s static branch
#   (scripts/testdata/tcg-stale-jump-console.log).
tcg_patching_lockup() {
	local report frames code
	report=$(console_text "$1" |
		sed -n '/watchdog: BUG: soft lockup/,/Kernel panic - not syncing: softlockup/p')
	frames=$(report_frames "$report")
	[ -n "$report" ] &&
		grep -q 'Kernel panic - not syncing: softlockup' <<< "$report" &&
		! grep -q perfclock <<< "$frames" || return 1
	grep -Eq 'text_poke|static_call|jump_label|stop_machine|multi_cpu_stop' <<< "$frames" &&
		return 0
	code=$(grep -A 1 -m 1 'RIP: 0010:' <<< "$report" | sed -n 's/^.*Code: .*\(<[0-9a-f][0-9a-f]>.*\)$/\1/p')
	grep -Eq '^<eb> [0-7][0-9a-f]( |$)|^<e9> [0-9a-f]{2} [0-9a-f]{2} [0-9a-f]{2} [0-7][0-9a-f]( |$)' <<< "$code"
}

# tcg_stale_int3 CONSOLE_LOG: true if the guest panicked on "Oops: int3"
# and the byte before the trapping RIP, in the report's "Code:" dump (read
# from memory when the report is printed), is not an int3 (cc): the CPU
# trapped on an int3 that is no longer in the kernel's text, and no
# perfclock frame is in the report. On hardware that cannot happen:
# text_poke_bp_batch() (arch/x86/kernel/alternative.c) takes the int3s
# out only after every CPU has synced (text_poke_sync()), and a CPU that
# trapped on one before that is handled by poke_int3_handler(). Under TCG
# it does: a vCPU runs a translation made while another vCPU's write of the
# int3 was in place (docs/lessons.md; scripts/testdata/tcg-stale-int3-console.log:
# make check's 6.12 selftest guest, sched_clock_cpu+0x9 with "eb <1b>" in
# memory, right after the TSC was marked unstable). An int3 still in
# memory, or one in perfclock, is the kernel's or ours: not retried.
tcg_stale_int3() {
	local text report frames before
	text=$(console_text "$1")
	report=$(sed -n '/Oops: int3/,/end trace/p' <<< "$text")
	[ -n "$report" ] && grep -q 'Kernel panic - not syncing' <<< "$text" || return 1
	frames=$(report_frames "$report")
	! grep -q perfclock <<< "$frames" || return 1
	before=$(grep -m 1 'Code: ' <<< "$report" |
		sed -n 's/^.*Code: .*\([0-9a-f][0-9a-f]\) <[0-9a-f][0-9a-f]>.*$/\1/p')
	[ -n "$before" ] && [ "$before" != cc ]
}

# tcg_bogus_debug_trap CONSOLE_LOG: true if the console's one kernel
# problem is a single-step #DB taken in kernel mode (the WARN_ON_ONCE(dr6 &
# DR_STEP) of arch/x86/kernel/traps.c:exc_debug_kernel()) whose register
# dump holds RFLAGS no x86 CPU can hold, with no perfclock frame. Bit 1 of
# RFLAGS is always 1 and bits 3, 5, 15 and 22-63 are always 0 (Intel SDM
# vol. 1, 3.4.3): a dump that breaks that shows the emulator's own state,
# not a CPU's. The kernel sets no TF in kernel mode (its comment there
# names QEMU's gdb stub as the known way to get this trap; our guests run
# none). Seen once, in CI's DKMS 6.12 unstable guest, kthreadd in
# copy_process() right after the module's load armed its kprobes
# (EFLAGS 4208a002; scripts/testdata/tcg-bogus-debug-trap-console.log).
# The guest lives on, so vm.sh fails it with status 3 (a kernel problem).
tcg_bogus_debug_trap() {
	local text report rest frames flags
	text=$(console_text "$1")
	report=$(sed -n '/WARNING: CPU: .* exc_debug_kernel+/,/end trace/p' <<< "$text")
	[ -n "$report" ] || return 1
	# Every other problem line: none may be left.
	rest=$(sed '/WARNING: CPU: .* exc_debug_kernel+/,/end trace/d' <<< "$text")
	! grep -aEq "$KERNEL_PROBLEMS" <<< "$rest" || return 1
	frames=$(report_frames "$report")
	! grep -q perfclock <<< "$frames" || return 1
	while read -r flags; do
		(( (0x$flags & ~0x3f7fd7) != 0 || (0x$flags & 2) == 0 )) && return 0
	done < <(sed -n 's/^.* EFLAGS: \([0-9a-f]\{1,16\}\)$/\1/p' <<< "$report")
	return 1
}

# kernel_problem_before_payload CONSOLE_LOG: true if the guest's kernel
# reported a problem (KERNEL_PROBLEMS) before the first console line that
# names perfclock: /init's "perfclock-init: running the payload", or the
# module's first message. Before it the module was not loaded and none of
# our code had run, so the report is the guest kernel's or the emulator's,
# and whatever the payload found afterwards ran on a kernel that had
# already tainted itself and, for a KASAN or lockdep report, switched
# lockdep off. Seen once, in CI's check-debug reset guest: a report in
# do_raw_spin_lock() under handle_edge_irq() 0.8 s into boot, the 6.1
# debug kernel's (scripts/testdata/kernel-problem-at-boot-console.log, the
# report's end as CI printed it). A report after that line is never
# taken for the kernel's: boot() fails it.
kernel_problem_before_payload() {
	console_text "$1" | sed '/perfclock/,$d' | grep -aEq "$KERNEL_PROBLEMS"
}

# serial_logs_quiet OUT SECONDS [NOW]: true if neither of the guest's
# serial logs in OUT (console.log: its kernel; payload.log: its payload)
# was written in the SECONDS before NOW (default: now). What "silent"
# means for vm.sh's --silence-timeout and for guest_froze() alike.
serial_logs_quiet() {
	local out=$1 quiet=$2 now=${3:-$(date +%s)} f
	for f in "$out/console.log" "$out/payload.log"; do
		[ -f "$f" ] && [ $(( now - $(stat -c %Y "$f") )) -ge "$quiet" ] || return 1
	done
}

# guest_froze OUT [NOW]: true if the guest in OUT reached its payload
# and then went silent as a whole: neither its payload (payload.log) nor
# its kernel (console.log) wrote anything for the last FROZEN_SECONDS
# (default 300) before NOW (default: now, just after vm.sh stopped it),
# and the kernel reported nothing (no BUG, WARNING, Oops, call trace,
# RCU stall, hung task or panic). A kernel that is alive but stuck says
# so within that time: RCU stall reports come after 21 s and hung-task
# reports after 120 s on Debian's kernels. A guest silent for 300 s was
# not running at all: seen once in make check's unstable guest, the
# machine idle, right after perfclock_drain closed its perf events (the
# jump label perf_sched_events is switched off then, the text patching
# of the lockups above, but with every vCPU stuck and no watchdog left to
# report it).
guest_froze() {
	local out=$1 now=${2:-$(date +%s)}
	[ -f "$out/console.log" ] && [ -f "$out/payload.log" ] || return 1
	grep -aqF 'perfclock-init: running the payload' "$out/console.log" || return 1
	console_text "$out/console.log" |
		grep -Eq 'BUG:|WARNING:|Oops|Call Trace|rcu: INFO|detected stall|blocked for more than|Kernel panic' &&
		return 1
	serial_logs_quiet "$out" "${FROZEN_SECONDS:-300}" "$now"
}

# The perf events the guests' tests open and close, held open from boot
# to power-off by vm.sh --hold-events (scripts/guest/hold-patch-sites.c):
# each first open or last close of one patches kernel text, and QEMU
# 7.2's TCG can leave a vCPU running the text from before a patch, which
# froze or locked up a guest in three of four make check runs on
# 3 December 2026 (README, "Things learned"). A caller's own
# --hold-events, later on boot()'s command line, wins: scripts/bench.sh
# passes none, so that its syscall costs are measured without the
# syscall tracepoints' slow path.
GUEST_HOLD_EVENTS="sched:sched_switch sched:sched_wakeup sched:sched_wakeup_new"
GUEST_HOLD_EVENTS+=" sched:sched_process_fork sched:sched_process_exec sched:sched_process_exit"
GUEST_HOLD_EVENTS+=" raw_syscalls:sys_enter raw_syscalls:sys_exit"
GUEST_HOLD_EVENTS+=" syscalls:sys_enter_write syscalls:sys_exit_write rcu:rcu_grace_period"
GUEST_HOLD_EVENTS+=" context-switches cpu-migrations"

# regime_append REGIME: the kernel arguments that put a guest in clock
# regime REGIME, on stdout; status 64 for another REGIME. The one place
# that names them: boot() below and scripts/check.sh's own vm.sh runs
# take them from here; scripts/vm.sh's /init and
# selftests/kmod/perfclock_mark_tsc_unstable.c point here.
#   stable    tsc=reliable: the TSC trusted (its clocksource watchdog
#             off), so that sched_clock is stable in the TCG guests:
#             without it 6.1 under TCG marks the TSC unstable at once.
#   unstable  tsc=unstable: the TSC marked unstable from boot, so that
#             sched_clock is never stable: without it 6.1 under TCG found
#             the TSCs unsynchronized by itself, but 6.12 kept them
#             stable (docs/kernel-compat.md).
regime_append() {
	case $1 in
	stable)   echo tsc=reliable ;;
	unstable) echo tsc=unstable ;;
	*)        return 64 ;;
	esac
}

# boot REGIME OUT [--runs-for SECONDS] [VM.SH OPTION...]
#
# Boots scripts/vm.sh once with the kernel command line of clock regime
# REGIME (stable: sched_clock stable, the TSC trusted; unstable: the TSC
# marked unstable from boot, so that sched_clock is never stable; the
# arguments are regime_append()'s), its logs in OUT; vm.sh's /init
# checks that the kernel is in that regime. --runs-for: how much longer
# than a test run the payload itself runs (a fuzzer, a demo); it is
# added to the timeout.
# stdout is the payload's output (TAP), stderr vm.sh's diagnostics; the
# status is vm.sh's (0 clean, 1 tests failed, 2 did not finish, 3 kernel
# problem). All three are the last boot's: a discarded boot's results and
# vm.sh notes are only TAP comments.
#
# A guest that never reached its payload (no "perfclock-init: running
# the payload" on its console: the boot itself hung, before the module
# or any test ran) says nothing about perfclock: it is booted once more,
# saying so in a TAP comment. A guest that reached the payload is booted
# again only after one failure that QEMU's TCG causes on a loaded host:
# a soft lockup (made a panic by vm.sh's softlockup_panic=1) whose stack
# is kernel text patching (text_poke_bp, static calls, jump labels,
# stop_machine, or a CPU stuck on a just-patched jump) with no perfclock
# frame in the report. Seen in CI: in the unstable demo guest as a
# tracepoint's static call was switched, and in the stable one on a
# static branch just switched; 480 tracepoint open/close cycles with the
# device open did not show it here. Or one that froze with nothing
# reported (guest_froze above). Or one whose kernel went on after a
# single-step #DB with impossible RFLAGS (tcg_bogus_debug_trap above),
# the only problem on its console. Or one whose kernel reported a
# problem before perfclock was loaded (kernel_problem_before_payload
# above): that run tested a kernel already broken, by itself. The
# discarded run's results are not
# counted; a TAP comment says what was seen. Anything else fails at once.
# A guest gets GUEST_TRIES boots in all (default 3): one make check run
# met a freeze and then a text-patching lockup in the same demo guest,
# two known TCG failures in a row, and failed with two.
boot() {
	local regime=$1 out=$2 runs_for=0 append try tries st silence
	shift 2
	if [ "${1:-}" = --runs-for ]; then
		runs_for=$2
		shift 2
	fi
	if ! append=$(regime_append "$regime"); then
		echo "boot: unknown clock regime '$regime' (stable or unstable)" >&2
		return 64
	fi
	# A plain test run writes a TAP line every few seconds: one silent
	# for FROZEN_SECONDS froze (guest_froze()), and is stopped then, not
	# 15 minutes later at the timeout. A payload that runs for a set time
	# (the fuzzer, the bench, make demo, perf) may be quiet that long:
	# not for it. check-demo.sh's short demo runs are plain test runs.
	silence=0
	[ "$runs_for" -gt 0 ] || silence=${FROZEN_SECONDS:-300}
	mkdir -p "$(dirname "$out")"
	tries=${GUEST_TRIES:-3}
	for try in $(seq "$tries"); do
		st=0
		"$vm_lib_dir/vm.sh" --regime "$regime" ${append:+--append "$append"} --out "$out" \
			--hold-events "$GUEST_HOLD_EVENTS" --timeout $(( ${GUEST_TIMEOUT:-900} + runs_for )) \
			--boot-timeout "${BOOT_TIMEOUT:-300}" \
			--silence-timeout "$silence" "$@" > "$out.tap" 2> "$out.err" || st=$?
		if [ ! -f "$out/console.log" ] || [ "$try" -eq "$tries" ]; then
			break
		fi
		if [ "$st" -ne 0 ] && kernel_problem_before_payload "$out/console.log"; then
			echo "# $regime guest ($out) had a kernel report before perfclock was loaded (try $try of $tries): its $(grep -Ec '^(not )?ok' "$out.tap") results are discarded; the report's first lines:"
			console_text "$out/console.log" | sed '/perfclock/,$d' |
				grep -a -m 4 -E "$KERNEL_PROBLEMS|RIP: |Comm: " | sed 's/^/#   /'
		elif [ "$st" -eq 3 ] && tcg_bogus_debug_trap "$out/console.log"; then
			echo "# $regime guest ($out) took a kernel-mode single-step #DB with RFLAGS no CPU can hold, no perfclock frame (TCG; try $try of $tries): its $(grep -Ec '^(not )?ok' "$out.tap") results are discarded; the report:"
			console_text "$out/console.log" | grep -a -m 3 -E 'WARNING: CPU: .* exc_debug_kernel|EFLAGS: |Comm: ' | sed 's/^/#   /'
		elif [ "$st" -ne 2 ]; then
			break
		elif ! grep -aqF 'perfclock-init: running the payload' "$out/console.log"; then
			echo "# $regime guest ($out) never reached the payload (try $try of $tries); console tail:"
		elif tcg_patching_lockup "$out/console.log"; then
			echo "# $regime guest ($out) panicked on a soft lockup in kernel text patching, no perfclock frame (TCG; try $try of $tries): its $(grep -Ec '^(not )?ok' "$out.tap") results are discarded; the lockup:"
			console_text "$out/console.log" |
				grep -a -A 12 'watchdog: BUG: soft lockup' | head -n 13 | sed 's/^/#   /'
		elif tcg_stale_int3 "$out/console.log"; then
			echo "# $regime guest ($out) died on an int3 no longer in its text (TCG stale translation; try $try of $tries): its $(grep -Ec '^(not )?ok' "$out.tap") results are discarded; the report:"
			console_text "$out/console.log" | grep -a -m 3 -E 'Oops: int3|RIP: 0010:|Code: ' | sed 's/^/#   /'
		elif guest_froze "$out"; then
			echo "# $regime guest ($out) froze: nothing from its payload or its kernel for the last ${FROZEN_SECONDS:-300} s and no kernel report (TCG; try $try of $tries): its $(grep -Ec '^(not )?ok' "$out.tap") results are discarded; the payload's last lines:"
			tail -n 3 "$out/payload.log" | sed 's/^/#   /'
		else
			break
		fi
		console_text "$out/console.log" | grep -v '^$' | tail -n 5 | sed 's/^/#   /'
		# Its vm.sh notes go with its results: a caller reads stderr
		# for the run it is given ("payload run.sh exited with rc=1"
		# of a discarded run failed CI's check-debug, 7 December 2026).
		echo "# what vm.sh said of the discarded run:"
		grep -v '^vm.sh: console: ' "$out.err" | sed 's/^/#   /'
		echo "# booting it once more"
	done
	cat "$out.tap"
	cat "$out.err" >&2
	rm -f "$out.tap" "$out.err"
	return "$st"
}
