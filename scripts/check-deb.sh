#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/check-deb.sh — what `make check-deb` runs (and check-dkms.sh's
# last step): the library's Debian packages, the way a distribution tool
# would use them.
#
#   1. installs what is missing (scripts/deps.sh dkms-deb);
#   2. builds every package (scripts/dkms.sh deb; DEB_DIR=DIR takes the
#      ones already built there instead) and checks what each holds:
#      libperfclock0 the soname's files only, libperfclock-dev the
#      headers, the .a, the .so link and libperfclock.pc;
#   3. lintian, info and pedantic tags included: none (scripts/dkms.sh lint);
#   4. the symbols file: libperfclock0's lists exactly the library's
#      exported symbol@NODE (scripts/abi-check.sh list), each with its
#      minimum version; and dpkg-gensymbols -c4, run as dh_makeshlibs ran
#      it on the built tree, fails for a symbols file made from a baseline
#      with a symbol the library lost, or with a symbol in another node;
#   5. installs libperfclock0 and libperfclock-dev on this host with
#      dpkg -i; ldconfig's cache has the soname, pkg-config (no
#      PKG_CONFIG_PATH) finds libperfclock at the package's version; a
#      client (packaging/tests/client.c) built with nothing but
#      `pkg-config --cflags --libs libperfclock` includes the installed
#      header, loads the installed .so, and runs: CLOCK_MONOTONIC clock,
#      horizons, two sources merged by the queue in time order; the same
#      client linked statically (pkg-config --static, libperfclock.a);
#   6. dpkg --purge, then nothing left: the packages unknown to dpkg, no
#      file of theirs on disk, no "*libperfclock*" path (nor
#      /usr/include/perfclock) under /usr, /etc or dpkg's database that was
#      not there before, nothing in ldconfig's cache or for pkg-config.
#
# Why the host and not a fresh root (debootstrap, or dpkg --root into an
# empty directory): a debootstrap'd Debian 12 with a compiler is several
# minutes and ~300 MB of downloads per run; dpkg --root into an empty
# directory has no libc6 to satisfy the Depends, no compiler and no
# ldconfig trigger, so it would test dpkg's unpacking and nothing a user
# sees. The host is a real Debian 12 with real dependency resolution,
# ldconfig trigger, pkg-config search path and compiler defaults. What a
# fresh root would add — that nothing else provides libperfclock — is
# checked instead: before installing, no libperfclock package is
# installed (an earlier run's is purged, and said), no libperfclock under
# /usr/local and no PKG_CONFIG_PATH; after, the client's header and
# library are shown to be the installed packages' files. perfclock-dkms
# is not installed here: its postinst builds the module for every kernel
# (check-dkms.sh does that, with guests).
#
# Output: TAP, ending "N passed, N failed, N skipped"; exit status
# non-zero if anything failed. Needs root (dpkg -i). Logs: build/deb/.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
version=$(cat VERSION)
log=$top/build/deb
rm -rf "$log"
mkdir -p "$log"
TAP_PREFIX=${TAP_PREFIX:-"deb: "}
. scripts/tap-lib.sh
. scripts/dpkg-lib.sh
unset PKG_CONFIG_PATH PKG_CONFIG_LIBDIR

echo "TAP version 13"
if [ "$(id -u)" -ne 0 ]; then
	result 1 "setup: running as root (dpkg -i needs it)"
	finish
fi

# ---- 1. packages --------------------------------------------------------------
scripts/deps.sh dkms-deb >"$log/deps.log" 2>&1
result $? "setup: packages installed (deps.sh dkms-deb)" "$(cat "$log/deps.log")" || finish

soname=$(make -s --no-print-directory -C user print-soname)
libpkg=libperfclock${soname#libperfclock.so.}
devpkg=libperfclock-dev
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
libdir=/usr/lib/$multiarch

# ---- 2. build -----------------------------------------------------------------
if [ -n "${DEB_DIR:-}" ]; then
	out=$DEB_DIR
	echo "# packages from $out (built by the caller)"
else
	out=$log/pkgs
	t=$(date +%s)
	scripts/dkms.sh deb "$out" >"$log/deb.out" 2>"$log/deb.err"
	result $? "build: scripts/dkms.sh deb ($(($(date +%s) - t)) s)" "$(tail -n 30 "$log/deb.err")" || finish
fi
libdeb=$out/${libpkg}_${version}_$arch.deb
devdeb=$out/${devpkg}_${version}_$arch.deb
for d in "$libdeb" "$devdeb" "$out/perfclock-dkms_${version}_all.deb"; do
	check "build: $(basename "$d") built" test -f "$d"
done
[ "$failed" -eq 0 ] || finish

# What each package holds (regular files and links, without the docs).
contents() { dpkg-deb -c "$1" | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\./|/|' | grep -v '^/usr/share/doc/' | sort; }
contents "$libdeb" >"$log/lib.files"
contents "$devdeb" >"$log/dev.files"
want_lib=$(printf '%s\n' "$libdir/$soname" "$libdir/libperfclock.so.$version" | sort)
result $([ "$(cat "$log/lib.files")" = "$want_lib" ]; echo $?) \
	"contents: $libpkg holds $soname and libperfclock.so.$version only" "$(cat "$log/lib.files")"
want_dev=$(printf '%s\n' /usr/include/perfclock/libperfclock.h /usr/include/perfclock/perfclock_page.h \
	/usr/include/perfclock/perfclock_ioctl.h /usr/include/perfclock/perfclock_reader.h \
	$(for h in user/perfclock/*.h; do echo "/usr/include/perfclock/${h##*/}"; done) \
	"$libdir/libperfclock.a" "$libdir/libperfclock.so" \
	"$libdir/pkgconfig/libperfclock.pc" | sort)
result $([ "$(cat "$log/dev.files")" = "$want_dev" ]; echo $?) \
	"contents: $devpkg holds the public headers (libperfclock.h and user/perfclock/*.h among them), libperfclock.a, the .so link and libperfclock.pc" \
	"$(diff <(echo "$want_dev") "$log/dev.files")"
dep=$(dpkg-deb -f "$devdeb" Depends)
result $([ "$dep" = "$libpkg (= $version)" ]; echo $?) "contents: $devpkg depends on $libpkg (= $version) ($dep)"

# ---- 3. lintian -----------------------------------------------------------------
scripts/dkms.sh lint "$out" >"$log/lintian.out" 2>&1
result $? "lintian --display-info --pedantic: $(tail -n 1 "$log/lintian.out")" "$(cat "$log/lintian.out")"

# ---- 4. symbols ---------------------------------------------------------------------
mkdir -p "$log/ctl"
dpkg-deb -e "$libdeb" "$log/ctl"
src=$out/deb-build/perfclock-$version
so=$src/debian/$libpkg$libdir/libperfclock.so.$version
if [ -f "$so" ]; then
	scripts/abi-check.sh list "$so" | grep '@' >"$log/exported"
	# The version nodes' own symbols (NODE@NODE) are in the file too.
	sed -n 's/^ \([^ ]*\) .*/\1/p' "$log/ctl/symbols" | grep -v '^\([^@]*\)@\1$' | sort >"$log/listed"
	result $(cmp -s "$log/exported" "$log/listed"; echo $?) \
		"symbols: $libpkg's symbols file lists exactly the $(wc -l <"$log/exported") exported symbol@NODE" \
		"$(diff "$log/exported" "$log/listed")"
	bad=$(sed -n '3,$p' "$log/ctl/symbols" | grep -v '^ [A-Za-z0-9_.]*@PERFCLOCK_[0-9.]* [0-9][0-9.]*~$')
	result $([ -z "$bad" ] && head -n 1 "$log/ctl/symbols" | grep -qx "$soname $libpkg #MINVER#"; echo $?) \
		"symbols: header '$soname $libpkg #MINVER#', every line symbol@NODE VERSION~" "$bad"
	# dpkg-gensymbols as dh_makeshlibs -- -c4 runs it, on a symbols file
	# made (as debian/rules makes it) from a doctored baseline.
	gensym() {	# gensym BASELINE: dpkg-gensymbols' exit status
		scripts/abi-check.sh symbols user/libperfclock.map "$1" "$soname" "$libpkg" "$version" \
			>"$log/doctored.symbols" || return 99
		(cd "$src" && dpkg-gensymbols -p"$libpkg" -P"debian/$libpkg" -I"$log/doctored.symbols" \
			-c4 -O/dev/null) >"$log/gensym.out" 2>&1
	}
	gensym user/libperfclock.abi
	result $? "symbols: dpkg-gensymbols -c4 passes with the committed baseline" "$(head -n 20 "$log/gensym.out")"
	{ cat user/libperfclock.abi; echo "perfclock_removed_symbol@PERFCLOCK_0"; } >"$log/removed.abi"
	gensym "$log/removed.abi"
	st=$?
	result $([ $st -ne 0 ] && grep -q 'disappeared' "$log/gensym.out"; echo $?) \
		"symbols: dpkg-gensymbols -c4 fails the build when a released symbol is gone (exit $st)"
	first=$(grep -m1 '^perfclock_[a-z_]*@' user/libperfclock.abi)
	sed "s/^${first%@*}@.*/${first%@*}@PERFCLOCK_0.99/" user/libperfclock.abi >"$log/moved.abi"
	gensym "$log/moved.abi"
	st=$?
	result $([ $st -ne 0 ]; echo $?) \
		"symbols: dpkg-gensymbols -c4 fails the build when ${first%@*} is in another node than released (exit $st)"
else
	result 1 "symbols: the built tree $src has no $so (DEB_DIR without its deb-build/?)"
fi

# ---- 5. install on the host -------------------------------------------------------
# Nothing else may provide libperfclock: the client must find the packages.
for p in "$libpkg" "$devpkg"; do
	if pkg_present "$p"; then
		echo "# $p is installed (an earlier run?): purging it first"
		dpkg_waiting --purge "$p" >>"$log/pre-purge.log" 2>&1
	fi
done
other=$(ls -d /usr/local/lib/libperfclock* /usr/local/lib/*/libperfclock* /usr/local/include/perfclock \
	/usr/local/lib/pkgconfig/libperfclock.pc 2>/dev/null)
result $([ -z "$other" ]; echo $?) "install: no other libperfclock on this host${other:+ ($other)}"
# The library's names only: perfclock-dkms's (modules, /usr/src, the udev
# rule) are check-dkms.sh's, and a run of it may change them meanwhile.
snapshot() {
	find /usr /etc /var/lib/dpkg/info -xdev \( -name '*libperfclock*' -o -path /usr/include/perfclock \) \
		2>/dev/null | sort
}
snapshot >"$log/before"
ldconfig -p | grep -q 'libperfclock\.so' && echo "# ldconfig already knows a libperfclock before install"

dpkg_waiting -i "$libdeb" "$devdeb" >"$log/install.log" 2>&1
result $? "install: dpkg -i $(basename "$libdeb") $(basename "$devdeb")" "$(tail -n 20 "$log/install.log")"
check "install: ldconfig's cache has $soname in $libdir" \
	sh -c "ldconfig -p | grep -E '^\s$soname .* => (/usr)?/lib/$multiarch/$soname\$'"
v=$(pkg-config --modversion libperfclock 2>&1)
result $([ "$v" = "$version" ]; echo $?) "install: pkg-config finds libperfclock $v (no PKG_CONFIG_PATH)"
flags=$(pkg-config --cflags --libs libperfclock 2>&1)
echo "# pkg-config --cflags --libs libperfclock: $flags"
# shellcheck disable=SC2086 # the flags are words
cc -Wall -Wextra -Werror -o "$log/client" packaging/tests/client.c $flags >"$log/client-build.log" 2>&1
result $? "client: builds with cc packaging/tests/client.c \$(pkg-config --cflags --libs libperfclock)" \
	"$(cat "$log/client-build.log")"
# shellcheck disable=SC2086
hdr=$(cc -M packaging/tests/client.c $(pkg-config --cflags libperfclock) 2>/dev/null | tr ' \\' '\n\n' |
	grep 'libperfclock\.h$')
result $([ "$hdr" = /usr/include/perfclock/libperfclock.h ]; echo $?) "client: includes the package's header (${hdr:-none})"
lib=$(ldd "$log/client" 2>&1 | sed -n "s/.*$soname => \([^ ]*\).*/\1/p")
result $([ "$(readlink -f "$lib")" = "$libdir/libperfclock.so.$version" ] &&
	dpkg -S "$libdir/$soname" 2>/dev/null | grep -q "^$libpkg:"; echo $?) \
	"client: loads $lib, $libpkg's file"
"$log/client" >"$log/client.out" 2>&1
result $? "client: runs ($(tail -n 1 "$log/client.out"))"
# shellcheck disable=SC2086
cc -static -Wall -Wextra -Werror -o "$log/client-static" packaging/tests/client.c \
	$(pkg-config --static --cflags --libs libperfclock) >"$log/client-static.log" 2>&1 &&
	"$log/client-static" >"$log/client-static.out" 2>&1
result $? "client: linked -static against $libdir/libperfclock.a, runs ($(tail -n 1 "$log/client-static.out" 2>/dev/null))" \
	"$(cat "$log/client-static.log")"

# The README's examples, with nothing but the -dev package: built by
# their own Makefile (pkg-config), and run where perf and tracefs allow.
for t in tracer_threads tracer; do
	rm -f examples/$t
	make --no-print-directory -C examples $t >"$log/example-$t-build.log" 2>&1
	result $? "example: examples/$t builds against the installed -dev package" \
		"$(cat "$log/example-$t-build.log")"
	if [ "$(id -u)" = 0 ] && [ -r /sys/kernel/tracing/events/sched/sched_switch/id ]; then
		examples/$t 0.2 >"$log/example-$t.out" 2>"$log/example-$t.err"
		result $? "example: $t runs against $libpkg ($(tail -n 1 "$log/example-$t.err"))" \
			"$(cat "$log/example-$t.err")"
	else
		skip_result "example: $t runs" "not root, or tracefs not mounted at /sys/kernel/tracing"
	fi
	rm -f examples/$t
done

# ---- 6. purge: nothing left ---------------------------------------------------------
files=$( { dpkg -L "$libpkg"; dpkg -L "$devpkg"; } 2>/dev/null | sort -u)
dpkg_waiting --purge "$devpkg" "$libpkg" >"$log/purge.log" 2>&1
result $? "purge: dpkg --purge $devpkg $libpkg" "$(tail -n 20 "$log/purge.log")"
for p in "$libpkg" "$devpkg"; do
	result $(! pkg_present "$p"; echo $?) "purge: dpkg no longer knows $p"
done
# (Directories aside: /usr, /usr/lib are everybody's; the package's own,
# /usr/include/perfclock, is in the snapshot below.)
left=$(for f in $files; do
	[ -d "$f" ] && continue
	{ [ -e "$f" ] || [ -L "$f" ]; } && echo "$f"
done)
result $([ -z "$left" ]; echo $?) "purge: none of the packages' $(echo "$files" | wc -l) paths' files is left" "$left"
snapshot >"$log/after"
result $(cmp -s "$log/before" "$log/after"; echo $?) \
	"purge: the *libperfclock* paths and /usr/include/perfclock under /usr, /etc and dpkg's info are as before ($(wc -l <"$log/after"))" \
	"$(diff "$log/before" "$log/after")"
check "purge: ldconfig's cache no longer has $soname" sh -c "! ldconfig -p | grep -q '$soname'"
check "purge: pkg-config no longer finds libperfclock" sh -c "! pkg-config --exists libperfclock"

finish
