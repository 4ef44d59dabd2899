#!/bin/sh
# verify.sh [ARCHIVE] [WORKDIR]: applies the three patch sets in order onto a
# fresh LinuxTracepoints 9ff8fe86f9a3 with `git am`, and after each one
# builds (cmake + make, upstream's flags) and runs the unit tests (ctest).
# After PR 1 it also has perf (Debian's perf 6.1, if installed: `perf`)
# read the file that PR 1's round-trip test writes. After PR 3 it builds
# twice: without options (must not link libperfclock) and with
# -DUSE_LIBPERFCLOCK=ON (needs libperfclock >= 0.2.1 where pkg-config finds
# it, e.g. PKG_CONFIG_PATH=/tmp/lpc/lib/pkgconfig; skipped if absent).
#
# The live-session test (round-session-utest) needs root and tracefs; without
# them ctest reports it as skipped (exit 77).
#
# Prints one "VERIFY ..." line per step; exits non-zero if a step failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
archive=${1:-/work/shared/clients/LinuxTracepoints-9ff8fe86f9a3.tar.gz}
work=${2:-$(mktemp -d /tmp/lt-verify.XXXXXX)}
jobs=${JOBS:-2}
fail=0

step() { # step NAME COMMAND...: runs it, logs to $work/NAME.log
	name=$1; shift
	if "$@" >"$work/$name.log" 2>&1; then
		echo "VERIFY ok   $name"
	else
		echo "VERIFY FAIL $name (see $work/$name.log)"
		fail=1
	fi
}

build() { # build DIR [CMAKE ARGS...]: configure, build, fail on any compiler warning
	dir=$1; shift
	cmake -S "$tree" -B "$dir" "$@" && make -C "$dir" -j"$jobs" 2>&1 | tee "$dir.make.log" &&
		! grep -q 'warning:' "$dir.make.log"
}

tests() { # tests DIR: ctest; a skipped test is not a failure, nor is one that fails at base
	(cd "$1" && ctest --output-on-failure)
	rc=$?
	(cd "$1" && ctest --output-on-failure 2>&1) | sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (Failed)$/\1/p' | sort >"$1.failed"
	cat "$1.failed"
	if [ "$1" = "$work/b0" ]; then
		return 0 # The base's failures are recorded, not ours.
	fi
	[ $rc = 0 ] || [ -z "$(comm -23 "$1.failed" "$work/b0.failed")" ]
}

mkdir -p "$work" && cd "$work" || exit 1
tar xzf "$archive" || exit 1
tree=$work/LinuxTracepoints-9ff8fe86f9a3
(cd "$tree" && git init -q && git add -A && git -c user.name=verify -c user.email=verify@localhost \
	commit -qm "LinuxTracepoints 9ff8fe86f9a3 (archive)") || exit 1

# Upstream's own unit tests before any patch: what fails here (e.g.
# tracepoint-api-utest without user_events) is not ours.
step base-build build "$work/b0"
step base-ctest tests "$work/b0"
echo "VERIFY info base fails: $(tr '\n' ' ' <"$work/b0.failed")"

n=1
for pr in pr1-attr-size pr2-flush-round pr3-round-end-provider; do
	step "am-$pr" sh -c "cd '$tree' && git am -q '$here/$pr'/*.patch"
	step "build-$pr" build "$work/b$n"
	step "ctest-$pr" tests "$work/b$n"
	if [ $n = 1 ] && command -v perf >/dev/null; then
		f=$work/b1/libtracepoint-decode-cpp/utest/writer-utest.data
		step "perf-script-$pr" sh -c "perf script -i '$f' && test \$(perf script -i '$f' 2>/dev/null | wc -l) = 2"
		step "perf-header-$pr" sh -c "perf report --header-only -i '$f' | grep -c 'event : name = utest:event' | grep -qx 2"
	fi
	n=$((n + 1))
done

# PR 3 without the option: PR 2's perf-collect, no libperfclock.
step pr3-off-no-libperfclock sh -c "! ldd '$work/b3/bin/perf-collect' | grep -q perfclock && ! grep -q HAVE_LIBPERFCLOCK '$work/b3/libtracepoint-control-cpp/tools/CMakeFiles/perf-collect.dir/flags.make'"
if pkg-config --exists 'libperfclock >= 0.2.1' 2>/dev/null; then
	step build-pr3-on build "$work/b3on" -DUSE_LIBPERFCLOCK=ON
	step pr3-on-links-libperfclock sh -c "ldd '$work/b3on/bin/perf-collect' | grep -q perfclock"
else
	echo "VERIFY skip build-pr3-on (no libperfclock >= 0.2.1 for pkg-config)"
	step pr3-on-missing-is-error sh -c "! cmake -S '$tree' -B '$work/b3miss' -DUSE_LIBPERFCLOCK=ON"
fi

echo "VERIFY done work=$work fail=$fail"
exit $fail
