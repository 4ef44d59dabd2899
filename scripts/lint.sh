#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/lint.sh — the kernel side's lint, as TAP lines (scripts/tap-lib.sh)
# for scripts/check.sh to renumber under "lint: ":
#   checkpatch --no-tree --strict -f on every kernel source (the module's
#   and the bench-only bench/module/kmod's),
#   sparse (C=2) and W=1 over each module's build, with no warning at all,
#   the UAPI header compiled alone as C99, C11 and C++ with -pedantic.
# KDIR must name the kernel build tree (the top Makefile passes it).
set -uo pipefail
cd "$(dirname "$0")/.."

: "${KDIR:?KDIR must name a kernel build tree}"
KSRC=build/ksrc
scripts/kernel-src.sh "$KSRC" >&2 || exit 1
. scripts/tap-lib.sh

for f in module/perfclock.c module/perfclock_ioctl.h module/compat.h; do
	ignore=()
	# compat.h holds the project's one LINUX_VERSION_CODE test (see there).
	[ "$f" = module/compat.h ] && ignore=(--ignore LINUX_VERSION_CODE,CONSTANT_COMPARISON)
	out=$(perl "$KSRC/scripts/checkpatch.pl" --no-tree --strict --quiet \
		--show-types "${ignore[@]}" -f "$f" 2>&1)
	result $? "checkpatch --strict $f" "$out"
done

# The bench-only module (make bench): the same rules, its own build.
for f in bench/module/kmod/perfclock_floor.c bench/module/kmod/perfclock_floor.h; do
	out=$(perl "$KSRC/scripts/checkpatch.pl" --no-tree --strict --quiet \
		--show-types -f "$f" 2>&1)
	result $? "checkpatch --strict $f" "$out"
done
out=$(make --no-print-directory -C "$KDIR" M="$PWD/bench/module/kmod" C=2 W=1 modules 2>&1)
st=$?
warnings=$(printf '%s\n' "$out" | grep -E 'warning:|error:' || true)
[ $st -eq 0 ] && [ -z "$warnings" ] && printf '%s\n' "$out" | grep -q 'CHECK.*perfclock_floor.c'
result $? "bench/module/kmod/perfclock_floor.c builds clean with W=1 and sparse (C=2)" "$out"

# A full rebuild with sparse and W=1; any warning fails.
out=$(make --no-print-directory module KDIR="$KDIR" C=2 W=1 2>&1)
st=$?
warnings=$(printf '%s\n' "$out" | grep -E 'warning:|error:' || true)
[ $st -eq 0 ] && [ -z "$warnings" ]
result $? "module builds clean with W=1 and sparse (C=2)" "$out"
printf '%s\n' "$out" | grep -q 'CHECK.*perfclock.c'
result $? "sparse actually ran over perfclock.c" "$out"

# The guest's event holder (vm.sh --hold-events) is user code too.
out=$(gcc -O2 -Wall -Wextra -Werror -o /dev/null scripts/guest/hold-patch-sites.c 2>&1)
result $? "scripts/guest/hold-patch-sites.c builds clean with -Wall -Wextra" "$out"

hdr=module/perfclock_ioctl.h
for std in c99 c11; do
	out=$(printf '#include "%s"\nint main(void) { return sizeof(struct perfclock_page) != 4096; }\n' "$hdr" |
		gcc -std=$std -Wall -Wextra -pedantic -Werror -I. -x c - -o /dev/null 2>&1)
	result $? "$hdr compiles alone as $std -pedantic" "$out"
done
out=$(printf '#include "%s"\nint main() { return sizeof(perfclock_page) != 4096; }\n' "$hdr" |
	g++ -Wall -Wextra -pedantic -Werror -I. -x c++ - -o /dev/null 2>&1)
result $? "$hdr compiles alone as C++ -pedantic" "$out"
# Only the two UAPI headers it is allowed to include.
out=$(grep -E '^#include' "$hdr" | grep -v -E '<linux/(types|ioctl)\.h>')
[ -z "$out" ]
result $? "$hdr includes only <linux/types.h> and <linux/ioctl.h>" "$out"

# The page reader's seq protocol is ordered by the hardware too, not only
# by the compiler, on every architecture: on arm64 the loads of seq are
# acquires (ldar) and the re-check is preceded by a load barrier (dmb).
out=$(printf '#include "perfclock_page.h"\nint s(const struct perfclock_page *p, struct perfclock_page_sample *o) { return perfclock_page_sample(p, o); }\nint h(const struct perfclock_page *p, unsigned long long *n) { uint64_t v; int e = perfclock_page_horizon(p, -1, &v); *n = v; return e; }\n' |
	clang --target=aarch64-linux-gnu -O2 -S -o - -Iuser -I/usr/include \
		-I/usr/include/x86_64-linux-gnu -x c - 2>&1)
[ "$(printf '%s\n' "$out" | grep -c 'ldar')" -ge 2 ] &&
	[ "$(printf '%s\n' "$out" | grep -c 'dmb')" -ge 2 ]
result $? "user/perfclock_page.h orders its seq reads with acquire loads and barriers on arm64 (clang --target=aarch64)" "$out"

# dkms.conf spells out its version (as v4l2loopback's does); VERSION is
# the one source of truth, so they must agree.
v=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' dkms.conf)
[ -n "$v" ] && [ "$v" = "$(cat VERSION)" ]
result $? "dkms.conf PACKAGE_VERSION ($v) equals VERSION ($(cat VERSION))"

exit $rc
