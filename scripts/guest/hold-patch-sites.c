// SPDX-License-Identifier: GPL-2.0
/*
 * hold-patch-sites: run by the test guest's /init (scripts/vm.sh) before
 * the payload. It opens one disabled perf event per tracepoint and
 * software event the tests use, attached to itself, and then sleeps until
 * the guest powers off, so that the kernel text those events switch on is
 * patched once, at boot, and never again while a test runs.
 *
 * Why: under QEMU 7.2's multi-threaded TCG (Debian 12) a guest CPU can go
 * on running a translation of kernel text made before text_poke_bp()
 * rewrote it. Seen here (README, "Things learned"): both vCPUs looping
 * through asm_exc_int3 -> kprobe_int3_handler, the int3 already gone from
 * memory, at a static branch in __schedule(), interrupts off, so no
 * watchdog ever reported it; and the text_poke_bp_batch() soft lockups.
 * The tests open and close perf events hundreds of times per boot, and
 * each first open or last close patches:
 * - the tracepoint's static key and static call (kernel/tracepoint.c:
 *   tracepoint_add_func() and tracepoint_remove_func(), when the probe
 *   count goes between 0, 1 and 2; perf registers one probe per event
 *   class, kernel/trace/trace_event_perf.c:perf_trace_event_reg(), and
 *   syscalls:* events share perf_syscall_enter/exit,
 *   kernel/trace/trace_syscalls.c:perf_sysenter_enable());
 * - perf_sched_events, for any per-task event
 *   (kernel/events/core.c:account_event(), PERF_ATTACH_TASK);
 * - perf_swevent_enabled[id] for software events
 *   (kernel/events/core.c:perf_swevent_init()).
 * Holding one event of each keeps every count above zero, so the tests'
 * opens and closes patch nothing. The events are disabled and attached
 * to this sleeping task: they never count and never enter a CPU's
 * software-event hash, so the kernel under test pays at most the probe's
 * check for an empty per-CPU list on each hit of a held tracepoint.
 *
 * Usage: hold-patch-sites [EVENT...], EVENT being SUBSYSTEM:NAME (a
 * tracepoint under /sys/kernel/tracing/events) or one of the software
 * events named below. An event this kernel lacks is reported and
 * skipped. Prints "hold-patch-sites: holding N of M" and exits 0 once the
 * child holding them is ready; exits 1 if no event could be held.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
	const char *name;
	unsigned long long config;
} sw_events[] = {
	{ "context-switches", PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "page-faults", PERF_COUNT_SW_PAGE_FAULTS },
};

static int tracepoint_id(const char *event, unsigned long long *id)
{
	char path[512], *colon;
	FILE *f;
	int ok;

	colon = strchr(event, ':');
	if (!colon || colon == event || !colon[1] || strchr(colon + 1, '/') ||
	    memchr(event, '/', colon - event))
		return -EINVAL;
	snprintf(path, sizeof(path), "/sys/kernel/tracing/events/%.*s/%s/id",
		 (int)(colon - event), event, colon + 1);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	ok = fscanf(f, "%llu", id) == 1;
	fclose(f);
	return ok ? 0 : -EINVAL;
}

/* Opens EVENT on this task, disabled; returns the fd or -errno. */
static int hold(const char *event)
{
	struct perf_event_attr attr;
	unsigned long long id;
	size_t i;
	int fd, err;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.disabled = 1;
	attr.type = PERF_TYPE_SOFTWARE;
	for (i = 0; i < ARRAY_SIZE(sw_events); i++)
		if (!strcmp(event, sw_events[i].name))
			break;
	if (i < ARRAY_SIZE(sw_events)) {
		attr.config = sw_events[i].config;
	} else {
		err = tracepoint_id(event, &id);
		if (err)
			return err;
		attr.type = PERF_TYPE_TRACEPOINT;
		attr.config = id;
	}
	fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
	return fd < 0 ? -errno : fd;
}

int main(int argc, char **argv)
{
	int ready[2], held = 0, i, fd;
	char n = 0;
	pid_t pid;

	if (pipe(ready)) {
		perror("hold-patch-sites: pipe");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("hold-patch-sites: fork");
		return 1;
	}
	if (pid > 0) {
		/* The parent returns to /init once the child holds its events. */
		close(ready[1]);
		if (read(ready[0], &n, 1) != 1)
			n = 0;
		printf("hold-patch-sites: holding %d of %d\n", n, argc - 1);
		return n > 0 || argc == 1 ? 0 : 1;
	}
	close(ready[0]);
	for (i = 1; i < argc; i++) {
		fd = hold(argv[i]);
		if (fd < 0)
			fprintf(stderr, "hold-patch-sites: %s: %s\n", argv[i],
				fd == -EINVAL ? "not SUBSYSTEM:NAME or a known software event"
					      : strerror(-fd));
		else
			held++;
	}
	n = held > 127 ? 127 : held;
	if (write(ready[1], &n, 1) != 1)
		return 1;
	close(ready[1]);
	if (!held)
		return 1;
	for (;;)
		pause();
}
