// SPDX-License-Identifier: LGPL-2.1-or-later
/* demo_flush: the built-in load (see load.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "load.h"

struct load_thread {
	struct load *l;
	pthread_t th;
	int cpu;
	int in, out;		/* read own pipe, write the next one's */
	uint64_t hops;
	int started;
	int tid;		/* set by the thread itself */
};

struct load {
	int n;
	volatile int stop;
	volatile int go;
	long migrate_every;
	int side_band;
	const int *cpus;	/* the caller's, for migrations */
	int nr_cpus;
	struct load_thread *t;
	int (*pipes)[2];
};

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	/* Best effort: a CPU may go away; the load then just runs unpinned. */
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *load_main(void *arg)
{
	struct load_thread *t = arg;
	struct load *l = t->l;
	int at = t->cpu;
	char b;

	pin(l->cpus[at]);
	__atomic_store_n(&t->tid, (int)syscall(SYS_gettid), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&l->go, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&l->stop, __ATOMIC_RELAXED))
		usleep(1000);
	for (;;) {
		ssize_t r = read(t->in, &b, 1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || __atomic_load_n(&t->l->stop, __ATOMIC_RELAXED))
			break;
		while (write(t->out, &b, 1) < 0 && errno == EINTR)
			;
		t->hops++;
		if (l->side_band == LOAD_SB_MMAP) {
			void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (p != MAP_FAILED)
				munmap(p, 4096);
		} else if (l->side_band == LOAD_SB_COMM) {
			prctl(PR_SET_NAME, t->hops & 1 ? "demo-load" : "demo-load-");
		}
		if (l->migrate_every && !(t->hops % (uint64_t)l->migrate_every)) {
			at = (at + 1) % l->nr_cpus;
			pin(l->cpus[at]);
		}
	}
	return NULL;
}

struct load *load_start(int n, const int *cpus, int nr_cpus, long migrate_every,
			int side_band)
{
	struct load *l = calloc(1, sizeof(*l));
	int i, tokens = n / 2 > 0 ? n / 2 : 1, err = 0;

	if (!l || n < 1 || nr_cpus < 1) {
		free(l);
		errno = l ? EINVAL : ENOMEM;
		return NULL;
	}
	l->n = n;
	l->cpus = cpus;
	l->nr_cpus = nr_cpus;
	l->migrate_every = migrate_every;
	l->side_band = side_band;
	l->t = calloc((size_t)n, sizeof(*l->t));
	l->pipes = calloc((size_t)n, sizeof(*l->pipes));
	if (!l->t || !l->pipes) {
		err = ENOMEM;
		goto fail;
	}
	for (i = 0; i < n; i++)
		l->pipes[i][0] = l->pipes[i][1] = -1;
	for (i = 0; i < n; i++)
		if (pipe2(l->pipes[i], O_CLOEXEC)) {
			err = errno;
			goto fail;
		}
	/* Tokens spread evenly around the ring. */
	for (i = 0; i < tokens; i++)
		if (write(l->pipes[(i * n) / tokens][1], "x", 1) != 1) {
			err = errno;
			goto fail;
		}
	for (i = 0; i < n; i++) {
		struct load_thread *t = &l->t[i];

		t->l = l;
		t->cpu = i % nr_cpus;	/* an index into cpus[] */
		t->in = l->pipes[i][0];
		t->out = l->pipes[(i + 1) % n][1];
		err = pthread_create(&t->th, NULL, load_main, t);
		if (err)
			goto fail;
		t->started = 1;
	}
	return l;
fail:
	load_stop(l);
	errno = err ? err : ENOMEM;
	return NULL;
}

void load_tids(struct load *l, int *tids)
{
	int i;

	for (i = 0; i < l->n; i++) {
		while (!__atomic_load_n(&l->t[i].tid, __ATOMIC_ACQUIRE))
			usleep(1000);
		tids[i] = l->t[i].tid;
	}
}

void load_go(struct load *l)
{
	__atomic_store_n(&l->go, 1, __ATOMIC_RELEASE);
}

uint64_t load_stop(struct load *l)
{
	uint64_t hops = 0;
	int i;

	if (!l)
		return 0;
	__atomic_store_n(&l->stop, 1, __ATOMIC_RELAXED);
	/* Wake every thread: one byte each is enough to see stop. */
	for (i = 0; l->pipes && i < l->n; i++)
		if (l->pipes[i][1] >= 0 && write(l->pipes[i][1], "s", 1) < 0) {
			/* a full pipe already has a byte to wake its reader */
		}
	for (i = 0; l->t && i < l->n; i++)
		if (l->t[i].started) {
			pthread_join(l->t[i].th, NULL);
			hops += l->t[i].hops;
		}
	for (i = 0; l->pipes && i < l->n; i++) {
		if (l->pipes[i][0] >= 0)
			close(l->pipes[i][0]);
		if (l->pipes[i][1] >= 0)
			close(l->pipes[i][1]);
	}
	free(l->t);
	free(l->pipes);
	free(l);
	return hops;
}

/* ---- the ticker: one rare writer per quiet CPU ---- */

struct tick_thread {
	struct ticker *tk;
	pthread_t th;
	int cpu;
	int p[2];
	uint64_t ticks;
	int started;
};

struct ticker {
	int n;
	long period_ms;
	int stop[2];		/* closed write end: every thread wakes and ends */
	struct tick_thread *t;
};

static void *tick_main(void *arg)
{
	struct tick_thread *t = arg;
	struct pollfd pfd = { .fd = t->tk->stop[0], .events = POLLIN };
	char b = 't';

	pin(t->cpu);
	/* poll() is the wait; the write and read are the tick's only syscalls. */
	while (poll(&pfd, 1, (int)t->tk->period_ms) == 0) {
		if (write(t->p[1], &b, 1) != 1 || read(t->p[0], &b, 1) != 1)
			break;
		t->ticks++;
	}
	return NULL;
}

struct ticker *ticker_start(const int *cpus, int nr_cpus, long period_ms)
{
	struct ticker *tk = calloc(1, sizeof(*tk));
	int i, err = 0;

	if (!tk || nr_cpus < 1 || period_ms < 1) {
		free(tk);
		errno = tk ? EINVAL : ENOMEM;
		return NULL;
	}
	tk->period_ms = period_ms;
	tk->stop[0] = tk->stop[1] = -1;
	tk->t = calloc((size_t)nr_cpus, sizeof(*tk->t));
	if (!tk->t || pipe2(tk->stop, O_CLOEXEC)) {
		err = tk->t ? errno : ENOMEM;
		goto fail;
	}
	for (i = 0; i < nr_cpus; i++)
		tk->t[i].p[0] = tk->t[i].p[1] = -1;
	tk->n = nr_cpus;
	for (i = 0; i < nr_cpus; i++) {
		struct tick_thread *t = &tk->t[i];

		t->tk = tk;
		t->cpu = cpus[i];
		if (pipe2(t->p, O_CLOEXEC)) {
			err = errno;
			goto fail;
		}
		err = pthread_create(&t->th, NULL, tick_main, t);
		if (err)
			goto fail;
		t->started = 1;
	}
	return tk;
fail:
	ticker_stop(tk);
	errno = err ? err : ENOMEM;
	return NULL;
}

uint64_t ticker_stop(struct ticker *tk)
{
	uint64_t ticks = 0;
	int i;

	if (!tk)
		return 0;
	if (tk->stop[1] >= 0)
		close(tk->stop[1]);
	for (i = 0; tk->t && i < tk->n; i++) {
		if (tk->t[i].started) {
			pthread_join(tk->t[i].th, NULL);
			ticks += tk->t[i].ticks;
		}
		if (tk->t[i].p[0] >= 0)
			close(tk->t[i].p[0]);
		if (tk->t[i].p[1] >= 0)
			close(tk->t[i].p[1]);
	}
	if (tk->stop[0] >= 0)
		close(tk->stop[0]);
	free(tk->t);
	free(tk);
	return ticks;
}
