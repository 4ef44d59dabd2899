# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# dpkg for the checks that install packages on the host (check-dkms.sh,
# check-deb.sh, check-perf.sh); source it.
#
# dpkg itself does not wait for the dpkg lock (apt-get does, with
# DPkg::Lock::Timeout): dpkg_waiting waits for it, up to 10 minutes, so
# that an apt run elsewhere on the machine does not fail the package steps.
dpkg_waiting() {	# dpkg_waiting DPKG-ARGS...; output as dpkg's
	local i out st
	for i in $(seq 120); do
		st=0
		out=$(DEBIAN_FRONTEND=noninteractive dpkg "$@" 2>&1) || st=$?
		if [ $st -ne 0 ] && grep -q 'dpkg frontend lock\|lock-frontend\|database is locked' <<< "$out"; then
			sleep 5
			continue
		fi
		break
	done
	printf '%s\n' "$out"
	return $st
}

# installed PACKAGE: dpkg knows it as installed (or half-installed etc.:
# anything but gone).
pkg_present() {
	local s
	s=$(dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null) || return 1
	[ -n "$s" ] && [ "${s#un}" = "$s" ] && [ "${s#pn}" = "$s" ]
}
