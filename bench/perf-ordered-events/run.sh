#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/perf-ordered-events/run.sh [EVENTS [REPEAT]] — the queue bench
# against perf's own ordered_events (bench_oe.c says what it measures).
#
# Compiles the real tools/perf/util/ordered-events.c of Debian's
# linux-source-6.1 tarball (extracted into build/perf-oe/ksrc, with the
# tools/ headers it includes; the few perf headers it also includes,
# session.h, debug.h and ui/progress.h, are replaced by the stubs in
# shim/, which declare only what the file uses) and libperfclock's static
# library (built by user/Makefile into build/perf-oe/lib), and runs it.
set -euo pipefail
cd "$(dirname "$0")/../.."
top=$(pwd)

TARBALL=${KERNEL_SRC_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
TOPDIR=linux-source-6.1
out=$top/build/perf-oe
ksrc=$out/ksrc
members=(tools/perf/util/ordered-events.c tools/perf/util/ordered-events.h
	tools/include tools/lib/perf/include tools/arch/x86/include)

[ -r "$TARBALL" ] || scripts/deps.sh lint >&2
stamp="$(stat -c '%s %Y' "$TARBALL") ${members[*]}"
if [ ! -f "$ksrc/.stamp" ] || [ "$(cat "$ksrc/.stamp")" != "$stamp" ]; then
	rm -rf "$ksrc" && mkdir -p "$ksrc"
	tar -xJf "$TARBALL" -C "$ksrc" --strip-components=1 "${members[@]/#/$TOPDIR/}"
	echo "$stamp" > "$ksrc/.stamp"
fi

make -s -C user --no-print-directory B="$out/lib" "$out/lib/libperfclock.a" >&2

K=$ksrc/tools
CFLAGS="-O2 -g -D_GNU_SOURCE"
INC="-Ibench/perf-ordered-events/shim -I$K/perf/util -I$K/lib/perf/include -I$K/include
	-I$K/arch/x86/include -I$K/include/uapi -Iuser"
# shellcheck disable=SC2086
gcc $CFLAGS $INC -c -o "$out/ordered-events.o" "$K/perf/util/ordered-events.c"
# shellcheck disable=SC2086
gcc $CFLAGS -Wall -Wextra $INC -o "$out/bench_oe" bench/perf-ordered-events/bench_oe.c \
	"$out/ordered-events.o" "$out/lib/libperfclock.a"
exec "$out/bench_oe" "$@"
