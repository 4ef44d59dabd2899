/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rdtscp, and whether this CPU and kernel offer it (user/cpu_rdtscp.c).
 * Library-private; not installed.
 *
 * The per-CPU horizon's page paths (horizon_percpu.c) read the TSC and
 * TSC_AUX, the CPU number Linux keeps there, with one instruction. Both
 * live in a file of their own, called across files, so that a test can
 * link with -Wl,--wrap=perfclock__cpu_has_rdtscp,--wrap=perfclock__rdtscp
 * and take either path on any CPU (tests/fake_cpu.c): with the probe
 * forced off, and with rdtscp given by a fake that can move the page's
 * generation during the read.
 */
#ifndef PERFCLOCK_CPU_RDTSCP_H
#define PERFCLOCK_CPU_RDTSCP_H

#include <stdint.h>

/* Linux puts (node << 12) | cpu in TSC_AUX (vdso_read_cpunode()). */
#define PERFCLOCK_TSC_AUX_CPU_MASK	0xfffU

/*
 * 1 if the CPU has rdtscp (CPUID.80000001H:EDX[27]) and the kernel says
 * so in /proc/cpuinfo, else 0. Reads /proc/cpuinfo: called at open, not
 * per read.
 */
int perfclock__cpu_has_rdtscp(void);

/*
 * The TSC, and TSC_AUX in *aux, read by one rdtscp on one CPU. Only
 * where perfclock__cpu_has_rdtscp() said 1 (elsewhere it may trap).
 */
uint64_t perfclock__rdtscp(uint32_t *aux);

#endif /* PERFCLOCK_CPU_RDTSCP_H */
