/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How busy RCU's grace-period machinery is, as a guest can see it:
 * context switches of the grace-period kthreads (rcu_preempt, or
 * rcu_sched), which each grace period wakes several times. Debian's 6.1
 * has no CONFIG_RCU_TRACE, so there is no tracepoint to count with.
 * Shared by perfclock_gp_policy_test.c and
 * bench/module/perfclock_horizon_bench.c; header only.
 */
#ifndef PERFCLOCK_RCU_GP_H
#define PERFCLOCK_RCU_GP_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Voluntary and involuntary switches of every such kthread, summed. */
static inline uint64_t gp_kthread_switches(void)
{
	char path[64], line[256];
	uint64_t sum = 0;
	int pid;

	for (pid = 1; pid < 300; pid++) {
		FILE *f;
		int match = 0;

		snprintf(path, sizeof(path), "/proc/%d/status", pid);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			unsigned long long v;

			if (!strncmp(line, "Name:", 5))
				match = !!strstr(line, "rcu_preempt") ||
					!!strstr(line, "rcu_sched\n");
			else if (match &&
				 (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1 ||
				  sscanf(line, "nonvoluntary_ctxt_switches: %llu", &v) == 1))
				sum += v;
		}
		fclose(f);
	}
	return sum;
}

#endif /* PERFCLOCK_RCU_GP_H */
