# SPDX-License-Identifier: GPL-2.0
#
# perfclock: the module, the library, the selftests, and the checks.
#
#   make                 build everything for the kernel picked below
#   make demo            the live demo: every flush rule on the same real
#                        events (in QEMU guests when this kernel can't load
#                        modules); installs missing packages
#   make check           lint, host tests, and the selftests in QEMU guests
#                        (both clock regimes, 4 vCPUs and 8 overcommitted)
#                        on 6.1 and 6.12; installs missing packages
#   make check-kernels   what make check leaves out to stay under ten
#                        minutes: 6.1's unstable selftest guest and its
#                        overcommit guests, the demo's guests, vm.sh's
#                        own tests (scripts/check.sh says which)
#   make bench           benchmarks (guest clock paths, library queue)
#   make install         library, headers, pkg-config (PREFIX=, DESTDIR=)
#   make dkms-install    install the module with DKMS (root; KERNELRELEASE=
#                        for one kernel, else every kernel with headers)
#   make dkms-remove     remove it from DKMS
#   make deb             the Debian packages in build/dkms/: perfclock-dkms
#                        (dh_dkms), libperfclock0, libperfclock-dev, and
#                        lintian on them (make dkms-deb: the same);
#                        installs missing packages
#   make check-deb       the library's packages: contents, lintian, symbols,
#                        installed on this host, a client built with
#                        pkg-config against them, purged (root)
#   make check-dkms      DKMS on cloud-amd64, amd64 and rt-amd64 of 6.1 and
#                        6.12, each module booted and tested in QEMU
#                        (root); KVER=SERIES or KVER=RELEASE for fewer
#   make fuzz            the module's interface fuzzer and init fault sweep
#                        (fuzz/module, for the debug guest: check-debug)
#   make check-debug     the selftests, the interface fuzzer and init fault
#                        injection under a debug kernel (KASAN, lockdep,
#                        UBSAN, kmemleak) built from linux-source-6.1 and
#                        cached in /var/cache/perfclock; FUZZ_SECONDS=;
#                        6.1 only (KVER=6.12 is refused)
#   make check-perf      perf itself as the client: every step of
#                        patches/perf-fixes/ and patches/perf/ on
#                        linux-source-6.12 built with WERROR=1, and the
#                        optional patches/perf-libperfclock/ on top with
#                        LIBPERFCLOCK=1 (cached in /var/cache/perfclock);
#                        stock and patched perf trace, perf record +
#                        readers and perf top on the same load, in QEMU
#                        guests booting the 6.12 cloud kernel (PERF_KVER=;
#                        both clock regimes, and 8 vCPUs overcommitted) and
#                        on the host, where perf record --mmap-flush runs
#                        the tarball's perf against patched
#   make check-clients   LinuxTracepoints' perf-collect as a client: its
#                        upstream commit and the pull requests in
#                        patches/linuxtracepoints/ (cached in
#                        /var/cache/perfclock/clients): stock, plain (a
#                        clock read) and exact (libperfclock) at once on
#                        the same loads, on the host and in the 8-vCPU
#                        overcommitted guests; every file read by stock
#                        perf-decode, stock perf and an order checker
#
# The kernel, for every target (make module, make check, make demo, ...):
#   KDIR=DIR        a kernel build tree; wins over everything below
#   KVER=RELEASE    an installed kernel's headers, /lib/modules/RELEASE/build
#                   (KVER=6.12.118+deb12-rt-amd64); KERNELRELEASE=, as DKMS
#                   passes it, is the same
#   KVER=SERIES     the newest installed headers of that series, the cloud
#                   flavour among equals (KVER=6.12, KVER=6.1)
#   neither         the running kernel's headers if installed; else Debian
#                   12's own kernel, the newest installed 6.1 headers (what
#                   scripts/deps.sh build installs); else the newest
#                   installed Debian headers
# make check and make check-kernels run their guests on 6.1 and on the
# newest 6.12 (installing it) when no kernel is named, on the named one
# alone when it is (scripts/check.sh, CHECK_KERNELS). make demo, make
# bench and make check-perf boot the named kernel (a series not yet
# installed is installed: guest_kernel in scripts/vm-lib.sh); make
# check-dkms takes KVER= alone (DKMS builds against /lib/modules/KVER).

VERSION := $(shell cat $(CURDIR)/VERSION)

# The newest /usr/src/linux-headers-$(1)*, the cloud flavour among equals
# (it boots fastest in the test guest).
newest_headers = $(shell ls -d /usr/src/linux-headers-$(1)* 2>/dev/null | \
	grep -v -e '-common$$' -e '-common-rt$$' | \
	sed 's/-cloud-amd64$$/-zzcloud-amd64/' | sort -V | tail -n 1 | sed 's/-zzcloud-amd64$$/-cloud-amd64/')

ifeq ($(KVER),)
KVER := $(KERNELRELEASE)
endif
ifneq ($(KDIR),)
KDIR_FROM := KDIR=
CHECK_KERNELS ?= $(KDIR)
else ifneq ($(shell echo '$(KVER)' | grep -xE '[0-9]+\.[0-9]+'),)
KDIR := $(call newest_headers,$(KVER).)
KDIR_FROM := KVER=$(KVER), the newest installed $(KVER) headers
CHECK_KERNELS ?= $(if $(KDIR),$(KDIR),$(KVER))
else ifneq ($(KVER),)
KDIR := /lib/modules/$(KVER)/build
KDIR_FROM := KVER=
CHECK_KERNELS ?= $(KDIR)
else ifneq ($(wildcard /lib/modules/$(shell uname -r)/build),)
KDIR := /lib/modules/$(shell uname -r)/build
KDIR_FROM := the running kernel
else
KDIR := $(call newest_headers,6.1.)
KDIR_FROM := Debian 12's 6.1, the newest installed
ifeq ($(KDIR),)
KDIR := $(call newest_headers,)
KDIR_FROM := the newest installed Debian headers
endif
endif
# The kernels make check boots: 6.1 and 6.12 unless one was named.
CHECK_KERNELS ?= 6.1 6.12

# What kbuild needs from us: the version, and any extra flags (W=1, C=1).
KBUILD_ARGS := -C $(KDIR) M=$(CURDIR) KCFLAGS='$(KCFLAGS) -DPERFCLOCK_VERSION=\"$(VERSION)\"'

.PHONY: all module user selftests fuzz demo check check-kernel check-kernels lint bench install clean kdir-check print-kdir \
	dkms-install dkms-remove dkms-deb deb check-deb check-dkms check-debug check-perf check-clients

all: module user selftests fuzz

kdir-check:
	@if [ -z "$(KDIR)" ] || [ ! -d "$(KDIR)" ]; then \
		echo "perfclock: no kernel headers found (KDIR='$(KDIR)'); install linux-headers-$$(uname -r) or pass KDIR=" >&2; \
		exit 1; \
	fi
	@echo "perfclock: building against $(KDIR) ($(KDIR_FROM))"

print-kdir:
	@echo $(KDIR)

module: kdir-check
	$(MAKE) $(KBUILD_ARGS) modules

user:
	$(MAKE) -C user

selftests:
	$(MAKE) -C selftests KDIR=$(KDIR)

fuzz:
	$(MAKE) -C fuzz

demo:
	KDIR=$(KDIR) scripts/demo.sh

check:
	KDIR=$(KDIR) CHECK_KERNELS='$(CHECK_KERNELS)' scripts/check.sh

# The kernel side alone: lint and the guest selftests.
check-kernel:
	KDIR=$(KDIR) CHECK_KERNELS='$(CHECK_KERNELS)' scripts/check.sh lint guest

# What make check leaves out to stay under ten minutes (scripts/check.sh
# says what): .ci/run runs it.
check-kernels:
	KDIR=$(KDIR) CHECK_KERNELS='$(CHECK_KERNELS)' scripts/check.sh long

lint: kdir-check
	KDIR=$(KDIR) scripts/lint.sh

bench:
	KDIR=$(KDIR) scripts/bench.sh

install:
	$(MAKE) -C user install

dkms-install:
	scripts/dkms.sh install $(KERNELRELEASE)

dkms-remove:
	scripts/dkms.sh remove

deb dkms-deb:
	scripts/deps.sh dkms-deb
	scripts/dkms.sh deb
	scripts/dkms.sh lint

check-deb:
	scripts/check-deb.sh

check-dkms:
	scripts/check-dkms.sh

check-debug:
	scripts/check-debug.sh

check-perf:
	KDIR=$(KDIR) scripts/check-perf.sh

check-clients:
	KDIR=$(KDIR) scripts/check-clients.sh

clean:
	-[ -d "$(KDIR)" ] && $(MAKE) $(KBUILD_ARGS) clean
	$(MAKE) -C user clean
	$(MAKE) -C selftests clean
	$(MAKE) -C bench clean
	rm -rf build
