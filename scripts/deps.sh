#!/bin/bash
# scripts/deps.sh GROUP... — install the Debian 12 packages a step needs.
# The one place anything here calls apt-get: every script asks it by group.
#
# Groups (any number, in any order):
#   build vm lint user bench perf demo debug dkms dkms-deb clients
#   kernel:FLAVOUR   linux-image-FLAVOUR and linux-headers-FLAVOUR
#                    (e.g. kernel:rt-amd64): Debian 12's own kernel, 6.1
#   kernel:SERIES:FLAVOUR  the newest kernel of SERIES apt offers in
#                    FLAVOUR: linux-image-RELEASE-unsigned and
#                    linux-headers-RELEASE (e.g. kernel:6.12:rt-amd64 is
#                    6.12.118+deb12-rt-amd64 today, a later patch release
#                    when the archive has one; never a pinned patch
#                    level); kernel:6.1:FLAVOUR is kernel:FLAVOUR
#   source:SERIES    linux-source-SERIES (the tarball in /usr/src)
#   image:KVER       linux-image-KVER alone (the guest kernel matching
#                    headers already installed)
#
# And one query: scripts/deps.sh --release SERIES:FLAVOUR prints the
# release kernel:SERIES:FLAVOUR installs (6.12.118+deb12-cloud-amd64),
# whether installed yet or not; with no such kernel in apt's lists it
# fails, saying so (as root after one apt-get update).
#
# Idempotent: a package already in state "install ok installed" is left alone,
# so a fully provisioned machine pays one dpkg-query call and nothing else.
# When something is missing it says, in one line on stderr:
#   perfclock: installing PKG... (for: GROUP...)
# then runs `apt-get update` once (the package lists of a fresh image are
# often empty) and one `apt-get install` for everything missing, quietly:
# apt's own output goes to build/deps-apt.log and is shown only on failure.
# Both wait up to 10 minutes for the dpkg lock (CI runs steps, and other
# jobs, side by side).
# Not root and something missing: fail, naming the packages, so the caller
# knows exactly what to ask an administrator for.
set -euo pipefail

usage() {
	echo "usage: $0 GROUP...   (groups: build vm lint user bench perf demo debug dkms dkms-deb clients" >&2
	echo "                           kernel:FLAVOUR kernel:SERIES:FLAVOUR source:SERIES image:KVER)" >&2
	echo "       $0 --release SERIES:FLAVOUR" >&2
	exit 64
}

apt=(apt-get -q -o DPkg::Lock::Timeout=600)
log=$(cd "$(dirname "$0")/.." && pwd)/build/deps-apt.log
updated=0

# apt-get update, once per run and only as root: a fresh image's
# package lists are often empty.
apt_update() {
	[ "$updated" = 0 ] && [ "$(id -u)" -eq 0 ] || return 0
	updated=1
	mkdir -p "$(dirname "$log")"
	"${apt[@]}" update </dev/null >"$log" 2>&1 ||
		{ tail -n 30 "$log" | sed 's/^/perfclock: apt: /' >&2; return 1; }
}

# The release of the newest SERIES kernel in FLAVOUR that apt knows
# (installed or offered) with both its unsigned image and its headers.
# 6.1 is Debian 12's own kernel: the release its meta package
# linux-image-FLAVOUR depends on (the installed one's, else the
# candidate's), so that it is the kernel `kernel:FLAVOUR` installs.
release_of() {
	local series=$1 flavour=$2 dep re names heads images
	if [ "$series" = 6.1 ]; then
		dep=$(dpkg-query -W -f='${Status}|${Depends}' "linux-image-$flavour" 2>/dev/null |
			sed -n 's/^install ok installed|//p')
		[ -n "$dep" ] || dep=$(apt-cache depends "linux-image-$flavour" 2>/dev/null |
			sed -n 's/^ *Depends: //p')
		dep=$(tr ',|' '\n' <<<"$dep" | sed -n "s/^ *linux-image-\(6\.1\.[^ ]*-$flavour\)\( .*\)\{0,1\}$/\1/p" |
			sed 's/-unsigned$//' | head -n 1)
		printf '%s' "$dep"
		return
	fi
	# 6.12.118+deb12-cloud-amd64: SERIES.PATCH+debN-FLAVOUR
	re="^${series//./\\.}\.[0-9]+\+deb[0-9]+-$flavour\$"
	# One apt-cache call: without a pkgcache.bin each one parses the lists.
	names=$(apt-cache pkgnames linux- 2>/dev/null)
	heads=$(sed -n 's/^linux-headers-//p' <<<"$names" | grep -E "$re")
	images=$(sed -n 's/^linux-image-\(.*\)-unsigned$/\1/p' <<<"$names" | grep -E "$re")
	comm -12 <(sort <<<"$heads") <(sort <<<"$images") | sort -V | tail -n 1
}

# release SERIES:FLAVOUR, updating apt's lists once if it knows none.
release() {
	local series=${1%%:*} flavour=${1#*:} r
	case "$1" in
	[0-9]*.[0-9]*:?*) ;;
	*) echo "perfclock: '$1' is not SERIES:FLAVOUR (e.g. 6.12:cloud-amd64)" >&2; return 64 ;;
	esac
	r=$(release_of "$series" "$flavour")
	if [ -z "$r" ]; then
		apt_update
		r=$(release_of "$series" "$flavour")
	fi
	[ -n "$r" ] || { echo "perfclock: apt offers no $series kernel for $flavour" >&2; return 1; }
	echo "$r"
}

# Package lists per group; kept here so the Makefile and .ci/run ask by
# purpose, not by package name.
group_pkgs() {
	case "$1" in
	build) echo gcc make libc6-dev kmod xz-utils linux-headers-cloud-amd64 sparse gcc-multilib g++ ;;
	vm)    echo qemu-system-x86 busybox-static cpio linux-image-cloud-amd64 kmod ;;
	lint)  echo linux-source-6.1 perl ;;
	user)  echo liburcu-dev clang libclang-rt-14-dev valgrind ;;
	bench) echo gnuplot-nox ;;
	# make demo: demo_flush (static) and the module; no sparse, multilib, g++
	demo)  echo gcc make libc6-dev kmod linux-headers-cloud-amd64 ;;
	# perf from linux-source-6.12 (make check-perf: its perf trace and
	# perf kvm need the system's libtraceevent, static too), and its
	# host load
	perf)  echo flex bison libelf-dev libdw-dev libunwind-dev libnuma-dev libslang2-dev \
		libzstd-dev libcap-dev libtraceevent-dev pkg-config stress-ng ;;
	# make check-debug: a kernel built from linux-source-6.1, and the
	# liburcu selftests
	debug) echo flex bison bc libelf-dev liburcu-dev ;;
	# make check-dkms: dkms itself; dkms-deb: what builds the packages
	# (perfclock-dkms, libperfclock0, libperfclock-dev), lints them
	# (lintian) and builds the client against the installed -dev (pkg-config)
	dkms)  echo dkms ;;
	# make check-clients: LinuxTracepoints' perf-collect built with cmake,
	# read by Debian's perf
	clients) echo cmake g++ make git pkg-config linux-perf ;;
	dkms-deb) echo dh-dkms debhelper dpkg-dev lintian fakeroot pkg-config gcc libc6-dev ;;
	kernel:6.1:?*) group_pkgs "kernel:${1#kernel:6.1:}" ;;
	kernel:[0-9]*.[0-9]*:?*)
		r=$(release "${1#kernel:}") || exit 1
		echo "linux-image-$r-unsigned" "linux-headers-$r" ;;
	kernel:?*) echo "linux-image-${1#kernel:}" "linux-headers-${1#kernel:}" ;;
	source:[0-9]*.[0-9]*) echo "linux-source-${1#source:}" ;;
	image:?*)  echo "linux-image-${1#image:}" ;;
	*)     echo "perfclock: unknown dependency group '$1'" >&2; usage ;;
	esac
}

[ $# -gt 0 ] || usage
if [ "$1" = --release ]; then
	[ $# -eq 2 ] || usage
	release "$2"
	exit
fi

declare -A seen=()
missing=()
missing_from=()
for group in "$@"; do
	pkgs=$(group_pkgs "$group") || exit 1
	for pkg in $pkgs; do
		[ -z "${seen[$pkg]:-}" ] || continue
		seen[$pkg]=1
		# dpkg-query fails for a package dpkg never heard of; that is
		# "missing" too, hence the || true.
		status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
		if [ "$status" != "install ok installed" ]; then
			missing+=("$pkg")
			missing_from+=("$group")
		fi
	done
done

[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "perfclock: missing packages: ${missing[*]}" >&2
	echo "perfclock: not root; run: sudo apt-get install --no-install-recommends ${missing[*]}" >&2
	exit 1
fi

echo "perfclock: installing ${missing[*]} (for: $*)" >&2
export DEBIAN_FRONTEND=noninteractive
mkdir -p "$(dirname "$log")"
[ "$updated" = 1 ] || : >"$log"
# </dev/null: CI has no stdin, and apt must never wait on a prompt.
if ! { { [ "$updated" = 1 ] || "${apt[@]}" update; } &&
	"${apt[@]}" install -y --no-install-recommends "${missing[@]}"; } \
	</dev/null >>"$log" 2>&1; then
	tail -n 30 "$log" | sed 's/^/perfclock: apt: /' >&2
	echo "perfclock: installing ${missing[*]} failed (whole log: $log)" >&2
	exit 1
fi
