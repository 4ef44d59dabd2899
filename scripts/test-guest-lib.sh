#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/test-guest-lib.sh — run_test() of scripts/guest-lib.sh, under
# the guests' own shell (busybox sh), as TAP lines for scripts/check.sh
# (section lint): a test program that exits non-zero after printing only
# "ok" lines must give a failed result that names it and sets rc; one
# that exits 0 adds no result; variables given with env reach it.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/tap-lib.sh

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The guest's paths, moved under $tmp.
mkdir -p "$tmp/lib"
cp scripts/tap-lib.sh "$tmp/lib/"
sed "s|/lib/perfclock/|$tmp/lib/|" scripts/guest-lib.sh > "$tmp/lib/guest-lib.sh"
cat > "$tmp/prog" <<'EOF'
#!/bin/sh
echo "ok - the program's own result (GREETING=${GREETING:-unset})"
case $1 in
signal) kill -SEGV $$ ;;
esac
exit "$1"
EOF
chmod +x "$tmp/prog"

# guest ARGS...: run_test ARGS in busybox sh with guest-lib.sh sourced;
# prints its TAP, then "rc=N".
guest() {
	busybox sh -c '. "$1/lib/guest-lib.sh"; shift; run_test "$@"; echo "rc=$rc"' \
		sh "$tmp" "$@" 2>&1
}

out=$(guest "$tmp/prog" 0)
[ "$(printf '%s\n' "$out" | grep -c '^not ok')" = 0 ] && printf '%s\n' "$out" | grep -qx 'rc=0'
result $? "guest-lib run_test: a program that exits 0 adds no result and leaves rc 0" "$out"

out=$(guest "$tmp/prog" 3)
printf '%s\n' "$out" | grep -q "^not ok [0-9]* - $tmp/prog exits 0 (exited with status 3)\$" &&
	printf '%s\n' "$out" | grep -qx 'rc=1'
result $? "guest-lib run_test: an exit 3 after only ok lines is a failed result naming the program, and rc=1" "$out"

out=$(guest "$tmp/prog" signal)
printf '%s\n' "$out" | grep -q "exits 0 (exited with signal 11)\$"
result $? "guest-lib run_test: a program killed by SIGSEGV is named with the signal" "$out"

out=$(guest env GREETING=hello "$tmp/prog" 5)
printf '%s\n' "$out" | grep -q 'GREETING=hello' &&
	printf '%s\n' "$out" | grep -q "^not ok [0-9]* - $tmp/prog exits 0 (exited with status 5)\$"
result $? "guest-lib run_test: env VAR=VALUE reaches the program, and the result names the program, not env" "$out"

finish
