// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fork() and the clock's locks. hz_lock (horizon.c) and set_lock
 * (horizon_sets.c) are pthread mutexes: a fork() while another
 * thread holds one gives the child a copy that stays locked forever (the
 * holder does not exist there), and the child's first horizon deadlocks.
 * POSIX's answer (pthread_atfork(), "fork handlers"): take every such
 * lock before the fork, release it after, in parent and child. Every
 * open clock is on one list for that; the list's own lock is taken
 * first, so a clock cannot come or go during a fork.
 *
 * Lock order: list_lock, then each clock's hz_lock, then its set_lock.
 * Nothing holding hz_lock or set_lock takes list_lock (their critical
 * sections are a few loads and stores, a non-blocking read(),
 * timerfd_settime() and, for CLOCK_TAI, three clock_gettime()), so the prepare handler only waits for those to
 * end. In the child (one thread, the one that forked) the mutexes are
 * initialized again rather than unlocked: POSIX leaves unlocking a
 * mutex from another thread undefined, and the forking thread's copy in
 * the child is, formally, another thread. A clock that can be set also
 * gets a timerfd of its own there: the inherited one is shared with the
 * parent, and a set one process reads would be lost to the other (FORK
 * in horizon_sets.c; its prepare step reads the timerfd and two clocks
 * under set_lock).
 */
#include <pthread.h>

#include "clock_internal.h"
#include "horizon_internal.h"

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct perfclock *list_head;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void prepare(void)
{
	struct perfclock *c;

	pthread_mutex_lock(&list_lock);
	for (c = list_head; c; c = c->fork_next) {
		pthread_mutex_lock(&c->hz_lock);
		if (c->set_tfd >= 0) {
			pthread_mutex_lock(&c->set_lock);
			perfclock__sets_prefork(c);	/* horizon_sets.c */
		}
	}
}

static void parent(void)
{
	struct perfclock *c;

	for (c = list_head; c; c = c->fork_next) {
		if (c->set_tfd >= 0)
			pthread_mutex_unlock(&c->set_lock);
		pthread_mutex_unlock(&c->hz_lock);
	}
	pthread_mutex_unlock(&list_lock);
}

static void child(void)
{
	struct perfclock *c;

	for (c = list_head; c; c = c->fork_next) {
		if (c->set_tfd >= 0) {
			pthread_mutex_init(&c->set_lock, NULL);
			perfclock__sets_forked(c);	/* horizon_sets.c */
		}
		pthread_mutex_init(&c->hz_lock, NULL);
	}
	pthread_mutex_init(&list_lock, NULL);
}

static void atfork_register(void)
{
	pthread_atfork(prepare, parent, child);
}

void perfclock__fork_guard_add(struct perfclock *clk)
{
	pthread_once(&atfork_once, atfork_register);
	pthread_mutex_lock(&list_lock);
	clk->fork_prev = NULL;
	clk->fork_next = list_head;
	if (list_head)
		list_head->fork_prev = clk;
	list_head = clk;
	pthread_mutex_unlock(&list_lock);
}

void perfclock__fork_guard_del(struct perfclock *clk)
{
	pthread_mutex_lock(&list_lock);
	if (clk->fork_prev)
		clk->fork_prev->fork_next = clk->fork_next;
	else if (list_head == clk)
		list_head = clk->fork_next;
	if (clk->fork_next)
		clk->fork_next->fork_prev = clk->fork_prev;
	clk->fork_next = clk->fork_prev = NULL;
	pthread_mutex_unlock(&list_lock);
}
