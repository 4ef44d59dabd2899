#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/check-dkms.sh — what `make check-dkms` runs: perfclock through
# DKMS on each Debian 12 kernel flavour, of 6.1 (Debian 12's own kernel)
# and of 6.12 (the newest 6.12 apt offers), for real.
#
#   1. installs what is missing (scripts/deps.sh: dkms, dh-dkms, and the
#      image and headers of every kernel: kernel:SERIES:FLAVOUR), saying
#      what it installs;
#   2. builds the selftests the guest runs (make -C selftests, into
#      build/selftests);
#   3. scripts/dkms.sh install (what `make dkms-install` runs): dkms add,
#      then dkms build + install for every kernel; checks that the
#      .ko is in /lib/modules/<kver>/updates/dkms with the tree's VERSION and
#      the kernel's vermagic, and that depmod's index resolves perfclock to
#      it; checks that dkms refuses a kernel below the supported minimum;
#   4. boots each kernel's /boot/vmlinuz-<kver> under QEMU (boot() in
#      scripts/vm-lib.sh) in both clock regimes (stable and unstable
#      sched_clock), with the installed .ko and the host's modules.dep etc.
#      at their real paths under /lib/modules/<kver>; the guest
#      (scripts/guest/dkms.sh) loads it with modprobe, runs the selftests
#      against it, and modprobe -r's it;
#   5. scripts/dkms.sh remove (`make dkms-remove`): dkms remove --all, then
#      checks that nothing is left: no /var/lib/dkms/perfclock, no
#      /usr/src/perfclock-*, no perfclock.ko and no modules.dep line under
#      /lib/modules;
#   6. the .deb: scripts/dkms.sh deb, dpkg -i (its postinst builds and
#      installs through dkms), checks, dpkg --purge, and the same
#      nothing-left checks;
#   7. the library's packages that step 6 built with it (libperfclock0,
#      libperfclock-dev): scripts/check-deb.sh, see there.
#
# Environment: SERIES (default "6.1 6.12"; KVER=SERIES, as make check-dkms
# KVER=6.12 passes it, names one), FLAVOURS (default "cloud-amd64 amd64
# rt-amd64"): every flavour of every series; KVER=RELEASE instead names
# one installed kernel (its image and headers must be installed);
# DKMS_KERNELS, a list of SERIES:FLAVOUR, names the kernels outright
# (.ci/run's subset). REGIMES
# (default "stable unstable"), GUEST_TIMEOUT (seconds per boot, default
# 900, scripts/vm-lib.sh), DEB=0 to skip steps 6 and 7.
#
# Output: TAP, one line per result, ending "N passed, N failed" and the
# elapsed time; exit status non-zero if anything failed. Needs root. Leaves
# no perfclock behind in dkms, /usr/src or /lib/modules (whatever was there
# before is removed first, and said so). Not removed: packages it installed,
# and the key pair dkms 3.0 creates to sign modules (/var/lib/dkms/mok.key,
# mok.pub), which is dkms's own and shared by every DKMS module.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
top=$(pwd)

FLAVOURS=${FLAVOURS:-cloud-amd64 amd64 rt-amd64}
SERIES=${SERIES:-6.1 6.12}
case ${KVER:-} in
'') ;;
[0-9]*.[0-9]*.*) SERIES='' ;;
[0-9]*.[0-9]*) SERIES=$KVER ;;
*) echo "check-dkms.sh: KVER=$KVER is neither a series (6.12) nor a release" >&2; exit 64 ;;
esac
REGIMES=${REGIMES:-stable unstable}
DEB=${DEB:-1}
version=$(cat VERSION)
out=build/dkms
log=$out/log
. scripts/tap-lib.sh
. scripts/vm-lib.sh
. scripts/dpkg-lib.sh

# Nothing of perfclock left in dkms, /usr/src or /lib/modules.
# Debian leaves system groups behind on purge, by policy: the group the
# test's install made goes here (had_group, step 3).
remove_test_group() {
	if [ "${had_group:-1}" = 0 ] && getent group perfclock >/dev/null; then
		groupdel perfclock && echo "# removed the perfclock group the test's install created"
	fi
}

# guest_udev ROOT: what a guest needs in ROOT (vm.sh --extra-root) to run
# udev on the rule this host's install put in place: the host's udevadm
# (systemd-udevd is a link to it) and the libraries it links, the
# installed rule, and /etc/group and /etc/passwd with root, nobody, the
# perfclock group as the install made it (its GID) and pcuser, its
# member. scripts/guest/dkms.sh starts udevd after loading the module and
# triggers it as scripts/dkms.sh install does, then checks the node's
# owner and mode and who may open it.
guest_udev() {
	local root=$1 lib gid
	mkdir -p "$root/bin" "$root/lib/systemd" "$root/lib/udev/rules.d" "$root/etc" "$root/run"
	cp /bin/udevadm "$root/bin/udevadm"
	ln -sf /bin/udevadm "$root/lib/systemd/systemd-udevd"
	for lib in $(ldd /bin/udevadm | grep -o '/[^ ]*'); do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
	cp /lib/udev/rules.d/60-perfclock.rules "$root/lib/udev/rules.d/" 2>/dev/null
	gid=$(getent group perfclock | cut -d: -f3)
	printf 'root:x:0:\nnogroup:x:65534:\n%b' "${gid:+perfclock:x:$gid:pcuser\n}" > "$root/etc/group"
	printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' \
		'nobody:x:65534:65534:nobody:/nonexistent:/bin/false' \
		'pcuser:x:1000:65534:a member of perfclock:/nonexistent:/bin/false' > "$root/etc/passwd"
}

check_nothing_left() {	# $1 prefixes the descriptions
	local left
	check "$1: no /var/lib/dkms/$name" test ! -e /var/lib/dkms/perfclock
	left=$(ls -d /usr/src/perfclock-* 2>/dev/null)
	result $([ -z "$left" ]; echo $?) "$1: no /usr/src/perfclock-*${left:+ ($left)}"
	left=$(find /lib/modules -name 'perfclock.ko*' 2>/dev/null)
	result $([ -z "$left" ]; echo $?) "$1: no perfclock.ko under /lib/modules${left:+ ($left)}"
	left=$(grep -l perfclock /lib/modules/*/modules.dep 2>/dev/null)
	result $([ -z "$left" ]; echo $?) "$1: no modules.dep mentions perfclock${left:+ ($left)}"
}

name=perfclock
echo "TAP version 13"
if [ "$(id -u)" -ne 0 ]; then
	result 1 "setup: running as root (dkms and apt need it)"
	finish
fi
mkdir -p "$log"

# ---- 1. packages ----------------------------------------------------------------
# The selftests need the kselftest harness (linux-source) and a compiler.
groups=(dkms build vm lint)
[ "$DEB" = 0 ] || groups+=(dkms-deb)
# Each kernel as SERIES:FLAVOUR (6.12:rt-amd64), or a release.
specs=()
for sr in $SERIES; do
	for f in $FLAVOURS; do specs+=("$sr:$f"); done
done
[ -n "$SERIES" ] || specs=("$KVER")
[ -z "${DKMS_KERNELS:-}" ] || read -ra specs <<< "$DKMS_KERNELS"
for spec in "${specs[@]}"; do
	case $spec in *:*) groups+=("kernel:$spec") ;; esac
done
scripts/deps.sh "${groups[@]}" >"$log/deps.log" 2>&1
st=$?
sed 's/^/# /' "$log/deps.log"
result $st "setup: packages installed"
[ $st -eq 0 ] || finish

# Each kernel's release, as deps.sh installed it (6.1: what the meta
# package linux-image-rt-amd64 depends on, 6.1.0-57-rt-amd64; 6.12: the
# newest, 6.12.118+deb12-rt-amd64). A kernel's label names it in TAP.
declare -A kver=()
kvers=() labels=()
for spec in "${specs[@]}"; do
	case $spec in
	*:*) k=$(scripts/deps.sh --release "$spec" 2>&1); label="${spec%%:*} ${spec#*:}" ;;
	*)   k=$spec; label=$spec ;;
	esac
	kver[$label]=$k
	kvers+=("$k") labels+=("$label")
	st=0
	[ -n "$k" ] && [ -r "/boot/vmlinuz-$k" ] && [ -e "/lib/modules/$k/build/Makefile" ] || st=1
	result $st "setup: $label is kernel ${k:-?} with /boot/vmlinuz-${k:-?} and its headers"
done
[ "$failed" -eq 0 ] || finish

if [ "$(dpkg-query -W -f='${Status}' $name-dkms 2>/dev/null)" = "install ok installed" ]; then
	echo "# the $name-dkms package is installed (an earlier run?): purging it first"
	dpkg_waiting --purge $name-dkms >"$log/pre-purge.log" 2>&1
fi
if [ -e /var/lib/dkms/$name ] || ls -d /usr/src/$name-* >/dev/null 2>&1; then
	echo "# perfclock was already known to dkms or in /usr/src: removing it first"
	dkms status $name | sed 's/^/# /'
	scripts/dkms.sh remove >"$log/pre-remove.log" 2>&1
fi

# ---- 2. selftests -----------------------------------------------------------------
# Only the programs the guest runs: the DKMS test does not depend on the
# other selftests (stress, fuzz, ...) building.
tests="perfclock_ioctl_test perfclock_ioctl_test_32 perfclock_page_test perfclock_clock_test perfclock_lifecycle_test"
make --no-print-directory -C selftests $(for t in $tests; do echo "$top/build/selftests/$t"; done) \
	>"$log/selftests.log" 2>&1
st=$?
[ $st -eq 0 ] || tail -n 30 "$log/selftests.log" | sed 's/^/# /'
result $st "build: make -C selftests ($tests)"
[ $st -eq 0 ] || finish

# ---- 3. dkms add, build, install ------------------------------------------------
# The perfclock group, made by scripts/dkms.sh install and by the
# package: removed at the end if this test made it.
had_group=0
getent group perfclock >/dev/null && had_group=1
t=$(date +%s)
scripts/dkms.sh install "${kvers[@]}" >"$log/install.log" 2>&1
st=$?
[ $st -eq 0 ] || tail -n 40 "$log/install.log" | sed 's/^/# /'
result $st "dkms: scripts/dkms.sh install (dkms add, build, install for ${kvers[*]}) in $(($(date +%s) - t))s"
[ $st -eq 0 ] || { scripts/dkms.sh remove >/dev/null 2>&1; finish; }
udev_rule=/lib/udev/rules.d/60-perfclock.rules
check "dkms: the udev rule is installed at $udev_rule" cmp -s packaging/udev/60-perfclock.rules "$udev_rule"
check "dkms: the perfclock group the rule names exists" getent group perfclock

# The suffix of the kernel's own modules: Debian's 6.12 compresses them
# (CONFIG_MODULE_COMPRESS_XZ, with CONFIG_MODULE_DECOMPRESS to load them),
# 6.1 does not, and dkms installs ours the same way.
ko_suffix() {
	case $(grep -E '^CONFIG_MODULE_COMPRESS_(XZ|ZSTD|GZIP)=y' "/boot/config-$1") in
	*XZ*) echo .xz ;;
	*ZSTD*) echo .zst ;;
	*GZIP*) echo .gz ;;
	esac
}

declare -A kofile=()
for f in "${labels[@]}"; do
	k=${kver[$f]}
	ko=/lib/modules/$k/updates/dkms/$name.ko$(ko_suffix "$k")
	kofile[$f]=$ko
	check "dkms $f: dkms status says $name/$version installed on $k" \
		grep -q "^$name/$version, $k, [^:]*: installed" <(dkms status $name)
	check "dkms $f: $ko exists, compressed as the kernel's own modules are" test -f "$ko"
	v=$(modinfo -F version "$ko" 2>/dev/null)
	result $([ "$v" = "$version" ]; echo $?) "dkms $f: its version is VERSION ($version; got '$v')"
	v=$(modinfo -F vermagic "$ko" 2>/dev/null)
	result $([ "${v%% *}" = "$k" ]; echo $?) "dkms $f: its vermagic is $k (got '${v%% *}')"
	check "dkms $f: modules.dep has ${ko#/lib/modules/"$k"/}" \
		grep -qF "${ko#/lib/modules/"$k"/}:" "/lib/modules/$k/modules.dep"
	v=$(modprobe -S "$k" --show-depends $name 2>/dev/null)
	result $([ "$v" = "insmod $ko " ] || [ "$v" = "insmod $ko" ]; echo $?) \
		"dkms $f: modprobe -S $k resolves $name to it ($v)"
done

# Below the minimum (dkms.conf's BUILD_EXCLUSIVE_*), dkms must refuse to
# build, with its "excluded" status 77, before looking for headers.
dkms build -m $name -v "$version" -k 5.4.0-99-amd64 >"$log/exclusive.log" 2>&1
st=$?
result $([ $st -eq 77 ]; echo $?) "dkms: refuses kernel 5.4.0-99-amd64, below the minimum 5.12 (exit $st, want 77)"

# ---- 4. the installed module in each flavour's kernel ---------------------------
for f in "${labels[@]}"; do
	k=${kver[$f]}
	g=$out/guest/$k
	rm -rf "$g"
	mkdir -p "$g/payload" "$g/root/lib/modules/$k/updates/dkms"
	for t in $tests; do cp "build/selftests/$t" "$g/payload/"; done
	cp scripts/guest/dkms.sh "$g/payload/run.sh"
	cp VERSION "$g/payload/VERSION"
	cp "${kofile[$f]}" "$g/root/lib/modules/$k/updates/dkms/"
	cp /lib/modules/"$k"/modules.* "$g/root/lib/modules/$k/"
	guest_udev "$g/root"
	for regime in $REGIMES; do
		t=$(date +%s)
		boot "$regime" "$g/$regime" --kernel "/boot/vmlinuz-$k" --payload "$g/payload" \
			--extra-root "$g/root" >"$log/guest-$k-$regime.tap" 2>"$log/guest-$k-$regime.err"
		st=$?
		before=$n
		collect "guest $f $regime" "$log/guest-$k-$regime.tap"
		[ $st -eq 0 ] || sed 's/^/# /' "$log/guest-$k-$regime.err"
		guest_results "guest $f $regime" $st $before "$k, $(($(date +%s) - t))s"
	done
done

# ---- 5. dkms remove ---------------------------------------------------------------
scripts/dkms.sh remove >"$log/remove.log" 2>&1
st=$?
[ $st -eq 0 ] || tail -n 20 "$log/remove.log" | sed 's/^/# /'
result $st "dkms: scripts/dkms.sh remove (dkms remove $name/$version --all)"
check "dkms remove: the udev rule is gone" test ! -e "$udev_rule"
check_nothing_left "dkms remove"

# ---- 6. the .deb ------------------------------------------------------------------
[ "$DEB" != 0 ] || { remove_test_group; finish; }
# (it builds the library's packages too: step 7 tests those)
debs=$(scripts/dkms.sh deb "$out" 2>"$log/deb-build.err")
st=$?
deb=$(grep "/${name}-dkms_${version}_all\.deb\$" <<<"$debs")
[ -n "$deb" ] || st=1
[ $st -eq 0 ] || sed 's/^/# /' "$log/deb-build.err"
result $st "deb: scripts/dkms.sh deb builds ${deb:-perfclock-dkms}"
[ $st -eq 0 ] || finish
dpkg-deb -c "$deb" >"$log/deb-contents.txt"
for p in "usr/src/$name-$version/dkms.conf" "usr/src/$name-$version/Makefile" \
	"usr/src/$name-$version/module/perfclock.c" "lib/udev/rules.d/60-perfclock.rules" \
	"usr/lib/sysusers.d/perfclock-dkms.conf"; do
	check "deb: contains /$p" grep -q " \./$p\$" "$log/deb-contents.txt"
done
check "deb: its postinst tells a running udev to apply the rule" \
	grep -q 'udevadm trigger --action=change --subsystem-match=misc --sysname-match=perfclock' \
	<(dpkg-deb -I "$deb" postinst)
dpkg_waiting -i "$deb" >"$log/deb-install.log" 2>&1
st=$?
[ $st -eq 0 ] || tail -n 30 "$log/deb-install.log" | sed 's/^/# /'
result $st "deb: dpkg -i $(basename "$deb")"
grep -E '^(Building for|Building initial|.*installed|Module build)' "$log/deb-install.log" | sed 's/^/# /'
installed=$(dkms status $name 2>/dev/null | grep -c ": installed")
result $([ "$installed" -ge 1 ]; echo $?) "deb: its postinst built and installed $name through dkms ($installed kernels)"
left=$(find /lib/modules -path '*/updates/dkms/perfclock.ko*' | head -n 1)
result $([ -n "$left" ]; echo $?) "deb: ${left:-no perfclock.ko} is installed"
check "deb: the perfclock group exists (sysusers.d)" getent group perfclock
dpkg_waiting --purge perfclock-dkms >"$log/deb-purge.log" 2>&1
st=$?
[ $st -eq 0 ] || tail -n 30 "$log/deb-purge.log" | sed 's/^/# /'
result $st "deb: dpkg --purge perfclock-dkms"
check "deb: the package is gone" test -z "$(dpkg-query -W -f='${Status}' perfclock-dkms 2>/dev/null | grep -v not-installed)"
check "deb: the udev rule is gone" test ! -e /lib/udev/rules.d/60-perfclock.rules
check_nothing_left "dpkg --purge"
remove_test_group

# ---- 7. the library's packages ----------------------------------------------------
# scripts/check-deb.sh (make check-deb) on the packages step 6 built:
# contents, lintian, symbols, installed on the host, a pkg-config client,
# purged with nothing left.
DEB_DIR=$out scripts/check-deb.sh >"$log/check-deb.tap" 2>&1
relay "scripts/check-deb.sh" $? "$log/check-deb.tap"

finish
