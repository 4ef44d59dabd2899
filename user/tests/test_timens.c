// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Time namespaces (user/timens.c) on this host's kernel, with real perf
 * records: a tool inside `unshare -T --monotonic 100` (CRIU restores into
 * such namespaces) must get the same horizon check as in the root
 * namespace. perf stamps use_clockid records with the host's clocks;
 * clock_gettime() there adds the namespace's offset.
 *
 * For the root namespace and for two namespaces made here, offsets
 * (monotonic +100 s, boottime +250 s) and (monotonic -100 s, boottime
 * -50 s), and for each of CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW (which the
 * kernel gives the monotonic offset) and CLOCK_BOOTTIME, in a child inside
 * the namespace:
 *  - the library's read is clock_gettime() less that clock's offset;
 *  - per-CPU rings of real records (task, comm, context switches) under
 *    load, merged in rounds behind perfclock_horizon() with the library's
 *    defaults: zero records below an earlier horizon; a horizon proven
 *    after the last record (perfclock_horizon_sync()) is not below any
 *    record (a horizon 100 s behind fails this); a COMM record lies
 *    between the two reads around the prctl() that made it.
 * And the refusal: a process that called unshare(CLONE_NEWTIME) itself and
 * has not forked is in a namespace whose offset /proc does not show: if it
 * had not read its offsets before, perfclock_open_clockid(CLOCK_MONOTONIC)
 * fails with EOPNOTSUPP there (REALTIME still opens), and its fork()
 * child, inside the new namespace, opens and reads right; one that had
 * read them keeps them (they cannot change while it is in the
 * namespace). A single-threaded process that setns() into another time
 * namespace after opening gets the new offset after its next
 * horizon_sync(); and each path that makes a horizon from a clock read
 * (H_c, the estimate, membarrier's first) uses the new offset when it is
 * the first call after the setns() (setns_path_check()).
 *
 * The code before timens.c fails this: +100 s made nearly every record
 * late, -100 s left the proven horizon 100 s below the last record, and
 * the reads differed from clock_gettime() by nothing.
 *
 * Needs root (unshare(CLONE_NEWTIME), CAP_SYS_TIME for the offsets,
 * system-wide perf events) and a kernel with CONFIG_TIME_NS: SKIPs
 * saying why otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "libperfclock.h"
#include "horizon_membarrier.h"	/* perfclock_mb__test_set_mode() */
#include "tap.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME	0x00000080
#endif

#define LOAD_MS		400
#define NS		1000000000LL

struct scenario {
	const char *name;
	int ns;				/* 0: the root namespace */
	long long mono_s, boot_s;
};

static const struct scenario scenarios[] = {
	{ "root namespace", 0, 0, 0 },
	{ "namespace monotonic +100 s, boottime +250 s", 1, 100, 250 },
	{ "namespace monotonic -100 s, boottime -50 s", 1, -100, -50 },
};

static const struct {
	int id;
	const char *name;
} clocks[] = {
	{ CLOCK_MONOTONIC, "CLOCK_MONOTONIC" },
	{ CLOCK_MONOTONIC_RAW, "CLOCK_MONOTONIC_RAW" },
	{ CLOCK_BOOTTIME, "CLOCK_BOOTTIME" },
};

static int64_t now_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

/* fork(), the child counting its own results (its exit status). */
static pid_t fork_fresh(void)
{
	pid_t p;

	fflush(stdout);
	p = fork();
	if (p == 0)
		tap_passed = tap_failed = 0;
	return p;
}

static int64_t offset_of(const struct scenario *sc, int clockid)
{
	return (clockid == CLOCK_BOOTTIME ? sc->boot_s : sc->mono_s) * NS;
}

struct merged {
	uint64_t delivered, maxt, comm_time;
	int comm_found;
};

static int deliver(void *arg, const struct perfclock_event *ev)
{
	const struct perf_event_header *h = ev->data;
	struct merged *m = arg;
	uint32_t pid;

	m->delivered++;
	if (ev->time > m->maxt)
		m->maxt = ev->time;
	if (h->type == PERF_RECORD_COMM && ev->size >= 8 + 8 + 16) {
		memcpy(&pid, (const char *)ev->data + 8, 4);
		if ((pid_t)pid == getpid() &&
		    !strncmp((const char *)ev->data + 16, "pclk-timens", 11)) {
			m->comm_found = 1;
			m->comm_time = ev->time;
		}
	}
	return 0;
}

/* Forks and context switches for ms milliseconds, then exits. */
static void load(int ms)
{
	int64_t end = now_ns(CLOCK_MONOTONIC) + (int64_t)ms * 1000000;
	pid_t p;

	while (now_ns(CLOCK_MONOTONIC) < end) {
		p = fork();
		if (p == 0)
			_exit(0);
		if (p > 0)
			waitpid(p, NULL, 0);
	}
	_exit(0);
}

static void drain(struct perfclock_evring *er, struct perfclock_queue *q,
		  int *errs)
{
	struct perfclock_record rec;
	int i, ret;

	for (i = 0; i < perfclock_evring_nr_rings(er); i++) {
		struct perfclock_ring *r = perfclock_evring_ring(er, i);

		if (perfclock_ring_read_begin(r) < 0) {
			(*errs)++;
			perfclock_ring_reset(r);
			continue;
		}
		while ((ret = perfclock_ring_read_event(r, &rec)) == 1)
			if (rec.flags & PERFCLOCK_RECORD_HAS_TIME)
				perfclock_queue_push(q, (uint32_t)i, rec.time,
						     rec.data, rec.size);
		if (ret < 0)
			(*errs)++;
		perfclock_ring_read_end(r);
	}
}

/* The real-record check of one clock (see the top). */
static void records_check(const struct scenario *sc, int ci)
{
	const char *cn = clocks[ci].name;
	struct perfclock_evring_config cfg;
	struct perfclock_queue_config qc;
	struct perfclock_clock_info info;
	struct perfclock_queue_stats qs;
	struct perfclock_queue *q;
	struct perfclock_evring *er;
	struct perf_event_attr a;
	struct perfclock *clk;
	struct merged m;
	uint64_t t0, t1, h, hs = 0;
	int rounds = 0, errs = 0, done, status;
	pid_t pid;

	clk = perfclock_open_clockid(clocks[ci].id);
	if (!clk || perfclock_get_info(clk, &info)) {
		tap_ok(0, "%s, %s: opens", sc->name, cn);
		return;
	}
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	a.sample_id_all = 1;
	a.task = 1;
	a.comm = 1;
	a.context_switch = 1;
	a.disabled = 1;
	perfclock_evring_config_init(&cfg);
	cfg.attrs = &a;
	cfg.nr_attrs = 1;
	er = perfclock_evring_open(clk, &cfg);
	if (!er) {
		tap_skip("%s, %s: real records # SKIP system-wide perf events not permitted: %s",
			 sc->name, cn, strerror(errno));
		perfclock_close(clk);
		return;
	}
	memset(&m, 0, sizeof(m));
	perfclock_queue_config_init(&qc);
	qc.nr_sources = (uint32_t)perfclock_evring_nr_rings(er);
	qc.deliver = deliver;
	qc.arg = &m;
	q = perfclock_queue_new(&qc);
	if (!q) {
		tap_ok(0, "%s, %s: queue", sc->name, cn);
		goto out_er;
	}
	perfclock_evring_enable(er);
	perfclock_read(clk, &t0);
	prctl(PR_SET_NAME, "pclk-timens", 0, 0, 0);
	perfclock_read(clk, &t1);
	pid = fork();
	if (pid == 0)
		load(LOAD_MS);
	do {
		done = waitpid(pid, &status, WNOHANG) == pid;
		if (perfclock_horizon(clk, &h))
			break;
		drain(er, q, &errs);
		perfclock_queue_flush_until(q, h);
		rounds++;
		usleep(1000);
	} while (!done);
	perfclock_evring_disable(er);
	/* Read after the last record was stamped: above every record. */
	if (perfclock_horizon_sync(clk, 0, &hs))
		hs = 0;
	drain(er, q, &errs);
	perfclock_queue_flush_all(q);
	perfclock_queue_get_stats(q, &qs);
	tap_diag("%s, %s: horizon %s, %d rounds, %llu records, ring errors %d",
		 sc->name, cn, perfclock_horizon_name(&info), rounds,
		 (unsigned long long)qs.pushed, errs);
	tap_ok(qs.pushed > 100 && qs.late == 0 && qs.below_horizon == 0 &&
	       errs == 0,
	       "%s, %s: zero of %llu real records below an earlier horizon (late %llu, worst %llu ns, below horizon %llu)",
	       sc->name, cn, (unsigned long long)qs.pushed,
	       (unsigned long long)qs.late,
	       (unsigned long long)qs.worst_lateness_ns,
	       (unsigned long long)qs.below_horizon);
	tap_ok(hs && m.maxt <= hs,
	       "%s, %s: a horizon proven after the last record is not below it (last record %llu, horizon %llu: %.3f s below)",
	       sc->name, cn, (unsigned long long)m.maxt,
	       (unsigned long long)hs,
	       hs < m.maxt ? (double)(m.maxt - hs) / 1e9 : 0.0);
	tap_ok(m.comm_found && t0 <= m.comm_time && m.comm_time <= t1,
	       "%s, %s: a COMM record lies between the reads around its prctl() (%llu <= %llu <= %llu)",
	       sc->name, cn, (unsigned long long)t0,
	       (unsigned long long)m.comm_time, (unsigned long long)t1);
	perfclock_queue_free(q);
out_er:
	perfclock_evring_close(er);
	perfclock_close(clk);
}

/* The library's read is clock_gettime() less the clock's offset. */
static void read_check(const struct scenario *sc, int ci)
{
	int64_t off = offset_of(sc, clocks[ci].id), diff, g0, g1;
	struct perfclock *clk = perfclock_open_clockid(clocks[ci].id);
	uint64_t r = 0;

	if (!clk) {
		tap_ok(0, "%s, %s: opens: %s", sc->name, clocks[ci].name,
		       strerror(errno));
		return;
	}
	g0 = now_ns(clocks[ci].id);
	perfclock_read(clk, &r);
	g1 = now_ns(clocks[ci].id);
	diff = g0 - (int64_t)r;
	tap_ok(g0 - off <= (int64_t)r && (int64_t)r <= g1 - off,
	       "%s, %s: the library's read is clock_gettime() less the offset %lld s (differs by %.6f s)",
	       sc->name, clocks[ci].name, (long long)(off / NS),
	       (double)diff / 1e9);
	perfclock_close(clk);
}

/*
 * Called unshare(CLONE_NEWTIME) itself, not forked, and had not read its
 * offsets before: refused; its child (in the new namespace, which
 * inherits the offsets) is served. Run in a fork() child of `inside`,
 * which has read them.
 */
static void refused(const struct scenario *sc)
{
	struct perfclock *clk;
	int status, err;
	pid_t p;

	if (unshare(CLONE_NEWTIME)) {
		tap_ok(0, "%s: unshare(CLONE_NEWTIME) again: %s", sc->name,
		       strerror(errno));
		return;
	}
	clk = perfclock_open_clockid(CLOCK_MONOTONIC);
	err = clk ? 0 : errno;
	tap_ok(!clk && err == EOPNOTSUPP,
	       "%s: after its own unshare(CLONE_NEWTIME), before a fork, CLOCK_MONOTONIC is refused with EOPNOTSUPP (%s)",
	       sc->name, clk ? "opened" : strerror(err));
	perfclock_close(clk);
	clk = perfclock_open_clockid(CLOCK_REALTIME);
	tap_ok(clk != NULL, "%s: ... CLOCK_REALTIME (no offset) still opens",
	       sc->name);
	perfclock_close(clk);
	p = fork_fresh();
	if (p == 0) {
		read_check(sc, 0);
		_exit(tap_exit());
	}
	tap_ok(p > 0 && waitpid(p, &status, 0) == p && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0,
	       "%s: ... its fork() child, in the new namespace, is served", sc->name);
}

/*
 * The refusal above; and this process, which read its offsets before its
 * own unshare(CLONE_NEWTIME), keeps them: it stays in its namespace,
 * whose offsets are frozen (kernel/time/namespace.c:
 * proc_timens_set_offset()), and a later open and read are served.
 */
static void refusal_check(const struct scenario *sc)
{
	int status;
	pid_t p;

	p = fork_fresh();
	if (p == 0) {
		refused(sc);
		_exit(tap_exit());
	}
	tap_ok(p > 0 && waitpid(p, &status, 0) == p && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0,
	       "%s: a process that had not read its offsets is refused after its own unshare()",
	       sc->name);
	if (unshare(CLONE_NEWTIME)) {
		tap_ok(0, "%s: unshare(CLONE_NEWTIME) again: %s", sc->name,
		       strerror(errno));
		return;
	}
	tap_diag("%s: offsets read before its own unshare(CLONE_NEWTIME): still served",
		 sc->name);
	read_check(sc, 0);
}

/*
 * setns(): this process (single-threaded) opened the clock in the root
 * namespace, then joins the namespace of `into` (a process in sc's): the
 * next horizon_sync() notices, and reads carry no offset again.
 */
static void setns_check(const struct scenario *sc, pid_t into)
{
	struct perfclock *clk = perfclock_open_clockid(CLOCK_MONOTONIC);
	int64_t g0, g1;
	uint64_t r = 0, h;
	char path[64];
	int fd, ok;

	snprintf(path, sizeof(path), "/proc/%d/ns/time", (int)into);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (!clk || fd < 0 || setns(fd, CLONE_NEWTIME)) {
		tap_ok(0, "%s: setns() into it after the open: %s", sc->name,
		       strerror(errno));
		goto out;
	}
	ok = perfclock_horizon_sync(clk, 0, &h) == 0;
	g0 = now_ns(CLOCK_MONOTONIC);
	perfclock_read(clk, &r);
	g1 = now_ns(CLOCK_MONOTONIC);
	tap_ok(ok && g0 - sc->mono_s * NS <= (int64_t)r &&
	       (int64_t)r <= g1 - sc->mono_s * NS,
	       "%s: opened in the root namespace, setns() into it: after a horizon_sync() the read is clock_gettime() less the new offset (differs by %.6f s)",
	       sc->name, (double)(g0 - (int64_t)r) / 1e9);
out:
	if (fd >= 0)
		close(fd);
	perfclock_close(clk);
}

/*
 * The paths that use the offset, each first after a setns(): this
 * process (single-threaded) opened CLOCK_MONOTONIC and read it in the
 * root namespace, so the library holds offset 0, then joins sc's
 * namespace and, before anything else of the library,
 *  - SETNS_PERCPU: takes H_c (perfclock_horizon_cpu(), clock_gettime +
 *    getcpu);
 *  - SETNS_ESTIMATE: takes the estimated horizon (membarrier made
 *    unavailable, the estimate backend);
 *  - SETNS_MEMBARRIER: takes membarrier's first horizon (its helper
 *    thread starts in that call and reads the clock too).
 * Each horizon must be a value the host's clock (perf's stamps) had
 * during the call, less the horizon's margins (an estimate's in-flight
 * allowance, the NTP slope: under 1 s), and the read after it must be
 * clock_gettime() less the new offset. With the old offset a +100 s
 * namespace gives a horizon 100 s in the future (every record of the
 * next 100 s flushed as if complete), a -100 s one a horizon 100 s late.
 */
enum { SETNS_PERCPU, SETNS_ESTIMATE, SETNS_MEMBARRIER, SETNS_PATHS };

static const char *const setns_path_names[SETNS_PATHS] = {
	"H_c (perfclock_horizon_cpu)",
	"the estimated horizon",
	"membarrier's first horizon",
};

static void setns_path_check(const struct scenario *sc, pid_t into, int path)
{
	const char *pn = setns_path_names[path], *name;
	int64_t g0, g1, off = sc->mono_s * NS;
	uint64_t r = 0, h = 0;
	struct perfclock *clk;
	char path_ns[64];
	uint32_t cpu;
	int fd = -1, err;

	if (path == SETNS_ESTIMATE)
		perfclock_mb__test_set_mode(PERFCLOCK_MB_TEST_UNAVAILABLE);
	clk = perfclock_open_clockid(CLOCK_MONOTONIC);
	/* No horizon before the setns(): one would hide a late one after. */
	if (!clk || perfclock_read(clk, &r)) {
		tap_ok(0, "%s, %s: opens and reads in the root namespace: %s",
		       sc->name, pn, strerror(errno));
		goto out;
	}
	name = perfclock_clock_horizon_name(clk);
	if ((path == SETNS_ESTIMATE) == !!strstr(name, "membarrier") &&
	    path != SETNS_PERCPU) {
		tap_skip("%s, %s # SKIP the clock's horizon here is %s",
			 sc->name, pn, name);
		goto out;
	}
	snprintf(path_ns, sizeof(path_ns), "/proc/%d/ns/time", (int)into);
	fd = open(path_ns, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWTIME)) {
		tap_ok(0, "%s, %s: setns() into it: %s", sc->name, pn,
		       strerror(errno));
		goto out;
	}
	g0 = now_ns(CLOCK_MONOTONIC);
	err = path == SETNS_PERCPU ? perfclock_horizon_cpu(clk, &h, &cpu) :
				     perfclock_horizon(clk, &h);
	g1 = now_ns(CLOCK_MONOTONIC);
	if (path == SETNS_PERCPU && err == -EOPNOTSUPP) {
		tap_skip("%s, %s # SKIP no per-CPU horizon for this clock here",
			 sc->name, pn);
		goto out;
	}
	tap_ok(!err && g0 - off - NS <= (int64_t)h && (int64_t)h <= g1 - off,
	       "%s, %s: the first horizon after setns() is the host's clock (%.6f s below clock_gettime() less the new offset; err %d)",
	       sc->name, pn, (double)(g1 - off - (int64_t)h) / 1e9, err);
	g0 = now_ns(CLOCK_MONOTONIC);
	err = perfclock_read(clk, &r);
	g1 = now_ns(CLOCK_MONOTONIC);
	tap_ok(!err && g0 - off <= (int64_t)r && (int64_t)r <= g1 - off,
	       "%s, %s: ... and the read after it is clock_gettime() less the new offset (differs by %.6f s)",
	       sc->name, pn, (double)(g0 - (int64_t)r) / 1e9);
out:
	if (fd >= 0)
		close(fd);
	perfclock_close(clk);
}

/* In sc's namespace (a fork() child of the process that unshared). */
static int inside(const struct scenario *sc)
{
	int ci;

	for (ci = 0; ci < 3; ci++)
		read_check(sc, ci);
	for (ci = 0; ci < 3; ci++)
		records_check(sc, ci);
	if (sc->ns)
		refusal_check(sc);
	return tap_exit();
}

static int write_offsets(const struct scenario *sc)
{
	char buf[96];
	int fd, n, ok;

	n = snprintf(buf, sizeof(buf), "monotonic %lld 0\nboottime %lld 0\n",
		     sc->mono_s, sc->boot_s);
	fd = open("/proc/self/timens_offsets", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ok = write(fd, buf, (size_t)n) == n;
	n = errno;
	close(fd);
	return ok ? 0 : -n;
}

/*
 * A child P enters sc's namespace (unshare, offsets); P's children are in
 * it: one runs the checks, one (the holder) stays there until released,
 * so that a process of the root namespace can setns() into it.
 */
static void run_scenario(const struct scenario *sc)
{
	int status, err, ready[2], release[2], i;
	pid_t p, c, holder = -1;
	char b;

	fflush(stdout);
	if (pipe(ready) || pipe(release))
		return;
	p = fork();
	if (p == 0) {
		close(ready[0]);
		close(release[1]);
		if (sc->ns) {
			if (unshare(CLONE_NEWTIME)) {
				tap_skip("%s # SKIP unshare(CLONE_NEWTIME): %s (needs root and CONFIG_TIME_NS)",
					 sc->name, strerror(errno));
				_exit(0);
			}
			err = write_offsets(sc);
			if (err) {
				tap_skip("%s # SKIP writing /proc/self/timens_offsets: %s (the host's uptime must exceed a negative offset)",
					 sc->name, strerror(-err));
				_exit(0);
			}
			holder = fork();
			if (holder == 0) {
				if (read(release[0], &b, 1) < 0)
					_exit(1);
				_exit(0);
			}
			if (write(ready[1], &holder, sizeof(holder)) < 0)
				_exit(1);
		}
		close(ready[1]);
		c = fork_fresh();
		if (c == 0)
			_exit(inside(sc));
		waitpid(c, &status, 0);
		err = !WIFEXITED(status) || WEXITSTATUS(status);
		if (holder > 0)
			waitpid(holder, NULL, 0);
		_exit(err);
	}
	close(ready[1]);
	close(release[0]);
	err = 0;
	if (p > 0 && read(ready[0], &holder, sizeof(holder)) ==
	    (ssize_t)sizeof(holder)) {
		c = fork_fresh();
		if (c == 0)
			_exit((setns_check(sc, holder), tap_exit()));
		err = c < 0 || waitpid(c, &status, 0) != c ||
		      !WIFEXITED(status) || WEXITSTATUS(status);
		for (i = 0; i < SETNS_PATHS; i++) {
			c = fork_fresh();
			if (c == 0)
				_exit((setns_path_check(sc, holder, i),
				       tap_exit()));
			err |= c < 0 || waitpid(c, &status, 0) != c ||
			       !WIFEXITED(status) || WEXITSTATUS(status);
		}
	}
	close(ready[0]);
	close(release[1]);
	if (p < 0 || waitpid(p, &status, 0) != p || !WIFEXITED(status) ||
	    WEXITSTATUS(status) || err)
		tap_ok(0, "%s: every check in it passed", sc->name);
}

int main(void)
{
	size_t i;

	if (geteuid() != 0) {
		tap_skip("time namespaces # SKIP needs root (unshare(CLONE_NEWTIME), system-wide perf events)");
		return tap_exit();
	}
	for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		run_scenario(&scenarios[i]);
	return tap_exit();
}
