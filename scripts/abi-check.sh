#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# scripts/abi-check.sh — libperfclock's exported ABI against the committed
# baseline, user/libperfclock.abi (the policy: user/README.md, "ABI").
#
#   abi-check.sh list SO             the soname and every exported
#                                    symbol@NODE of SO, sorted
#   abi-check.sh check SO BASELINE   compare SO with BASELINE; exit 1 if
#                                    the soname differs, or an existing
#                                    symbol vanished or changed node, or a
#                                    new symbol went into a node BASELINE
#                                    already has; a new symbol in a new node
#                                    passes, and the lines to add to
#                                    BASELINE are printed
#   abi-check.sh baseline SO VERSION a fresh baseline for SO (after a
#                                    soname change), every node "since"
#                                    VERSION
#   abi-check.sh symbols MAP BASELINE SONAME PACKAGE VERSION
#                                    the Debian symbols file (debian/
#                                    PACKAGE.symbols): every symbol of
#                                    BASELINE and of MAP, with its node
#                                    (symbol@NODE) and the version that
#                                    first shipped the node (BASELINE's
#                                    "node" lines; VERSION for a node only
#                                    MAP has). Fails if SONAME is not
#                                    BASELINE's.
#
# Why the symbols file holds BASELINE's symbols and not only MAP's: made
# from the map alone, a symbol dropped from the map would drop out of the
# symbols file too, and dpkg-gensymbols -c4 would see nothing missing.
# With the released symbols in it, a symbol removed from the map, or moved
# to another node, is "lost" to dpkg-gensymbols, which fails the build.
#
# Each minimum version carries a "~" (0.2.0~, sorting just below 0.2.0):
# dpkg-gensymbols counts a symbol as lost only when the package is newer
# than the symbol's version (Dpkg/Shlibs/Symbol.pm:mark_not_found_in_library),
# so with a bare 0.2.0 a symbol gone from the 0.2.0 build itself would
# pass. Dependencies come out as "libperfclock0 (>= 0.2.0~)", which 0.2.0
# satisfies.
#
# Baseline format: "#" comments, then
#   soname libperfclock.so.0
#   node PERFCLOCK_0 0.2.0          (a version node, the release that added it)
#   perfclock_close@PERFCLOCK_0     (one exported symbol a line)
set -eu

die() { echo "abi-check.sh: $*" >&2; exit 2; }

# The soname and symbol@NODE of every defined, versioned dynamic symbol;
# readelf marks the default version "@@", a compat one "@": both are ABI.
# The ABS entries are the version nodes' own definitions.
list() {
	[ -r "$1" ] || die "no such library: $1"
	soname=$(readelf -d "$1" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
	[ -n "$soname" ] || die "$1 has no soname"
	echo "soname $soname"
	readelf --dyn-syms -W "$1" |
		awk '$1 ~ /^[0-9]+:$/ && $7 != "UND" && $7 != "ABS" && $8 ~ /@/ {
			sub(/@@/, "@", $8); print $8 }' | sort -u
}

baseline_soname() { sed -n 's/^soname //p' "$1"; }
baseline_syms() { grep -v '^#' "$1" | grep '@' | sort -u; }
baseline_nodes() { sed -n 's/^node \([^ ]*\) .*/\1/p' "$1"; }

cmd_check() {
	so=$1 base=$2
	[ -r "$base" ] || die "no such baseline: $base"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	list "$so" >"$tmp/built"
	have=$(sed -n 's/^soname //p' "$tmp/built")
	want=$(baseline_soname "$base")
	if [ "$have" != "$want" ]; then
		echo "abi: $so has soname $have, the baseline $base is for $want."
		echo "abi: a new soname starts a new ABI: write its baseline with"
		echo "abi:   scripts/abi-check.sh baseline $so \$(cat VERSION) > $base"
		return 1
	fi
	grep '@' "$tmp/built" >"$tmp/now" || true
	baseline_syms "$base" >"$tmp/was"
	baseline_nodes "$base" >"$tmp/nodes"
	bad=0
	# Released symbols: still there, in the same node.
	while IFS=@ read -r sym node; do
		now=$(grep "^$sym@" "$tmp/now" | cut -d@ -f2 | tr '\n' ' ')
		if [ -z "$now" ]; then
			echo "abi: REMOVED $sym@$node (released in $node): removing a symbol needs a soname change"
			bad=1
		elif ! grep -qx "$sym@$node" "$tmp/now"; then
			echo "abi: MOVED $sym from $node to ${now% }: changing a symbol's node needs a soname change"
			bad=1
		fi
	done <"$tmp/was"
	# New symbols: in a new node only.
	comm -13 "$tmp/was" "$tmp/now" >"$tmp/new"
	while IFS=@ read -r sym node; do
		grep -q "^$sym@" "$tmp/was" && continue	# reported as MOVED
		if grep -qx "$node" "$tmp/nodes"; then
			echo "abi: ADDED $sym to $node, a node already released: new symbols go in a new node (user/libperfclock.map)"
			bad=1
		fi
	done <"$tmp/new"
	[ "$bad" -eq 0 ] || return 1
	n=$(wc -l <"$tmp/now")
	if [ -s "$tmp/new" ]; then
		echo "abi: $n symbols, $(wc -l <"$tmp/new") new in new nodes; add to $base:"
		cut -d@ -f2 "$tmp/new" | sort -u | while read -r node; do
			echo "node $node $(cat "$(dirname "$0")/../VERSION" 2>/dev/null || echo VERSION)"
		done | sed 's/^/abi:   /'
		sed 's/^/abi:   /' "$tmp/new"
	else
		echo "abi: $n symbols, soname $have: as in $base"
	fi
}

cmd_baseline() {
	so=$1 version=$2
	list "$so" >"${TMPDIR:-/tmp}/abi.$$"
	echo "# libperfclock's released ABI: scripts/abi-check.sh compares the built"
	echo "# library with it (make -C user check). Policy: user/README.md, \"ABI\"."
	sed -n '/^soname /p' "${TMPDIR:-/tmp}/abi.$$"
	grep '@' "${TMPDIR:-/tmp}/abi.$$" | cut -d@ -f2 | sort -u | sed "s/\$/ $version/; s/^/node /"
	grep '@' "${TMPDIR:-/tmp}/abi.$$"
	rm -f "${TMPDIR:-/tmp}/abi.$$"
}

# The map's global symbols as symbol@NODE: comments dropped, then each
# "NODE {" opens a node, "local:" ends its global part, "}" closes it.
map_syms() {
	sed -e ':a' -e '/\/\*/{' -e '/\*\//!{N;ba' -e '}' -e 's|/\*.*\*/||' -e '}' "$1" |
		tr ';' '\n' | awk '
		/{/ { sub(/{.*/, ""); gsub(/[ \t]/, ""); node = $0; global = 1; next }
		/}/ { node = ""; next }
		/local:/ { global = 0; next }
		/global:/ { sub(/.*global:/, "") }
		{ gsub(/[ \t]/, "") }
		node != "" && global && $0 != "" { print $0 "@" node }' | sort -u
}

cmd_symbols() {
	map=$1 base=$2 soname=$3 pkg=$4 version=$5
	[ -r "$map" ] || die "no such map: $map"
	[ -r "$base" ] || die "no such baseline: $base"
	want=$(baseline_soname "$base")
	[ "$soname" = "$want" ] ||
		die "soname $soname, but $base is for $want: write the new soname's baseline first (scripts/abi-check.sh baseline)"
	echo "$soname $pkg #MINVER#"
	echo "* Build-Depends-Package: ${pkg%%[0-9]*}-dev"
	{ baseline_syms "$base"; map_syms "$map"; } | sort -u >"${TMPDIR:-/tmp}/abi.$$"
	# Each node's own symbol (NODE@NODE) is exported too: dpkg-gensymbols
	# lists it.
	cut -d@ -f2 "${TMPDIR:-/tmp}/abi.$$" | sort -u | sed 's/.*/&@&/' >>"${TMPDIR:-/tmp}/abi.$$"
	sort -u "${TMPDIR:-/tmp}/abi.$$" | while IFS=@ read -r sym node; do
		since=$(sed -n "s/^node $node //p" "$base")
		echo " $sym@$node ${since:-$version}~"
	done
	rm -f "${TMPDIR:-/tmp}/abi.$$"
}

[ $# -ge 1 ] || { sed -n '4,28p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 64; }
cmd=$1
shift
case "$cmd" in
list)     [ $# -eq 1 ] || die "usage: list SO"; list "$1" ;;
check)    [ $# -eq 2 ] || die "usage: check SO BASELINE"; cmd_check "$@" ;;
baseline) [ $# -eq 2 ] || die "usage: baseline SO VERSION"; cmd_baseline "$@" ;;
symbols)  [ $# -eq 5 ] || die "usage: symbols MAP BASELINE SONAME PACKAGE VERSION"; cmd_symbols "$@" ;;
*)        die "unknown command '$cmd' (list check baseline symbols)" ;;
esac
