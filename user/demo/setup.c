// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * demo_flush: setting up a run. Open the clock (the module's, or
 * CLOCK_MONOTONIC through use_clockid), pick the events, open them on
 * every online CPU with one ring per CPU (a second one with --sample),
 * and make one ordered queue per rule; and undo it all at the end. Every
 * error here ends the run with a message saying what to do about it.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "demo.h"
#include "load.h"

/* A number from a /proc or /sys file, for the error messages. */
static int read_int_file(const char *path, long *v)
{
	FILE *f = fopen(path, "re");
	int ok;

	if (!f)
		return -errno;
	ok = fscanf(f, "%ld", v) == 1;
	fclose(f);
	return ok ? 0 : -EINVAL;
}

static void die_perm(const char *what, int err)
{
	long paranoid = 99;
	int have = !read_int_file("/proc/sys/kernel/perf_event_paranoid", &paranoid);
	char p[32] = "unknown";

	if (have)
		snprintf(p, sizeof(p), "%ld", paranoid);
	die("%s: %s: no permission for system-wide events "
	    "(kernel.perf_event_paranoid = %s). Run as root or with "
	    "CAP_PERFMON, or allow it: sysctl kernel.perf_event_paranoid=-1",
	    what, strerror(err), p);
}

/* The online CPUs ("0-3,5" in sysfs), else 0..N-1 from sysconf. */
static int online_cpus(int **out)
{
	char buf[4096], *p, *end;
	int *cpus = NULL, n = 0, cap = 0;
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");

	if (f && fgets(buf, sizeof(buf), f)) {
		for (p = buf; *p && *p != '\n';) {
			long a = strtol(p, &end, 10), b = a, i;

			if (end == p)
				break;
			if (*end == '-')
				b = strtol(end + 1, &end, 10);
			for (i = a; i <= b; i++) {
				if (n == cap) {
					cap = cap ? 2 * cap : 64;
					cpus = realloc(cpus, (size_t)cap * sizeof(*cpus));
					if (!cpus)
						die("out of memory");
				}
				cpus[n++] = (int)i;
			}
			p = *end == ',' ? end + 1 : end;
		}
	}
	if (f)
		fclose(f);
	if (!n) {
		long i, c = sysconf(_SC_NPROCESSORS_ONLN);

		cpus = calloc((size_t)(c > 0 ? c : 1), sizeof(*cpus));
		if (!cpus)
			die("out of memory");
		for (i = 0; i < (c > 0 ? c : 1); i++)
			cpus[n++] = (int)i;
	}
	*out = cpus;
	return n;
}

/* --clock: the module's device, or CLOCK_MONOTONIC through use_clockid. */
static void open_clock(struct demo *d)
{
	if (d->opt.clock == CLOCK_KIND_MONOTONIC) {
		d->clk = perfclock_open_clockid(CLOCK_MONOTONIC);
		if (!d->clk)
			die("CLOCK_MONOTONIC: %s", strerror(errno));
		return;
	}
	d->clk = perfclock_open(d->opt.device);
	if (d->clk)
		return;
	if (errno == ENOENT)
		die("no %s: the perfclock module is not loaded. Load it "
		    "(insmod module/perfclock.ko, or modprobe perfclock), or "
		    "use --clock monotonic", d->opt.device);
	if (errno == EACCES || errno == EPERM)
		die("%s: %s: no permission to open the clock device (run as "
		    "root), or use --clock monotonic", d->opt.device, strerror(errno));
	if (errno == ENOTTY)
		die("%s is not a perfclock device", d->opt.device);
	if (errno == EPROTO)
		die("%s speaks another ABI version than this tool; rebuild "
		    "both from one tree", d->opt.device);
	die("%s: %s", d->opt.device, strerror(errno));
}

/*
 * The events to trace: --event's tracepoints (sched_switch and
 * sched_wakeup by default), or software context switches with --software
 * or, said on stderr, when tracefs is missing.
 */
static void pick_events(struct demo *d)
{
	const char *tracefs;
	int i;

	if (d->opt.software) {
		d->nr_events = 1;
		d->events[0].software = 1;
		snprintf(d->events[0].name, sizeof(d->events[0].name), "context-switches");
		return;
	}
	tracefs = tp_tracefs();
	if (!tracefs) {
		if (d->opt.nr_tp_spec)
			die("tracefs is not mounted, so tracepoint %s cannot be "
			    "opened: mount -t tracefs nodev /sys/kernel/tracing "
			    "(or use --software)", d->opt.tp_spec[0]);
		fprintf(stderr, "demo_flush: tracefs is not mounted "
			"(/sys/kernel/tracing): falling back to software "
			"context-switch events (period 1)\n");
		d->opt.software = 1;
		pick_events(d);
		return;
	}
	if (!d->opt.nr_tp_spec) {
		d->opt.tp_spec[d->opt.nr_tp_spec++] = "sched:sched_switch";
		d->opt.tp_spec[d->opt.nr_tp_spec++] = "sched:sched_wakeup";
	}
	for (i = 0; i < d->opt.nr_tp_spec; i++) {
		int err = tp_load(tracefs, d->opt.tp_spec[i], &d->events[i].fmt);

		if (err == -EINVAL)
			die_usage("bad tracepoint '%s' (want SYSTEM:NAME, e.g. "
				  "sched:sched_switch)", d->opt.tp_spec[i]);
		if (err == -ENOENT)
			die("unknown tracepoint '%s': no %s/events/%s/%s (see %s/"
			    "available_events)", d->opt.tp_spec[i], tracefs,
			    d->events[i].fmt.system, d->events[i].fmt.name, tracefs);
		if (err == -EACCES || err == -EPERM)
			die("tracepoint %s: cannot read %s/events: %s: no "
			    "permission (run as root)", d->opt.tp_spec[i], tracefs,
			    strerror(-err));
		if (err)
			die("tracepoint %s: %s", d->opt.tp_spec[i], strerror(-err));
		snprintf(d->events[i].name, sizeof(d->events[i].name), "%s:%s",
			 d->events[i].fmt.system, d->events[i].fmt.name);
	}
	d->nr_events = d->opt.nr_tp_spec;
}

/*
 * --side-band: the mmap, comm and task records of the first event of
 * every ring, as perf record asks for them. Not an event of its own: an
 * entry in events[] that the reports count these records under. They are
 * stamped with interrupts on (perf_iterate_sb() disables preemption
 * only), unlike tracepoint samples in these kernels (see README, "Rings
 * in stamp order").
 */
static void add_side_band(struct demo *d)
{
	struct tp_event *ev;

	d->side_band_ev = -1;
	if (!d->opt.side_band)
		return;
	ev = &d->events[d->nr_events];
	ev->side_band = 1;
	snprintf(ev->name, sizeof(ev->name), "side-band (mmap, comm, task)");
	d->side_band_ev = d->nr_events++;
}

/* --sample: a timer-driven sampling event, after the traced ones. */
static int add_sampling_event(struct demo *d)
{
	struct tp_event *ev;

	if (!d->opt.sample)
		return -1;
	ev = &d->events[d->nr_events];
	ev->sampling = 1;
	if (!strcmp(d->opt.sample, "cycles")) {
		ev->type = PERF_TYPE_HARDWARE;
		ev->config = PERF_COUNT_HW_CPU_CYCLES;
	} else {
		ev->type = PERF_TYPE_SOFTWARE;
		ev->config = PERF_COUNT_SW_CPU_CLOCK;
	}
	snprintf(ev->name, sizeof(ev->name), "%s (%ld Hz)", d->opt.sample, d->opt.sample_hz);
	return d->nr_events++;
}

static int perf_open(struct perf_event_attr *attr, int pid, int cpu)
{
	return (int)syscall(SYS_perf_event_open, attr, pid, cpu, -1,
			    PERF_FLAG_FD_CLOEXEC);
}

/*
 * Every occurrence a record, stamped by the clock's backend
 * (perfclock_fill_attr: local_clock, or use_clockid).
 */
static void fill_attr(const struct demo *d, struct perf_event_attr *attr,
		      const struct tp_event *ev, size_t ring_bytes)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->sample_period = 1;
	if (ev->sampling) {
		attr->type = ev->type;
		attr->config = ev->config;
		if (ev->type == PERF_TYPE_SOFTWARE) {
			/* cpu-clock: the period is in ns of the CPU's clock. */
			attr->sample_period = 1000000000ull / (uint64_t)d->opt.sample_hz;
		} else {
			attr->freq = 1;
			attr->sample_freq = (uint64_t)d->opt.sample_hz;
		}
	} else if (ev->software) {
		attr->type = PERF_TYPE_SOFTWARE;
		attr->config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	} else {
		attr->type = PERF_TYPE_TRACEPOINT;
		attr->config = ev->fmt.id;
	}
	attr->sample_type = d->sample_type;
	attr->read_format = d->read_format;
	attr->disabled = 1;
	attr->sample_id_all = 1;
	/* Wake a poller when a ring is a quarter full: no loss at 1 round/poll. */
	attr->watermark = 1;
	attr->wakeup_watermark = (uint32_t)(ring_bytes / 4);
	perfclock_fill_attr(d->clk, attr);
}

/* The ring's first event carries its side-band records (--side-band). */
static void fill_side_band(const struct demo *d, struct perf_event_attr *attr)
{
	if (d->side_band_ev < 0)
		return;
	attr->mmap = 1;
	attr->mmap_data = 1;
	attr->comm = 1;
	attr->task = 1;
}

/* perf_event_open failed: say why, in the terms the user can act on. */
static void die_open(const struct demo *d, const char *what,
		     const struct tp_event *ev,
		     const struct perf_event_attr *attr, int err)
{
	if (err == EACCES || err == EPERM)
		die_perm(what, err);
	if (ev->sampling && (err == ENOENT || err == ENODEV || err == EOPNOTSUPP))
		die("%s: %s: no %s event on this machine (no PMU?): use "
		    "--sample cpu-clock", what, strerror(err), d->opt.sample);
	if (!ev->software && !ev->sampling &&
	    (err == ENOENT || err == ENODEV || err == EOPNOTSUPP))
		die("%s: %s: unknown tracepoint", what, strerror(err));
	if (err == EINVAL && attr->use_clockid)
		die("%s: %s: the kernel refused use_clockid "
		    "(Linux >= 4.1 needed for --clock monotonic)",
		    what, strerror(err));
	if (err == EMFILE)
		die("%s: %s: raise the open file limit (ulimit -n)",
		    what, strerror(err));
	die("%s: %s", what, strerror(err));
}

/*
 * One ring carrying the events evs[0..n-1] (indexes into events[]): CPU
 * cpu's (tid -1), or task tid's on every CPU (cpu -1).
 */
static void open_ring(struct demo *d, struct cpu_ring *r, int cpu, int tid,
		      const int *evs, int n)
{
	long pagesz = sysconf(_SC_PAGESIZE);
	size_t data = d->opt.pages * (size_t)pagesz;
	struct perf_event_attr attr;
	char what[300];
	int i, err;

	r->cpu = cpu;
	r->tid = tid;
	r->nfd = n;
	for (i = 0; i < n; i++) {
		struct tp_event *ev = &d->events[evs[i]];

		r->ev[i] = evs[i];
		fill_attr(d, &attr, ev, data);
		if (!i)
			fill_side_band(d, &attr);
		if (perfclock_check_attr(d->clk, &attr))
			die("internal: attr does not match the clock");
		if (tid >= 0)
			snprintf(what, sizeof(what), "perf_event_open(%s, task %d)",
				 ev->name, tid);
		else
			snprintf(what, sizeof(what), "perf_event_open(%s, cpu %d)",
				 ev->name, cpu);
		r->fd[i] = perf_open(&attr, tid, cpu);
		if (r->fd[i] < 0 && errno == EINVAL &&
		    (d->read_format & PERF_FORMAT_LOST)) {
			/* Before Linux 6.0: no lost count to read back. */
			d->read_format &= ~(uint64_t)PERF_FORMAT_LOST;
			fill_attr(d, &attr, ev, data);
			if (!i)
				fill_side_band(d, &attr);
			r->fd[i] = perf_open(&attr, tid, cpu);
		}
		if (r->fd[i] < 0)
			die_open(d, what, ev, &attr, errno);
		if (ioctl(r->fd[i], PERF_EVENT_IOC_ID, &r->id[i]))
			die("PERF_EVENT_IOC_ID: %s", strerror(errno));
		if (!i)
			r->attr = attr;
	}
	r->len = data + (size_t)pagesz;
	r->base = mmap(NULL, r->len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       r->fd[0], 0);
	if (r->base == MAP_FAILED) {
		long kb = -1;

		err = errno;
		if (err == EPERM || (err == ENOMEM && geteuid())) {
			read_int_file("/proc/sys/kernel/perf_event_mlock_kb", &kb);
			die("mmap of %lu pages for cpu %d: %s: over the "
			    "locked-memory limit (kernel.perf_event_mlock_kb = "
			    "%ld, and ulimit -l); use fewer --pages or run as "
			    "root", d->opt.pages, cpu, strerror(err), kb);
		}
		if (err == ENOMEM)
			die("mmap of %lu pages (%lu MiB) for cpu %d: %s: the kernel "
			    "cannot allocate a ring that large; use fewer --pages "
			    "(default %d)", d->opt.pages,
			    (unsigned long)(data >> 20), cpu, strerror(err), PAGES_DEFAULT);
		die("mmap of %lu pages for cpu %d: %s", d->opt.pages, cpu, strerror(err));
	}
	r->ring = perfclock_ring_new(r->base, r->len, &r->attr);
	if (!r->ring)
		die("perfclock_ring_new (cpu %d): %s", cpu, strerror(errno));
	/* Only a mapped event has a ring to redirect the others to. */
	for (i = 1; i < n; i++)
		if (ioctl(r->fd[i], PERF_EVENT_IOC_SET_OUTPUT, r->fd[0]))
			die("%s (cpu %d): PERF_EVENT_IOC_SET_OUTPUT: %s",
			    d->events[r->ev[i]].name, cpu, strerror(errno));
}

/*
 * One ring per CPU for the traced events; with --sample, a second ring
 * per CPU for the sampling event (the ring reader parses one layout per
 * ring; both use the same sample_type here, but a ring of its own keeps
 * the sampling stream independent, as perf top's would be), or with
 * --sample-shared the sampling event in the same ring as the tracepoints
 * (PERF_EVENT_IOC_SET_OUTPUT), so that a writer in hard-irq context (the
 * cpu-clock hrtimer) shares the ring with writers stamped with irqs on.
 * With --per-thread one ring per load thread instead, following it
 * across CPUs.
 */
static void open_events(struct demo *d)
{
	int tp[MAX_EV], c, e, nr_tp = d->nr_events, sampling, ncpus = d->ncpus;

	d->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
		      PERF_SAMPLE_CPU;
	if (!d->events[0].software)
		d->sample_type |= PERF_SAMPLE_RAW;
	d->read_format = PERF_FORMAT_ID | PERF_FORMAT_LOST;
	sampling = add_sampling_event(d);
	add_side_band(d);
	for (e = 0; e < nr_tp; e++)
		tp[e] = e;
	if (sampling >= 0 && d->opt.sample_shared) {
		tp[nr_tp++] = sampling;
		sampling = -1;
	}

	if (d->opt.per_thread) {
		d->nr_rings = d->opt.load;
		d->rings = calloc((size_t)d->nr_rings, sizeof(*d->rings));
		if (!d->rings)
			die("out of memory");
		for (c = 0; c < d->nr_rings; c++)
			open_ring(d, &d->rings[c], -1, d->load_tids[c], tp, nr_tp);
		return;
	}
	d->nr_rings = ncpus * (sampling >= 0 ? 2 : 1);
	d->rings = calloc((size_t)d->nr_rings, sizeof(*d->rings));
	if (!d->rings)
		die("out of memory");
	for (c = 0; c < ncpus; c++)
		open_ring(d, &d->rings[c], d->cpus[c], -1, tp, nr_tp);
	for (c = 0; sampling >= 0 && c < ncpus; c++)
		open_ring(d, &d->rings[ncpus + c], d->cpus[c], -1, &sampling, 1);
	/*
	 * Ours' reader: the same events again, on rings of its own (after
	 * the round loop's opens, which settled read_format). A sampling
	 * event shares its CPU's ring there: H_c covers every ring of a CPU.
	 */
	if (d->opt.threads && d->events[0].software) {
		/*
		 * Not twice for software events: on 6.12 (read) and 6.18
		 * (seen), kernel/events/core.c: do_perf_sw_event() hands
		 * one perf_sample_data to every matching event of the CPU,
		 * and perf_prepare_sample() fills the id, time, tid and cpu
		 * only for the first (the fields in data->sample_flags are
		 * skipped after it): the second set's records would carry
		 * the first's id and time. perf_tp_event() re-initializes
		 * it per event; 6.1 fills every field per event. Docs:
		 * docs/results.md, "A kernel quirk: two sets of software
		 * events".
		 */
		fprintf(stderr, "demo_flush: software events: ours runs in the round loop "
			"(a second set of software events on a CPU gets the first's ids "
			"and times on 6.12 and later kernels)\n");
		d->opt.threads = 0;
		d->percpu = d->percpu_offered;
	}
	if (d->opt.threads) {
		struct perf_event_attr attrs[MAX_EV];
		size_t data = d->opt.pages * (size_t)sysconf(_SC_PAGESIZE);

		if (sampling >= 0)
			tp[nr_tp++] = sampling;
		for (e = 0; e < nr_tp; e++) {
			fill_attr(d, &attrs[e], &d->events[tp[e]], data);
			if (!e)
				fill_side_band(d, &attrs[e]);
		}
		demo_threads_open(d, attrs, tp, nr_tp);
	}
}

/*
 * The load's threads (waiting until demo_run() releases them; their
 * tids are what --per-thread opens its rings on) and the tickers on the
 * CPUs the load leaves idle.
 */
static void start_load(struct demo *d)
{
	int nr = d->opt.load_cpus && d->opt.load_cpus < d->ncpus ?
		 d->opt.load_cpus : d->ncpus;

	if (d->opt.load) {
		d->load = load_start(d->opt.load, d->cpus, nr, d->opt.migrate_every,
				     d->opt.load_side_band);
		if (!d->load)
			die("starting the load: %s", strerror(errno));
		d->load_tids = calloc((size_t)d->opt.load, sizeof(*d->load_tids));
		if (!d->load_tids)
			die("out of memory");
		load_tids(d->load, d->load_tids);
	}
	if (d->opt.tick_ms) {
		if (nr >= d->ncpus)
			die_usage("--tick-ms needs CPUs the load leaves idle (--load-cpus N "
				  "below the %d online CPUs)", d->ncpus);
		d->ticker = ticker_start(d->cpus + nr, d->ncpus - nr, d->opt.tick_ms);
		if (!d->ticker)
			die("starting the tickers: %s", strerror(errno));
	}
}

/* One queue per rule, all fed the same events; they deliver to demo_deliver(). */
static void make_queues(struct demo *d)
{
	struct perfclock_queue_config cfg;
	int i;

	for (i = 0; i < NR_RULES; i++) {
		/* The library's defaults, for every rule. */
		perfclock_queue_config_init(&cfg);
		cfg.nr_sources = (uint32_t)d->nr_rings;
		cfg.deliver = demo_deliver;
		cfg.arg = &d->rules[i];
		d->rules[i].d = d;
		d->rules[i].rule = i;
		d->rules[i].print = d->opt.print && i == RULE_OURS;
		d->rules[i].q = perfclock_queue_new(&cfg);
		if (!d->rules[i].q)
			die("perfclock_queue_new(%s): %s", rule_name(i),
			    strerror(errno));
	}
	if (rules_init(&d->limits, (uint32_t)d->nr_rings))
		die("out of memory");
	/* --print names each event's task. */
	if (d->opt.print) {
		d->comms = tp_comms_new();
		if (!d->comms)
			die("out of memory");
	}
}

void demo_setup(struct demo *d)
{
	int c, err;
	struct perfclock_clock_info ci;

	open_clock(d);
	/* A clock that cannot describe itself fails now, before any event. */
	err = perfclock_get_info(d->clk, &ci);
	if (err)
		die("perfclock_get_info: %s", strerror(-err));
	/*
	 * Ours reads H_c on each CPU where the clock offers it: a CPU's
	 * ring takes its own, a task's ring (written from several CPUs)
	 * the least of every CPU's (rounds.c: ring_horizon()).
	 */
	d->percpu_offered = (ci.flags & PERFCLOCK_CLOCK_HORIZON_PERCPU) &&
			    !d->opt.no_visit;
	d->percpu = d->percpu_offered;
	/*
	 * On the threaded reader (threads.c) ours has its own rings and
	 * threads; the round loop, now only the other rules', reads as
	 * perf's tools do: from where it runs, visiting no CPU.
	 */
	if (d->opt.threads)
		d->percpu = 0;
	d->pinned_cpu = -1;
	pick_events(d);
	d->ncpus = online_cpus(&d->cpus);
	start_load(d);
	open_events(d);
	make_queues(d);

	d->pfd = calloc((size_t)d->nr_rings, sizeof(*d->pfd));
	if (!d->pfd)
		die("out of memory");
	for (c = 0; c < d->nr_rings; c++) {
		d->pfd[c].fd = d->rings[c].fd[0];
		d->pfd[c].events = POLLIN;
	}
}

void demo_set_enabled(struct demo *d, int on)
{
	int c, e;

	demo_threads_set_enabled(d, on);
	for (c = 0; c < d->nr_rings; c++)
		for (e = 0; e < d->rings[c].nfd; e++) {
			if (!on)
				ioctl(d->rings[c].fd[e], PERF_EVENT_IOC_DISABLE, 0);
			else if (ioctl(d->rings[c].fd[e], PERF_EVENT_IOC_ENABLE, 0))
				die("PERF_EVENT_IOC_ENABLE: %s", strerror(errno));
		}
}

void demo_teardown(struct demo *d)
{
	int c, e, i;

	demo_threads_close(d);
	for (i = 0; i < NR_RULES; i++)
		perfclock_queue_free(d->rules[i].q);
	rules_free(&d->limits);
	for (c = 0; c < d->nr_rings; c++) {
		perfclock_ring_free(d->rings[c].ring);
		if (d->rings[c].base && d->rings[c].base != MAP_FAILED)
			munmap(d->rings[c].base, d->rings[c].len);
		for (e = 0; e < d->rings[c].nfd; e++)
			close(d->rings[c].fd[e]);
	}
	free(d->rings);
	/* demo_run() stopped them; after a setup error they stop here. */
	load_stop(d->load);
	ticker_stop(d->ticker);
	free(d->load_tids);
	free(d->cpus);
	free(d->pfd);
	tp_comms_free(d->comms);
	perfclock_close(d->clk);
	free(d);
}
