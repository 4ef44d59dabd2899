// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * rdtscp and its probe (cpu_rdtscp.h says why they are a file of their
 * own). The per-CPU horizon's page paths are their only users.
 */
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "cpu_rdtscp.h"

/*
 * The kernel's word that it has rdtscp: the flag in /proc/cpuinfo. Only
 * then does it write the CPU number into TSC_AUX
 * (arch/x86/kernel/cpu/common.c: setup_getcpu()), and only then is the
 * instruction known to work here: CPUID alone is not enough (valgrind's
 * CPU advertises rdtscp and traps on it).
 */
static int kernel_has_rdtscp(void)
{
	char line[4096];
	int found = 0;
	FILE *f = fopen("/proc/cpuinfo", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		found = strstr(line, " rdtscp ") || strstr(line, " rdtscp\n");
		break;
	}
	fclose(f);
	return found;
}

int perfclock__cpu_has_rdtscp(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned int a, b, c, d;

	if (!__get_cpuid(0x80000001U, &a, &b, &c, &d) || !(d & (1U << 27)))
		return 0;
	return kernel_has_rdtscp();
#else
	return 0;
#endif
}

/*
 * It waits for every earlier instruction to execute (Intel SDM, RDTSCP),
 * so the TSC is not taken ahead of the page's loads before the call.
 */
uint64_t perfclock__rdtscp(uint32_t *aux)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi, c;

	__asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(c) :: "memory");
	*aux = c;
	return ((uint64_t)hi << 32) | lo;
#else
	*aux = 0;
	return 0;
#endif
}
