#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/check-clients.sh — what `make check-clients` runs: a client
# nobody here wrote, microsoft/LinuxTracepoints' perf-collect (its issue
# #65: rounds written out of time order), stock and with the pull
# requests in patches/linuxtracepoints/, on the same loads.
#
#   1. installs what is missing (scripts/deps.sh build vm clients);
#   2. takes LinuxTracepoints at LT_COMMIT: from LT_REPO (a clone; default
#      this machine's mirror if there is one), else from the git archive
#      the project keeps beside the tree (../shared/clients: a CI machine
#      has no network), its commit id checked (git get-tar-commit-id) and
#      made a one-commit repository;
#   3. applies the pull requests in order with `git am` (LT_SETS: pr1
#      attr.size, pr2 FlushRoundToWriter with rounds ending at a plain
#      clock read, pr3 libperfclock's horizon as an opt-in), each prefix a
#      tree of its own; builds libperfclock from this tree (make -C user
#      lib install, a private prefix); builds, static, with cmake + make:
#      stock perf-collect and perf-decode; "plain" (pr1 + pr2: no new
#      dependency); "exact" (all three, -DUSE_LIBPERFCLOCK=ON, found
#      through pkg-config); checks that without the option the library
#      is neither looked for nor compiled in, and that asking for it when
#      it is missing stops cmake; runs the project's unit tests (ctest)
#      upstream and with each pull request applied. Builds are cached
#      under $PERFCLOCK_CACHE/clients, keyed by the upstream commit, the
#      patches' diffs, the library's sources (for exact), the compiler
#      and this recipe;
#   4. on the host (root, tracefs; real events, no module: libperfclock's
#      membarrier horizon for CLOCK_MONOTONIC_RAW) and in 8-vCPU
#      overcommitted TCG guests (boot() in scripts/vm-lib.sh, --smp 8, one
#      per clock regime in GUEST_REGIMES), runs scripts/guest/clients.sh:
#      for each load the three builds collect AT ONCE while clients-load
#      runs (each its own events: the same occurrences), then every file
#      is read by stock perf-decode, Debian's perf 6.1 (the oldest the
#      archive offers; in the guest the same binary with its libraries
#      and loader) and this tree's perf-data-order, which reads perf.data
#      itself.
#
# Per run it prints
#   # client perf-collect scenario=L where=W stock_inv=N plain_inv=N exact_inv=N stock_lost=N plain_lost=N exact_lost=N rounds=S/P/E samples=S/P/E inv_by=decode:S/P/E,perf:S/P/E
# *_inv: samples stamped below the newest sample of an earlier round
# (perf-data-order's count; inv_by the same counted from perf-decode's
# output and from perf script's, "unreadable" where perf cannot open the
# file); *_lost: records the kernel dropped (PERF_RECORD_LOST); rounds:
# PERF_RECORD_FINISHED_ROUND markers.
# TAP per run: each build ran; plain's rounds ended at a clock read and
# exact's at an exact horizon; both wrote at least 5 rounds; the exact
# file has 0 inversions by all three counters; on the plain file the
# three counters agree (perf can read it: a count, never "unreadable");
# on the stock file perf-data-order and perf-decode agree; the plain and
# exact files read by the stock readers give no new warning and the same
# number of samples to every reader. plain_inv is shown, not judged: it
# is what the simplest fix gets. The check fails if stock never inverts.
# Last line "N passed, N failed, N skipped".
#
# Environment:
#   PERFCLOCK_CACHE  cache root (default /var/cache/perfclock)
#   LT_REPO, LT_COMMIT  where to clone LinuxTracepoints from, and the
#                    upstream commit the series is against
#   LT_ARCHIVE       its git archive (default ../shared/clients/
#                    LinuxTracepoints-<12 hex digits of LT_COMMIT>.tar.gz)
#   HOST_LOADS, GUEST_LOADS  scripts/guest/clients.sh's loads (default
#                    "busy switch irq-mixed quiet" and "busy irq-mixed quiet")
#   HOST_SECONDS, GUEST_SECONDS  seconds of load per run (default 3, 4)
#   GUEST_REGIMES    the guests' clock regimes (default "stable unstable")
#   LT_SETS          the pull requests' directories, in order
#   CLIENTS_SKIP     space-separated: host guest
#   JOBS             make -j (default 2)
# Logs: build/clients/.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
top=$(pwd)

CACHE=${PERFCLOCK_CACHE:-/var/cache/perfclock}/clients
LT_COMMIT=${LT_COMMIT:-9ff8fe86f9a33ac606605ae2510283ef062ddf6a}
MIRROR=/work/.mirror/microsoft+LinuxTracepoints/repo
# Debian's archive is the only network a CI machine here has: GitHub is
# tried only when asked for (LT_REPO=https://...). With no cached tree,
# no mirror and no LT_REPO the whole target is one SKIP that says so.
if [ -z "${LT_REPO:-}" ] && [ -d "$MIRROR" ]; then
	LT_REPO=$MIRROR
fi
LT_ARCHIVE=${LT_ARCHIVE:-$top/../shared/clients/LinuxTracepoints-${LT_COMMIT:0:12}.tar.gz}
LT_PATCHES=${LT_PATCHES:-patches/linuxtracepoints}
HOST_LOADS=${HOST_LOADS:-busy switch irq-mixed quiet}
GUEST_LOADS=${GUEST_LOADS:-busy irq-mixed quiet}
HOST_SECONDS=${HOST_SECONDS:-3}
GUEST_SECONDS=${GUEST_SECONDS:-4}
GUEST_REGIMES=${GUEST_REGIMES:-stable unstable}
CLIENTS_SKIP=${CLIENTS_SKIP:-}
JOBS=${JOBS:-2}
# Bump when the way perf-collect is built changes.
RECIPE=1

log=build/clients
rm -rf "$log"
mkdir -p "$log/bin" "$CACHE"
TAP_PREFIX="clients: "
. scripts/tap-lib.sh
. scripts/vm-lib.sh
skip() { case " $CLIENTS_SKIP " in *" $1 "*) return 0 ;; esac; return 1; }
hash16() { sha256sum | cut -c1-16; }

echo "TAP version 13"
scripts/deps.sh build vm clients >&2
result $? "packages installed"
[ "$failed" -eq 0 ] || finish

# ---- the upstream tree ---------------------------------------------------------
exec 9>"$CACHE/../clients.lock"
flock 9		# one build at a time per cache; a second run waits, then reuses
src=$CACHE/src-$LT_COMMIT
if [ ! -f "$src/.done" ] && [ -z "${LT_REPO:-}" ] && [ ! -r "$LT_ARCHIVE" ]; then
	skip_result "LinuxTracepoints at $LT_COMMIT" \
		"no source on this machine: no $src, no $MIRROR, no $LT_ARCHIVE; give LT_REPO=URL or a path to a clone"
	finish
fi
# Where the series applies: LT_COMMIT in a clone; in a tree made from
# the archive, the one commit made of it (.base says which).
if [ ! -f "$src/.done" ] && [ -z "${LT_REPO:-}" ]; then
	rm -rf "$src"
	mkdir -p "$src"
	id=$(gzip -dc "$LT_ARCHIVE" | git get-tar-commit-id)
	if [ "$id" != "$LT_COMMIT" ]; then
		result 1 "$LT_ARCHIVE is LinuxTracepoints at $LT_COMMIT (its commit id: ${id:-none})"
		finish
	fi
	tar -xzf "$LT_ARCHIVE" -C "$src" --strip-components=1 > "$log/clone.log" 2>&1 &&
		git -C "$src" init -q >> "$log/clone.log" 2>&1 &&
		git -C "$src" add -A >> "$log/clone.log" 2>&1 &&
		git -C "$src" -c user.name=check-clients -c user.email=check-clients@localhost \
			commit -q -m "LinuxTracepoints $LT_COMMIT (git archive)" >> "$log/clone.log" 2>&1 &&
		git -C "$src" rev-parse HEAD > "$src/.base"
	st=$?
	[ $st -eq 0 ] && touch "$src/.done"
	[ $st -eq 0 ] || sed 's/^/# /' "$log/clone.log"
	result $st "LinuxTracepoints at $LT_COMMIT from $(basename "$LT_ARCHIVE") (its commit id checked)"
	[ $st -eq 0 ] || finish
elif [ ! -f "$src/.done" ]; then
	rm -rf "$src"
	git clone -q --no-checkout "$LT_REPO" "$src" > "$log/clone.log" 2>&1 &&
		git -C "$src" checkout -q --detach "$LT_COMMIT" >> "$log/clone.log" 2>&1
	st=$?
	[ $st -eq 0 ] && touch "$src/.done"
	[ $st -eq 0 ] || sed 's/^/# /' "$log/clone.log"
	result $st "LinuxTracepoints cloned from $LT_REPO at $LT_COMMIT"
	[ $st -eq 0 ] || finish
else
	result 0 "LinuxTracepoints at $LT_COMMIT (cached)"
fi

# The series: three pull requests, each a directory of git-am patches
# (LT_SETS, in order). "plain" is the tree with the first two (no new
# dependency: rounds end at a clock read taken before each drain),
# "exact" with all three (rounds end at libperfclock's horizon when
# configured with -DUSE_LIBPERFCLOCK=ON).
LT_SETS=${LT_SETS:-pr1-attr-size pr2-flush-round pr3-round-end-provider}
LT_PATCHES=$(realpath -m "$LT_PATCHES")
read -r -a sets <<< "$LT_SETS"
set_patches() { ls "$LT_PATCHES/$1"/0*.patch 2>/dev/null; }
for set in "${sets[@]}"; do
	nps=$(set_patches "$set" | wc -l)
	echo "# $set: $nps patches against $LT_COMMIT"
	for p in $(set_patches "$set"); do
		echo "#   $(basename "$p") $(sha256sum < "$p" | cut -c1-12)"
	done
	[ "$nps" -gt 0 ]
	result $? "$set holds the pull request's patches ($nps)"
done
[ "$failed" -eq 0 ] || finish
# The code the sets change, not their messages: rewording a patch
# rebuilds nothing. key_of N: the first N sets.
key_of() {
	local i
	for ((i = 0; i < $1; i++)); do
		for p in $(set_patches "${sets[$i]}"); do sed -n '/^diff --git/,$p' "$p" | sed '/^-- $/,$d'; done
	done | hash16
}
base_key=$( { echo "$LT_COMMIT recipe $RECIPE"; gcc --version | head -n 1; cmake --version | head -n 1; } | hash16)

# tree_of N: the upstream tree with the first N sets applied by git am
# (what a maintainer would run), cached; sets tree and tree_key.
tree_of() {
	local k=$1 i st old list=()
	tree_key=$base_key-$(key_of "$k")
	tree=$CACHE/tree$k-$tree_key
	for ((i = 0; i < k; i++)); do
		mapfile -t -O "${#list[@]}" list < <(set_patches "${sets[$i]}")
	done
	for old in "$CACHE"/tree"$k"-*; do
		[ "$old" = "$tree" ] || rm -rf "$old"
	done
	if [ -f "$tree/.done" ]; then
		result 0 "${sets[$((k - 1))]}: the first $k pull requests apply with git am to $LT_COMMIT (cached)"
		return 0
	fi
	rm -rf "$tree"
	git clone -q "$src" "$tree" > "$log/am$k.log" 2>&1 &&
		git -C "$tree" checkout -q --detach "$(cat "$src/.base" 2>/dev/null || echo "$LT_COMMIT")" &&
		git -C "$tree" -c user.name=check-clients -c user.email=check-clients@localhost \
			am -q "${list[@]}" >> "$log/am$k.log" 2>&1
	st=$?
	[ $st -eq 0 ] && touch "$tree/.done"
	[ $st -eq 0 ] || sed 's/^/# /' "$log/am$k.log" | tail -n 20
	result $st "${sets[$((k - 1))]}: the first $k pull requests apply with git am to $LT_COMMIT"
}
trees=() tree_keys=()
for ((j = 1; j <= ${#sets[@]}; j++)); do
	tree_of $j || finish
	trees+=("$tree")
	tree_keys+=("$tree_key")
done
plain_tree=${trees[1]} exact_tree=${trees[2]}

# ---- libperfclock, from this tree ---------------------------------------------------
lib_key=$( { for f in user/*.c user/*.h user/perfclock/*.h user/Makefile user/libperfclock.map user/libperfclock.pc.in \
	module/perfclock_ioctl.h VERSION; do echo "== $f"; cat "$f"; done; } | hash16)
prefix=$CACHE/perfclock-$lib_key
if [ ! -f "$prefix/.done" ]; then
	rm -rf "$prefix"
	make -C user --no-print-directory lib -j"$JOBS" > "$log/lib.log" 2>&1 &&
		make -C user --no-print-directory install PREFIX="$prefix" >> "$log/lib.log" 2>&1
	st=$?
	[ $st -eq 0 ] && touch "$prefix/.done"
	[ $st -eq 0 ] || tail -n 20 "$log/lib.log" | sed 's/^/# /'
	result $st "libperfclock built and installed in $prefix (make -C user lib install)"
	[ $st -eq 0 ] || finish
else
	result 0 "libperfclock in $prefix (cached)"
fi

# ---- the builds ---------------------------------------------------------------------
# build NAME TREE KEY TARGETS [CMAKE ARG...]: a static Release build of
# TARGETS in $CACHE/build-NAME-KEY, with the environment the caller set
# for pkg-config. Sets bdir. Fails if cmake or make fails.
build() {
	local name=$1 tree=$2 key=$3 targets=$4 st
	shift 4
	bdir=$CACHE/build-$name-$key
	if [ -f "$bdir/.done" ]; then
		# Its logs, for the checks below.
		cp "$bdir/cmake.log" "$log/$name-cmake.log"
		cp "$bdir/make.log" "$log/$name-make.log"
		result 0 "$name: built (cached, $key)"
		return 0
	fi
	for old in "$CACHE"/build-"$name"-*; do
		[ "$old" = "$bdir" ] || rm -rf "$old"
	done
	rm -rf "$bdir" && mkdir -p "$bdir"
	# shellcheck disable=SC2086 # the targets are separate words
	cmake -S "$tree" -B "$bdir" -DCMAKE_BUILD_TYPE=Release -DBUILD_SAMPLES=OFF \
		-DBUILD_TESTING=OFF -DCMAKE_EXE_LINKER_FLAGS=-static "$@" > "$bdir/cmake.log" 2>&1 &&
		make -C "$bdir" -j"$JOBS" $targets > "$bdir/make.log" 2>&1
	st=$?
	cp "$bdir/cmake.log" "$log/$name-cmake.log"
	cp "$bdir/make.log" "$log/$name-make.log" 2>/dev/null
	[ $st -eq 0 ] && touch "$bdir/.done"
	[ $st -eq 0 ] || tail -n 20 "$bdir/make.log" "$bdir/cmake.log" 2>/dev/null | sed 's/^/# /'
	result $st "$name: cmake + make $targets (static)"
}
b0=$(date +%s)
nolib_pc=$log/no-pkgconfig
mkdir -p "$nolib_pc"
# Stock: the upstream commit as it is. (An assignment before a function
# call holds, exported, while it runs.)
PKG_CONFIG_PATH='' PKG_CONFIG_LIBDIR=$top/$nolib_pc build stock "$src" "$base_key" "perf-collect perf-decode"
stock_bin=$bdir/bin
# Plain: pull requests 1 and 2, nothing new to find.
PKG_CONFIG_PATH='' PKG_CONFIG_LIBDIR=$top/$nolib_pc build plain "$plain_tree" "${tree_keys[1]}" perf-collect
plain_bin=$bdir/bin
# Exact: all three, asked for libperfclock (found through pkg-config).
# Static: the imported target takes the library pkg-config names, the
# shared one where both are installed; this copy of the prefix has only
# the archive.
sprefix=$CACHE/perfclock-static-$lib_key
if [ ! -f "$sprefix/.done" ]; then
	rm -rf "$CACHE"/perfclock-static-* && cp -a "$prefix" "$sprefix" &&
		rm -f "$sprefix"/lib/libperfclock.so* &&
		sed -i "s|$prefix|$sprefix|g" "$sprefix/lib/pkgconfig/libperfclock.pc" &&
		touch "$sprefix/.done"
fi
PKG_CONFIG_PATH=$sprefix/lib/pkgconfig build exact "$exact_tree" "${tree_keys[2]}-$lib_key" perf-collect \
	-DUSE_LIBPERFCLOCK=ON
exact_bin=$bdir/bin
echo "# builds: $(( $(date +%s) - b0 )) s"

# (nm's output taken whole: grep -q would stop reading early, and under
# pipefail nm's SIGPIPE would fail the pipe.)
syms=$(nm "$exact_bin/perf-collect" 2>/dev/null)
grep -q ' T perfclock_horizon$' <<<"$syms"
result $? "exact: -DUSE_LIBPERFCLOCK=ON found libperfclock ($(grep -o 'libperfclock[^ ]* [0-9.]*' "$log/exact-cmake.log" | head -n 1)) and perf-collect links it"
syms=$(nm "$plain_bin/perf-collect" 2>/dev/null)
[ -n "$syms" ] && ! grep -q perfclock_ <<<"$syms"
result $? "plain: perf-collect builds with no new dependency (no perfclock_ symbol)"
w=$(grep -h 'warning:' "$log/plain-make.log" "$log/exact-make.log" 2>/dev/null)
[ -z "$w" ]
result $? "plain and exact builds: no compiler warning (the project's -Wall -Wextra)" "$w"
# The option is off by default: with libperfclock installed and findable,
# a plain configure of all three pull requests neither looks for it nor
# compiles it in.
off=$log/default-build
rm -rf "$off"
PKG_CONFIG_PATH=$prefix/lib/pkgconfig cmake -S "$exact_tree" -B "$off" -DBUILD_SAMPLES=OFF -DBUILD_TESTING=OFF \
	> "$log/default-cmake.log" 2>&1 &&
	! grep -rqE 'HAVE_LIBPERFCLOCK|-lperfclock|libperfclock\.' "$off/libtracepoint-control-cpp/tools/CMakeFiles" &&
	! grep -q '^LIBPERFCLOCK_[A-Z_]*:' "$off/CMakeCache.txt"
result $? "all three pull requests, configured without -DUSE_LIBPERFCLOCK=ON and libperfclock findable: not looked for, not compiled in"
rm -rf "$off"
# -DUSE_LIBPERFCLOCK=ON without the library: a configure error, not a
# silent fallback.
PKG_CONFIG_PATH='' PKG_CONFIG_LIBDIR=$top/$nolib_pc cmake -S "$exact_tree" -B "$off" -DBUILD_SAMPLES=OFF \
	-DBUILD_TESTING=OFF -DUSE_LIBPERFCLOCK=ON > "$log/missing-cmake.log" 2>&1
st=$?
[ $st -ne 0 ] && grep -qi 'libperfclock' "$log/missing-cmake.log"
result $? "-DUSE_LIBPERFCLOCK=ON with no libperfclock: cmake stops and names it (exit $st)"
rm -rf "$off"

# The project's own unit tests (ctest), upstream and with each pull
# request applied in turn to one work tree, rebuilt incrementally: none
# that passes upstream may fail, and none may go missing.
ut_src=$top/$log/utest-src ut_bld=$top/$log/utest-build
utest() { # NAME: builds and runs them; sets utest_total, utest_fail
	local out=$top/$log/utest-$1
	{ [ -f "$ut_bld/CMakeCache.txt" ] ||
		cmake -S "$ut_src" -B "$ut_bld" -DCMAKE_BUILD_TYPE=Release -DBUILD_SAMPLES=OFF -DBUILD_TESTING=ON; } \
		> "$out.log" 2>&1 && make -C "$ut_bld" -j"$JOBS" >> "$out.log" 2>&1
	local st=$?
	(cd "$ut_bld" && ctest --output-on-failure > "$out.ctest" 2>&1)
	utest_total=$(sed -n 's/.* tests passed, [0-9]* tests failed out of \([0-9]*\)/\1/p' "$out.ctest")
	utest_fail=$(sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\) (.*/\1/p' "$out.ctest" | sort | tr '\n' ' ')
	[ $st -eq 0 ] && [ -n "$utest_total" ]
}
t0=$(date +%s)
rm -rf "$ut_src" "$ut_bld"
git clone -q "$src" "$ut_src" > "$log/utest-clone.log" 2>&1 &&
	git -C "$ut_src" checkout -q --detach "$(cat "$src/.base" 2>/dev/null || echo "$LT_COMMIT")" >> "$log/utest-clone.log" 2>&1
PKG_CONFIG_PATH='' PKG_CONFIG_LIBDIR=$top/$nolib_pc utest upstream
result $? "upstream: its unit tests build and run (${utest_total:-?} tests; failing here: ${utest_fail:-none})" "$(tail -n 20 "$log/utest-upstream.log")"
up_fail=$utest_fail up_total=${utest_total:-0}
for ((k = 0; k < ${#sets[@]}; k++)); do
	git -C "$ut_src" -c user.name=check-clients -c user.email=check-clients@localhost \
		am -q $(set_patches "${sets[$k]}") >> "$log/utest-clone.log" 2>&1 &&
		PKG_CONFIG_PATH='' PKG_CONFIG_LIBDIR=$top/$nolib_pc utest "${sets[$k]}"
	st=$?
	new=$(comm -13 <(tr ' ' '\n' <<<"$up_fail" | sort -u) <(tr ' ' '\n' <<<"$utest_fail" | sort -u) | tr '\n' ' ')
	[ $st -eq 0 ] && [ -z "${new// /}" ] && [ "${utest_total:-0}" -ge "$up_total" ]
	result $? "${sets[$k]} (and those before it): the unit tests pass (${utest_total:-?} tests, upstream $up_total; failing here as upstream: ${utest_fail:-none}; newly failing: ${new:-none})" \
		"$(grep -A 15 -E 'Failed|\*\*\*' "$log/utest-${sets[$k]}.ctest" 2>/dev/null | head -n 40)"
done
rm -rf "$ut_src" "$ut_bld"
echo "# unit tests: $(( $(date +%s) - t0 )) s"

# This tree's helpers: the load and the order checker, static.
gcc -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -static -pthread -o "$log/bin/clients-load" \
	scripts/clients/clients-load.c user/demo/load.c > "$log/helpers.log" 2>&1 &&
	gcc -O2 -Wall -Wextra -Werror -static -o "$log/bin/perf-data-order" \
		scripts/clients/perf-data-order.c >> "$log/helpers.log" 2>&1
st=$?
result $st "clients-load and perf-data-order build (static, -Wall -Wextra -Werror)" "$(cat "$log/helpers.log")"
[ $st -eq 0 ] && [ -x "$stock_bin/perf-collect" ] && [ -x "$plain_bin/perf-collect" ] &&
	[ -x "$exact_bin/perf-collect" ] || finish
cp "$stock_bin/perf-collect" "$log/bin/perf-collect-stock"
cp "$plain_bin/perf-collect" "$log/bin/perf-collect-plain"
cp "$exact_bin/perf-collect" "$log/bin/perf-collect-exact"
cp "$stock_bin/perf-decode" "$log/bin/perf-decode"

# ---- results --------------------------------------------------------------------------
stock_seen=""
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
line_of() { grep "^$1 load=$2 build=$3 " "$4" | tail -n 1; }
# Warnings a reader printed for a file, digits made N, less the ones that
# say the file holds PERF_RECORD_LOST records (perf script: "Processed N
# events and lost N chunks!", "Check IO/CPU overload!"): those follow the
# run's lost records, reported as lost_* on their own.
warnings() {
	grep "^CLWARN load=$2 build=$3 reader=$4 " "$1" | sed "s/^CLWARN load=$2 build=$3 reader=$4 //" |
		sed 's/[0-9][0-9]*/N/g' | grep -v -E '^Warning:$|lost N chunks|Check IO/CPU overload' | sort -u
}
# report WHERE FILE: the runs of one scripts/guest/clients.sh output.
report() {
	local where=$1 file=$2 load b desc r new compat inv lost rounds samples perf dec
	local -A run chk dcd prf sts
	for load in $(sed -n 's/^CLRUN load=\([^ ]*\) .*/\1/p' "$file" | sort -u); do
		desc="$where $load"
		for b in stock plain exact; do
			run[$b]=$(line_of CLRUN "$load" $b "$file") chk[$b]=$(line_of CLCHECK "$load" $b "$file")
			dcd[$b]=$(line_of CLDECODE "$load" $b "$file") prf[$b]=$(line_of CLPERF "$load" $b "$file")
			sts[$b]=$(line_of CLSTATS "$load" $b "$file")
		done
		inv="" lost="" rounds="" samples="" perf="" dec=""
		for b in stock plain exact; do
			inv+=" ${b}_inv=$(field inversions "${chk[$b]}")"
			lost+=" ${b}_lost=$(field lost "${chk[$b]}")"
			rounds+="${rounds:+/}$(field rounds "${chk[$b]}")"
			samples+="${samples:+/}$(field samples "${chk[$b]}")"
			dec+="${dec:+/}$(field inversions "${dcd[$b]}")"
			if [ "$(field rc "${prf[$b]}")" = 0 ]; then
				perf+="${perf:+/}$(field inversions "${prf[$b]}")"
			else
				perf+="${perf:+/}unreadable"
			fi
		done
		echo "# client perf-collect scenario=$load where=$where$inv$lost rounds=$rounds samples=$samples inv_by=decode:$dec,perf:$perf"
		si=$(field inversions "${chk[stock]}")
		[ "${si:-0}" -gt 0 ] 2>/dev/null && stock_seen+=" $where:$load($si)"
		for b in stock plain exact; do
			[ "$(field rc "${run[$b]}")" = 0 ] && [ "$(field samples "${chk[$b]}")" -gt 0 ] 2>/dev/null
			result $? "$desc: $b perf-collect ran ($(field samples "${chk[$b]}") samples, $(field inversions "${chk[$b]}") inversions, $(field lost "${chk[$b]}") lost; round end: $(sed -n 's/.*round_end=//p' <<<"${run[$b]}"))"
		done
		grep -q 'round_end="a clock read' <<<"${run[plain]}"
		result $? "$desc: plain: rounds ended at a clock read taken before each drain ($(sed -n 's/.*round_end=//p' <<<"${run[plain]}"))"
		grep -q "round_end=\"libperfclock's flush horizon, exact" <<<"${run[exact]}"
		result $? "$desc: exact: rounds ended at libperfclock's exact horizon ($(sed -n 's/.*round_end=//p' <<<"${run[exact]}"))"
		# Rounds: a file of one round has no order to get wrong.
		[ "$(field rounds "${chk[plain]}")" -ge 5 ] 2>/dev/null && [ "$(field rounds "${chk[exact]}")" -ge 5 ] 2>/dev/null
		result $? "$desc: plain and exact wrote rounds ($rounds, stock/plain/exact)"
		[ "$(field inversions "${chk[exact]}")" = 0 ] && [ "$(field inversions "${dcd[exact]}")" = 0 ] &&
			[ "$(field inversions "${prf[exact]}")" = 0 ] && [ "$(field rc "${prf[exact]}")" = 0 ] &&
			[ "$(field rc "${chk[exact]}")" = 0 ]
		result $? "$desc: exact file: 0 inversions by perf-data-order $(field inversions "${chk[exact]}"), perf-decode $(field inversions "${dcd[exact]}") and perf script $(field inversions "${prf[exact]}") (rc $(field rc "${prf[exact]}"))"
		# perf reads every file the pull requests write (PR 1), so its
		# counter is compared there, never skipped as "unreadable".
		[ "$(field rc "${prf[plain]}")" = 0 ] && [ "$(field inversions "${prf[plain]}")" = "$(field inversions "${chk[plain]}")" ] &&
			[ "$(field inversions "${dcd[plain]}")" = "$(field inversions "${chk[plain]}")" ]
		result $? "$desc: on the plain file the three counters agree (perf-data-order $(field inversions "${chk[plain]}"), perf-decode $(field inversions "${dcd[plain]}"), perf script $(field inversions "${prf[plain]}"), rc $(field rc "${prf[plain]}"))"
		[ "$(field inversions "${dcd[stock]}")" = "$si" ] &&
			{ [ "$(field rc "${prf[stock]}")" != 0 ] || [ "$(field inversions "${prf[stock]}")" = "$si" ]; }
		result $? "$desc: on the stock file perf-data-order and perf-decode agree ($si, $(field inversions "${dcd[stock]}"); perf script: $(cut -d/ -f1 <<<"$perf"))"
		# Compatibility: the new files, read by the stock readers.
		for b in plain exact; do
			new=""
			for r in perf-decode perf-script perf-report; do
				new+=$(comm -13 <(warnings "$file" "$load" stock $r) <(warnings "$file" "$load" $b $r) |
					sed "s/^/$r: /")
			done
			compat=ok
			{ [ "$(field rc "${dcd[$b]}")" = 0 ] && [ "$(field rc "${prf[$b]}")" = 0 ] && [ "$(field rc "${sts[$b]}")" = 0 ] &&
				[ -z "$new" ] && [ "$(field samples "${chk[$b]}")" -gt 0 ] 2>/dev/null &&
				[ "$(field events "${dcd[$b]}")" = "$(field samples "${chk[$b]}")" ] &&
				[ "$(field samples "${prf[$b]}")" = "$(field samples "${chk[$b]}")" ] &&
				[ "$(field samples "${sts[$b]}")" = "$(field samples "${chk[$b]}")" ]; } || compat=bad
			[ "$compat" = ok ]
			result $? "$desc: $b file read by stock perf-decode and Debian's perf: no new warning, the same $(field samples "${chk[$b]}") samples (perf-decode $(field events "${dcd[$b]}"), perf script $(field samples "${prf[$b]}"), perf report --stats $(field samples "${sts[$b]}"))" "$new"
		done
	done
}

# ---- the host -------------------------------------------------------------------------
if skip host; then
	skip_result "host runs" "CLIENTS_SKIP=host"
elif [ "$(id -u)" -ne 0 ]; then
	skip_result "host runs" "not root (perf-collect needs tracefs and perf_event_open)"
else
	mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
	h0=$(date +%s)
	CL_HOST=1 CL_DIR=$top/$log/host CL_BIN=$top/$log/bin CL_PERF=perf LOADS="$HOST_LOADS" \
		SECONDS_PER_RUN=$HOST_SECONDS timeout 900 sh scripts/guest/clients.sh > "$log/host.out" 2>&1
	st=$?
	grep '^#' "$log/host.out"
	grep -q '^CLDONE' "$log/host.out" && [ $st -eq 0 ]
	result $? "host: the runs finished ($(( $(date +%s) - h0 )) s, exit $st)"
	report host "$log/host.out"
	rm -rf "$log/host"
fi

# ---- the guests: 8 vCPUs on this machine's cores, each clock regime ----------------------
if skip guest; then
	skip_result "guest runs" "CLIENTS_SKIP=guest"
else
	guest_kernel || { result 1 "guest: a kernel to boot (guest_kernel)"; finish; }
	payload=$log/payload
	mkdir -p "$payload/lib"
	cp scripts/guest/clients.sh "$payload/run.sh"
	cp "$log"/bin/* "$payload/"
	# Debian's perf, as on the host: the binary, its libraries, its loader.
	perf_bin=$(readlink -f "$(command -v perf)")
	cp "$perf_bin" "$payload/perf"
	ldd "$perf_bin" | awk '$3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | while read -r so; do
		cp -L "$so" "$payload/lib/"
	done
	cp -L "$(ldd "$perf_bin" | awk '$1 ~ /ld-linux/ { print $1 }')" "$payload/lib/ld.so"
	printf 'LOADS="%s"\nSECONDS_PER_RUN=%s\nBUILDS="stock plain exact"\n' "$GUEST_LOADS" "$GUEST_SECONDS" > "$payload/clients.env"
	for regime in $GUEST_REGIMES; do
		g0=$(date +%s)
		boot "$regime" "$log/guest-$regime" --runs-for 600 --kernel "$VMLINUZ" --payload "$payload" \
			--smp 8 --mem 2048 > "$log/guest-$regime.out" 2> "$log/guest-$regime.err"
		st=$?
		grep '^#' "$log/guest-$regime.out"
		[ $st -eq 0 ] || sed 's/^/# /' "$log/guest-$regime.err" | tail -n 30
		grep -q '^CLDONE' "$log/guest-$regime.out" && [ $st -eq 0 ]
		result $? "guest ($regime, 8 vCPUs): boots, runs and powers off ($(( $(date +%s) - g0 )) s; vm.sh exit $st)"
		report "guest-$regime" "$log/guest-$regime.out"
	done
fi

[ -n "$stock_seen" ]
result $? "stock perf-collect wrote out-of-order rounds in at least one run:${stock_seen:- none}"
echo "# check-clients: $(( $(date +%s) - TAP_START )) s"
finish
