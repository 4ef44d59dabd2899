# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=sh disable=SC3043 # local: dash, bash and busybox sh all have it
#
# The TAP helpers of every check; source it. POSIX sh, so that the same
# file serves the host's bash scripts (scripts/check*.sh, lint.sh), the
# library's user/tests/check.sh (sh) and the guest payloads (busybox sh:
# scripts/vm.sh installs it as /lib/perfclock/tap-lib.sh, and
# guest-lib.sh sources it there).
#
# Every result is one numbered TAP line; a script whose output another
# collects (check-demo.sh, lint.sh, the guests, make -C user check) is
# renumbered there by collect(). The top-level run ends with finish(),
# which prints the line CI reads: "N passed, N failed, N skipped (T s)".
#
#   result STATUS DESC [OUTPUT]  ok when STATUS is 0 (a skip when DESC
#                                says "# SKIP"); OUTPUT, if the result
#                                failed, is printed as "# " comments;
#                                returns 1 for a failed result
#   skip_result DESC REASON      ok - DESC # SKIP REASON
#   check DESC COMMAND...        one result for COMMAND's exit status
#                                (returned); its output, only if it
#                                failed, as comments
#   collect PREFIX FILE          renumber FILE's results into this plan
#   adopt FILE                   renumber FILE's numbered results (a
#                                background run's) into this plan
#   relay NAME STATUS FILE       collect, and a failure "NAME exited with
#                                status N" if STATUS says failed but no
#                                result in FILE did
#   guest_results ...            the two results of a scripts/vm.sh boot
#   finish                       the plan and the closing line; exits
#
# TAP_PREFIX, if set, prefixes the descriptions result() prints. rc is
# set to 1 by every failed result, for scripts that also fold other
# failures (a test program's exit status) into "exit $rc".

n=0 passed=0 failed=0 skipped=0
rc=${rc:-0}
TAP_START=$(date +%s)

result() {	# result STATUS DESCRIPTION [OUTPUT]
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		case "$2" in
		*"# SKIP"*) skipped=$((skipped + 1)) ;;
		*) passed=$((passed + 1)) ;;
		esac
		echo "ok $n - ${TAP_PREFIX:-}$2"
	else
		[ -z "${3:-}" ] || printf '%s\n' "$3" | sed 's/^/# /'
		failed=$((failed + 1))
		rc=1
		echo "not ok $n - ${TAP_PREFIX:-}$2"
		return 1
	fi
}

skip_result() {	# skip_result DESCRIPTION REASON
	result 0 "$1 # SKIP $2"
}

check() {	# check DESCRIPTION COMMAND...
	_check_desc=$1
	shift
	if _check_out=$("$@" 2>&1); then
		result 0 "$_check_desc"
	else
		result 1 "$_check_desc" "$(printf '%s\n' "$_check_out" | tail -n 40)"
	fi
}

# Renumber TAP lines from a file into the run's plan. $1 prefixes every
# description; "# === NAME" lines name the program that follows, and
# "#  RUN NAME" lines name a kselftest whose skip line carries no name.
collect() {	# collect PREFIX FILE
	local prefix program test line desc
	prefix=${1:+$1: } program='' test=''
	while IFS= read -r line; do
		case "$line" in
		"# === "*) program="${line#\# === }: "; echo "$line" ;;
		"#  RUN "*) test=$(echo "$line" | awk '{print $3}'); echo "$line" ;;
		"ok"*|"not ok"*)
			n=$((n + 1))
			# ^(not )?ok( [0-9]+)?( -)? ? off, without a process per
			# line (a guest's 170 lines, the library's 780).
			desc=${line#not ok}
			[ "$desc" = "$line" ] && desc=${line#ok}
			case $desc in " "[0-9]*)
				desc=${desc# }
				desc=${desc#"${desc%%[!0-9]*}"} ;;
			esac
			desc=${desc# -}
			desc=${desc# }
			case "$desc" in "# SKIP"*|"#SKIP"*) desc="$test $desc" ;; esac
			case "$line" in
			"not ok"*) failed=$((failed + 1)); rc=1; echo "not ok $n - $prefix$program$desc" ;;
			*"# SKIP"*) skipped=$((skipped + 1)); echo "ok $n - $prefix$program$desc" ;;
			*) passed=$((passed + 1)); echo "ok $n - $prefix$program$desc" ;;
			esac
			;;
		"TAP version"*|[0-9]*..[0-9]*) ;;
		"#"*) echo "$line" ;;
		*) echo "# $line" ;;
		esac
	done < "$2"
}

# Results that a background run of this script already numbered and
# prefixed (collect() and result() there), numbered again into this run's
# plan; every other line as it is ("# === " names nothing here).
adopt() {	# adopt FILE
	local line desc
	while IFS= read -r line; do
		case "$line" in
		"ok "*|"not ok "*)
			n=$((n + 1))
			desc=${line#*ok [0-9]* - }
			case "$line" in
			"not ok"*) failed=$((failed + 1)); rc=1; echo "not ok $n - $desc" ;;
			*"# SKIP"*) skipped=$((skipped + 1)); echo "ok $n - $desc" ;;
			*) passed=$((passed + 1)); echo "ok $n - $desc" ;;
			esac
			;;
		"TAP version"*|[0-9]*..[0-9]*) ;;
		*) echo "$line" ;;
		esac
	done < "$1"
}

relay() {	# relay NAME STATUS FILE
	local failed_before=$failed
	collect "" "$3"
	[ "$2" -eq 0 ] || [ "$failed" -ne "$failed_before" ] ||
		result 1 "$1 exited with status $2"
}

# The two results of a scripts/vm.sh run whose TAP was just collected:
# the guest finished (and reported at least 20 results since $3, the
# plan's count before collecting), and its console is clean. vm.sh exits
# 0 clean, 1 tests failed, 2 guest did not finish, 3 kernel problem.
guest_results() {	# guest_results PREFIX VMSTATUS COUNT_BEFORE [NOTE [MIN_RESULTS]]
	local finished=1 clean=1 got=$((n - $3))
	case $2 in 0|1|3) finished=0 ;; esac
	case $2 in 0|1) clean=0 ;; esac
	[ "$got" -ge "${5:-20}" ] || finished=1
	result $finished "$1: guest boots and runs every test to the end ($got results${4:+, $4})"
	result $clean "$1: kernel console has no WARNING, BUG, Oops, KASAN, UBSAN, lockdep or kmemleak report"
}

finish() {
	echo "1..$n"
	echo "$passed passed, $failed failed, $skipped skipped ($(($(date +%s) - TAP_START)) s)"
	[ "$failed" -eq 0 ]
	exit
}
