#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/bench-access.sh [REV] — who arms what (WHO ARMS WHAT in
# module/perfclock_ioctl.h), before and after: the "--access" table of
# bench/module/perfclock_horizon_bench.c for the module of git revision
# REV (default main) and for this tree's, one after the other in ONE
# guest boot (4 vCPUs, stable regime; REGIME=unstable for the other), so
# that their rows compare on one kernel and one machine state. A
# benchmark: it prints tables and asserts nothing. KVER=/KDIR= pick the
# kernel as for every target; BENCH_SECONDS=N per row (default 5). About
# 2 minutes of TCG guest on a 2-core host. docs/horizon-cost.md reads it.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/vm-lib.sh

rev=${1:-main}
guest_kernel || exit 1
make --no-print-directory -C bench KDIR="$KDIR" >&2 || exit 1

payload=build/guest/bench-access
before=build/bench-access-before
rm -rf "$payload" "$before" && mkdir -p "$payload" "$before/module"
# The revision's module sources, built in a tree of their own.
for f in Kbuild module/perfclock.c module/perfclock_ioctl.h module/compat.h; do
	git show "$rev:$f" > "$before/$f" || exit 1
done
make --no-print-directory -C "$KDIR" M="$PWD/$before" \
	KCFLAGS="-DPERFCLOCK_VERSION=\\\"$rev\\\"" modules >&2 || exit 1
make --no-print-directory KDIR="$KDIR" module >&2 || exit 1
cp "$before/module/perfclock.ko" "$payload/perfclock-0-before.ko"
cp module/perfclock.ko "$payload/perfclock-1-after.ko"
cp build/bench/perfclock_horizon_bench "$payload/"
cp scripts/guest/bench-access.sh "$payload/run.sh"
echo "${BENCH_SECONDS:-5}" > "$payload/seconds"
echo "# before: $rev ($(git rev-parse --short "$rev")), after: this tree ($(git describe --always --dirty)), $KVER"
boot "${REGIME:-stable}" build/guest/bench-access-run \
	--runs-for 300 --kernel "$VMLINUZ" --payload "$payload" --hold-events ''
