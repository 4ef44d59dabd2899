# SPDX-License-Identifier: GPL-2.0
#
# perfclock: the module, the library, the selftests, and the checks.
#
#   make                 build everything for the kernel picked below
#   make demo            the live demo: every flush rule on the same real
#                        events (in QEMU guests when this kernel can't load
#                        modules); installs missing packages
#   make check           lint, host tests, and the selftests in QEMU guests
#                        (both clock regimes); installs missing packages
#   make bench           benchmarks (guest clock paths, library queue)
#   make install         library, headers, pkg-config (PREFIX=, DESTDIR=)
#   make dkms-install    install the module with DKMS (root; KERNELRELEASE=
#                        for one kernel, else every kernel with headers)
#   make dkms-remove     remove it from DKMS
#   make deb             the Debian packages in build/dkms/: perfclock-dkms
#                        (dh_dkms), libperfclock0.2, libperfclock-dev, and
#                        lintian on them (make dkms-deb: the same);
#                        installs missing packages
#   make check-deb       the library's packages: contents, lintian, symbols,
#                        installed on this host, a client built with
#                        pkg-config against them, purged (root)
#   make check-dkms      DKMS on cloud-amd64, amd64 and rt-amd64, each
#                        module booted and tested in QEMU (root)
#   make fuzz            the module's interface fuzzer and init fault sweep
#                        (fuzz/module, for the debug guest: check-debug)
#   make check-debug     the selftests, the interface fuzzer and init fault
#                        injection under a debug kernel (KASAN, lockdep,
#                        UBSAN, kmemleak) built from linux-source-6.1 and
#                        cached in /var/cache/perfclock; FUZZ_SECONDS=
#   make check-perf      perf itself as the client: every step of
#                        patches/perf/ on linux-source-6.1 built with
#                        WERROR=1 with and without libperfclock (cached in
#                        /var/cache/perfclock); stock and patched perf
#                        trace, perf record + readers and perf top on the
#                        same load, in QEMU guests (both clock regimes, and
#                        8 vCPUs overcommitted) and on the host
#   make check-clients   LinuxTracepoints' perf-collect as a client: its
#                        upstream commit and patches/linuxtracepoints/ built
#                        with and without libperfclock (cached in
#                        /var/cache/perfclock/clients), stock and patched
#                        on the same loads, on the host and in the 8-vCPU
#                        overcommitted guest; every file read by stock
#                        perf-decode, stock perf and an order checker
#
# The kernel tree: KDIR= wins; else KERNELRELEASE= (as DKMS passes it)
# gives /lib/modules/$(KERNELRELEASE)/build; else the running kernel's
# headers if installed; else the newest installed Debian headers (the
# cloud flavour among equals).

VERSION := $(shell cat $(CURDIR)/VERSION)

ifneq ($(KDIR),)
KDIR_FROM := KDIR=
else ifneq ($(KERNELRELEASE),)
KDIR := /lib/modules/$(KERNELRELEASE)/build
KDIR_FROM := KERNELRELEASE=
else ifneq ($(wildcard /lib/modules/$(shell uname -r)/build),)
KDIR := /lib/modules/$(shell uname -r)/build
KDIR_FROM := the running kernel
else
# Among the newest, the cloud flavour: it boots fastest in the test guest.
KDIR := $(shell ls -d /usr/src/linux-headers-*-* 2>/dev/null | grep -v -- '-common$$' | \
	sed 's/-cloud-amd64$$/-zzcloud-amd64/' | sort -V | tail -n 1 | sed 's/-zzcloud-amd64$$/-cloud-amd64/')
KDIR_FROM := the newest installed Debian headers
endif

# What kbuild needs from us: the version, and any extra flags (W=1, C=1).
KBUILD_ARGS := -C $(KDIR) M=$(CURDIR) KCFLAGS='$(KCFLAGS) -DPERFCLOCK_VERSION=\"$(VERSION)\"'

.PHONY: all module user selftests fuzz demo check check-kernel lint bench install clean kdir-check print-kdir \
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
	KDIR=$(KDIR) scripts/check.sh

# The kernel side alone: lint and the guest selftests.
check-kernel:
	KDIR=$(KDIR) scripts/check.sh lint guest

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
