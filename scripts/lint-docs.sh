#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/lint-docs.sh — the docs cannot go stale silently (make check's
# lint section). TAP on stdout, exit 1 if anything failed.
#
#  1. Every function a doc names as perfclock_*() or perf_*() (README.md,
#     user/README.md, docs/*.md) exists: in this tree (user/, module/,
#     selftests/, patches/, fuzz/, bench/, examples/: C, headers, the perf
#     patches), else, for the kernel's own perf_*() functions the docs
#     cite, in the kernel's include/linux and kernel/events of Debian's
#     linux-source-6.1, its trace_event_perf.c, trace_syscalls.c,
#     trace_events.h and perf's util/session.h, util/session.c,
#     util/data.c and builtin-inject.c (extracted once into
#     build/ksrc-docs). A name found nowhere
#     fails, with the file and line that names it.
#  2. Each c block of README.md's "Write a tool" is the code of the file
#     it names (the last examples/*.c the text names before it, since
#     the block before): each piece between "..." lines appears in the
#     file, whole and in order. Every examples/*.c is quoted so, and
#     README.md gives its line count right. Relative links lead to files
#     that exist.
#  3. The commands of README.md's "Write a tool" sh blocks run, as
#     written but for where they install: PREFIX, PKG_CONFIG_PATH and
#     LD_LIBRARY_PATH point at a temporary directory, "sudo " is dropped,
#     each tracer runs 0.2 s, not 1; the tracers' runs need root and
#     tracefs (else they are a SKIP, said).
#
#   scripts/lint-docs.sh [--self-test]
# --self-test checks that check 1 fails on a doc naming a function that
# does not exist and check 2 on a README whose code drifted, in either
# block (temporary copies; the tree is not touched).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/tap-lib.sh

TARBALL=${KERNEL_SRC_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
KDOCS=build/ksrc-docs
TREE_DIRS="user module selftests patches fuzz bench examples"

# The kernel's perf files, once (one pass over the tarball, ~10 s). The
# stamp holds the member list too: a file added here is extracted.
KDOCS_MEMBERS=(kernel/events/\* include/linux/perf_event.h
	include/uapi/linux/perf_event.h include/linux/trace_events.h
	kernel/trace/trace_event_perf.c kernel/trace/trace_syscalls.c
	tools/perf/util/session.h tools/perf/util/session.c
	tools/perf/builtin-inject.c tools/perf/util/data.c)
kernel_src() {
	local stamp m members=()
	[ -r "$TARBALL" ] || return 1
	stamp="$(stat -c '%s %Y' "$TARBALL") ${KDOCS_MEMBERS[*]}"
	[ -f "$KDOCS/.stamp" ] && [ "$(cat "$KDOCS/.stamp")" = "$stamp" ] && return 0
	for m in "${KDOCS_MEMBERS[@]}"; do members+=("linux-source-6.1/$m"); done
	rm -rf "$KDOCS" && mkdir -p "$KDOCS" &&
		tar -xJf "$TARBALL" -C "$KDOCS" --strip-components=1 --wildcards "${members[@]}" &&
		echo "$stamp" > "$KDOCS/.stamp"
}

# names FILE...: "file:line: name" for every perfclock_*() / perf_*().
names() {
	grep -noE '\b(perfclock|perf)_[A-Za-z0-9_]*\(\)' "$@" /dev/null |
		sed 's/()$//'
}

# check_names FILE...: 0 if every name exists; the missing ones on stdout.
check_names() {
	local have_k=0 where name missing=""
	kernel_src && have_k=1
	while IFS= read -r line; do
		name=${line##*:}
		where=${line%:*}
		# shellcheck disable=SC2086
		if grep -rqw --include='*.c' --include='*.h' --include='*.patch' \
			-- "$name" $TREE_DIRS; then
			continue
		fi
		if [ $have_k = 1 ] && grep -rqw -- "$name" "$KDOCS"; then
			continue
		fi
		missing="$missing$where: $name()"$'\n'
	done < <(names "$@" | sort -t: -k3 -u)
	printf '%s' "$missing"
	[ -z "$missing" ]
}

# The "Write a tool" section of a README: its c blocks and its sh blocks.
section() { awk '/^## Write a tool/ { on = 1; next } /^## / { on = 0 } on' "$1"; }
block() {	# block LANG [N] < section: every LANG block, or the Nth only
	awk -v lang="$1" -v want="${2:-0}" '$0 == "```" lang { on = 1; n++; next }
		/^```/ { on = 0 } on && (!want || n == want)'
}

# block_files README: one line per c block of the section, the file it
# quotes: the last examples/*.c the text names before it, since the
# block before ("-" if none).
block_files() {
	section "$1" | awk '
	/^```/ {
		if ($0 == "```c") {
			print (f == "" ? "-" : f)
			f = ""
		}
		inb = !inb
		next
	}
	!inb {
		while (match($0, /examples\/[A-Za-z0-9_]+\.c/)) {
			f = substr($0, RSTART, RLENGTH)
			$0 = substr($0, RSTART + RLENGTH)
		}
	}'
}

# check_code README SOURCE N: every "..."-separated piece of README's Nth
# c block is a run of whole lines of SOURCE, the pieces in order.
check_code() {
	section "$1" | block c "$3" | awk -v src="$2" '
	BEGIN { while ((getline l < src) > 0) s[++ns] = l }
	function place(   i, k, ok) {	# the piece p[1..np] at or after pos
		for (i = pos; i + np - 1 <= ns; i++) {
			ok = 1
			for (k = 1; k <= np && ok; k++)
				if (s[i + k - 1] != p[k])
					ok = 0
			if (ok)
				return i
		}
		return 0
	}
	function piece(   at) {
		if (!np)
			return
		at = place()
		if (!at) {
			printf "not in %s (in this order): %s\n", src, p[1]
			bad = 1
			exit 1
		}
		pos = at + np
		np = 0
		pieces++
	}
	BEGIN { pos = 1 }
	{ lines++ }
	$0 ~ /^[ \t]*\.\.\.[ \t]*$/ { piece(); next }
	{ p[++np] = $0 }
	END {
		if (bad)
			exit 1
		piece()
		if (!lines) {
			print "no such c block in \"Write a tool\""
			exit 1
		}
		printf "%d pieces, %d lines\n", pieces, lines
	}'
}

if [ "${1:-}" = --self-test ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	cp README.md "$tmp/README.md"
	printf '\nCall perfclock_no_such_function() here.\n' >> "$tmp/README.md"
	if out=$(check_names "$tmp/README.md"); then st=1; else st=0; fi
	printf '%s' "$out" | grep -q 'perfclock_no_such_function()' || st=1
	result "$st" "lint-docs self-test: a doc naming perfclock_no_such_function() fails ($out)"
	cp README.md "$tmp/README.md"
	sed -i -e 's/perfclock_evring_drain(er, q, &st) < 0/perfclock_evring_drain(er, q, NULL) < 0/' \
		-e 's/perfclock_reader_deliver(r, 100);/perfclock_reader_deliver(r, 0);/' "$tmp/README.md"
	nb=0
	for f in $(block_files "$tmp/README.md"); do
		nb=$((nb + 1))
		if out=$(check_code "$tmp/README.md" "$f" $nb); then st=1; else st=0; fi
		result "$st" "lint-docs self-test: README code block $nb that drifted from $f fails ($out)"
	done
	result "$([ $nb = 2 ]; echo $?)" "lint-docs self-test: the drifted README has the two blocks ($nb)"
	finish
fi

docs="README.md user/README.md docs/*.md"
# shellcheck disable=SC2086
out=$(check_names $docs)
result $? "docs: every perfclock_*() and perf_*() that README.md, user/README.md and docs/*.md name exists (this tree, or the kernel's perf files)" "$out"
# shellcheck disable=SC2086
count=$(names $docs | sed 's/.*://' | sort -u | wc -l)
echo "# $count distinct function names checked"

quoted=$(block_files README.md)
nb=0
for f in $quoted; do
	nb=$((nb + 1))
	if ! [ -f "$f" ]; then
		result 1 "docs: README's \"Write a tool\" c block $nb names the file it quotes (names ${f/#-/none})"
		continue
	fi
	out=$(check_code README.md "$f" $nb)
	result $? "docs: README's \"Write a tool\" code block $nb is $f's ($out)" "$out"
done
for f in examples/*.c; do
	printf '%s\n' "$quoted" | grep -qxF "$f"
	result $? "docs: README's \"Write a tool\" quotes $f"
done

# Relative links (](path)) lead to files that exist.
broken=$(for f in $docs; do
	d=$(dirname "$f")
	grep -noE '\]\([^)#[:space:]]+\)' "$f" | sed 's/](//; s/)$//' |
	while IFS=: read -r line target; do
		case $target in http://*|https://*|mailto:*) continue ;; esac
		[ -e "$d/$target" ] || echo "$f:$line: $target"
	done
done)
result "$([ -z "$broken" ]; echo $?)" "docs: every relative link leads to a file that exists" "$broken"

for f in examples/*.c; do
	b=$(basename "$f" .c)
	# shellcheck disable=SC2016
	said=$(sed -n 's/.*`examples\/'"$b"'\.c` (\([0-9]*\) lines).*/\1/p' README.md | head -n 1)
	have=$(wc -l < "$f")
	result "$([ "$said" = "$have" ]; echo $?)" "docs: README gives $f's length (says ${said:-nothing}, has $have lines)"
done

if grep -nE '\b[Ii]ssues? [0-9]+' README.md user/README.md docs/*.md | grep -v "GitHub issue" > "${TMPDIR:-/tmp}/lint-docs.$$"; then
	result 1 "docs: no tracker issue numbers in user-facing docs" "$(cat "${TMPDIR:-/tmp}/lint-docs.$$")"
else
	result 0 "docs: no tracker issue numbers in user-facing docs"
fi
rm -f "${TMPDIR:-/tmp}/lint-docs.$$"

# The commands, run. ~20 s: the library's build is make check's anyway.
tmp=$(mktemp -d)
cmds=$(section README.md | block sh | sed -e 's/[[:space:]]*#.*$//' -e 's/^sudo //' | grep -v '^$')
echo "# README's commands: $(printf '%s' "$cmds" | tr '\n' ';')"
build=$(printf '%s\n' "$cmds" | grep -v '^examples/')
# ldconfig needs root, and a temporary PREFIX is not in its cache anyway.
[ "$(id -u)" = 0 ] || build=$(printf '%s\n' "$build" | grep -v '^ldconfig')
run=$(printf '%s\n' "$cmds" | grep '^examples/')
bins=$(printf '%s\n' "$run" | sed 's/ .*//')
# shellcheck disable=SC2086
rm -f $bins
out=$(env PREFIX="$tmp" PKG_CONFIG_PATH="$tmp/lib/pkgconfig" sh -ec "$build" 2>&1)
result $? "docs: README's build commands run (PREFIX=$tmp)" "$(printf '%s\n' "$out" | tail -20)"
result "$([ -n "$run" ]; echo $?)" "docs: README has run commands ($(printf '%s' "$bins" | tr '\n' ' '))"
while IFS= read -r cmd; do
	[ -n "$cmd" ] || continue
	bin=${cmd%% *}
	if [ "$(id -u)" != 0 ] || ! [ -r /sys/kernel/tracing/events/sched/sched_switch/id ]; then
		skip_result "docs: README's run command $bin" "needs root and tracefs at /sys/kernel/tracing"
	elif [ -x "$bin" ]; then
		out=$(env LD_LIBRARY_PATH="$tmp/lib" sh -ec "${cmd% 1} 0.2" 2>&1 >/dev/null </dev/null)
		result $? "docs: README's run command $bin runs ($(printf '%s\n' "$out" | tail -n 1))" "$out"
	else
		result 1 "docs: README's run command: no $bin was built"
	fi
done <<EOF
$run
EOF
# shellcheck disable=SC2086
rm -rf "$tmp" $bins
finish
