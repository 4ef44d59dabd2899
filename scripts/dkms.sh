#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/dkms.sh — perfclock under DKMS, as a distribution ships it.
#
# Usage: scripts/dkms.sh COMMAND [ARGS]
#
#   conf               print dkms.conf (after checking its version)
#   stage DIR          write the DKMS source tree into DIR: dkms.conf,
#                      VERSION, Makefile, Kbuild and module/ sources; what
#                      a perfclock-dkms package puts in /usr/src/perfclock-VER
#   install [KVER...]  stage into /usr/src/perfclock-VER, then dkms add, and
#                      dkms build + install for each KVER (default: every
#                      kernel under /lib/modules that has its headers). A
#                      perfclock/VER already known to dkms is removed first,
#                      so the tree's current sources are what gets built;
#                      then the udev rule (/lib/udev/rules.d) and the
#                      perfclock group, as the package installs them, and
#                      a running udev told to apply the rule
#   remove             dkms remove every perfclock version from every kernel,
#                      delete the staged /usr/src/perfclock-* trees and the
#                      udev rule (the group stays, as on a package purge)
#   status             dkms status for perfclock
#   deb [OUTDIR]       build every package of packaging/debian (default
#                      OUTDIR: build/dkms): perfclock-dkms_VER_all.deb with
#                      debhelper's dh_dkms (see below), the library's
#                      libperfclock0 (named after its soname) and
#                      libperfclock-dev, and their -dbgsym packages; prints
#                      the .deb paths
#   lint [OUTDIR]      lintian (with info and pedantic tags) on them; fails
#                      on any tag not overridden with a reason
#
# Needs root for install/remove (dkms writes /var/lib/dkms, /usr/src and
# /lib/modules). The version is the top-level VERSION file, nothing else.
#
# Why dkms.conf spells out its version rather than reading VERSION when
# sourced: dkms sources dkms.conf from several places (the source tree, its
# copy under /var/lib/dkms, /etc/dkms overrides) with no reliable notion of
# "the directory of this file", and packaging tools (dh_dkms, RPM specs,
# akmods) read PACKAGE_VERSION as a literal. So the committed dkms.conf
# holds the literal, and this script and make check (scripts/lint.sh)
# refuse to go on when it differs from VERSION.
#
# Why not "dkms mkdeb": dkms 3.0 dropped the mk* commands (mkdeb, mkbmdeb,
# mkrpm, ...); Debian 12's dkms 3.0.10 has none of them. Debian builds DKMS
# packages with debhelper's dh_dkms instead (package dh-dkms), and so does
# `deb` here: packaging/debian/ holds the packaging, the version comes from
# VERSION (debian/changelog is generated), and the result is an ordinary
# perfclock-dkms .deb whose postinst runs dkms add/build/install through
# /usr/lib/dkms/dkms_common.postinst and whose prerm runs dkms remove.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
name=perfclock
version=$(cat "$top/VERSION")

die() { echo "dkms.sh: $*" >&2; exit 1; }
say() { echo "perfclock: $*" >&2; }

case "$version" in
'' | *[!0-9A-Za-z.+~-]*) die "VERSION '$version' is not a valid package version" ;;
esac

need_root() {
	[ "$(id -u)" -eq 0 ] || die "$1 needs root (dkms writes /usr/src, /var/lib/dkms, /lib/modules)"
}

need_dkms() {
	command -v dkms >/dev/null || die "dkms not installed: apt-get install --no-install-recommends dkms"
}

gen_conf() {
	local v
	v=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$top/dkms.conf")
	[ "$v" = "$version" ] ||
		die "dkms.conf says PACKAGE_VERSION=\"$v\" but VERSION is $version: make them equal"
	cat "$top/dkms.conf"
}

# The files a DKMS build needs, and nothing else (no user space, no tests).
stage() {
	local dest=$1
	rm -rf "$dest"
	mkdir -p "$dest/module"
	gen_conf >"$dest/dkms.conf"
	cp "$top/VERSION" "$top/Makefile" "$top/Kbuild" "$dest/"
	cp "$top/module/perfclock.c" "$top/module/compat.h" \
		"$top/module/perfclock_ioctl.h" "$dest/module/"
}

# Kernels under /lib/modules with headers to build against.
kernels_with_headers() {
	local d
	for d in /lib/modules/*; do
		[ -e "$d/build/Makefile" ] && basename "$d"
	done
}

is_added() {
	[ -d "/var/lib/dkms/$name/$version" ]
}

# /usr/src/perfclock-* belongs to dpkg while perfclock-dkms is installed.
refuse_if_packaged() {
	if [ "$(dpkg-query -W -f='${Status}' "$name-dkms" 2>/dev/null)" = "install ok installed" ]; then
		die "the $name-dkms package is installed and owns /usr/src/$name-*: use apt-get remove $name-dkms first"
	fi
}

# The udev rule and its group, as the perfclock-dkms package installs them
# (packaging/debian/rules, perfclock-dkms.sysusers): the module's own
# default mode is 0600, root only; the rule gives the "perfclock" group
# read access (0640). Where the package keeps it, /lib/udev/rules.d: an
# administrator's /etc/udev/rules.d/60-perfclock.rules still overrides it.
udev_rule=/lib/udev/rules.d/60-perfclock.rules

# A running udev applies the rule to a node that already exists (a module
# loaded before this install) only when told: reload the rules, then a
# "change" event for the device, and wait for it. Without udev (a
# container, a guest without it) there is nothing to trigger: the rule
# applies when udev next starts and the module is loaded.
udev_apply() {
	command -v udevadm >/dev/null && udevadm control --ping 2>/dev/null || {
		say "udev is not running: the rule applies when it is and the module loads"
		return 0
	}
	udevadm control --reload
	udevadm trigger --action=change --subsystem-match=misc --sysname-match=perfclock
	udevadm settle --timeout=10 || say "udevadm settle timed out"
}

install_udev() {
	getent group "$name" >/dev/null || groupadd --system "$name"
	install -D -m 0644 "$top/packaging/udev/60-perfclock.rules" "$udev_rule"
	udev_apply
}

# A file at that path that is not a perfclock rule is left alone (the
# package's own is never reached: refuse_if_packaged). The group stays,
# as Debian leaves system groups on purge: files may still name it.
remove_udev() {
	[ -e "$udev_rule" ] || return 0
	if grep -q 'KERNEL=="perfclock"' "$udev_rule"; then
		rm -f "$udev_rule"
		udev_apply
	else
		say "$udev_rule is not perfclock's rule: left alone"
	fi
}

cmd_install() {
	need_root install
	need_dkms
	refuse_if_packaged
	local kvers=("$@") k
	if [ ${#kvers[@]} -eq 0 ]; then
		mapfile -t kvers < <(kernels_with_headers)
		[ ${#kvers[@]} -gt 0 ] ||
			die "no kernel headers under /lib/modules/*/build; install linux-headers-<flavour>"
	fi
	if is_added; then
		say "$name/$version is already known to dkms: removing it first"
		dkms remove "$name/$version" --all
	fi
	stage "/usr/src/$name-$version"
	dkms add -m "$name" -v "$version"
	for k in "${kvers[@]}"; do
		dkms build -m "$name" -v "$version" -k "$k"
		dkms install -m "$name" -v "$version" -k "$k"
	done
	install_udev
}

cmd_remove() {
	need_root remove
	need_dkms
	refuse_if_packaged
	local d v
	for d in /var/lib/dkms/"$name"/*/; do
		[ -d "$d" ] || continue
		v=$(basename "$d")
		# Skip the "kernel-*" symlinks dkms keeps next to the versions.
		[ -L "${d%/}" ] && continue
		dkms remove "$name/$v" --all
	done
	# dkms leaves an empty module directory when its last version goes.
	rmdir "/var/lib/dkms/$name" 2>/dev/null || true
	rm -rf /usr/src/"$name"-*
	remove_udev
}

# The library's sources as user/Makefile's lib and install targets need
# them (its tests, demo and bench are not packaged), its ABI baseline and
# the script that writes the symbols file from it.
stage_lib() {
	local dest=$1 f
	mkdir -p "$dest/user/perfclock" "$dest/scripts"
	for f in "$top"/user/*.c "$top"/user/*.h; do
		case ${f##*/} in demo_flush.c) continue ;; esac
		cp "$f" "$dest/user/"
	done
	# The public headers, one per object (libperfclock.h includes them).
	cp "$top"/user/perfclock/*.h "$dest/user/perfclock/"
	cp "$top/user/Makefile" "$top/user/libperfclock.map" "$top/user/libperfclock.pc.in" \
		"$top/user/libperfclock.abi" "$dest/user/"
	cp "$top/scripts/abi-check.sh" "$dest/scripts/"
}

cmd_deb() {
	local out=${1:-$top/build/dkms} work src f
	command -v dh_dkms >/dev/null && command -v dpkg-buildpackage >/dev/null ||
		die "deb needs dh_dkms and dpkg-buildpackage: scripts/deps.sh dkms-deb"
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	work=$out/deb-build
	src=$work/$name-$version
	rm -rf "$work"
	rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
	stage "$src"
	stage_lib "$src"
	cp -r "$top/packaging/debian" "$src/debian"
	mkdir -p "$src/packaging"
	cp -r "$top/packaging/udev" "$top/packaging/modules-load.d" "$src/packaging/"
	# debian/changelog carries the package version: derived from VERSION
	# here so that VERSION stays the only place it is written down.
	cat >"$src/debian/changelog" <<EOF
$name ($version) unstable; urgency=medium

  * perfclock $version, packaged from the source tree by scripts/dkms.sh.

 -- perfclock maintainers <maintainers@users.noreply.a-seed-1bd5d8b5.example>  $(date -R -d @"${SOURCE_DATE_EPOCH:-$(stat -c %Y "$top/VERSION")}")
EOF
	# -b: binary only; -us -uc: unsigned; -d: no build-dep check (the
	# build needs debhelper, dh-dkms and a C compiler: deps.sh dkms-deb).
	(cd "$src" && dpkg-buildpackage -b -us -uc -d) >"$work/build.log" 2>&1 ||
		{ tail -n 40 "$work/build.log" >&2; die "dpkg-buildpackage failed (log: $work/build.log)"; }
	# Every binary package (with the -dbgsym ones dh_strip makes), and
	# the .changes that lists them (lint runs lintian on it).
	for f in "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo; do
		mv "$f" "$out/"
	done
	ls "$out"/*.deb
}

# lintian on every package the last deb built, with its informational
# and pedantic tags too; exit 1 on any tag not overridden
# (packaging/debian/*.lintian-overrides, each with its reason).
cmd_lint() {
	local out=${1:-$top/build/dkms} changes tags
	command -v lintian >/dev/null || die "lint needs lintian: scripts/deps.sh dkms-deb"
	changes=$(ls "$out/${name}_${version}"_*.changes 2>/dev/null | head -n 1)
	[ -n "$changes" ] || die "no ${name}_${version}_*.changes in $out: run scripts/dkms.sh deb first"
	# lintian exits 1 when it prints a tag: the tags are what is judged.
	# As root it also warns that root is not recommended (it unpacks
	# untrusted packages; these are ours): not a tag, dropped.
	tags=$(lintian --display-info --pedantic --tag-display-limit 0 "$changes" 2>&1 |
		grep -v '^running with root privileges is not recommended!$') || true
	[ -z "$tags" ] || { printf '%s\n' "$tags"; return 1; }
	echo "lintian: no tags on $(basename "$changes") ($(ls "$out"/*.deb | wc -l) packages)"
}

[ $# -ge 1 ] || { sed -n '4,27p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 64; }
command=$1
shift
case "$command" in
conf)    gen_conf ;;
stage)   [ $# -eq 1 ] || die "usage: stage DIR"; stage "$1" ;;
install) cmd_install "$@" ;;
remove)  cmd_remove ;;
status)  need_dkms; dkms status "$name" ;;
deb)     cmd_deb "$@" ;;
lint)    cmd_lint "$@" ;;
*)       die "unknown command '$command' (conf stage install remove status deb lint)" ;;
esac
