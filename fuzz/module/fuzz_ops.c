// SPDX-License-Identifier: GPL-2.0
/*
 * perfclock_fuzz's operations (see perfclock_fuzz.c): one call each, on
 * the context's fds and mappings, with its expected result.
 */
#include "fuzz.h"

uintptr_t arena;
int arena_used[ARENA_SLOTS];

/* ---- operations --------------------------------------------------------------- */

/*
 * Unprivileged (uid and gid 65534, no groups, no capabilities): the
 * device's "other" bits decide, as the module's mode parameter set them
 * (0444 by default; unload_reload() loads it with others). O_PATH needs
 * none.
 */
static int dev_access(int acc)
{
	struct stat st;
	unsigned int need;

	if (acc < 0)
		return 0;
	if (stat(DEV, &st))
		return errno;
	need = acc == O_RDONLY ? S_IROTH : acc == O_WRONLY ? S_IWOTH : S_IROTH | S_IWOTH;
	return (st.st_mode & need) == need ? 0 : EACCES;
}

void op_open(struct ctx *c)
{
	static const int accs[] = { O_RDONLY, O_WRONLY, O_RDWR };
	int acc, flags, fd, err, kind = below(&c->rng, 20);

	op_count[OP_OPEN]++;
	if (c->nfds == MAXFD)
		return;
	acc = accs[below(&c->rng, 3)];
	flags = acc | O_CLOEXEC;
	if (chance(&c->rng, 30)) flags |= O_NONBLOCK;
	if (chance(&c->rng, 10)) flags |= O_NOCTTY;
	if (chance(&c->rng, 10)) flags |= O_SYNC;
	if (chance(&c->rng, 10)) flags |= O_APPEND;
	if (kind == 0) {
		CALL(c, "open(%s, O_CREAT|O_EXCL|%#x)", DEV, flags);
		fd = open(DEV, flags | O_CREAT | O_EXCL, 0600);
		err = fd < 0 ? errno : 0;
		if (fd >= 0) close(fd);
		expect(c, err, EEXIST);
		return;
	}
	if (kind == 1) {
		CALL(c, "open(%s, O_DIRECTORY|%#x)", DEV, flags);
		fd = open(DEV, flags | O_DIRECTORY);
		err = fd < 0 ? errno : 0;
		if (fd >= 0) close(fd);
		expect(c, err, ENOTDIR);
		return;
	}
	if (kind == 2) {
		flags = O_PATH | O_CLOEXEC;
		acc = -1;
	}
	CALL(c, "open(%s, %#x)%s", DEV, flags, c->unpriv ? " as uid 65534" : "");
	fd = open(DEV, flags);
	if (!expect(c, fd < 0 ? errno : 0, c->unpriv ? dev_access(acc) : 0) || fd < 0)
		return;
	c->fds[c->nfds].fd = fd;
	c->fds[c->nfds].acc = acc;
	c->nfds++;
}

void op_close(struct ctx *c)
{
	int i;

	op_count[OP_CLOSE]++;
	if (!c->nfds)
		return;
	i = below(&c->rng, c->nfds);
	CALL(c, "close(%d)", c->fds[i].fd);
	expect(c, close(c->fds[i].fd) ? errno : 0, 0);
	c->fds[i] = c->fds[--c->nfds];
}

void op_dup(struct ctx *c)
{
	int i, fd;

	op_count[OP_DUP]++;
	if (!c->nfds || c->nfds == MAXFD)
		return;
	i = below(&c->rng, c->nfds);
	CALL(c, "fcntl(%d, F_DUPFD_CLOEXEC)", c->fds[i].fd);
	fd = fcntl(c->fds[i].fd, F_DUPFD_CLOEXEC, 0);
	if (!expect(c, fd < 0 ? errno : 0, 0))
		return;
	c->fds[c->nfds].fd = fd;
	c->fds[c->nfds].acc = c->fds[i].acc;
	c->nfds++;
}

struct fdent *pick_fd(struct ctx *c)
{
	return c->nfds ? &c->fds[below(&c->rng, c->nfds)] : NULL;
}

void op_ioctl_good(struct ctx *c)
{
	struct fdent *f = pick_fd(c);
	int info = chance(&c->rng, 40), err;
	size_t size = info ? sizeof(struct perfclock_info) : sizeof(struct perfclock_time);
	char *p;

	op_count[OP_IOCTL]++;
	if (!f)
		return;
	/* Misaligned, at the end of the page before the guard, or anywhere. */
	switch (below(&c->rng, 3)) {
	case 0: p = c->scratch + page_size - size; break;
	case 1: p = c->scratch + 1 + below(&c->rng, 7); break;
	default: p = c->scratch + below(&c->rng, page_size - size); break;
	}
	memset(p, 0xa5, size);
	CALL(c, "ioctl(%d, %s, %p)", f->fd, info ? "GET_INFO" : "GET_TIME", (void *)p);
	err = do_ioctl(f->fd, info ? PERFCLOCK_IOC_GET_INFO : PERFCLOCK_IOC_GET_TIME, p);
	if (!expect(c, err, f->acc < 0 ? EBADF : 0) || err)
		return;
	if (info) {
		struct perfclock_info in;

		memcpy(&in, p, sizeof(in));
		check_info(c, &in);
	} else {
		struct perfclock_time t;

		memcpy(&t, p, sizeof(t));
		check_time(c, &t);
	}
}

void op_ioctl_bad(struct ctx *c)
{
	struct fdent *f = pick_fd(c);
	int info = chance(&c->rng, 50);
	size_t size = info ? sizeof(struct perfclock_info) : sizeof(struct perfclock_time);
	char what[64];
	void *p;

	op_count[OP_IOCTL_BAD]++;
	if (!f)
		return;
	p = bad_pointer(c, size, what, sizeof(what));
	CALL(c, "ioctl(%d, %s, %p [%s])", f->fd, info ? "GET_INFO" : "GET_TIME", p, what);
	expect(c, do_ioctl(f->fd, info ? PERFCLOCK_IOC_GET_INFO : PERFCLOCK_IOC_GET_TIME, p),
	       f->acc < 0 ? EBADF : EFAULT);
}

/* Commands the VFS answers before the driver sees them (fs/ioctl.c). */
int vfs_cmd(unsigned int cmd)
{
	unsigned int type = _IOC_TYPE(cmd);

	return type == 'T' || type == 'X' || type == 'f' || type == 0x94 ||
	       cmd == 2 /* FIGETBSZ */ || cmd == 1 /* FIBMAP */;
}

void ioctl_other(struct ctx *c, int fd, int acc, unsigned int cmd)
{
	char what[64];
	void *arg;

	if (cmd == PERFCLOCK_IOC_GET_TIME || cmd == PERFCLOCK_IOC_GET_INFO ||
	    cmd == PERFCLOCK_IOC_GET_HORIZON || vfs_cmd(cmd))
		return;
	if (chance(&c->rng, 50)) {
		arg = c->scratch + below(&c->rng, page_size / 2);
		snprintf(what, sizeof(what), "valid");
	} else {
		arg = bad_pointer(c, 16, what, sizeof(what));
	}
	CALL(c, "ioctl(%d, %#x [dir %u nr %u size %u], %p [%s])", fd, cmd, _IOC_DIR(cmd),
	     _IOC_NR(cmd), _IOC_SIZE(cmd), arg, what);
	expect(c, do_ioctl(fd, cmd, arg), acc < 0 ? EBADF : ENOTTY);
}

void op_ioctl_other(struct ctx *c)
{
	struct fdent *f = pick_fd(c);
	unsigned int cmd;

	op_count[OP_IOCTL_OTHER]++;
	if (!f)
		return;
	switch (below(&c->rng, 4)) {
	case 0:	/* anything */
		cmd = (unsigned int)rnd(&c->rng);
		break;
	case 1:	/* our magic, any direction, number and size */
		cmd = _IOC(below(&c->rng, 4), PERFCLOCK_IOC_MAGIC, below(&c->rng, 256),
			   below(&c->rng, 1 << 14));
		break;
	default: /* one field away from a real command */
		cmd = chance(&c->rng, 50) ? PERFCLOCK_IOC_GET_TIME : PERFCLOCK_IOC_GET_INFO;
		switch (below(&c->rng, 4)) {
		case 0: cmd ^= 1u << below(&c->rng, 32); break;
		case 1: cmd = (cmd & ~(_IOC_SIZEMASK << _IOC_SIZESHIFT)) |
			      (below(&c->rng, 1 << 14) << _IOC_SIZESHIFT); break;
		case 2: cmd = (cmd & ~(_IOC_DIRMASK << _IOC_DIRSHIFT)) |
			      (below(&c->rng, 4) << _IOC_DIRSHIFT); break;
		default: cmd = (cmd & ~0xffu) | below(&c->rng, 256); break;
		}
	}
	ioctl_other(c, f->fd, f->acc, cmd);
}

void op_rw(struct ctx *c)
{
	struct fdent *f = pick_fd(c);
	char buf[64];
	int wr = chance(&c->rng, 50), want;
	ssize_t n;

	op_count[OP_RW]++;
	if (!f)
		return;
	/* No .read/.write: EBADF without the access mode, else EINVAL. */
	if (f->acc < 0)
		want = EBADF;
	else if (wr)
		want = f->acc == O_RDONLY ? EBADF : EINVAL;
	else
		want = f->acc == O_WRONLY ? EBADF : EINVAL;
	CALL(c, "%s(%d, buf, %d)", wr ? "write" : "read", f->fd, 8);
	n = wr ? write(f->fd, buf, 8) : read(f->fd, buf, 8);
	expect(c, n < 0 ? errno : 0, want);
}

void arena_fill(int slot)
{
	void *p = mmap((void *)(arena + slot * page_size), page_size, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED) {
		perror("perfclock_fuzz: arena refill");
		exit(2);
	}
	arena_used[slot] = 0;
}

/* Forget a tracked mapping that the kernel unmapped or replaced. */
void drop_map(struct ctx *c, int i, int refill)
{
	if (c->maps[i].slot >= 0 && refill)
		arena_fill(c->maps[i].slot);
	c->maps[i] = c->maps[--c->nmaps];
}

void drop_slot(struct ctx *c, int slot)
{
	int i;

	for (i = 0; i < c->nmaps; i++)
		if (c->maps[i].slot == slot) {
			drop_map(c, i, 0);
			return;
		}
}

void op_mmap(struct ctx *c)
{
	static const int types[] = { MAP_SHARED, MAP_SHARED, MAP_PRIVATE, MAP_PRIVATE,
				     MAP_SHARED_VALIDATE, 0, 0x4, 0xf };
	static const int extras[] = { MAP_POPULATE, MAP_NORESERVE, MAP_LOCKED, MAP_NONBLOCK,
				      MAP_HUGETLB, MAP_SYNC, MAP_GROWSDOWN, MAP_32BIT,
				      MAP_STACK };
	struct fdent *f = pick_fd(c);
	uint64_t len, off;
	int prot, flags, type, want, slot = -1, i;
	void *hint = NULL, *p;

	op_count[OP_MMAP]++;
	if (!f || c->nmaps == MAXMAP)
		return;
	switch (below(&c->rng, 8)) {
	case 0: len = 0; break;
	case 1: len = 1 + below(&c->rng, page_size - 1); break;	/* rounds up to a page */
	case 2: len = page_size + 1 + below(&c->rng, 3 * page_size); break;
	case 3: len = -(uint64_t)below(&c->rng, page_size); break;	/* overflows */
	case 4: len = 1ULL << (40 + below(&c->rng, 20)); break;
	default: len = page_size; break;
	}
	switch (below(&c->rng, 8)) {
	case 0: off = 1 + below(&c->rng, page_size - 1); break;
	case 1: off = page_size * (1 + below(&c->rng, 4)); break;
	case 2: off = (uint64_t)-page_size; break;
	case 3: off = 1ULL << 62; break;
	default: off = 0; break;
	}
	prot = PROT_READ;
	if (chance(&c->rng, 15)) prot = PROT_NONE;
	if (chance(&c->rng, 20)) prot |= PROT_WRITE;
	if (chance(&c->rng, 15)) prot |= PROT_EXEC;
	type = types[below(&c->rng, sizeof(types) / sizeof(types[0]))];
	flags = type;
	for (i = 0; i < (int)(sizeof(extras) / sizeof(extras[0])); i++)
		if (chance(&c->rng, 5))
			flags |= extras[i];
	/* Unprivileged, MAP_LOCKED's answer is RLIMIT_MEMLOCK's, not ours. */
	if (c->unpriv)
		flags &= ~MAP_LOCKED;
	if (c->single && chance(&c->rng, 30)) {
		/* Never more than the slot: MAP_FIXED would clobber what follows. */
		if (len > (uint64_t)page_size)
			len = page_size;
		slot = below(&c->rng, ARENA_SLOTS);
		hint = (void *)(arena + slot * page_size);
		flags |= chance(&c->rng, 20) ? MAP_FIXED_NOREPLACE : MAP_FIXED;
	}

	/* The expected result, in the order the kernel checks (6.1). */
	if (off & (page_size - 1))
		want = EINVAL;				/* sys_mmap */
	else if (f->acc < 0)
		want = EBADF;				/* fget() refuses O_PATH */
	else if (flags & MAP_HUGETLB)
		want = EINVAL;				/* not a hugetlbfs file */
	else if (!len)
		want = EINVAL;				/* do_mmap */
	else if (!((len + page_size - 1) & ~(uint64_t)(page_size - 1)))
		want = ENOMEM;
	else if ((off / page_size) + ((len + page_size - 1) / page_size) < off / page_size)
		want = EOVERFLOW;
	else if (len > (1ULL << 47) - page_size ||
		 ((flags & MAP_32BIT) && !(flags & MAP_FIXED) && len > (1ULL << 30)))
		want = ENOMEM;				/* get_unmapped_area */
	else if ((flags & MAP_FIXED_NOREPLACE))
		want = EEXIST;				/* the arena is always mapped */
	else if (off > (uint64_t)INT64_MAX - ((len + page_size - 1) & ~(uint64_t)(page_size - 1)))
		want = EOVERFLOW;			/* file_mmap_ok */
	else if (type == MAP_SHARED_VALIDATE && (flags & ~LEGACY_MAP_MASK))
		want = EOPNOTSUPP;
	else if ((type == MAP_SHARED || type == MAP_SHARED_VALIDATE) && (prot & PROT_WRITE) &&
		 f->acc == O_RDONLY)
		want = EACCES;
	else if (type != MAP_SHARED && type != MAP_SHARED_VALIDATE && type != MAP_PRIVATE)
		want = EINVAL;
	else if (f->acc == O_WRONLY)
		want = EACCES;
	else if (flags & MAP_GROWSDOWN)
		want = EINVAL;
	else if (type == MAP_PRIVATE && (prot & PROT_WRITE) && !(flags & MAP_NORESERVE) &&
		 len >= (1ULL << 40))
		want = ENOMEM;				/* mmap_region: commit accounting */
	else if (off)
		want = EINVAL;				/* perfclock_miscdev_mmap: pgoff */
	else if (len > (uint64_t)page_size)
		want = EINVAL;				/* perfclock_miscdev_mmap: one page */
	else if (prot & (PROT_WRITE | PROT_EXEC))
		want = EPERM;				/* perfclock_miscdev_mmap: read-only */
	else
		want = 0;

	CALL(c, "mmap(%p, %#" PRIx64 ", %#x, %#x, %d, %#" PRIx64 ")", hint, len, prot, flags,
	     f->fd, off);
	p = mmap(hint, len, prot, flags, f->fd, off);
	if (slot >= 0 && !(flags & MAP_FIXED_NOREPLACE)) {
		/* MAP_FIXED unmapped the slot first, whatever the outcome. */
		drop_slot(c, slot);
		if (p == MAP_FAILED)
			arena_fill(slot);
	}
	if (!expect(c, p == MAP_FAILED ? errno : 0, want)) {
		if (p != MAP_FAILED && slot < 0)
			munmap(p, len);
		return;
	}
	if (p == MAP_FAILED)
		return;
	if (slot >= 0 && p != hint) {
		violation(c, "MAP_FIXED mapping at %p", p);
		return;
	}
	c->maps[c->nmaps] = (struct mapent){ .addr = (uintptr_t)p, .prot = prot,
		.shared = type != MAP_PRIVATE, .slot = slot };
	if (slot >= 0)
		arena_used[slot] = 1;
	c->nmaps++;
}

void op_munmap(struct ctx *c)
{
	int i, kind = below(&c->rng, 6), want = 0;
	uintptr_t addr;
	size_t len;

	op_count[OP_MUNMAP]++;
	if (!c->nmaps)
		return;
	i = below(&c->rng, c->nmaps);
	addr = c->maps[i].addr;
	len = page_size;
	if (kind == 0) { addr += 1 + below(&c->rng, page_size - 1); want = EINVAL; }
	else if (kind == 1) { len = 0; want = EINVAL; }
	else if (kind == 2) len = 1 + below(&c->rng, page_size - 1);	/* whole page */
	CALL(c, "munmap(%#lx, %#zx)", (unsigned long)addr, len);
	if (!expect(c, munmap((void *)addr, len) ? errno : 0, want) || want)
		return;
	drop_map(c, i, 1);
}

void op_mprotect(struct ctx *c)
{
	static const int prots[] = { PROT_NONE, PROT_READ, PROT_READ, PROT_WRITE,
		PROT_READ | PROT_WRITE, PROT_EXEC, PROT_READ | PROT_EXEC, PROT_SEM | PROT_READ,
		PROT_GROWSDOWN | PROT_READ, 0x100 | PROT_READ };
	struct mapent *m;
	int prot, want;
	uintptr_t addr;

	op_count[OP_MPROTECT]++;
	if (!c->nmaps)
		return;
	m = &c->maps[below(&c->rng, c->nmaps)];
	prot = prots[below(&c->rng, sizeof(prots) / sizeof(prots[0]))];
	addr = m->addr;
	if (chance(&c->rng, 5))
		addr += 8;
	if (addr != m->addr || (prot & ~(PROT_READ | PROT_WRITE | PROT_EXEC | PROT_SEM)))
		want = EINVAL;	/* misaligned, GROWSDOWN on a plain VMA, unknown bits */
	else if (prot & (PROT_WRITE | PROT_EXEC))
		want = EACCES;	/* VM_MAYWRITE and VM_MAYEXEC are gone */
	else
		want = 0;
	CALL(c, "mprotect(%#lx, %#lx, %#x)", (unsigned long)addr, page_size, prot);
	if (expect(c, mprotect((void *)addr, page_size, prot) ? errno : 0, want) && !want)
		m->prot = prot & (PROT_READ | PROT_WRITE | PROT_EXEC);
}

void op_mremap(struct ctx *c)
{
	int i, kind, want, slot = -1;
	unsigned long old_len = page_size, new_len = page_size, flags = 0;
	void *new_addr = NULL, *p;
	struct mapent *m;

	op_count[OP_MREMAP]++;
	if (!c->nmaps)
		return;
	i = below(&c->rng, c->nmaps);
	m = &c->maps[i];
	kind = below(&c->rng, c->single ? 8 : 7);
	switch (kind) {
	case 0: new_len = 2 * page_size; want = EFAULT; break;	/* VM_DONTEXPAND */
	case 1: new_len = page_size * (2 + below(&c->rng, 8)); flags = MREMAP_MAYMOVE; want = EFAULT; break;
	case 2: new_len = 1 + below(&c->rng, page_size - 1); want = 0; break;	/* same size */
	case 3: new_len = 0; want = EINVAL; break;
	case 4: flags = MREMAP_MAYMOVE | MREMAP_DONTUNMAP; want = EINVAL; break;
	case 5:	/* duplicate a shared mapping: old_len 0 grows it */
		if (!m->shared)
			return;
		old_len = 0; flags = MREMAP_MAYMOVE; want = EFAULT; break;
	case 6: flags = 0x80; want = EINVAL; break;	/* unknown flag */
	default:	/* move it into the arena */
		slot = below(&c->rng, ARENA_SLOTS);
		new_addr = (void *)(arena + slot * page_size);
		if ((uintptr_t)new_addr == m->addr)
			return;
		flags = MREMAP_MAYMOVE | MREMAP_FIXED;
		want = 0;
		break;
	}
	CALL(c, "mremap(%#lx, %#lx, %#lx, %#lx, %p)", (unsigned long)m->addr, old_len, new_len,
	     flags, new_addr);
	p = mremap((void *)m->addr, old_len, new_len, flags, new_addr);
	if (!expect(c, p == MAP_FAILED ? errno : 0, want) || want)
		return;
	if (slot < 0) {
		if ((uintptr_t)p != m->addr)
			violation(c, "same-size mremap moved the mapping to %p", p);
		return;
	}
	if (p != new_addr) {
		violation(c, "MREMAP_FIXED returned %p", p);
		return;
	}
	/* The slot's old occupant (a filler or one of ours) is gone; ours moved. */
	{
		struct mapent moved = *m;

		drop_map(c, i, 1);	/* refills the old slot, if any */
		drop_slot(c, slot);
		moved.addr = (uintptr_t)p;
		moved.slot = slot;
		arena_used[slot] = 1;
		c->maps[c->nmaps++] = moved;
	}
}

void op_madvise(struct ctx *c)
{
	static const int advs[] = { MADV_NORMAL, MADV_RANDOM, MADV_SEQUENTIAL, MADV_WILLNEED,
		MADV_DONTNEED, MADV_FREE, MADV_REMOVE, MADV_DONTFORK, MADV_DOFORK,
		MADV_MERGEABLE, MADV_UNMERGEABLE, MADV_HUGEPAGE, MADV_NOHUGEPAGE,
		MADV_DONTDUMP, MADV_DODUMP, MADV_WIPEONFORK, MADV_KEEPONFORK, 20 /* COLD */,
		21 /* PAGEOUT */, 22 /* POPULATE_READ */, 23 /* POPULATE_WRITE */,
		24 /* DONTNEED_LOCKED */, 25 /* COLLAPSE */, 77, -1 };
	struct mapent *m;
	int adv, want;

	op_count[OP_MADVISE]++;
	if (!c->nmaps)
		return;
	m = &c->maps[below(&c->rng, c->nmaps)];
	adv = advs[below(&c->rng, sizeof(advs) / sizeof(advs[0]))];
	/* DONTNEED zaps the PTE; the module's ->fault puts the page back. */
	switch (adv) {
	case MADV_NORMAL: case MADV_RANDOM: case MADV_SEQUENTIAL: case MADV_WILLNEED:
	case MADV_DONTNEED: case 24: case MADV_DONTFORK: case MADV_DOFORK:
	case MADV_KEEPONFORK: case MADV_DONTDUMP: case 20: case 21:
		want = 0;
		break;
	case 22:	/* POPULATE_READ: faults the page in (->fault refills a zap) */
		want = (m->prot & PROT_READ) ? 0 : EINVAL;
		break;
	case 23:	/* POPULATE_WRITE on a VMA that can never be writable */
		want = EINVAL;
		break;
	case MADV_MERGEABLE: case MADV_UNMERGEABLE:
		/* With KSM: silently not merged (VM_MIXEDMAP, VM_DONTEXPAND). */
		want = have_ksm ? 0 : EINVAL;
		break;
	case MADV_HUGEPAGE: case MADV_NOHUGEPAGE:
		/* With THP: only a VMA flag. */
		want = have_thp ? 0 : EINVAL;
		break;
	case MADV_REMOVE:	/* needs a shared writable mapping */
		want = EACCES;
		break;
	case MADV_DODUMP:	/* refused on VM_MIXEDMAP/VM_DONTEXPAND (VM_SPECIAL) */
	case MADV_WIPEONFORK:	/* file-backed */
	case MADV_FREE:		/* not anonymous */
	default:		/* COLLAPSE (no THP VMA), unknown advice */
		want = EINVAL;
		break;
	}
	CALL(c, "madvise(%#lx, %#lx, %d)", (unsigned long)m->addr, page_size, adv);
	if (!expect(c, madvise((void *)m->addr, page_size, adv) ? errno : 0, want))
		return;
	if (adv == MADV_DONTNEED || adv == 24)
		m->zapped = 1;
	if (adv == MADV_DONTFORK)
		m->dontfork = 1;
	if (adv == MADV_DOFORK)
		m->dontfork = 0;
}

void op_page(struct ctx *c)
{
	sigjmp_buf jb;
	struct mapent *m;
	int sig;

	op_count[OP_PAGE]++;
	if (c->shared && (!c->nmaps || chance(&c->rng, 30))) {
		CALL(c, "read the shared page at %p", (const void *)c->shared);
		check_page(c, c->shared);
		return;
	}
	if (!c->nmaps)
		return;
	m = &c->maps[below(&c->rng, c->nmaps)];
	if (!(m->prot & PROT_READ))
		return;
	CALL(c, "read the page at %#lx%s", (unsigned long)m->addr, m->zapped ? " (zapped)" : "");
	fault_jmp = &jb;
	sig = sigsetjmp(jb, 1);
	if (!sig) {
		check_page(c, (const struct perfclock_page *)m->addr);
		fault_jmp = NULL;
		if (m->zapped) {
			m->zapped = 0;	/* refaulted, and the page checked out */
			atomic_fetch_add(&n_refault_after_dontneed, 1);
		}
		return;
	}
	fault_jmp = NULL;
	if (m->zapped && sig == SIGBUS)
		atomic_fetch_add(&n_sigbus_after_dontneed, 1);
	violation(c, "signal %d reading a readable clock page%s", sig,
		  m->zapped ? " after MADV_DONTNEED (->fault must refill it)" : "");
}

/*
 * GET_HORIZON: valid requests for every clock it serves, and requests one
 * field away (a clockid it does not serve, an unknown flag, a reserved
 * field set), on good and bad pointers, with garbage in the out-only
 * fields (generation is "ignored on input"). A valid request waits for a
 * grace period (WHO ARMS WHAT in perfclock_ioctl.h): a normal one is
 * slow, so most valid requests are EXPEDITED, which is quick for the
 * privileged and EPERM for the others.
 */
void op_horizon(struct ctx *c)
{
	static const int32_t good[] = { PERFCLOCK_HORIZON_PERF_CLOCK,
		PERFCLOCK_HORIZON_PERF_CLOCK, CLOCK_REALTIME, CLOCK_MONOTONIC,
		CLOCK_MONOTONIC_RAW, CLOCK_BOOTTIME, CLOCK_TAI };
	static const int32_t bad[] = { -2, CLOCK_PROCESS_CPUTIME_ID,
		CLOCK_THREAD_CPUTIME_ID, CLOCK_REALTIME_COARSE, CLOCK_MONOTONIC_COARSE,
		8 /* REALTIME_ALARM */, 9 /* BOOTTIME_ALARM */, 10, 12, 15,
		PERFCLOCK_HORIZON_CLOCKIDS, 31, 32, 64, INT32_MIN, INT32_MAX };
	size_t size = sizeof(struct perfclock_horizon);
	struct fdent *f = pick_fd(c);
	struct perfclock_horizon in, h;
	struct perfclock_info info;
	struct timespec before[2];
	char what[64] = "valid";
	int want, err;
	char *p;

	op_count[OP_HORIZON]++;
	if (!f)
		return;
	memset(&in, 0, sizeof(in));
	in.clockid = good[below(&c->rng, sizeof(good) / sizeof(good[0]))];
	if (chance(&c->rng, 60))
		in.flags = PERFCLOCK_HORIZON_EXPEDITED;
	in.ns = rnd(&c->rng);
	in.wait_ns = rnd(&c->rng);
	in.generation = chance(&c->rng, 50) ? (uint32_t)rnd(&c->rng) : 0;
	switch (below(&c->rng, 10)) {
	case 0: case 1:
		in.clockid = bad[below(&c->rng, sizeof(bad) / sizeof(bad[0]))];
		break;
	case 2:
		in.flags |= 1u << (1 + below(&c->rng, 31));
		break;
	case 3:
		in.__reserved0 = 1u << below(&c->rng, 32);
		break;
	case 4:
		in.reserved[0] = 1ULL << below(&c->rng, 64);
		break;
	}
	/* Few waits for a normal grace period: tens of ms in the guest. */
	if (!horizon_want(c, &in) && !(in.flags & PERFCLOCK_HORIZON_EXPEDITED) &&
	    !chance(&c->rng, 25))
		in.flags |= PERFCLOCK_HORIZON_EXPEDITED;
	want = horizon_want(c, &in);
	if (chance(&c->rng, 15)) {
		p = bad_pointer(c, size, what, sizeof(what));
		/* The clock page's words would be read as a request. */
		if (strstr(what, "clock page"))
			return;
		/*
		 * Nothing readable, or (the read-only page, zeros: CLOCK_REALTIME,
		 * valid) nothing writable: EFAULT, before or after the wait.
		 */
		want = EFAULT;
	} else {
		switch (below(&c->rng, 3)) {
		case 0: p = c->scratch + page_size - size; break;
		case 1: p = c->scratch + 1 + below(&c->rng, 7); break;
		default: p = c->scratch + below(&c->rng, page_size - size); break;
		}
		memcpy(p, &in, size);
	}
	if (f->acc < 0)
		want = EBADF;
	memset(before, 0, sizeof(before));
	if (in.clockid >= 0 && !horizon_want(c, &in))
		clock_gettime(in.clockid, &before[0]);
	clock_gettime(CLOCK_MONOTONIC, &before[1]);
	CALL(c, "ioctl(%d, GET_HORIZON, %p [%s] {clockid %d, flags %#x, __reserved0 %#x, reserved %#" PRIx64 "})%s",
	     f->fd, (void *)p, what, in.clockid, in.flags, in.__reserved0,
	     (uint64_t)in.reserved[0], c->unpriv ? " as uid 65534" : "");
	err = do_ioctl(f->fd, PERFCLOCK_IOC_GET_HORIZON, p);
	/*
	 * perf_clock() refused (PERFCLOCK_INFO_PERF_HORIZON_REFUSED), or a
	 * sched_clock reset not over in 10 s: EOPNOTSUPP, which only an
	 * unstable clock can give.
	 */
	if (!want && err == EOPNOTSUPP && in.clockid == PERFCLOCK_HORIZON_PERF_CLOCK &&
	    !do_ioctl(f->fd, PERFCLOCK_IOC_GET_INFO, &info) &&
	    ((info.flags & PERFCLOCK_INFO_PERF_HORIZON_REFUSED) ||
	     !(info.flags & PERFCLOCK_INFO_SCHED_CLOCK_STABLE)))
		want = EOPNOTSUPP;
	if (!expect(c, err, want) || err)
		return;
	memcpy(&h, p, size);
	check_horizon(c, &in, &h, before);
}
