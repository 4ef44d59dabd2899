// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The horizon's backend step (THE PIPELINE in horizon.c): which backend
 * a clock has, and asking it. Not a backend itself: the backends are
 * horizon_module.c, horizon_membarrier.c and horizon_estimate.c, behind
 * struct horizon_backend (horizon_internal.h).
 *
 *  - perfclock__horizon_backend_choose(), at open: the best exact
 *    backend the clock can have.
 *  - perfclock__horizon_ask(): the backend's raw horizon and its
 *    generation, for horizon_sets.c, the step above. If the module
 *    refuses horizons after all (-ENOTTY), the clock withdraws to the
 *    estimate for good, and the estimate's generations continue the
 *    module's.
 *  - perfclock__horizon_backend_info() and _close(): what the backend
 *    proves (perfclock_get_info(), the names), its release at close.
 *
 * LAYERS: horizon.c (choose, info, close) and horizon_sets.c (ask) call
 * this file; it calls the backends and nothing above them. It holds what
 * used to be horizon.c's ask(), so that the sets' rule can take the
 * backend's read without calling back up into horizon.c.
 *
 * MEMORY ORDER (horizon.c has the rest): clk->hz points to a const
 * backend defined before main(); its one change (withdraw()) is a release
 * that publishes hz_gen_base, read after the acquire in backend_of().
 * withdraw() reads the last generation published (hz_any, hz_gen) under
 * hz_lock, as horizon.c's publish() writes it.
 */
#include <errno.h>

#include "horizon_internal.h"

/* Acquire: pairs with withdraw()'s release, for hz_gen_base. */
static const struct horizon_backend *backend_of(const struct perfclock *clk)
{
	return __atomic_load_n(&clk->hz, __ATOMIC_ACQUIRE);
}

void perfclock__horizon_backend_choose(struct perfclock *clk)
{
	/*
	 * The best exact backend the clock can have: the module's, when it
	 * was attached and offers horizons; else membarrier's, for a global
	 * clock this library reads (not on nohz_full, not for REALTIME or
	 * TAI); else the estimate.
	 */
	if (clk->hz_exact)
		clk->hz = &perfclock__horizon_module;
	else if (perfclock__horizon_membarrier_attach(clk) == 0)
		clk->hz = &perfclock__horizon_membarrier;
	else
		clk->hz = &perfclock__horizon_estimate;
	clk->hz_opened = clk->hz;
}

/*
 * The backend chosen at open: released at close, not at a withdraw
 * (another thread may still be inside it then).
 */
void perfclock__horizon_backend_close(struct perfclock *clk)
{
	if (clk->hz_opened && clk->hz_opened->close)
		clk->hz_opened->close(clk);
}

/* The module said it had horizons, then refused them: estimate from now. */
static void withdraw(struct perfclock *clk)
{
	/*
	 * The estimate counts its generations from 1: continue the
	 * module's, so that its horizons are not taken for older ones.
	 */
	pthread_mutex_lock(&clk->hz_lock);
	if (backend_of(clk) != &perfclock__horizon_estimate) {
		clk->hz_gen_base = clk->hz_any ? clk->hz_gen - 1 : 0;
		__atomic_store_n(&clk->hz, &perfclock__horizon_estimate,
				 __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&clk->hz_lock);
}

int perfclock__horizon_ask(struct perfclock *clk, int sync, int fresh,
			   uint32_t flags, uint64_t *h, uint32_t *gen)
{
	const struct horizon_backend *b = backend_of(clk);
	int err;

	/* A fresh one: the backend's sync(), if it proves horizons. */
	if (!sync && fresh && b->is_exact(clk)) {
		sync = 1;
		flags = 0;
	}
	*gen = 1;
	err = sync ? b->sync(clk, flags, h, gen) : b->horizon(clk, h, gen);
	if (err == -ENOTTY) {
		withdraw(clk);
		b = &perfclock__horizon_estimate;
		*gen = 1;
		err = sync ? -EOPNOTSUPP : b->horizon(clk, h, gen);
	}
	/* hz_gen_base changes once, before the switch it comes with. */
	if (b == &perfclock__horizon_estimate)
		*gen += __atomic_load_n(&clk->hz_gen_base, __ATOMIC_RELAXED);
	return err;
}

/*
 * is_exact() and info() read state and files (the module's page, the
 * clocksource), never a grace period: a tool can have them before its
 * first horizon.
 */
void perfclock__horizon_backend_info(struct perfclock *clk,
				     struct perfclock_clock_info *info)
{
	const struct horizon_backend *b = backend_of(clk);

	if (b->is_exact(clk))
		info->flags |= PERFCLOCK_CLOCK_HORIZON_EXACT;
	b->info(clk, info);
}
