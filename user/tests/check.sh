#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# 'make check': builds with -Werror and runs every host test. Each test
# program prints "ok - ..." / "not ok - ..." lines; this script numbers
# them, turns every other line into a "# " comment, and ends with
# "N passed, N failed, N skipped": a "# SKIP" result is counted as a
# skip, never as a pass. Exit status 1 if anything failed. The TAP
# helpers (result, check, relay, finish) are the project's one set,
# scripts/tap-lib.sh.

B=${B:-build}
MAKE=${MAKE:-make}
CLANG=${CLANG:-clang}
FUZZ_SECONDS=${FUZZ_SECONDS:-10}
CC=${CC:-cc}

log=$(mktemp)
trap 'rm -f "$log" "$log.c" "$log.hdr.c"' EXIT
. "$(dirname "$0")/../../scripts/tap-lib.sh"

tail_log() {
	tail -n "${1:-15}" "$log" | sed 's/^/#   /'
}

# "# time: WHAT N s" since the last one: where the run's minutes go.
last=$(date +%s)
took() {	# took WHAT
	now=$(date +%s)
	echo "# time: $1 $((now - last)) s"
	last=$now
}

run() {		# run name command...: relay the command's results
	name=$1
	shift
	"$@" > "$log" 2>&1
	relay "$name" $? "$log"
	took "$name"
}

echo "# libperfclock host tests ($(uname -r), $(nproc) CPUs)"

# ---- the counting itself, on a known input (in a subshell) ----
counts=$(n=0 passed=0 failed=0 skipped=0
	printf 'ok - a\nok - b # SKIP why\nnot ok - c\nnoise\n' > "$log"
	relay selfcheck 1 "$log" > /dev/null
	echo "$n $passed $failed $skipped")
if [ "$counts" = "3 1 1 1" ]; then
	result 0 "harness: a result marked SKIP counts as a skip, not a pass (3 results: 1 passed, 1 failed, 1 skipped)"
else
	result 1 "harness: counted 'ok, ok # SKIP, not ok' as n/passed/failed/skipped $counts, not 3 1 1 1"
fi

# ---- build ----
jobs=$(nproc 2>/dev/null || echo 2)
if ! $MAKE --no-print-directory -j"$jobs" EXTRA_WERROR=-Werror all > "$log" 2>&1; then
	result 1 "build: library, tests and bench with -Wall -Wextra -Werror"
	tail_log 30
	finish
fi
result 0 "build: library, tests and bench with -Wall -Wextra -Werror"
took build

# ---- the tests ----
run unit "$B/test_unit"
run device "$B/test_device"
# The whole device program once more with rdtscp forced each way
# (tests/fake_cpu.c): its per-CPU part takes both paths in any case;
# these find any other check that leans on this CPU's features.
run device-probe-forced-off env PERFCLOCK_TEST_CPU=no-rdtscp "$B/test_device"
run device-fake-rdtscp env PERFCLOCK_TEST_CPU=rdtscp "$B/test_device"
run prop "$B/test_prop"
run ring-real "$B/test_ring_real"
run evring "$B/test_evring"
run reader "$B/test_reader"
run tool "$B/test_tool"
run module "$B/test_module"
run module-checks-on-clockid "$B/test_module" clockid
run timens "$B/test_timens"
run fork-lock "$B/test_fork_lock"
run membarrier-pacing "$B/test_mb_pacing"
run perf-page-restart "$B/test_perf_page_restart"

# ---- ABI ----
soname=$(readelf -d "$B/libperfclock.so" 2>/dev/null |
	 sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
major=$(cut -d. -f1 ../VERSION)
# One soname per major version, 0.x included (user/Makefile).
want=libperfclock.so.$major
if [ "$soname" = "$want" ]; then
	result 0 "abi: soname is $soname (from ../VERSION)"
else
	result 1 "abi: soname '$soname' does not follow ../VERSION"
fi
bad=$(nm -D --defined-only "$B/libperfclock.so" |
      awk '$2 != "A" && $3 !~ /^perfclock_/ { print $3 }')
nexp=$(nm -D --defined-only "$B/libperfclock.so" | awk '$3 ~ /^perfclock_/' | wc -l)
if [ -z "$bad" ] && [ "$nexp" -gt 10 ]; then
	result 0 "abi: only perfclock_ symbols exported ($nexp)"
else
	result 1 "abi: symbols exported without the perfclock_ prefix: $bad"
fi
# The library's own cross-file helpers are <struct>__<verb> (libperfclock.h).
internal=$(nm -D --defined-only "$B/libperfclock.so" | awk '$3 ~ /^perfclock_[a-z_]*__/')
nhid=$(nm -g --defined-only "$B/libperfclock.a" | awk '$3 ~ /^perfclock_[a-z_]*__/' | wc -l)
if [ -z "$internal" ] && [ "$nhid" -gt 0 ]; then
	result 0 "abi: internal perfclock_<struct>__ helpers stay hidden ($nhid)"
else
	result 1 "abi: internal helpers exported: $internal"
fi

# The exported symbol@node list against the released one
# (libperfclock.abi, scripts/abi-check.sh; policy: README.md, "ABI"),
# then the check itself on doctored baselines: each must fail, but a new
# node, which must pass and say what to add.
abi_check() { sh ../scripts/abi-check.sh check "$B/libperfclock.so" "$1"; }
out=$(abi_check libperfclock.abi 2>&1)
result $? "abi: exported symbol@node as released in libperfclock.abi (or in new nodes)" "$out"
case $out in *"add to"*) printf '%s\n' "$out" | sed 's/^/# /' ;; esac
abi_fails() {	# abi_fails WORD DESC: the doctored "$log.abi" fails with WORD
	out=$(abi_check "$log.abi" 2>&1)
	st=$?
	if [ $st -eq 1 ] && printf '%s\n' "$out" | grep -q "$1"; then
		result 0 "abi-check: fails when $2"
	else
		result 1 "abi-check: did not fail ($st) when $2" "$out"
	fi
}
{ cat libperfclock.abi; echo "perfclock_gone@PERFCLOCK_0"; } > "$log.abi"
abi_fails REMOVED "a released symbol is gone"
first=$(grep -m1 '^perfclock_[a-z_0-9]*@' libperfclock.abi)
sed "s/^${first%@*}@.*/${first%@*}@PERFCLOCK_0.99/" libperfclock.abi > "$log.abi"
abi_fails MOVED "a released symbol (${first%@*}) changed node"
grep -v "^$first\$" libperfclock.abi > "$log.abi"
abi_fails ADDED "a new symbol (${first%@*}) went into a released node"
sed 's/^soname .*/soname libperfclock.so.0.0/' libperfclock.abi > "$log.abi"
abi_fails "new soname" "the soname is not the baseline's"
# The node with the fewest symbols, as if it were new this release.
newest=$(grep '@' libperfclock.abi | cut -d@ -f2 | sort | uniq -c | sort -n | awk 'NR == 1 { print $2 }')
grep -v "@$newest\$" libperfclock.abi | grep -v "^node $newest " > "$log.abi"
out=$(abi_check "$log.abi" 2>&1)
st=$?
[ $st -eq 0 ] && printf '%s\n' "$out" | grep -q "^abi:   node $newest "
result $? "abi-check: passes a new node ($newest) and prints the lines to add" "$out"
rm -f "$log.abi"

took abi
# ---- headers from C and C++ ----
# Each public header ALONE, so that one leaning on another being included
# first fails: the umbrella, the reader's first name, the page reader and
# every per-object header there is (perfclock/*.h).
command -v g++ >/dev/null 2>&1 && have_cxx=1 || have_cxx=0
for h in libperfclock.h perfclock_reader.h perfclock_page.h perfclock/*.h; do
	printf '#include "%s"\n' "$h" > "$log.c"
	check "headers: $h compiles alone as C11 -Wall -Wextra -Werror -pedantic" \
		$CC -std=c11 -Wall -Wextra -Werror -pedantic -I. -fsyntax-only "$log.c"
	if [ $have_cxx = 1 ]; then
		check "headers: $h compiles alone as C++ (g++ -Wall -Wextra -Werror -pedantic)" \
			g++ -x c++ -Wall -Wextra -Werror -pedantic -I. -fsyntax-only "$log.c"
	else
		skip_result "headers: $h as C++" "no g++"
	fi
done

# ---- install + pkg-config, dynamic and static ----
inst=$(pwd)/$B/inst
rm -rf "$inst" "$B/destdir"
check "install: make install PREFIX=$B/inst" \
	$MAKE --no-print-directory install PREFIX="$inst"
check "install: DESTDIR=$B/destdir PREFIX=/usr stages under DESTDIR" \
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
# Every public header of the tree is installed, flat, in include/perfclock/.
missing=$(for h in libperfclock.h perfclock_reader.h perfclock/*.h; do
	[ -f "$inst/include/perfclock/${h##*/}" ] || echo "$h"; done)
result "$([ -z "$missing" ]; echo $?)" \
	"install: every public header (libperfclock.h, perfclock_reader.h, perfclock/*.h) is in include/perfclock/" \
	"not installed: $missing"
# Each installed header alone, found the two ways a program finds it:
# <perfclock/NAME> with no -I at all (the DESTDIR=/usr tree given as a
# system directory, -isystem, where /usr/include would be searched), and
# <NAME> with the pkg-config Cflags; as C11 and as C++.
installed_alone() {	# installed_alone COMPILER FLAGS...: every header, alone
	cc_=$1
	shift
	for f in "$inst"/include/perfclock/*.h; do
		f=${f##*/}
		printf '#include <perfclock/%s>\n' "$f" > "$log.hdr.c"
		$cc_ -x "$lang" "$@" -isystem "$(pwd)/$B/destdir/usr/include" \
			-fsyntax-only "$log.hdr.c" || { echo "<perfclock/$f>, no -I"; return 1; }
		printf '#include <%s>\n' "$f" > "$log.hdr.c"
		$cc_ -x "$lang" "$@" $(PKG_CONFIG_PATH=$PCP pkg-config --cflags libperfclock) \
			-fsyntax-only "$log.hdr.c" || { echo "<$f>, pkg-config"; return 1; }
	done
}
lang=c
check "install: each installed header compiles alone as <perfclock/NAME> with no -I and as <NAME> with pkg-config (C11 -pedantic -Werror)" \
	installed_alone "$CC" -std=c11 -Wall -Wextra -Werror -pedantic
if [ $have_cxx = 1 ]; then
	lang=c++
	check "install: the same as C++ (g++ -pedantic -Werror)" \
		installed_alone g++ -Wall -Wextra -Werror -pedantic
else
	skip_result "install: installed headers as C++" "no g++"
fi
check "install: a program built with pkg-config against the installed tree runs (shared)" \
	sh -c "$CC -o $B/inst-test-dyn $log.c \$(PKG_CONFIG_PATH=$PCP pkg-config --cflags --libs libperfclock) &&
	       LD_LIBRARY_PATH=$inst/lib ./$B/inst-test-dyn &&
	       PKG_CONFIG_PATH=$PCP pkg-config --modversion libperfclock | grep -qx \"\$(cat ../VERSION)\""
# The helper thread needs libpthread in a static link before glibc 2.34
# (libpthread merged into libc): pkg-config --static must say so. (Here,
# glibc 2.36, the static link below would pass without it.)
check "install: pkg-config --static --libs names -lpthread (Libs.private)" \
	sh -c "PKG_CONFIG_PATH=$PCP pkg-config --static --libs libperfclock | grep -q -- -lpthread"
check "install: the same program linked with gcc -static against libperfclock.a runs" \
	sh -c "$CC -static -o $B/inst-test-static $log.c -I$inst/include $inst/lib/libperfclock.a &&
	       ./$B/inst-test-static"

took "headers, install"
# ---- the README's examples (examples/tracer_threads.c, tracer.c) ----
# Built by their own Makefile with the installed tree's pkg-config, then
# each run for 0.3 s on this machine's scheduler tracepoints: both seen,
# in time order, none late, the horizon's name and the loss count said.
# (About 3 s; needs root and tracefs, mounted here if it is not.)
ex=../examples
tfs=/sys/kernel/tracing
[ "$(id -u)" = 0 ] && ! [ -d $tfs/events ] && mount -t tracefs nodev $tfs 2>/dev/null
for t in tracer_threads tracer; do
	rm -f "$ex/$t"
	check "example: examples/$t builds against the installed library (pkg-config)" \
		env PKG_CONFIG_PATH="$PCP" $MAKE --no-print-directory -C "$ex" $t
	if [ "$(id -u)" != 0 ] || ! [ -r $tfs/events/sched/sched_switch/id ]; then
		skip_result "example: $t runs" "not root, or tracefs not at $tfs"
	elif LD_LIBRARY_PATH="$inst/lib" "$ex/$t" 0.3 > "$log" 2> "$log.c"; then
		nsw=$(grep -c ' sched/sched_switch$' "$log")
		nwk=$(grep -c ' sched/sched_wakeup$' "$log")
		bad=$(awk 'NR > 1 && $1 < prev { n++ } { prev = $1 } END { print n + 0 }' "$log")
		sum=$(grep '^# [0-9]* events' "$log.c")
		hz=$(sed -n 's/^# horizon: //p' "$log.c")
		result $([ "$nsw" -gt 0 ] && [ "$nwk" -gt 0 ] && [ "$bad" = 0 ] &&
			 [ -n "$hz" ] && printf '%s\n' "$sum" | grep -q ' 0 late, [0-9]* lost,'; echo $?) \
			"example: $t runs: $nsw sched_switch + $nwk sched_wakeup in time order ($bad out of order); horizon \"$hz\"; $sum" \
			"$(cat "$log.c")"
	else
		result 1 "example: $t runs" "$(cat "$log.c")"
	fi
	rm -f "$ex/$t"
done
took example

# ---- sanitizers, valgrind, fuzzing ----
if command -v "$CLANG" >/dev/null 2>&1 &&
   $MAKE --no-print-directory -j"$jobs" sanitize fuzz > "$log" 2>&1; then
	took "sanitizer and fuzzer builds"
	check "asan+ubsan: unit tests clean (clang -fsanitize=address,undefined)" \
		"$B/san/test_unit"
	check "asan+ubsan: property tests clean" "$B/san/test_prop"
	check "asan+ubsan: device backend tests clean" "$B/san/test_device"
	took asan+ubsan
	# TSAN exits 66 when it reported a race (its default exitcode).
	run "tsan (status 66: a data race reported)" env TSAN_OPTIONS="halt_on_error=1 exitcode=66" \
		"$B/san/test_horizon_tsan"
	run "tsan: the threaded reader's hand-off on real rings (status 66: a race)" \
		env TSAN_OPTIONS="halt_on_error=1 exitcode=66" PERFCLOCK_TEST_LOAD_MS=300 \
		"$B/san/test_reader_tsan"
	mkdir -p "$B/fuzz-corpus"
	if "$B/fuzz_ring" -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=1024 \
	   -print_final_stats=1 -artifact_prefix="$B/" "$B/fuzz-corpus" > "$log" 2>&1; then
		runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
		result 0 "fuzz: ring reader survives ${FUZZ_SECONDS}s of libFuzzer+ASan+UBSan ($runs inputs)"
		took fuzz
	else
		result 1 "fuzz: ring reader crashed or hung (see $B/ crash-* files)"
		tail_log 25
	fi
else
	tail_log 5
	skip_result "asan+ubsan" "clang with sanitizer runtimes not available"
	skip_result "fuzz" "clang with libFuzzer not available"
fi
if command -v valgrind >/dev/null 2>&1; then
	# No membarrier helper threads under valgrind (test_unit.c says why).
	check "valgrind: unit tests have no memory errors and no leaks" \
		env PERFCLOCK_TEST_NO_MEMBARRIER=1 valgrind -q --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite,indirect "$B/test_unit"
	took "valgrind: unit"
	check "valgrind: property tests have no memory errors and no leaks" \
		valgrind -q --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite,indirect "$B/test_prop"
	took "valgrind: prop"
	check "valgrind: device backend tests have no memory errors and no leaks" \
		env PERFCLOCK_TEST_SLOW=1 valgrind -q --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite,indirect "$B/test_device"
	took "valgrind: device"
else
	skip_result "valgrind" "valgrind not installed"
fi

finish
