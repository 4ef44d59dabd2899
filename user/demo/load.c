// SPDX-License-Identifier: LGPL-2.1-or-later
/* demo_flush: the built-in load (see load.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "load.h"

struct load_thread {
	struct load *l;
	pthread_t th;
	int cpu;
	int in, out;		/* read own pipe, write the next one's */
	uint64_t hops;
	int started;
};

struct load {
	int n;
	volatile int stop;
	struct load_thread *t;
	int (*pipes)[2];
};

static void *load_main(void *arg)
{
	struct load_thread *t = arg;
	char b;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(t->cpu, &set);
	/* Best effort: a CPU may go away; the load then just runs unpinned. */
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	for (;;) {
		ssize_t r = read(t->in, &b, 1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || __atomic_load_n(&t->l->stop, __ATOMIC_RELAXED))
			break;
		while (write(t->out, &b, 1) < 0 && errno == EINTR)
			;
		t->hops++;
	}
	return NULL;
}

struct load *load_start(int n, const int *cpus, int nr_cpus)
{
	struct load *l = calloc(1, sizeof(*l));
	int i, tokens = n / 2 > 0 ? n / 2 : 1, err = 0;

	if (!l || n < 1 || nr_cpus < 1) {
		free(l);
		errno = l ? EINVAL : ENOMEM;
		return NULL;
	}
	l->n = n;
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
		t->cpu = cpus[i % nr_cpus];
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
