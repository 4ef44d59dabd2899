// SPDX-License-Identifier: GPL-2.0
/*
 * perfclock_fuzz's module load and unload, its contexts, and its rounds
 * (see perfclock_fuzz.c).
 */
#include <grp.h>
#include <linux/capability.h>

#include "fuzz.h"

/* Does this context itself keep the module pinned (O_PATH fds do not)? */
int holds_module(struct ctx *c)
{
	int i;

	if (c->nmaps)
		return 1;
	for (i = 0; i < c->nfds; i++)
		if (c->fds[i].acc >= 0)
			return 1;
	return c->anchor >= 0;
}

int load_module(struct ctx *c, const char *params)
{
	int fd = open(opt.ko, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0) {
		CALL(c, "open(%s)", opt.ko);
		violation(c, "%s", strerror(errno));
		return errno;
	}
	err = syscall(SYS_finit_module, fd, params, 0) ? errno : 0;
	close(fd);
	return err;
}

/* Unload, check the device is gone, reload with random parameters. */
void unload_reload(struct ctx *c)
{
	static const unsigned int periods[] = { 100, 250, 1000, 1000, 1000, 4000, 1000000 };
	static const unsigned int modes[] = { 0444, 0444, 0400, 0600, 0666, 0440 };
	unsigned int period, mode;
	char params[64];
	struct perfclock_info in;
	struct stat st;
	int fd;

	CALL(c, "delete_module(perfclock, O_NONBLOCK) with nothing open or mapped");
	if (!expect(c, syscall(SYS_delete_module, "perfclock", O_NONBLOCK) ? errno : 0, 0))
		return;
	atomic_fetch_add(&n_unloads, 1);
	CALL(c, "open(%s) after unload", DEV);
	fd = open(DEV, O_RDONLY | O_CLOEXEC);
	expect(c, fd < 0 ? errno : 0, ENOENT);
	if (fd >= 0)
		close(fd);
	if (chance(&c->rng, 30)) {
		snprintf(params, sizeof(params), chance(&c->rng, 50) ?
			 (chance(&c->rng, 50) ? "mode=01777" : "mode=0") :
			 chance(&c->rng, 50) ? "update_period_us=99" : "update_period_us=1000001");
		CALL(c, "finit_module(%s, \"%s\")", opt.ko, params);
		expect(c, load_module(c, params), EINVAL);
		CALL(c, "/sys/module/perfclock after a refused load");
		if (module_loaded())
			violation(c, "module present after a refused load");
	}
	period = periods[below(&c->rng, sizeof(periods) / sizeof(periods[0]))];
	mode = modes[below(&c->rng, sizeof(modes) / sizeof(modes[0]))];
	if (chance(&c->rng, 40))
		snprintf(params, sizeof(params), "update_period_us=%u mode=0%o", period, mode);
	else
		snprintf(params, sizeof(params), "%s", "");
	CALL(c, "finit_module(%s, \"%s\")", opt.ko, params);
	if (!expect(c, load_module(c, params), 0))
		return;
	if (!params[0]) {
		period = DEFAULT_PERIOD_US;
		mode = DEFAULT_MODE;
	}
	CALL(c, "stat(%s) after load with \"%s\"", DEV, params);
	if (stat(DEV, &st))
		violation(c, "%s", strerror(errno));
	else if ((st.st_mode & 0777) != mode || !S_ISCHR(st.st_mode))
		violation(c, "mode %o, want char device %o", st.st_mode, mode);
	fd = open(DEV, O_RDONLY | O_CLOEXEC);
	CALL(c, "GET_INFO after load with \"%s\"", params);
	if (fd < 0 || do_ioctl(fd, PERFCLOCK_IOC_GET_INFO, &in)) {
		violation(c, "%s", strerror(errno));
	} else {
		check_info(c, &in);
		if (in.update_period_ns != (uint64_t)period * 1000)
			violation(c, "update_period_ns %" PRIu64 " after update_period_us=%u",
				  (uint64_t)in.update_period_ns, period);
	}
	if (fd >= 0)
		close(fd);
	c->have_last = 0;	/* a new module: page and clock history start over */
	c->have_page = 0;
	c->have_hz = 0;		/* and its horizon generations, from 1 */
}

void op_rmmod(struct ctx *c)
{
	char what[64];
	int kind = below(&c->rng, 10);

	op_count[OP_RMMOD]++;
	if (c->unpriv) {
		/* delete_module() asks for CAP_SYS_MODULE before anything. */
		CALL(c, "delete_module(\"%s\", O_NONBLOCK) as uid 65534",
		     kind ? "perfclock" : "perfclock_nonexistent");
		expect(c, syscall(SYS_delete_module,
				  kind ? "perfclock" : "perfclock_nonexistent",
				  O_NONBLOCK) ? errno : 0, EPERM);
		return;
	}
	if (kind == 0) {
		CALL(c, "delete_module(\"perfclock_nonexistent\", O_NONBLOCK)");
		expect(c, syscall(SYS_delete_module, "perfclock_nonexistent", O_NONBLOCK) ? errno : 0,
		       ENOENT);
		return;
	}
	if (kind == 1) {
		void *p = bad_pointer(c, 16, what, sizeof(what));

		if (p == c->scratch + 2 * page_size || (uintptr_t)p < 4096)
			return;	/* readable or NULL-ish: not a clean EFAULT case */
		if (strstr(what, "read-only") || strstr(what, "straddles") ||
		    strstr(what, "TASK_SIZE"))
			return;	/* readable bytes: the name may be read */
		CALL(c, "delete_module(%p [%s], O_NONBLOCK)", p, what);
		expect(c, syscall(SYS_delete_module, p, O_NONBLOCK) ? errno : 0, EFAULT);
		return;
	}
	if (holds_module(c)) {
		/*
		 * Never O_TRUNC: with CONFIG_MODULE_FORCE_UNLOAD (Debian's
		 * kernels have it) that unloads a module in use, by design.
		 * Without O_NONBLOCK, 6.1 no longer waits: EWOULDBLOCK too.
		 */
		CALL(c, "delete_module(perfclock, %s) while open or mapped (%d fds, %d maps%s)",
		     kind == 2 ? "0" : "O_NONBLOCK", c->nfds, c->nmaps,
		     c->anchor >= 0 ? ", anchor" : "");
		expect(c, syscall(SYS_delete_module, "perfclock",
				  kind == 2 ? 0 : O_NONBLOCK) ? errno : 0,
		       EWOULDBLOCK);
		return;
	}
	if (c->single && !c->may_hold_outside && opt.ko)
		unload_reload(c);
}

void one_op(struct ctx *c)
{
	static const struct { void (*fn)(struct ctx *); int weight; } ops[] = {
		{ op_open, 10 }, { op_close, 7 }, { op_dup, 2 }, { op_ioctl_good, 14 },
		{ op_ioctl_bad, 8 }, { op_ioctl_other, 8 }, { op_rw, 3 }, { op_mmap, 12 },
		{ op_munmap, 6 }, { op_mprotect, 5 }, { op_mremap, 4 }, { op_madvise, 5 },
		{ op_page, 12 }, { op_rmmod, 3 }, { op_horizon, 4 },
	};
	int total = 0, i, r;

	for (i = 0; i < (int)(sizeof(ops) / sizeof(ops[0])); i++)
		total += ops[i].weight;
	r = below(&c->rng, total);
	for (i = 0; r >= ops[i].weight; i++)
		r -= ops[i].weight;
	c->step++;
	c->call[0] = 0;
	ops[i].fn(c);
	if (opt.trace && c->call[0])
		printf("# trace %s %" PRIu64 ": %s\n", c->name, c->step, c->call);
}

void ctx_init(struct ctx *c, const char *name, long round, uint64_t seed)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->round = round;
	c->rng.s = seed;
	c->anchor = -1;
	c->scratch = mmap(NULL, 4 * page_size, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->scratch == MAP_FAILED) {
		perror("perfclock_fuzz: scratch");
		exit(2);
	}
	mprotect(c->scratch + page_size, page_size, PROT_NONE);
	mprotect(c->scratch + 2 * page_size, page_size, PROT_READ);
	mprotect(c->scratch + 3 * page_size, page_size, PROT_NONE);
}

void ctx_cleanup(struct ctx *c)
{
	while (c->nmaps) {
		CALL(c, "cleanup munmap(%#lx)", (unsigned long)c->maps[0].addr);
		expect(c, munmap((void *)c->maps[0].addr, page_size) ? errno : 0, 0);
		drop_map(c, 0, 1);
	}
	while (c->nfds) {
		close(c->fds[c->nfds - 1].fd);
		c->nfds--;
	}
	munmap(c->scratch, 4 * page_size);
}

int time_up(void)
{
	return atomic_load(&stop) || now_s() > deadline;
}

void run_ops(struct ctx *c, int n)
{
	int i;

	for (i = 0; i < n && !time_up(); i++)
		one_op(c);
}

/* ---- rounds ------------------------------------------------------------------------ */

uint64_t round_seed(long round, uint64_t salt)
{
	return mix(opt.seed ^ mix((uint64_t)round * 0x2545f4914f6cdd1dULL + salt));
}

void sweep_magic(struct ctx *c)
{
	unsigned int dir, nr, i, size, cmd;
	static const unsigned int sizes[] = { 0, 1, 4, 8, 15, 16, 17, 24, 32, 64, 71, 72,
					      73, 128, 255, 4096, 16383 };
	int fd = open(DEV, O_RDONLY | O_CLOEXEC);
	uint64_t n = 0;

	CALL(c, "open(%s)", DEV);
	if (!expect(c, fd < 0 ? errno : 0, 0))
		return;
	for (dir = 0; dir < 4; dir++)
		for (nr = 0; nr < 256; nr++)
			for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
				cmd = _IOC(dir, PERFCLOCK_IOC_MAGIC, nr, sizes[i]);
				ioctl_other(c, fd, O_RDONLY, cmd);
				n++;
			}
	/* Every direction and size for the three numbers in use. */
	for (nr = 1; nr <= 3; nr++)
		for (dir = 0; dir < 4; dir++)
			for (size = 0; size < (1u << 14); size++) {
				cmd = _IOC(dir, PERFCLOCK_IOC_MAGIC, nr, size);
				ioctl_other(c, fd, O_RDONLY, cmd);
				n++;
				if (atomic_load(&stop))
					goto out;
			}
out:
	close(fd);
	printf("%s - fuzz: every command of magic %#x answers ENOTTY but GET_TIME, GET_INFO and GET_HORIZON (%" PRIu64 " commands)\n",
	       violations ? "not ok" : "ok", PERFCLOCK_IOC_MAGIC, n);
	fflush(stdout);
}

void round_single(long round)
{
	struct ctx c;
	char name[32];

	snprintf(name, sizeof(name), "single");
	ctx_init(&c, name, round, round_seed(round, 1));
	c.single = 1;
	run_ops(&c, 20 + below(&c.rng, 200));
	ctx_cleanup(&c);
	/* Nothing is left: unload must now work (and reload), when allowed. */
	if (opt.ko && !time_up() && chance(&c.rng, 20)) {
		ctx_init(&c, "single-end", round, round_seed(round, 2));
		c.single = 1;
		unload_reload(&c);
		ctx_cleanup(&c);
	}
}

struct thread_arg {
	struct ctx c;
	int nops;
	pthread_t tid;
};

void *thread_main(void *p)
{
	struct thread_arg *a = p;

	run_ops(&a->c, a->nops);
	ctx_cleanup(&a->c);
	return NULL;
}

void round_threads(long round)
{
	struct thread_arg *ta;
	struct rng r = { round_seed(round, 3) };
	int n = 2 + below(&r, opt.threads > 1 ? opt.threads - 1 : 1), i;
	int anchor = open(DEV, O_RDONLY | O_CLOEXEC);
	const struct perfclock_page *shared_map = NULL;
	char name[32];

	if (anchor < 0) {
		struct ctx c;

		ctx_init(&c, "threads", round, 0);
		CALL(&c, "open(%s) for the anchor", DEV);
		expect(&c, errno, 0);
		ctx_cleanup(&c);
		return;
	}
	shared_map = mmap(NULL, page_size, PROT_READ, MAP_SHARED, anchor, 0);
	ta = calloc(n, sizeof(*ta));
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "thread%d", i);
		ctx_init(&ta[i].c, name, round, round_seed(round, 100 + i));
		ta[i].c.anchor = anchor;
		if (shared_map != MAP_FAILED)
			ta[i].c.shared = shared_map;
		ta[i].nops = 50 + below(&r, 300);
		pthread_create(&ta[i].tid, NULL, thread_main, &ta[i]);
	}
	for (i = 0; i < n; i++)
		pthread_join(ta[i].tid, NULL);
	if (shared_map != MAP_FAILED) {
		struct ctx c;

		ctx_init(&c, "threads-shared", round, 0);
		c.anchor = anchor;
		CALL(&c, "read the shared page after the threads");
		check_page(&c, shared_map);
		ctx_cleanup(&c);
		munmap((void *)shared_map, page_size);
	}
	free(ta);
	close(anchor);
}

/* Wait for a forked child: its exit status carries its violations. */
static void wait_child(struct ctx *c, pid_t pid, long round)
{
	int status;

	CALL(c, "waitpid(child %d)", pid);
	if (waitpid(pid, &status, 0) != pid)
		violation(c, "waitpid: %s", strerror(errno));
	else if (WIFSIGNALED(status))
		violation(c, "child killed by signal %d", WTERMSIG(status));
	else if (WEXITSTATUS(status)) {
		atomic_fetch_add(&violations, 1);
		atomic_store(&stop, 1);
		if (!first_violation[0])
			snprintf(first_violation, sizeof(first_violation),
				 "seed %" PRIu64 " round %ld: in the forked child (see above)",
				 opt.seed, round);
	}
}

void round_fork(long round)
{
	struct ctx c;
	pid_t pid;
	int i;

	ctx_init(&c, "fork-parent", round, round_seed(round, 4));
	c.single = 1;
	run_ops(&c, below(&c.rng, 40));
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		/* The child's copy: DONTFORK mappings did not come along. */
		snprintf(c.name, sizeof(c.name), "fork-child");
		c.rng.s = round_seed(round, 5);
		for (i = 0; i < c.nmaps; i++)
			if (c.maps[i].dontfork) {
				c.maps[i] = c.maps[--c.nmaps];
				i--;
			}
		/* The parent runs on: whatever it holds, never unload from here. */
		c.may_hold_outside = 1;
		run_ops(&c, 20 + below(&c.rng, 100));
		ctx_cleanup(&c);
		fflush(stdout);
		_exit(violations ? 1 : 0);
	}
	if (pid < 0) {
		perror("perfclock_fuzz: fork");
		ctx_cleanup(&c);
		return;
	}
	/* The child may hold what it inherited: unload only after it is gone. */
	c.may_hold_outside = 1;
	run_ops(&c, below(&c.rng, 60));
	wait_child(&c, pid, round);
	ctx_cleanup(&c);
}

/*
 * Become uid and gid 65534 with no supplementary groups. setresuid() from
 * root to non-root clears the permitted, effective and ambient
 * capabilities (capabilities(7), "Effect of user ID changes"); capget()
 * says whether it did, rather than trusting it. 0, or -1 (a violation:
 * the fuzzer runs as root).
 */
static int drop_privileges(struct ctx *c)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	CALL(c, "setgroups(0) + setresgid(65534) + setresuid(65534)");
	if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
	    setresuid(65534, 65534, 65534)) {
		violation(c, "%s (run as root)", strerror(errno));
		return -1;
	}
	CALL(c, "capget() as uid 65534");
	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &hdr, d)) {
		violation(c, "%s", strerror(errno));
		return -1;
	}
	if (d[0].effective || d[1].effective || d[0].permitted || d[1].permitted ||
	    geteuid() != 65534 || getegid() != 65534) {
		violation(c, "still privileged: euid %d egid %d, effective %#x %#x, permitted %#x %#x",
			  (int)geteuid(), (int)getegid(), d[0].effective, d[1].effective,
			  d[0].permitted, d[1].permitted);
		return -1;
	}
	return 0;
}

/*
 * The same operations without privilege: a child drops to uid 65534 and
 * no capabilities, keeping one fd it opened as root (an fd's opener does
 * not lend its capabilities: the module asks perfmon_capable() at each
 * call). Then an EXPEDITED GET_HORIZON is EPERM, delete_module() EPERM,
 * open() what the device's mode grants others, and everything else as
 * for root.
 */
void round_unpriv(long round)
{
	struct perfclock_horizon h;
	struct ctx c;
	pid_t pid;
	int fd;

	ctx_init(&c, "unpriv-parent", round, round_seed(round, 6));
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		snprintf(c.name, sizeof(c.name), "unpriv");
		c.single = 1;
		c.may_hold_outside = 1;	/* the parent may reload after: never here */
		CALL(&c, "open(%s) as root, before dropping privileges", DEV);
		fd = open(DEV, O_RDONLY | O_CLOEXEC);
		if (expect(&c, fd < 0 ? errno : 0, 0)) {
			c.fds[0].fd = fd;
			c.fds[0].acc = O_RDONLY;
			c.nfds = 1;
		}
		if (!drop_privileges(&c)) {
			c.unpriv = 1;
			if (c.nfds) {
				memset(&h, 0, sizeof(h));
				h.clockid = PERFCLOCK_HORIZON_PERF_CLOCK;
				h.flags = PERFCLOCK_HORIZON_EXPEDITED;
				CALL(&c, "ioctl(%d [opened as root], GET_HORIZON, EXPEDITED) as uid 65534",
				     c.fds[0].fd);
				expect(&c, do_ioctl(c.fds[0].fd, PERFCLOCK_IOC_GET_HORIZON, &h), EPERM);
			}
			run_ops(&c, 20 + below(&c.rng, 100));
		}
		ctx_cleanup(&c);
		fflush(stdout);
		_exit(violations ? 1 : 0);
	}
	if (pid < 0) {
		perror("perfclock_fuzz: fork");
		ctx_cleanup(&c);
		return;
	}
	wait_child(&c, pid, round);
	ctx_cleanup(&c);
}

