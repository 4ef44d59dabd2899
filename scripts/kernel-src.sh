#!/bin/bash
# scripts/kernel-src.sh DEST — extract the few kernel-tree files the project
# uses from Debian's linux-source-6.1 tarball into DEST (e.g. build/ksrc).
#
# Why: the selftests compile against the kselftest harness and `make lint`
# runs checkpatch.pl, both from the kernel tree, but nothing of the kernel is
# ever copied into this repository. Unpacking the whole 140 MB tarball would
# be slow; one pass picking ~8 members costs ~9 s, and is cached.
#
# Cache: DEST/.stamp records the tarball's size and mtime; a matching stamp
# means DEST is already complete and we return at once. The stamp is written
# last, so an interrupted extraction is redone next time.
set -euo pipefail

# KERNEL_SRC_TARBALL=/usr/src/linux-source-6.12.tar.xz (scripts/deps.sh
# source:6.12) takes them from 6.12's tree instead; its top directory is
# the tarball's name.
TARBALL=${KERNEL_SRC_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
TOP=$(basename "$TARBALL" .tar.xz)

[ $# -eq 1 ] || { echo "usage: $0 DEST" >&2; exit 64; }
dest=$1

if [ ! -r "$TARBALL" ]; then
	echo "perfclock: $TARBALL missing; run scripts/deps.sh lint" >&2
	exit 1
fi

# Paths relative to the kernel tree. checkpatch.pl --no-tree reads
# spelling.txt and const_structs.checkpatch next to itself (warns if absent),
# and Documentation/dev-tools/checkpatch.rst for --verbose explanations.
files=(
	tools/testing/selftests/kselftest_harness.h
	tools/testing/selftests/kselftest.h
	scripts/checkpatch.pl
	scripts/spelling.txt
	scripts/const_structs.checkpatch
	Documentation/dev-tools/checkpatch.rst
)

stamp="$(stat -c '%s %Y' "$TARBALL") ${files[*]}"
if [ -f "$dest/.stamp" ] && [ "$(cat "$dest/.stamp")" = "$stamp" ]; then
	exit 0
fi

mkdir -p "$dest"
rm -f "$dest/.stamp"
members=()
for f in "${files[@]}"; do
	members+=("$TOP/$f")
done
# --strip-components drops the linux-source-6.1/ prefix so DEST looks like a
# kernel tree root ($dest/scripts/checkpatch.pl, ...).
tar -xJf "$TARBALL" -C "$dest" --strip-components=1 "${members[@]}"
for f in "${files[@]}"; do
	[ -f "$dest/$f" ] || { echo "perfclock: $f not found in $TARBALL" >&2; exit 1; }
done
printf '%s\n' "$stamp" >"$dest/.stamp"
echo "perfclock: extracted ${#files[@]} files (kselftest harness, checkpatch) from $TARBALL into $dest"
