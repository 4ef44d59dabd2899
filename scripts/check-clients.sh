#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/check-clients.sh — what `make check-clients` runs: a client
# nobody here wrote, microsoft/LinuxTracepoints' perf-collect, stock and
# with the series in patches/linuxtracepoints/ (its issue #65: rounds
# written out of time order), on the same loads.
#
#   1. installs what is missing (scripts/deps.sh build vm clients);
#   2. takes LinuxTracepoints at LT_COMMIT: from LT_REPO (a clone; default
#      this machine's mirror if there is one), else from the git archive
#      the project keeps beside the tree (../shared/clients: a CI machine
#      has no network), its commit id checked (git get-tar-commit-id) and
#      made a one-commit repository; applies the series
#      with `git am`, builds libperfclock from this tree (make -C user lib,
#      make install PREFIX= a private prefix) and, with cmake + make,
#      static: stock perf-collect and perf-decode; patched perf-collect
#      with libperfclock (pkg-config finds the private prefix); patched
#      perf-collect with no libperfclock installed (PKG_CONFIG_LIBDIR
#      empty); and configures it once with -DUSE_LIBPERFCLOCK=OFF. Each
#      build is cached under $PERFCLOCK_CACHE/clients, keyed by the
#      upstream commit, the patches' diffs, the library's sources (for
#      the lib build), the compiler and this recipe;
#   3. on the host (root, tracefs; real events, no module: libperfclock's
#      membarrier horizon for CLOCK_MONOTONIC_RAW) and in the 8-vCPU
#      overcommitted TCG guest (boot() in scripts/vm-lib.sh, --smp 8,
#      regime GUEST_REGIME), runs scripts/guest/clients.sh: for each load,
#      stock then patched perf-collect while clients-load runs, then every
#      file read by stock perf-decode, stock perf (Debian's linux-perf; in
#      the guest the same binary with its libraries and loader) and this
#      tree's perf-data-order, which reads perf.data itself.
#
# Per run it prints
#   # client perf-collect load=L where=host|guest stock_inv=N patched_inv=N compat=ok lost_stock=N lost_patched=N rate_stock=N rate_patched=N inv_by=... cpu_ms_per_10k=S/P samples=S/P
# stock_inv/patched_inv: samples stamped below the newest sample of an
# earlier round (perf-data-order's count; inv_by gives it as counted by
# perf-data-order, by stock perf-decode's output and by stock perf
# script's output with its round markers, stock/patched; "unreadable"
# where stock perf cannot open the file); lost: records the kernel
# dropped (PERF_RECORD_LOST); rate: samples written per second of load;
# cpu_ms_per_10k: the collector's CPU time per 10,000 samples.
# TAP per run: both collectors ran (patched with an exact horizon), the
# patched file has no inversion by any of the three counts, the patched
# file read by stock perf-decode and stock perf gives no warning the
# stock file does not and the same number of samples to every reader,
# and the counters agree on the stock file. The check fails if stock
# never inverts. Lost records and rates are reported, not asserted (the
# machine is shared; they follow the load's speed). Last line
# "N passed, N failed, N skipped".
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
#   GUEST_REGIME     the guest's clock regime (default unstable)
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
GUEST_REGIME=${GUEST_REGIME:-unstable}
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

patches=("$LT_PATCHES"/0*.patch)
echo "# series: ${#patches[@]} patches from $LT_PATCHES against $LT_COMMIT"
for p in "${patches[@]}"; do
	echo "#   $(basename "$p") $(sha256sum < "$p" | cut -c1-12)"
done
# The code the series changes, not its messages: rewording a patch
# rebuilds nothing.
patch_key=$(for p in "${patches[@]}"; do sed -n '/^diff --git/,$p' "$p" | sed '/^-- $/,$d'; done | hash16)
base_key=$( { echo "$LT_COMMIT recipe $RECIPE"; gcc --version | head -n 1; cmake --version | head -n 1; } | hash16)

# The patched tree: a clone of the upstream one, the series applied with
# git am (what a maintainer would run).
ptree=$CACHE/patched-$base_key-$patch_key
if [ ! -f "$ptree/.done" ]; then
	rm -rf "$ptree"
	git clone -q "$src" "$ptree" > "$log/am.log" 2>&1 &&
		git -C "$ptree" checkout -q --detach "$(cat "$src/.base" 2>/dev/null || echo "$LT_COMMIT")" &&
		git -C "$ptree" -c user.name=check-clients -c user.email=check-clients@localhost \
			am -q "${patches[@]/#/$top/}" >> "$log/am.log" 2>&1
	st=$?
	[ $st -eq 0 ] && touch "$ptree/.done"
	[ $st -eq 0 ] || sed 's/^/# /' "$log/am.log" | tail -n 20
	result $st "the series applies with git am to $LT_COMMIT"
	[ $st -eq 0 ] || finish
else
	result 0 "the series applies with git am to $LT_COMMIT (cached)"
fi

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
stock_bin=$CACHE/build-stock-$base_key/bin
# Patched, libperfclock found through pkg-config.
PKG_CONFIG_PATH=$prefix/lib/pkgconfig build patched "$ptree" "$base_key-$patch_key-$lib_key" perf-collect
patched_bin=$CACHE/build-patched-$base_key-$patch_key-$lib_key/bin
# Patched, no libperfclock installed: pkg-config finds nothing.
PKG_CONFIG_PATH='' PKG_CONFIG_LIBDIR=$top/$nolib_pc build nolib "$ptree" "$base_key-$patch_key" perf-collect
nolib_bin=$CACHE/build-nolib-$base_key-$patch_key/bin
echo "# builds: $(( $(date +%s) - b0 )) s"

# (nm's output taken whole: grep -q would stop reading early, and under
# pipefail nm's SIGPIPE would fail the pipe.)
syms=$(nm "$patched_bin/perf-collect" 2>/dev/null)
grep -q 'perf-collect: using libperfclock' "$log/patched-cmake.log" &&
	grep -q ' T perfclock_horizon$' <<<"$syms"
result $? "patched: cmake found libperfclock ($(sed -n 's/.*perf-collect: using //p' "$log/patched-cmake.log")) and perf-collect links it"
w=$(grep -h 'warning:' "$log/patched-make.log" "$log/nolib-make.log" 2>/dev/null)
[ -z "$w" ]
result $? "patched and nolib builds: no compiler warning (the project's -Wall -Wextra)" "$w"
syms=$(nm "$nolib_bin/perf-collect" 2>/dev/null)
grep -q 'perf-collect: libperfclock not found' "$log/nolib-cmake.log" &&
	[ -n "$syms" ] && ! grep -q perfclock_ <<<"$syms"
result $? "nolib: without libperfclock installed, cmake says so and perf-collect builds without it"
# -DUSE_LIBPERFCLOCK=OFF with the library there: not looked for, not used.
off=$log/off-build
rm -rf "$off"
PKG_CONFIG_PATH=$prefix/lib/pkgconfig cmake -S "$ptree" -B "$off" -DBUILD_SAMPLES=OFF -DBUILD_TESTING=OFF \
	-DUSE_LIBPERFCLOCK=OFF > "$log/off-cmake.log" 2>&1 &&
	! grep -q 'libperfclock' "$log/off-cmake.log" &&
	! grep -rq HAVE_LIBPERFCLOCK "$off/libtracepoint-control-cpp/tools/CMakeFiles"
result $? "-DUSE_LIBPERFCLOCK=OFF with libperfclock installed: not looked for, not compiled in"
rm -rf "$off"

# This tree's helpers: the load and the order checker, static.
gcc -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -static -pthread -o "$log/bin/clients-load" \
	scripts/clients/clients-load.c user/demo/load.c > "$log/helpers.log" 2>&1 &&
	gcc -O2 -Wall -Wextra -Werror -static -o "$log/bin/perf-data-order" \
		scripts/clients/perf-data-order.c >> "$log/helpers.log" 2>&1
st=$?
result $st "clients-load and perf-data-order build (static, -Wall -Wextra -Werror)" "$(cat "$log/helpers.log")"
[ $st -eq 0 ] && [ -x "$stock_bin/perf-collect" ] && [ -x "$patched_bin/perf-collect" ] || finish
cp "$stock_bin/perf-collect" "$log/bin/perf-collect-stock"
cp "$patched_bin/perf-collect" "$log/bin/perf-collect-patched"
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
	local where=$1 file=$2 load sr pr sc pc sd pd sp pp ps si pi new r s_perf desc compat
	for load in $(sed -n 's/^CLRUN load=\([^ ]*\) .*/\1/p' "$file" | sort -u); do
		desc="$where $load"
		sr=$(line_of CLRUN "$load" stock "$file") pr=$(line_of CLRUN "$load" patched "$file")
		sc=$(line_of CLCHECK "$load" stock "$file") pc=$(line_of CLCHECK "$load" patched "$file")
		sd=$(line_of CLDECODE "$load" stock "$file") pd=$(line_of CLDECODE "$load" patched "$file")
		sp=$(line_of CLPERF "$load" stock "$file") pp=$(line_of CLPERF "$load" patched "$file")
		ps=$(line_of CLSTATS "$load" patched "$file")
		si=$(field inversions "$sc") pi=$(field inversions "$pc")
		s_perf=$(field inversions "$sp")
		[ "$(field rc "$sp")" = 0 ] || s_perf=unreadable
		# Compatibility: the patched file, read by the stock readers.
		new=""
		for r in perf-decode perf-script perf-report; do
			new+=$(comm -13 <(warnings "$file" "$load" stock $r) <(warnings "$file" "$load" patched $r) |
				sed "s/^/$r: /")
		done
		compat=ok
		{ [ "$(field rc "$pd")" = 0 ] && [ "$(field rc "$pp")" = 0 ] && [ "$(field rc "$ps")" = 0 ] &&
			[ -z "$new" ] && [ "$(field samples "$pc")" -gt 0 ] 2>/dev/null &&
			[ "$(field events "$pd")" = "$(field samples "$pc")" ] &&
			[ "$(field samples "$pp")" = "$(field samples "$pc")" ] &&
			[ "$(field samples "$ps")" = "$(field samples "$pc")" ]; } || compat=bad
		# (Parentheses: a bare ">" after printf would redirect its output.)
		rate() { awk -v n="$(field samples "$1")" -v s="$(field seconds "$2")" 'BEGIN { printf("%d", (s > 0) ? n / s : 0) }'; }
		cpu() { awk -v n="$(field samples "$1")" -v t="$(field cpu_ticks "$2")" -v hz="$(field hz "$2")" \
			'BEGIN { printf("%.1f", (n > 0) ? t * 1000 / hz / (n / 10000) : 0) }'; }
		echo "# client perf-collect load=$load where=$where stock_inv=${si:-?} patched_inv=${pi:-?} compat=$compat lost_stock=$(field lost "$sc") lost_patched=$(field lost "$pc") rate_stock=$(rate "$sc" "$sr") rate_patched=$(rate "$pc" "$pr") inv_by=check:${si:-?}/${pi:-?},decode:$(field inversions "$sd")/$(field inversions "$pd"),perf:$s_perf/$(field inversions "$pp") cpu_ms_per_10k=$(cpu "$sc" "$sr")/$(cpu "$pc" "$pr") samples=$(field samples "$sc")/$(field samples "$pc")"
		[ "${si:-0}" -gt 0 ] 2>/dev/null && stock_seen+=" $where:$load($si)"
		[ "$(field rc "$sr")" = 0 ] && [ "$(field samples "$sc")" -gt 0 ] 2>/dev/null
		result $? "$desc: stock perf-collect ran ($(field samples "$sc") samples, ${si:-?} inversions)"
		[ "$(field rc "$pr")" = 0 ] && grep -q 'round_end="exact' <<<"$pr"
		result $? "$desc: patched perf-collect ran, rounds ended at an exact horizon ($(sed -n 's/.*round_end=//p' <<<"$pr"))"
		[ "${pi:-x}" = 0 ] && [ "$(field inversions "$pd")" = 0 ] && [ "$(field inversions "$pp")" = 0 ] &&
			[ "$(field rc "$pc")" = 0 ]
		result $? "$desc: patched file: 0 inversions (perf-data-order ${pi:-?}, perf-decode $(field inversions "$pd"), perf script $(field inversions "$pp"); $(field rounds "$pc") rounds)"
		[ "$compat" = ok ]
		result $? "$desc: patched file read by stock perf-decode and stock perf: no new warning, the same $(field samples "$pc") samples (perf-decode $(field events "$pd"), perf script $(field samples "$pp"), perf report --stats $(field samples "$ps"))" "$new"
		# The counters count the same thing: on the stock file too.
		[ "$(field inversions "$sd")" = "$si" ] && { [ "$s_perf" = unreadable ] || [ "$s_perf" = "$si" ]; }
		result $? "$desc: the three counters agree on the stock file (perf-data-order $si, perf-decode $(field inversions "$sd"), perf script $s_perf)"
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

# ---- the guest: 8 vCPUs on this machine's cores -------------------------------------------
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
	printf 'LOADS="%s"\nSECONDS_PER_RUN=%s\n' "$GUEST_LOADS" "$GUEST_SECONDS" > "$payload/clients.env"
	g0=$(date +%s)
	boot "$GUEST_REGIME" "$log/guest" --runs-for 600 --kernel "$VMLINUZ" --payload "$payload" \
		--smp 8 --mem 2048 > "$log/guest.out" 2> "$log/guest.err"
	st=$?
	grep '^#' "$log/guest.out"
	[ $st -eq 0 ] || sed 's/^/# /' "$log/guest.err" | tail -n 30
	grep -q '^CLDONE' "$log/guest.out" && [ $st -eq 0 ]
	result $? "guest ($GUEST_REGIME, 8 vCPUs): boots, runs and powers off ($(( $(date +%s) - g0 )) s; vm.sh exit $st)"
	report guest "$log/guest.out"
fi

[ -n "$stock_seen" ]
result $? "stock perf-collect wrote out-of-order rounds in at least one run:${stock_seen:- none}"
echo "# check-clients: $(( $(date +%s) - TAP_START )) s"
finish
