// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * rdtscp as the library sees it, for tests linked with
 * -Wl,--wrap=perfclock__cpu_has_rdtscp,--wrap=perfclock__rdtscp
 * (user/cpu_rdtscp.h). FAKE_CPU_RDTSCP gives the TSC (the ordered read
 * the page paths use) and, for TSC_AUX, the CPU the thread is on right
 * after it (plus fake_tsc_aux_add): exact on a pinned thread, which is
 * where the tests compare CPUs. clock_gettime() is wrapped as well
 * (--wrap=clock_gettime), to add fake_sleep_ns to CLOCK_BOOTTIME. Its hook runs inside the read, after the library's page loads
 * and before the TSC, the instant a module's writer would have to move
 * the page for the read to miss it.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perfclock_page.h"
#include "fake_cpu.h"

int __real_perfclock__cpu_has_rdtscp(void);
int __wrap_perfclock__cpu_has_rdtscp(void);
uint64_t __real_perfclock__rdtscp(uint32_t *aux);
uint64_t __wrap_perfclock__rdtscp(uint32_t *aux);

int __real_clock_gettime(clockid_t id, struct timespec *ts);
int __wrap_clock_gettime(clockid_t id, struct timespec *ts);

enum fake_cpu_mode fake_cpu_mode;
void (*fake_rdtscp_hook)(void);
unsigned long n_rdtscp;
uint32_t fake_tsc_aux_add;
int64_t fake_sleep_ns;

int __wrap_clock_gettime(clockid_t id, struct timespec *ts)
{
	int64_t ns;
	int ret = __real_clock_gettime(id, ts);

	if (ret || id != CLOCK_BOOTTIME || !fake_sleep_ns)
		return ret;
	ns = (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec + fake_sleep_ns;
	ts->tv_sec = ns / 1000000000LL;
	ts->tv_nsec = ns % 1000000000LL;
	return 0;
}

static void __attribute__((constructor)) fake_cpu_from_env(void)
{
	const char *e = getenv("PERFCLOCK_TEST_CPU");

	if (e && !strcmp(e, "no-rdtscp"))
		fake_cpu_mode = FAKE_CPU_NO_RDTSCP;
	else if (e && !strcmp(e, "rdtscp"))
		fake_cpu_mode = FAKE_CPU_RDTSCP;
}

const char *fake_cpu_name(enum fake_cpu_mode m)
{
	switch (m) {
	case FAKE_CPU_NO_RDTSCP:
		return "probe forced off";
	case FAKE_CPU_RDTSCP:
		return "fake rdtscp";
	default:
		return "this CPU";
	}
}

int __wrap_perfclock__cpu_has_rdtscp(void)
{
	switch (fake_cpu_mode) {
	case FAKE_CPU_NO_RDTSCP:
		return 0;
	case FAKE_CPU_RDTSCP:
		return 1;
	default:
		return __real_perfclock__cpu_has_rdtscp();
	}
}

uint64_t __wrap_perfclock__rdtscp(uint32_t *aux)
{
	uint64_t tsc;
	int cpu;

	n_rdtscp++;
	if (fake_cpu_mode != FAKE_CPU_RDTSCP)
		return __real_perfclock__rdtscp(aux);
	if (fake_rdtscp_hook)
		fake_rdtscp_hook();
	tsc = perfclock_rdtsc_ordered();
	cpu = sched_getcpu();
	*aux = (cpu < 0 ? 0 : (uint32_t)cpu) + fake_tsc_aux_add;
	return tsc;
}
