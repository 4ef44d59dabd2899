#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# 'make check': builds with -Werror and runs every host test. Each test
# program prints "ok - ..." / "not ok - ..." lines; this script numbers
# them, turns every other line into a "# " comment, and ends with
# "N passed, N failed, N skipped": a "# SKIP" result is counted as a
# skip, never as a pass. Exit status 1 if anything failed.

B=${B:-build}
MAKE=${MAKE:-make}
CLANG=${CLANG:-clang}
FUZZ_SECONDS=${FUZZ_SECONDS:-40}
CC=${CC:-cc}

n=0
passed=0
failed=0
skipped=0
log=$(mktemp)
trap 'rm -f "$log" "$log.c"' EXIT

result() {	# result ok|not-ok "description"
	n=$((n + 1))
	if [ "$1" = ok ]; then
		case "$2" in
		*"# SKIP"*) skipped=$((skipped + 1)) ;;
		*) passed=$((passed + 1)) ;;
		esac
		echo "ok $n - $2"
	else
		failed=$((failed + 1))
		echo "not ok $n - $2"
	fi
}

# Relay a test program's output (in $log), numbering its results.
relay() {	# relay name status
	seen_fail=0
	while IFS= read -r line; do
		case "$line" in
		"ok - "*)
			result ok "${line#ok - }" ;;
		"not ok - "*)
			seen_fail=1
			result not-ok "${line#not ok - }" ;;
		"# "*)
			echo "$line" ;;
		*)
			echo "# $line" ;;
		esac
	done < "$log"
	if [ "$2" != 0 ] && [ $seen_fail = 0 ]; then
		result not-ok "$1 exited with status $2"
	fi
}

tail_log() {
	tail -n "${1:-15}" "$log" | sed 's/^/#   /'
}

run() {		# run name command...
	name=$1
	shift
	"$@" > "$log" 2>&1
	relay "$name" $?
}

step() {	# step "description" command...: one result for a command
	desc=$1
	shift
	if "$@" > "$log" 2>&1; then
		result ok "$desc"
	else
		result not-ok "$desc"
		tail_log
	fi
}

start=$(date +%s)
echo "# libperfclock host tests ($(uname -r), $(nproc) CPUs)"

# ---- the counting itself, on a known input (in a subshell) ----
counts=$(n=0 passed=0 failed=0 skipped=0
	printf 'ok - a\nok - b # SKIP why\nnot ok - c\nnoise\n' > "$log"
	relay selfcheck 1 > /dev/null
	echo "$n $passed $failed $skipped")
if [ "$counts" = "3 1 1 1" ]; then
	result ok "harness: a result marked SKIP counts as a skip, not a pass (3 results: 1 passed, 1 failed, 1 skipped)"
else
	result not-ok "harness: counted 'ok, ok # SKIP, not ok' as n/passed/failed/skipped $counts, not 3 1 1 1"
fi

# ---- build ----
if ! $MAKE --no-print-directory EXTRA_WERROR=-Werror all > "$log" 2>&1; then
	result not-ok "build: library, tests and bench with -Wall -Wextra -Werror"
	tail_log 30
	echo "$passed passed, $failed failed, $skipped skipped"
	exit 1
fi
result ok "build: library, tests and bench with -Wall -Wextra -Werror"

# ---- the tests ----
run unit "$B/test_unit"
run device "$B/test_device"
run prop "$B/test_prop"
run ring-real "$B/test_ring_real"
run evring "$B/test_evring"
run module "$B/test_module"
run module-checks-on-clockid "$B/test_module" clockid

# ---- ABI ----
soname=$(readelf -d "$B/libperfclock.so" 2>/dev/null |
	 sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
major=$(cut -d. -f1 ../VERSION)
want=libperfclock.so.$major
# Before 1.0 the soname carries the minor number too (user/Makefile).
[ "$major" = 0 ] && want=libperfclock.so.0.$(cut -d. -f2 ../VERSION)
[ "$soname" = "$want" ]
[ $? = 0 ] && result ok "abi: soname is $soname (from ../VERSION)" ||
	result not-ok "abi: soname '$soname' does not follow ../VERSION"
bad=$(nm -D --defined-only "$B/libperfclock.so" |
      awk '$2 != "A" && $3 !~ /^perfclock_/ { print $3 }')
nexp=$(nm -D --defined-only "$B/libperfclock.so" | awk '$3 ~ /^perfclock_/' | wc -l)
if [ -z "$bad" ] && [ "$nexp" -gt 10 ]; then
	result ok "abi: only perfclock_ symbols exported ($nexp)"
else
	result not-ok "abi: symbols exported without the perfclock_ prefix: $bad"
fi
# The library's own cross-file helpers are <struct>__<verb> (libperfclock.h).
internal=$(nm -D --defined-only "$B/libperfclock.so" | awk '$3 ~ /^perfclock_[a-z_]*__/')
nhid=$(nm -g --defined-only "$B/libperfclock.a" | awk '$3 ~ /^perfclock_[a-z_]*__/' | wc -l)
[ -z "$internal" ] && [ "$nhid" -gt 0 ] &&
	result ok "abi: internal perfclock_<struct>__ helpers stay hidden ($nhid)" ||
	result not-ok "abi: internal helpers exported: $internal"

# ---- headers from C and C++ ----
printf '#include "libperfclock.h"\n#include "perfclock_page.h"\nint main(void) { return 0; }\n' > "$log.c"
step "headers: every public header compiles as C11 -Wall -Wextra -Werror -pedantic" \
	$CC -std=c11 -Wall -Wextra -Werror -pedantic -I. -fsyntax-only "$log.c"
if command -v g++ >/dev/null 2>&1; then
	step "headers: every public header compiles as C++ (g++ -Wall -Wextra -Werror)" \
		g++ -x c++ -Wall -Wextra -Werror -I. -fsyntax-only "$log.c"
else
	result ok "headers: C++ # SKIP no g++"
fi

# ---- install + pkg-config, dynamic and static ----
inst=$(pwd)/$B/inst
rm -rf "$inst" "$B/destdir"
step "install: make install PREFIX=$B/inst" \
	$MAKE --no-print-directory install PREFIX="$inst"
step "install: DESTDIR=$B/destdir PREFIX=/usr stages under DESTDIR" \
	sh -c "$MAKE --no-print-directory install DESTDIR=$(pwd)/$B/destdir PREFIX=/usr >/dev/null &&
	       test -f $B/destdir/usr/include/perfclock/perfclock_page.h &&
	       test -f $B/destdir/usr/include/perfclock/perfclock_ioctl.h &&
	       test -L $B/destdir/usr/lib/libperfclock.so &&
	       test -f $B/destdir/usr/lib/libperfclock.a &&
	       grep -q '^prefix=/usr' $B/destdir/usr/lib/pkgconfig/libperfclock.pc"
cat > "$log.c" <<'EOC'
#include <stdio.h>
#include <time.h>
#include <perfclock/libperfclock.h>
#include <perfclock/perfclock_page.h>
int main(void)
{
	struct perfclock *c = perfclock_open_clockid(CLOCK_MONOTONIC);
	uint64_t ns = 0;
	int ok = c && perfclock_read(c, &ns) == 0 && ns > 0 &&
		 sizeof(struct perfclock_page) == 4096;
	perfclock_close(c);
	return ok ? 0 : 1;
}
EOC
PCP="$inst/lib/pkgconfig"
step "install: a program built with pkg-config against the installed tree runs (shared)" \
	sh -c "$CC -o $B/inst-test-dyn $log.c \$(PKG_CONFIG_PATH=$PCP pkg-config --cflags --libs libperfclock) &&
	       LD_LIBRARY_PATH=$inst/lib ./$B/inst-test-dyn &&
	       PKG_CONFIG_PATH=$PCP pkg-config --modversion libperfclock | grep -qx \"\$(cat ../VERSION)\""
step "install: the same program linked with gcc -static against libperfclock.a runs" \
	sh -c "$CC -static -o $B/inst-test-static $log.c -I$inst/include $inst/lib/libperfclock.a &&
	       ./$B/inst-test-static"

# ---- sanitizers, valgrind, fuzzing ----
if command -v "$CLANG" >/dev/null 2>&1 &&
   $MAKE --no-print-directory sanitize fuzz > "$log" 2>&1; then
	step "asan+ubsan: unit tests clean (clang -fsanitize=address,undefined)" \
		"$B/san/test_unit"
	step "asan+ubsan: property tests clean" "$B/san/test_prop"
	step "asan+ubsan: device backend tests clean" "$B/san/test_device"
	mkdir -p "$B/fuzz-corpus"
	if "$B/fuzz_ring" -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=1024 \
	   -print_final_stats=1 -artifact_prefix="$B/" "$B/fuzz-corpus" > "$log" 2>&1; then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
		result ok "fuzz: ring reader survives ${FUZZ_SECONDS}s of libFuzzer+ASan+UBSan ($runs inputs)"
	else
		result not-ok "fuzz: ring reader crashed or hung (see $B/ crash-* files)"
		tail_log 25
	fi
else
	tail_log 5
	result ok "asan+ubsan # SKIP clang with sanitizer runtimes not available"
	result ok "fuzz # SKIP clang with libFuzzer not available"
fi
if command -v valgrind >/dev/null 2>&1; then
	step "valgrind: unit tests have no memory errors and no leaks" \
		valgrind -q --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite,indirect "$B/test_unit"
	step "valgrind: property tests have no memory errors and no leaks" \
		valgrind -q --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite,indirect "$B/test_prop"
	step "valgrind: device backend tests have no memory errors and no leaks" \
		env PERFCLOCK_TEST_SLOW=1 valgrind -q --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite,indirect "$B/test_device"
else
	result ok "valgrind # SKIP valgrind not installed"
fi

echo "# took $(( $(date +%s) - start )) s"
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed = 0 ]
