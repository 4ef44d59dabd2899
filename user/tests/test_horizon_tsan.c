// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The shared last horizon across threads, under ThreadSanitizer (built by
 * tests/check.sh with clang -fsanitize=thread, library sources included).
 *
 * The fake device's page (fake_device.c) is written here by a "module"
 * thread that plays both kernel roles: before it publishes horizon k on
 * the page (seq odd, horizon_ns, seq even with a release), it writes
 * committed[k] with a plain store, the stand-in for a perf writer's
 * data_head store that the grace period made visible. Reader threads take
 * perfclock_horizon() and read committed[h] with a plain load, as a tool
 * reads the rings after H. That is race-free only if every H a thread
 * gets, its own or one another thread proved (the shared last horizon),
 * comes with a happens-before edge from the module's store (horizon.c,
 * MEMORY ORDER). With the relaxed CAS that hz_last used to be, TSAN
 * reports a data race on committed[] here; x86 hardware would never show
 * it (TSO), which is why this is a TSAN test and not a litmus run.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libperfclock.h"
#include "perfclock_page.h"
#include "tap.h"
#include "fake_device.h"

#define UPDATES		20000
#define READERS		3
#define STEP_NS		1000ULL

static uint64_t committed[UPDATES + 1];	/* plain: what H makes visible */
static int done;
static struct perfclock *clk;
static unsigned long bad[READERS], calls[READERS], errs[READERS];

static void *module_thread(void *arg)
{
	uint32_t seq = __atomic_load_n(&page.seq, __ATOMIC_RELAXED);
	uint64_t k;

	(void)arg;
	for (k = 1; k <= UPDATES; k++) {
		committed[k] = k;		/* the record, committed */
		__atomic_store_n(&page.seq, seq + 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		__atomic_store_n(&page.horizon_ns, k * STEP_NS,
				 __ATOMIC_RELAXED);
		seq += 2;
		__atomic_store_n(&page.seq, seq, __ATOMIC_RELEASE);
		if (!(k % 64))
			sched_yield();
	}
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void *reader_thread(void *arg)
{
	long i = (long)arg;
	uint64_t h;

	while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
		calls[i]++;
		if (perfclock_horizon(clk, &h)) {
			errs[i]++;
			continue;
		}
		/* A tool now reads what H says is there. */
		if (h / STEP_NS > UPDATES ||
		    committed[h / STEP_NS] != h / STEP_NS)
			bad[i]++;
	}
	return NULL;
}

int main(void)
{
	pthread_t mod, rd[READERS];
	unsigned long nbad = 0, ncalls = 0, nerr = 0;
	long i;

	fake_reset();
	fake_info.flags |= PERFCLOCK_INFO_HORIZON;
	page.flags |= PERFCLOCK_PAGE_HORIZON_VALID;
	page.horizon_ns = 0;
	clk = perfclock_open("/dev/null");
	if (!tap_ok(clk != NULL, "tsan: a module with horizons opens"))
		return tap_exit();
	for (i = 0; i < READERS; i++)
		pthread_create(&rd[i], NULL, reader_thread, (void *)i);
	pthread_create(&mod, NULL, module_thread, NULL);
	pthread_join(mod, NULL);
	for (i = 0; i < READERS; i++) {
		pthread_join(rd[i], NULL);
		nbad += bad[i];
		ncalls += calls[i];
		nerr += errs[i];
	}
	tap_ok(ncalls > 0 && nbad == 0 && nerr == 0,
	       "tsan: %d threads, %lu horizons over %d page updates: every H's "
	       "record was there (%lu missing, %lu errors); a race on it is "
	       "TSAN's to report", READERS, ncalls, UPDATES, nbad, nerr);
	perfclock_close(clk);
	return tap_exit();
}
