#!/bin/bash
# scripts/deps.sh GROUP... — install the Debian 12 packages a step needs.
# The one place anything here calls apt-get: every script asks it by group.
#
# Groups (any number, in any order):
#   build vm lint user bench perf demo debug dkms dkms-deb clients
#   kernel:FLAVOUR   linux-image-FLAVOUR and linux-headers-FLAVOUR
#                    (e.g. kernel:rt-amd64)
#   image:KVER       linux-image-KVER alone (the guest kernel matching
#                    headers already installed)
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
	echo "usage: $0 GROUP...   (groups: build vm lint user bench perf demo debug dkms dkms-deb clients kernel:FLAVOUR image:KVER)" >&2
	exit 64
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
	# perf from linux-source-6.1 (make check-perf), and its host load
	perf)  echo flex bison libelf-dev libdw-dev libunwind-dev libnuma-dev libslang2-dev \
		libzstd-dev libcap-dev pkg-config stress-ng ;;
	# make check-debug: a kernel built from linux-source-6.1, and the
	# liburcu selftests
	debug) echo flex bison bc libelf-dev liburcu-dev ;;
	# make check-dkms: dkms itself; dkms-deb: what builds the packages
	# (perfclock-dkms, libperfclock0.2, libperfclock-dev), lints them
	# (lintian) and builds the client against the installed -dev (pkg-config)
	dkms)  echo dkms ;;
	# make check-clients: LinuxTracepoints' perf-collect built with cmake,
	# read by Debian's perf
	clients) echo cmake g++ make git pkg-config linux-perf ;;
	dkms-deb) echo dh-dkms debhelper dpkg-dev lintian fakeroot pkg-config gcc libc6-dev ;;
	kernel:?*) echo "linux-image-${1#kernel:}" "linux-headers-${1#kernel:}" ;;
	image:?*)  echo "linux-image-${1#image:}" ;;
	*)     echo "perfclock: unknown dependency group '$1'" >&2; usage ;;
	esac
}

[ $# -gt 0 ] || usage

declare -A seen=()
missing=()
missing_from=()
for group in "$@"; do
	pkgs=$(group_pkgs "$group")
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
log=$(cd "$(dirname "$0")/.." && pwd)/build/deps-apt.log
mkdir -p "$(dirname "$log")"
# </dev/null: CI has no stdin, and apt must never wait on a prompt.
apt=(apt-get -q -o DPkg::Lock::Timeout=600)
if ! { "${apt[@]}" update && "${apt[@]}" install -y --no-install-recommends "${missing[@]}"; } \
	</dev/null >"$log" 2>&1; then
	tail -n 30 "$log" | sed 's/^/perfclock: apt: /' >&2
	echo "perfclock: installing ${missing[*]} failed (whole log: $log)" >&2
	exit 1
fi
