# SPDX-License-Identifier: GPL-2.0
#
# perfclock: the module, the library, the selftests, and the checks.
#
#   make                 build everything for the kernel picked below
#   make check           lint, host tests, and the selftests in QEMU guests
#                        (both clock regimes); installs missing packages
#   make bench           benchmarks (guest clock paths, library queue)
#   make install         library, headers, pkg-config (PREFIX=, DESTDIR=)
#
# The kernel tree: KDIR= wins; else KERNELRELEASE= (as DKMS passes it)
# gives /lib/modules/$(KERNELRELEASE)/build; else the running kernel's
# headers if installed; else the newest installed Debian headers.

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
KDIR := $(shell ls -d /usr/src/linux-headers-*-* 2>/dev/null | grep -v -- '-common$$' | sort -V | tail -n 1)
KDIR_FROM := the newest installed Debian headers
endif

# What kbuild needs from us: the version, and any extra flags (W=1, C=1).
KBUILD_ARGS := -C $(KDIR) M=$(CURDIR) KCFLAGS='$(KCFLAGS) -DPERFCLOCK_VERSION=\"$(VERSION)\"'

.PHONY: all module user selftests check check-kernel lint bench install clean kdir-check print-kdir

all: module user selftests

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

clean:
	-[ -d "$(KDIR)" ] && $(MAKE) $(KBUILD_ARGS) clean
	$(MAKE) -C user clean
	$(MAKE) -C selftests clean
	rm -rf build
