#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/call-layers.sh — no circles among the files of a program: a
# lower file never calls back up into a file that calls it. TAP lines
# (scripts/tap-lib.sh), one per program, exit 1 if any has a circle.
#
# Which file calls a function defined in which other file comes from gcc
# itself (-fcallgraph-info: one .ci graph per translation unit, each
# direct call with the callee's definition), so macros, static inline
# helpers of headers and static functions are told apart as the compiler
# sees them. Calls through pointers (a backend's ops, a callback) are not
# edges: the caller does not name the callee's file. The files are the
# .c files of the program and the project headers whose inline functions
# they call; a call into another program (the demo into the library) or
# the C library is not followed. A circle is a strongly connected
# component of that file graph with more than one file; each is listed
# with one call per file edge inside it, to say where to cut.
#
#   scripts/call-layers.sh [PROGRAM...]       the check
#   scripts/call-layers.sh --self-test        the check's own test
#   scripts/call-layers.sh --edges PROGRAM    every call from a file into
#                                             another, one line each
#   scripts/call-layers.sh --walk FUNCTION [--c-only] [--from PROGRAM...]
#
# PROGRAM: lib (user/'s LIB_SRCS), demo (user/'s DEMO_SRCS), fuzz
# (fuzz/'s FUZZ_SRCS: the module fuzzer), fail-init (fuzz/'s
# FAIL_INIT_SRCS); default all four. The lists are read from the
# Makefiles, so a new file is checked without a change here.
#
# --walk is a measure, not a check (no TAP): it follows FUNCTION down the
# call graph of lib and demo (or the PROGRAMs after --from), depth first,
# each function's calls in source order, each function entered once (a
# call to one already walked is not followed again), going down into
# each call and back up to its caller, and prints the file it is in at
# every step. A "return" is a step into a file the walk had been in and
# left, down or back up. A pipeline that calls each step once costs one
# return per step (back from it); a helper called back and forth, or a
# lower file that calls up, costs more. --c-only leaves the headers'
# inline functions out of the steps (before the layering, at 828d82e,
# demo_run took 19 .c files and 64 returns; 23 files and 74 returns with
# the headers).
#
# --self-test: a made-up program of three files, a.c -> b.c -> c.c -> a.c,
# must be reported as one circle of three; again with c.c's call going
# through a header's static inline function (one circle of four); and no
# circle once the call back up is gone.
#
# Needs gcc (>= 10, for -fcallgraph-info), make and awk; about 10 s.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
. scripts/tap-lib.sh

CC=${CC:-gcc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# make_var DIR VAR: a variable of DIR's Makefile.
make_var() {
	make --no-print-directory -s -C "$1" \
		--eval "print-var-%: ; @echo \$(\$*)" "print-var-$2"
}

# program NAME: DIR, CFLAGS and SRCS of a program.
program() {
	case $1 in
	lib)	DIR=user SRCS=$(make_var user LIB_SRCS)
		CFLAGS="-std=gnu11 -D_GNU_SOURCE -I." ;;
	demo)	DIR=user SRCS=$(make_var user DEMO_SRCS)
		CFLAGS="-std=gnu11 -D_GNU_SOURCE -I." ;;
	fuzz)	DIR=fuzz SRCS=$(make_var fuzz FUZZ_SRCS)
		CFLAGS="-D_GNU_SOURCE" ;;
	fail-init) DIR=fuzz SRCS=$(make_var fuzz FAIL_INIT_SRCS)
		CFLAGS="-D_GNU_SOURCE" ;;
	*)	echo "call-layers: unknown program $1" >&2
		return 1 ;;
	esac
	[ -n "$SRCS" ]
}

# callgraph NAME: $tmp/NAME/*.ci, one per source, or 1 with gcc's errors.
callgraph() {
	local out=$tmp/$1 f ci err=0
	program "$1" || return 1
	mkdir -p "$out"
	for f in $SRCS; do
		ci=$out/$(echo "$f" | tr / _)
		# -O0: every call the source writes is a call (nothing inlined).
		# shellcheck disable=SC2086
		(cd "$DIR" && $CC $CFLAGS -O0 -w -fcallgraph-info \
			-c "$ROOT/$DIR/$f" -o "${ci%.c}.o") || err=1
	done
	return $err
}

# The file graph of the .ci files given: "F file" for each file defining a
# function that is called or calls, "E from to caller callee site" for
# each call from one file into another, "C from to caller callee site"
# for each call (any files; --walk), sites in call order per caller.
# shellcheck disable=SC2016 # awk programs
GRAPH_AWK='
function norm(p,   n, i, k, part, out) {	# /a/b/../c -> /a/c
	n = split(p, part, "/")
	k = 0
	for (i = 1; i <= n; i++) {
		if (part[i] == "." || (part[i] == "" && i > 1))
			continue
		if (part[i] == ".." && k > 1 && stack[k] != "..") {
			k--
			continue
		}
		stack[++k] = part[i]
	}
	out = stack[1]
	for (i = 2; i <= k; i++)
		out = out "/" stack[i]
	return out
}
function rel(p) {	# a project file relative to ROOT, else ""
	p = norm(p)
	if (index(p, root "/") != 1)
		return ""
	return substr(p, length(root) + 2)
}
function field(line, key,   i, s) {	# the quoted value after key
	i = index(line, key ": \"")
	if (!i)
		return ""
	s = substr(line, i + length(key) + 3)
	return substr(s, 1, index(s, "\"") - 1)
}
function where(label,   i) {	# "name\nFILE:L:C" -> FILE, sets line
	i = index(label, "\\n")
	if (i)
		label = substr(label, i + 2)
	n = split(label, w, ":")
	line = w[n - 1] + 0
	sub(/:[0-9]+:[0-9]+$/, "", label)
	return label
}
function fname(label,   i) {
	i = index(label, "\\n")
	return i ? substr(label, 1, i - 1) : label
}
# Pass 1: where each global function is defined.
FNR == 1 { tu++ }
/^node:/ && $0 !~ /shape : ellipse/ {
	t = field($0, "title"); l = field($0, "label")
	f = rel(where(l))
	if (t !~ /:/ && f != "")
		def[t] = f
	tdef[tu, t] = f
	tname[tu, t] = fname(l)
	next
}
/^node:/ {
	t = field($0, "title")
	tname[tu, t] = fname(field($0, "label"))
	next
}
/^edge:/ {
	ne++
	etu[ne] = tu
	esrc[ne] = field($0, "sourcename")
	edst[ne] = field($0, "targetname")
	esite[ne] = rel(where(field($0, "label"))) ":" line
	eline[ne] = line
}
END {
	for (i = 1; i <= ne; i++) {
		u = etu[i]
		from = tdef[u, esrc[i]]
		to = ((u, edst[i]) in tdef) ? tdef[u, edst[i]] : def[edst[i]]
		if (from == "" || to == "")
			continue	# the C library, another program, a pointer
		caller = tname[u, esrc[i]]
		callee = tname[u, edst[i]]
		key = from SUBSEP caller SUBSEP to SUBSEP callee SUBSEP esite[i]
		if (key in seen)
			continue	# a header inline function in several TUs
		seen[key] = 1
		files[from] = files[to] = 1
		printf "C %s %s %s %s %s %d\n", from, to, caller, callee, esite[i], eline[i]
		if (from != to)
			printf "E %s %s %s %s %s\n", from, to, caller, callee, esite[i]
	}
	for (f in files)
		print "F " f
}'

graph() {	# graph NAME...: the graph lines of the programs' .ci files
	local cis=() n
	for n in "$@"; do cis+=("$tmp/$n"/*.ci); done
	awk -v root="$ROOT" "$GRAPH_AWK" "${cis[@]}"
}

# The circles of a graph (stdin): "CIRCLE f1 f2 ..." then "  from -> to:
# caller() calls callee() (site)" for one call per file edge inside it.
# shellcheck disable=SC2016
CIRCLES_AWK='
$1 == "F" { nodes[$2] = 1 }
$1 == "E" {
	if (!(($2, $3) in has)) {
		has[$2, $3] = 1
		adj[$2, ++nadj[$2]] = $3
		why[$2, $3] = sprintf("%s() calls %s() (%s)", $4, $5, $6)
	}
}
function strong(v,   i, w, comp, k) {
	idx[v] = low[v] = cnt++
	stk[++sp] = v
	on[v] = 1
	for (i = 1; i <= nadj[v]; i++) {
		w = adj[v, i]
		if (!(w in idx)) {
			strong(w)
			if (low[w] < low[v])
				low[v] = low[w]
		} else if (on[w] && idx[w] < low[v]) {
			low[v] = idx[w]
		}
	}
	if (low[v] != idx[v])
		return
	k = 0
	do {
		w = stk[sp--]
		on[w] = 0
		member[++k] = w
	} while (w != v)
	if (k < 2)
		return
	comp = ""
	for (i = 1; i <= k; i++) {
		comp = comp " " member[i]
		in_comp[member[i]] = ncomp + 1
	}
	ncomp++
	print "CIRCLE" comp
	for (i = 1; i <= k; i++)
		for (j = 1; j <= nadj[member[i]]; j++)
			if (in_comp[adj[member[i], j]] == ncomp)
				printf "  %s -> %s: %s\n", member[i], adj[member[i], j], why[member[i], adj[member[i], j]]
}
END {
	for (v in nodes)
		if (!(v in idx))
			strong(v)
}'

# check NAME: one TAP result for program NAME.
check_program() {
	local g out nfiles ncalls ncirc
	if ! out=$(callgraph "$1" 2>&1); then
		result 1 "call-layers: $1: builds for the call graph" "$out"
		return
	fi
	g=$(graph "$1")
	nfiles=$(printf '%s\n' "$g" | grep -c '^F ')
	ncalls=$(printf '%s\n' "$g" | grep -c '^E ')
	out=$(printf '%s\n' "$g" | awk "$CIRCLES_AWK")
	ncirc=$(printf '%s\n' "$out" | grep -c '^CIRCLE')
	if [ "$ncirc" -eq 0 ]; then
		result 0 "call-layers: $1: no circle among its $nfiles files ($ncalls calls from one file into another)"
	else
		result 1 "call-layers: $1: $ncirc circle(s) among its $nfiles files: $(printf '%s\n' "$out" |
			sed -n 's/^CIRCLE //p' | sed 's/^/{/; s/$/}/' | tr '\n' ' ' | sed 's/ $//')" "$out"
	fi
}

# walk FUNCTION NAME...: the files the walk from FUNCTION enters, in order.
# shellcheck disable=SC2016
WALK_AWK='
$1 == "C" {
	# A function is FILE:name (two statics of one name differ).
	caller = $2 ":" $4
	callee = $3 ":" $5
	fileof[caller] = $2
	fileof[callee] = $3
	n = ++ncall[caller]
	to[caller, n] = callee
	line[caller, n] = $7
}
function start(f,   k) {	# FILE:name, or a name alone
	for (k in fileof)
		if (k == f || substr(k, length(k) - length(f)) == ":" f)
			return k
	return ""
}
function sort_calls(f,   i, j, t, l) {	# by line (insertion sort)
	for (i = 2; i <= ncall[f]; i++) {
		t = to[f, i]; l = line[f, i]
		for (j = i - 1; j >= 1 && line[f, j] > l; j--) {
			to[f, j + 1] = to[f, j]; line[f, j + 1] = line[f, j]
		}
		to[f, j + 1] = t; line[f, j + 1] = l
	}
}
function enter(file, why) {
	if (noh && file ~ /\.h$/)
		return
	if (file == cur)
		return
	steps++
	if (file in been) {
		returns++
		back[file]++
		printf "%4d  %-28s %s  (return %d)\n", steps, file, why, returns
	} else {
		printf "%4d  %-28s %s\n", steps, file, why
		nfiles++
	}
	been[file] = 1
	cur = file
}
function walk(f,   i, g, name, me) {
	done[f] = 1
	sort_calls(f)
	me = f
	sub(/^.*:/, "", me)
	for (i = 1; i <= ncall[f]; i++) {
		g = to[f, i]
		if (g in done)
			continue
		name = g
		sub(/^.*:/, "", name)
		enter(fileof[g], "<- " name "()")
		walk(g)
		enter(fileof[f], "-> back in " me "()")
	}
}
END {
	s = start(root)
	if (s == "") {
		print "call-layers: no function " root > "/dev/stderr"
		exit 2
	}
	name = s
	sub(/^.*:/, "", name)
	enter(fileof[s], name "()")
	walk(s)
	for (f in back)
		printf "# %s: %d\n", f, back[f] | "sort"
	close("sort")
	printf "%d files, %d returns to a file the walk had left\n", nfiles, returns
}'

walk() {	# walk FUNCTION NOHEADERS NAME...
	local fn=$1 noh=$2 n
	shift 2
	for n in "$@"; do
		callgraph "$n" >&2 || return 1
	done
	graph "$@" | awk -v root="$fn" -v noh="$noh" "$WALK_AWK"
}

self_test() {
	local d=$tmp/selftest g out
	mkdir -p "$d"
	printf 'void b(void);\nvoid a(void) { b(); }\nvoid z(void) { }\n' > "$d/a.c"
	printf 'void c(void);\nvoid b(void) { c(); }\n' > "$d/b.c"
	printf 'void z(void);\nvoid c(void) { z(); }\n' > "$d/c.c"
	mkdir -p "$tmp/self"
	for f in a b c; do
		$CC -O0 -w -fcallgraph-info -c "$d/$f.c" -o "$tmp/self/$f.o"
	done
	ROOT=$d
	g=$(graph self)
	out=$(printf '%s\n' "$g" | awk "$CIRCLES_AWK")
	[ "$(printf '%s\n' "$out" | grep -c '^CIRCLE')" = 1 ] &&
		printf '%s\n' "$out" | grep '^CIRCLE' | tr ' ' '\n' | sort |
		tr '\n' ' ' | grep -qx 'CIRCLE a.c b.c c.c '
	result $? "call-layers self-test: a.c -> b.c -> c.c -> a.c is one circle of three" "$out"
	# The same circle, c.c's call through a header's inline function.
	printf 'void z(void);\nstatic inline void via(void) { z(); }\n' > "$d/h.h"
	printf '#include "h.h"\nvoid c(void) { via(); }\n' > "$d/c.c"
	$CC -O0 -w -fcallgraph-info -c "$d/c.c" -o "$tmp/self/c.o"
	out=$(graph self | awk "$CIRCLES_AWK")
	printf '%s\n' "$out" | grep '^CIRCLE' | tr ' ' '\n' | sort |
		tr '\n' ' ' | grep -qx 'CIRCLE a.c b.c c.c h.h '
	result $? "call-layers self-test: the circle through h.h's static inline via() is one of four" "$out"
	# No circle once a.c's z() moves below (into c.c): a -> b -> c.
	printf 'void z(void) { }\nvoid c(void) { z(); }\n' > "$d/c.c"
	printf 'void b(void);\nvoid a(void) { b(); }\n' > "$d/a.c"
	for f in a c; do
		$CC -O0 -w -fcallgraph-info -c "$d/$f.c" -o "$tmp/self/$f.o"
	done
	rm -f "$d/h.h"
	out=$(graph self | awk "$CIRCLES_AWK")
	[ -z "$out" ]
	result $? "call-layers self-test: a.c -> b.c -> c.c alone is no circle" "$out"
	ROOT=$PWD
}

case ${1:-} in
--self-test)
	self_test
	exit "$rc" ;;
--graph)		# the raw graph lines (GRAPH_AWK), for other tools
	shift
	for p in "$@"; do callgraph "$p" >&2 || exit 1; done
	graph "$@"
	exit ;;
--edges)
	[ $# -eq 2 ] || { echo "usage: $0 --edges PROGRAM" >&2; exit 2; }
	callgraph "$2" >&2 || exit 1
	graph "$2" | awk '$1 == "E" { printf "%s -> %s: %s() calls %s()\n", $2, $3, $4, $5 }' |
		sort -u
	exit ;;
--walk)
	[ $# -ge 2 ] || { echo "usage: $0 --walk FUNCTION [--c-only] [--from PROGRAM...]" >&2; exit 2; }
	fn=$2 noh=0
	shift 2
	progs=(lib demo)
	if [ "${1:-}" = --c-only ]; then
		noh=1
		shift
	fi
	if [ "${1:-}" = --from ]; then
		shift
		progs=("$@")
	fi
	walk "$fn" "$noh" "${progs[@]}"
	exit ;;
esac

[ $# -gt 0 ] || set -- lib demo fuzz fail-init
for p in "$@"; do
	check_program "$p"
done
exit "$rc"
