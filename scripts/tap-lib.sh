# SPDX-License-Identifier: GPL-2.0
#
# Bash helpers for the check scripts (check.sh, check-dkms.sh,
# check-debug.sh); source it. Every result becomes one TAP line numbered
# in the run's own plan, and finish() closes the run with the line CI
# reads: "N passed, N failed, N skipped (T s)".
#
# TAP_PREFIX, if set, prefixes the descriptions result() prints.

n=0 passed=0 failed=0 skipped=0
TAP_START=$(date +%s)

result() {	# result STATUS DESCRIPTION: ok when STATUS is 0
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		passed=$((passed + 1)); echo "ok $n - ${TAP_PREFIX:-}$2"
	else
		failed=$((failed + 1)); echo "not ok $n - ${TAP_PREFIX:-}$2"
	fi
}

# Renumber TAP lines from a file into the run's plan. $1 prefixes every
# description; "# === NAME" lines name the program that follows, and
# "#  RUN NAME" lines name a kselftest whose skip line carries no name.
collect() {	# collect PREFIX FILE
	local prefix=$1 file=$2 program='' test='' line desc
	while IFS= read -r line; do
		case "$line" in
		"# === "*) program="${line#\# === }: "; echo "$line" ;;
		"#  RUN "*) test=$(echo "$line" | awk '{print $3}'); echo "$line" ;;
		"ok"*|"not ok"*)
			n=$((n + 1))
			desc=$(echo "$line" | sed -E 's/^(not )?ok( [0-9]+)?( -)? ?//')
			case "$desc" in "# SKIP"*|"#SKIP"*) desc="$test $desc" ;; esac
			case "$line" in
			"not ok"*) failed=$((failed + 1)); echo "not ok $n - $prefix: $program$desc" ;;
			*"# SKIP"*) skipped=$((skipped + 1)); echo "ok $n - $prefix: $program$desc" ;;
			*) passed=$((passed + 1)); echo "ok $n - $prefix: $program$desc" ;;
			esac
			;;
		"TAP version"*|[0-9]*..[0-9]*) ;;
		"#"*) echo "$line" ;;
		*) echo "# $line" ;;
		esac
	done < "$file"
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
