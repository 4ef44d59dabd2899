#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/check-perf.sh — what `make check-perf` runs: perf itself as
# libperfclock's client. Stock and patched perf trace on the same load,
# compared by the same counter (ordered_events::nr_unordered_events, which
# the series' first patch prints at exit).
#
#   1. installs what is missing (scripts/deps.sh build vm lint perf, and
#      dkms-deb for the library's packages);
#   2. builds, from Debian's linux-source-6.1 tarball, with the patch
#      series in patches/perf/:
#        - stock perf: the series' stock-semantics patches only (every
#          patch before the one that adds LIBPERFCLOCK: the out-of-order
#          report, perf trace -k, the kvm report), static;
#        - patched perf: the whole series, LIBPERFCLOCK=1, linked with
#          libperfclock as a distribution would: the packages
#          scripts/dkms.sh deb builds (cached by their inputs) are
#          installed on the host (dpkg -i), pkg-config finds /usr's
#          libperfclock.pc, and they are purged after the builds; static;
#        - patched perf in perf's default configuration (dynamic, every
#          feature this machine has), to prove the series builds there.
#      The static builds run both in the busybox guest and on the host.
#      Build trees are cached outside the clone, in
#      $PERFCLOCK_CACHE/perf-KEY, KEY hashing the tarball, the patches'
#      diffs,
#      the installed libperfclock packages' files (patched builds), the
#      compiler and this recipe:
#      a second run reuses them;
#   3. boots the guest (boot() in scripts/vm-lib.sh, Debian's cloud kernel
#      matching the headers, the module built from a private copy of
#      module/) once per clock regime (stable and unstable sched_clock),
#      and in each runs scripts/guest/perf.sh: stock then patched perf trace
#      -a --sort-events on `perf bench sched messaging`, with the device
#      backend (--perfclock) and with -k mono, and with the reader stopped
#      by SIGSTOP;
#      Before the module is loaded, -k mono on the messaging load again
#      (backend mono-nomod): libperfclock's membarrier horizon;
#   4. on the host (no module: -k mono, libperfclock's membarrier horizon):
#      the same messaging load, and perf trace stopped by SIGSTOP 2 s three
#      times under `stress-ng --switch`.
#
# For each run pair it prints
#   # perf-trace scenario=NAME regime=R backend=B stock_ooo=N patched_ooo=M stock_lost=N patched_lost=M events=N
#   # perf-lag scenario=NAME regime=R backend=B stock_lag_mean_ms=X stock_lag_max_ms=X patched_lag_mean_ms=X patched_lag_max_ms=X patched_rule="..."
# (events: what patched perf read; lag: how far behind the newest queued
# event the output ran when each event was delivered), and TAP: a run
# fails if patched perf had any out-of-order event or did not run; the
# check fails if no scenario made stock perf show any (the comparison
# would then show nothing). Last line: "N passed, N failed, N skipped".
#
# Environment:
#   PERFCLOCK_CACHE  cache root (default /var/cache/perfclock)
#   JOBS             make -j for perf (default 2)
#   GUEST_TIMEOUT    seconds per guest boot on top of the perf sessions'
#                    300 (default 900, scripts/vm-lib.sh)
#   GUEST_LOOPS      perf bench sched messaging -l in the guest (default 300)
#   HOST_SECONDS     length of the host stall scenario (default 12)
#   PERF_SKIP        space-separated steps to skip: guest host full
# Logs: build/perf/.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

TARBALL=${KERNEL_SRC_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
TOPDIR=linux-source-6.1
CACHE=${PERFCLOCK_CACHE:-/var/cache/perfclock}
JOBS=${JOBS:-2}
GUEST_LOOPS=${GUEST_LOOPS:-300}
HOST_SECONDS=${HOST_SECONDS:-12}
PERF_SKIP=${PERF_SKIP:-}
# Bump when the way perf is built changes (the patches and the library
# are hashed themselves). 2: against the installed libperfclock-dev.
RECIPE=2
# What perf needs from the kernel tree (tools/perf/MANIFEST, plus the
# headers its check-headers.sh compares with).
MEMBERS="tools scripts kernel/bpf include arch/x86/include arch/x86/lib arch/x86/entry/syscalls Makefile"
STATIC_FLAGS="LDFLAGS=-static NO_LIBPYTHON=1 NO_LIBPERL=1 NO_SLANG=1 NO_LIBUNWIND=1
	NO_LIBBABELTRACE=1 NO_LIBCRYPTO=1 NO_LIBBPF=1 NO_LIBNUMA=1 NO_LIBCAP=1 NO_AIO=1
	NO_SDT=1 NO_JVMTI=1 NO_LIBBFD=1"

log=build/perf
rm -rf "$log"
mkdir -p "$log"
TAP_PREFIX="perf: "
. scripts/tap-lib.sh
. scripts/vm-lib.sh
skip() { case " $PERF_SKIP " in *" $1 "*) return 0 ;; esac; return 1; }

echo "TAP version 13"

# ---- packages ------------------------------------------------------------------
scripts/deps.sh build vm lint perf >&2
result $? "packages installed"
[ "$failed" -eq 0 ] || finish

guest_kernel

# ---- the source, extracted once per tarball ------------------------------------
patches=(patches/perf/0*.patch)
stock_patches=()
for p in "${patches[@]}"; do
	grep -q '^+ifdef LIBPERFCLOCK' "$p" && break
	stock_patches+=("$p")
done
echo "# series: ${#patches[@]} patches, the first ${#stock_patches[@]} are stock semantics"

stamp="$(stat -c '%s %Y' "$TARBALL") $MEMBERS"
src_key=$(echo "$stamp" | sha256sum | cut -c1-16)
src_root=$CACHE/perf-src/$src_key
mkdir -p "$CACHE"
exec 9>"$CACHE/perf.lock"
flock 9		# one perf build at a time per cache; a second run waits, then reuses
if [ ! -f "$src_root/.done" ]; then
	echo "# extracting tools/ and headers from $TARBALL"
	rm -rf "$src_root" && mkdir -p "$src_root"
	members=()
	for m in $MEMBERS; do members+=("$TOPDIR/$m"); done
	tar -xJf "$TARBALL" -C "$src_root" "${members[@]}"
	st=$?
	result $st "extract tools/perf from $TARBALL"
	[ $st -eq 0 ] || finish
	touch "$src_root/.done"
fi
src=$src_root/$TOPDIR

# ---- libperfclock, as its Debian packages ----------------------------------------
# Patched perf is built the way a distribution would build it: against
# the installed libperfclock-dev (pkg-config finds /usr's libperfclock.pc:
# no PKG_CONFIG_PATH, no -I or -L into the tree), from the packages
# scripts/dkms.sh deb builds. They are installed on the host for the perf
# builds and the dynamic perf's version check, and purged right after
# (the static perf binaries the guest and host runs use need nothing).
# The module is copied from the working tree into build/perf/src (the
# builds take minutes, and the tree may change meanwhile).
snap=$log/src
mkdir -p "$snap"
cp -r Makefile Kbuild VERSION module "$snap/"
rm -f "$snap"/module/*.o "$snap"/module/*.ko "$snap"/module/*.mod* "$snap"/module/.*.cmd
# The packages, cached by what goes into them (the library's sources, its
# ABI baseline, the packaging, the UAPI header, VERSION).
unset PKG_CONFIG_PATH PKG_CONFIG_LIBDIR
. scripts/dpkg-lib.sh
scripts/deps.sh dkms-deb >&2
version=$(cat VERSION)
soname=$(make -s --no-print-directory -C user print-soname)
libpkg=libperfclock${soname#libperfclock.so.}
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
deb_key=$( { for f in user/*.c user/*.h user/Makefile user/libperfclock.map user/libperfclock.pc.in \
	user/libperfclock.abi scripts/abi-check.sh scripts/dkms.sh packaging/debian/* \
	module/perfclock_ioctl.h VERSION; do [ -f "$f" ] && { echo "== $f"; cat "$f"; }; done; } |
	sha256sum | cut -c1-16)
debs=$CACHE/perf-debs-$deb_key
if [ ! -f "$debs/.done" ]; then
	rm -rf "$debs"
	scripts/dkms.sh deb "$debs" > "$log/deb.log" 2>&1
	st=$?
	[ $st -eq 0 ] && touch "$debs/.done"
	[ $st -eq 0 ] || tail -n 20 "$log/deb.log" | sed 's/^/# /'
	result $st "libperfclock packages built (scripts/dkms.sh deb, $debs)"
	[ $st -eq 0 ] || finish
else
	result 0 "libperfclock packages (cached, $deb_key)"
fi
libdeb=$debs/${libpkg}_${version}_$arch.deb
devdeb=$debs/libperfclock-dev_${version}_$arch.deb
# What perf is built against: the packages' files (names and contents),
# so the perf cache key follows the installed -dev, not the tree.
# (Not /usr/share: the changelog's date follows VERSION's mtime.)
lib_key=$(for d in "$libdeb" "$devdeb"; do dpkg-deb -f "$d" Package Version; dpkg-deb --fsys-tarfile "$d" |
	tar -xOf - --exclude='./usr/share/*'; done | sha256sum | cut -c1-16)
purge_lib() {
	dpkg_waiting --purge libperfclock-dev "$libpkg" > "$log/lib-purge.log" 2>&1
}
for p in libperfclock-dev "$libpkg"; do
	pkg_present "$p" && { echo "# $p is installed (an earlier run?): purging it first"; purge_lib; }
done
dpkg_waiting -i "$libdeb" "$devdeb" > "$log/lib-install.log" 2>&1
st=$?
[ $st -eq 0 ] || tail -n 20 "$log/lib-install.log" | sed 's/^/# /'
result $st "libperfclock-dev and $libpkg installed (dpkg -i, $lib_key)"
[ $st -eq 0 ] || finish
trap 'purge_lib' EXIT	# also if a build fails or the run is stopped
v=$(pkg-config --modversion libperfclock 2>&1)
[ "$v" = "$version" ]
result $? "pkg-config finds the installed libperfclock $v ($(pkg-config --cflags --libs libperfclock))"

# ---- perf builds ----------------------------------------------------------------
# build_perf NAME KIND PATCH... : KIND is static-stock, static-patched or
# full-patched; sets $perf_bin to the binary.
gcc_v=$(gcc --version | head -n 1)
# The code a series changes, not its commit messages: rewording a patch
# does not rebuild perf.
patch_diffs() {
	local p
	for p in "$@"; do
		sed -n '/^diff --git/,$p' "$p" | sed '/^-- $/,$d'
	done
}
build_perf() {
	local name=$1 kind=$2 key tree st t0 flags=()
	shift 2
	key=$( { echo "$stamp"; dpkg-query -W -f='${Version}\n' linux-source-6.1 2>/dev/null;
		patch_diffs "$@"; echo "$kind $gcc_v recipe $RECIPE";
		case $kind in *patched) echo "lib $lib_key" ;; esac; } | sha256sum | cut -c1-16)
	tree=$CACHE/perf-$key
	perf_bin=$tree/out/perf
	if [ -f "$tree/.perfclock-built" ]; then
		result 0 "$name perf (cached, $tree)"
		return 0
	fi
	rm -rf "$tree" && mkdir -p "$tree/out"
	cp -a "$src" "$tree/src"
	st=0
	for p in "$@"; do
		patch -d "$tree/src" -p1 -s --no-backup-if-mismatch < "$p" >> "$log/$name-patch.log" 2>&1 ||
			{ echo "# $p does not apply"; st=1; }
	done
	result $st "$name: ${#@} patches apply to $TOPDIR"
	[ $st -eq 0 ] || return 1
	case $kind in
	static-*) flags=($STATIC_FLAGS) ;;
	esac
	case $kind in
	*-patched) flags+=(LIBPERFCLOCK=1) ;;
	esac
	t0=$(date +%s)
	# Only the perf binary, for the default configuration too: the
	# python binding, perf-read-vdso32, the JIT agent and the dlfilters
	# that "make all" adds don't include the series' code. (A tree cached
	# by "make all" holds this binary too: no new key.)
	make -C "$tree/src/tools/perf" O="$tree/out" -j"$JOBS" NO_LIBBFD=1 WERROR=0 \
		"${flags[@]}" "$tree/out/perf" > "$log/$name-build.log" 2>&1
	st=$?
	[ $st -eq 0 ] || grep -E 'error|Error' "$log/$name-build.log" | head -n 20 | sed 's/^/# /'
	result $st "$name perf builds ($kind, $(( $(date +%s) - t0 )) s)"
	[ $st -eq 0 ] || return 1
	# The patched builds compiled against the package's header (fixdep's
	# .cmd files list every header an object included).
	case $kind in *-patched)
		grep -rlq --include='*.cmd' '/usr/include/perfclock/libperfclock\.h' "$tree/out"
		result $? "$name perf includes /usr/include/perfclock/libperfclock.h (libperfclock-dev)"
	esac
	rm -rf "$tree/src"	# the objects and the binary are what is reused
	touch "$tree/.perfclock-built"
}

build_perf stock static-stock "${stock_patches[@]}"
stock_perf=$perf_bin
build_perf patched static-patched "${patches[@]}"
patched_perf=$perf_bin
if ! skip full; then
	build_perf patched-full full-patched "${patches[@]}"
	full_perf=$perf_bin
	if [ -x "$full_perf" ]; then
		opts=$("$full_perf" version --build-options 2>&1)
		echo "$opts" | grep -q 'libperfclock: \[ on'
		result $? "patched perf (default configuration) reports libperfclock: [ on ]"
		so=$(ldd "$full_perf" | sed -n "s/.*$soname => \([^ ]*\).*/\1/p")
		[ -n "$so" ] && dpkg -S "$(readlink -f "$so")" 2>/dev/null | grep -q "^$libpkg:"
		result $? "patched perf (default configuration) loads $soname from ${so:-nowhere}, $libpkg's file"
	fi
fi
flock -u 9
purge_lib
result $? "libperfclock-dev and $libpkg purged after the perf builds"
trap - EXIT
[ -x "$stock_perf" ] && [ -x "$patched_perf" ] || finish

# has_opt BINARY "SUBCOMMAND..." OPTION (-h exits 129: don't pipe it under pipefail)
has_opt() {
	local help
	# shellcheck disable=SC2086
	help=$("$1" $2 -h 2>&1)
	grep -q -- "$3" <<<"$help"
}
has_opt "$stock_perf" trace --clockid
result $? "stock perf trace has -k/--clockid"
has_opt "$patched_perf" trace --clockid
result $? "patched perf trace has -k/--clockid"
has_opt "$patched_perf" trace --perfclock
result $? "patched perf trace has --perfclock"
has_opt "$patched_perf" "kvm stat live" --perfclock
result $? "patched perf kvm stat live has --perfclock"

# ---- results --------------------------------------------------------------------
stock_seen=0
# field LINE NAME: the number after "NAME" in perf's "Sorted events:" line.
num() { echo "$1" | sed -n "s/.* \([0-9][0-9.]*\) $2.*/\1/p"; }
lag() { echo "$1" | sed -n "s/.*$2 \([0-9.]*\) ms.*/\1/p"; }
# report WHERE REGIME FILE: the PERFRUN lines of one run of scripts/guest/perf.sh.
report() {
	local where=$1 regime=$2 file=$3 pairs sc be s p so po ev rule desc st
	pairs=$(sed -n 's/^PERFRUN scenario=\([^ ]*\) backend=\([^ ]*\) .*/\1:\2/p' "$file" | sort -u)
	for pair in $pairs; do
		sc=${pair%:*} be=${pair#*:}
		s=$(grep "^PERFRUN scenario=$sc backend=$be build=stock " "$file" | tail -n 1)
		p=$(grep "^PERFRUN scenario=$sc backend=$be build=patched " "$file" | tail -n 1)
		rule=$(grep "^PERFRULE scenario=$sc backend=$be build=patched " "$file" | tail -n 1 |
			sed 's/.*Flushed at: //')
		so=$(num "$s" 'out of order') po=$(num "$p" 'out of order')
		ev=$(num "$p" 'events,')
		echo "# perf-trace scenario=$sc regime=$regime backend=$be stock_ooo=${so:-?} patched_ooo=${po:-?} stock_lost=$(num "$s" lost) patched_lost=$(num "$p" lost) events=${ev:-?}"
		echo "# perf-lag scenario=$sc regime=$regime backend=$be stock_lag_mean_ms=$(lag "$s" mean) stock_lag_max_ms=$(lag "$s" max) patched_lag_mean_ms=$(lag "$p" mean) patched_lag_max_ms=$(lag "$p" max) stock_events=$(num "$s" 'events,') patched_rule=\"$rule\""
		desc="$where $regime $sc $be"
		st=1
		[ -n "$so" ] && [ "$(num "$s" 'events,')" -gt 0 ] && st=0
		result $st "$desc: stock perf trace ran (${so:-no} out-of-order events)"
		[ -n "$so" ] && [ "$so" -gt 0 ] && stock_seen=$((stock_seen + 1))
		st=1
		[ -n "$po" ] && [ "$po" -eq 0 ] && [ "${ev:-0}" -gt 0 ] && st=0
		result $st "$desc: patched perf trace ran with no out-of-order event (${po:-no run}, ${ev:-0} events)"
		# Every horizon is exact: the device backend's; -k mono's with
		# the module loaded (libperfclock takes the clockid's horizon
		# from it); and -k mono's without the module (mono-nomod in the
		# guest, the host): libperfclock's membarrier horizon.
		case $where:$be in
		guest:*|*:device|host:mono)
			echo "$rule" | grep -q 'exact'
			result $? "$desc: patched perf used an exact horizon ($rule)"
			;;
		esac
	done
}

# ---- the guest -------------------------------------------------------------------
if ! skip guest; then
	make -C "$snap" --no-print-directory module KDIR="$KDIR" > "$log/module.log" 2>&1
	st=$?
	[ $st -eq 0 ] || tail -n 20 "$log/module.log" | sed 's/^/# /'
	result $st "module builds for $KVER (private copy of module/)"
	payload=$log/payload
	mkdir -p "$payload"
	cp scripts/guest/perf.sh "$payload/run.sh"
	cp "$stock_perf" "$payload/perf-stock"
	cp "$patched_perf" "$payload/perf-patched"
	cp "$snap/module/perfclock.ko" "$payload/"
	cat > "$payload/perf.env" <<EOF
NOMOD_SCENARIOS="msg:mono-nomod"
SCENARIOS="light:device msg:device msg:mono stall:device"
LOOPS=$GUEST_LOOPS
STALLS=2
RUN_TIMEOUT=150
EOF
	for regime in stable unstable; do
		g0=$(date +%s)
		boot $regime "$log/$regime" --runs-for 300 --kernel "$VMLINUZ" --payload "$payload" \
			--mem 2048 > "$log/guest-$regime.out" 2> "$log/guest-$regime.err"
		st=$?
		grep '^#' "$log/guest-$regime.out"
		[ $st -eq 0 ] || sed 's/^/# /' "$log/guest-$regime.err" | tail -n 40
		result $st "guest $regime: boots, runs every perf session and powers off ($(( $(date +%s) - g0 )) s; vm.sh exit $st)"
		report guest "$regime" "$log/guest-$regime.out"
	done
fi

# ---- the host ----------------------------------------------------------------------
if ! skip host; then
	if ! mountpoint -q /sys/kernel/tracing; then
		mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
	fi
	h0=$(date +%s)
	PERF_HOST=1 PERF_DIR=$top/$log/host PERF_STOCK=$stock_perf PERF_PATCHED=$patched_perf \
		SCENARIOS="light:mono msg:mono stall:mono" LOOPS=2000 STALLS=3 RUN_TIMEOUT=120 \
		STALL_LOAD="stress-ng --switch 2 --timeout ${HOST_SECONDS}s --quiet" \
		timeout 900 sh scripts/guest/perf.sh > "$log/host.out" 2>&1
	st=$?
	grep '^#' "$log/host.out"
	result $st "host: perf sessions ran ($(( $(date +%s) - h0 )) s)"
	report host "host-$(uname -r)" "$log/host.out"

	# perf kvm stat live: no KVM guest can run here (no /dev/kvm on the
	# host, no nested KVM in the TCG guest), so no kvm_exit event ever
	# comes. What can run: both builds start, read their (empty) rings
	# until SIGINT and print the out-of-order report; --perfclock without
	# the device fails with a message. SIGINT stops it, once it has set
	# its handler: a background job inherits SIGINT ignored, hence
	# env --default-signal, and -p $$ keeps the thread synthesis short.
	# Its stdin must not be readable: each pass stores "was 'q' typed"
	# into the flag SIGINT sets, so /dev/null would undo the SIGINT.
	for b in stock patched; do
		bin=$stock_perf
		[ $b = patched ] && bin=$patched_perf
		# (in build/perf: perf kvm stat live writes an empty perf.data)
		(cd "$log" && timeout -k 20 -s INT 5 env --default-signal=INT "$bin" kvm stat live \
			-d 1 -p $$ < <(sleep 30) > "kvm-$b.out" 2>&1)
		grep -q '^Sorted events:' "$log/kvm-$b.out"
		result $? "host: $b perf kvm stat live runs and reports ($(grep '^Sorted events:' "$log/kvm-$b.out"))"
	done
	(cd "$log" && timeout -k 20 -s INT 5 env --default-signal=INT "$patched_perf" kvm stat live \
		--perfclock=/nonexistent -p $$ < <(sleep 30) > "kvm-nodev.out" 2>&1)
	st=$?
	[ $st -ne 0 ] && [ $st -ne 124 ] && grep -q "Can't open /nonexistent" "$log/kvm-nodev.out"
	result $? "host: perf kvm stat live --perfclock=/nonexistent fails with a message (exit $st)"
	timeout 20 "$patched_perf" trace -a --perfclock=/nonexistent -o /dev/null -- true \
		> "$log/trace-nodev.out" 2>&1
	st=$?
	[ $st -ne 0 ] && [ $st -ne 124 ] && grep -q "Can't open /nonexistent" "$log/trace-nodev.out"
	result $? "host: perf trace --perfclock=/nonexistent fails with a message (exit $st)"
fi

[ $stock_seen -gt 0 ]
result $? "stock perf trace shows out-of-order events in at least one scenario ($stock_seen)"
finish
