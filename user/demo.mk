# SPDX-License-Identifier: LGPL-2.1-or-later
#
# demo_flush: the flush rules side by side on live per-CPU perf rings.
# Included from user/Makefile (it uses B, CC, CFLAGS, WARN, EXTRA_WERROR
# from there); or by itself: make -C user -f Makefile -f demo.mk build/demo_flush
#
# Static, so the test VM's busybox-only initramfs can run it.

DEMO_SRCS := demo_flush.c demo/tp.c demo/load.c demo/rules.c
DEMO_HDRS := demo/tp.h demo/load.h demo/hist.h demo/rules.h libperfclock.h

.PHONY: demo_flush
demo_flush: $(B)/demo_flush

$(B)/demo_flush: $(DEMO_SRCS) $(DEMO_HDRS) $(B)/libperfclock.a
	$(CC) -std=gnu11 $(WARN) $(EXTRA_WERROR) -D_GNU_SOURCE -I. $(CFLAGS) \
		-static -pthread -o $@ $(DEMO_SRCS) $(B)/libperfclock.a
