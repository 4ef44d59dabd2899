// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Which kernels write BPF output records with preemption possible between
 * the stamp and perf_output_begin(), so that H_c is not exact for a ring
 * that receives them (docs/percpu-horizon.md, 2.2, "BPF output before the
 * preempt_disable() fix").
 *
 * bpf_perf_event_output() and bpf_event_output() took preempt_disable()
 * only with "bpf: Disable preemption in bpf_perf_event_output" and "bpf:
 * Disable preemption in bpf_event_output" (Jiri Olsa, July 2023, v6.5;
 * stable 6.1.45 per kernel.org's ChangeLog-6.1.45, 6.4.10). Before them
 * the helper relied on its caller, and two callers only disable
 * migration: uprobe programs (kernel/trace/trace_uprobe.c:
 * __uprobe_perf_func() -> bpf_prog_run_array_sleepable(), 6.0 on:
 * rcu_read_lock_trace() + migrate_disable()) and trampoline programs
 * (fentry/fexit/LSM: kernel/bpf/trampoline.c: __bpf_prog_enter(),
 * rcu_read_lock() + migrate_disable(), a real one on every config since
 * 5.11). On a preemptible kernel a reader can then run on the CPU between
 * perf_prepare_sample()'s stamp and perf_output_get_handle(). Affected,
 * of what this library supports (5.12 on): below 6.1.45, and 6.2 to
 * 6.4.9 (6.2.y and 6.3.y ended unfixed).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include <linux/perf_event.h>

#include "internal.h"
#include "horizon_internal.h"

#define KV(a, b, c)	((unsigned long)(a) << 16 | (unsigned long)(b) << 8 | (c))

/* "M.m[.s]" at s: 0 and the numbers, or -1. *end: after the last one. */
static int parse_kv(const char *s, unsigned long v[3], int *nv,
		    const char **end)
{
	char *e;
	int i;

	for (i = 0; i < 3; i++) {
		if (*s < '0' || *s > '9')
			break;
		v[i] = strtoul(s, &e, 10);
		s = e;
		if (i < 2 && *s == '.' && s[1] >= '0' && s[1] <= '9')
			s++;
		else {
			i++;
			break;
		}
	}
	*nv = i;
	*end = s;
	return i >= 2 ? 0 : -1;
}

int perfclock__kernel_bpf_output(const char *release, const char *version)
{
	unsigned long r[3] = { 0, 0, 0 }, d[3] = { 0, 0, 0 }, kv;
	const char *rest, *deb, *dend;
	int nr, nd, sub_known;

	if (!release || parse_kv(release, r, &nr, &rest))
		return PERFCLOCK_KBPF_UNKNOWN;
	/*
	 * Debian-style releases (6.1.0-28-amd64; Ubuntu's 5.15.0-91-generic
	 * too) put the package ABI after a .0 sublevel: the stable sublevel
	 * is not in the release. Debian says it in uname -v ("... Debian
	 * 6.1.119-1 (2024-11-22)"). Any other sublevel is taken as the
	 * stable one (6.4.9-200.fc38.x86_64, 6.4.9-arch1-1, 6.1.45).
	 */
	sub_known = nr == 3 && !(r[2] == 0 && rest[0] == '-' &&
				 rest[1] >= '0' && rest[1] <= '9');
	if (nr == 2)
		sub_known = rest[0] == 0;	/* "6.1": a tag of 6.1.0 */
	deb = version ? strstr(version, "Debian ") : NULL;
	if (deb && !parse_kv(deb + 7, d, &nd, &dend) && nd == 3 &&
	    d[0] == r[0] && d[1] == r[1]) {
		r[2] = d[2];
		sub_known = 1;
	}
	kv = KV(r[0], r[1], 0);
	/* Where the sublevel decides, an unknown one is not a fixed one. */
	if ((kv == KV(6, 1, 0) || kv == KV(6, 4, 0)) && !sub_known)
		return PERFCLOCK_KBPF_UNKNOWN;
	kv = KV(r[0], r[1], r[2] > 255 ? 255 : r[2]);
	if (kv < KV(6, 1, 45) ||
	    (kv >= KV(6, 2, 0) && kv < KV(6, 4, 10)))
		return PERFCLOCK_KBPF_PREEMPTIBLE;
	return PERFCLOCK_KBPF_PREEMPT_OFF;
}

int perfclock__attr_bpf_output(const struct perf_event_attr *attr)
{
	return attr->type == PERF_TYPE_SOFTWARE &&
	       attr->config == PERF_COUNT_SW_BPF_OUTPUT;
}

int perfclock__kernel_bpf_output_now(void)
{
	struct utsname u;

	if (uname(&u))
		return PERFCLOCK_KBPF_UNKNOWN;
	return perfclock__kernel_bpf_output(u.release, u.version);
}

const char *perfclock__kbpf_name(int k)
{
	switch (k) {
	case PERFCLOCK_KBPF_PREEMPT_OFF:
		return "written with preemption off";
	case PERFCLOCK_KBPF_PREEMPTIBLE:
		return "preemptible between stamp and publish on this kernel (before 6.1.45, or 6.2 to 6.4.9)";
	}
	return "this kernel's stable version is unknown (6.1 or 6.4 without a sublevel)";
}
