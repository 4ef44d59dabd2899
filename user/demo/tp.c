// SPDX-License-Identifier: LGPL-2.1-or-later
/* demo_flush: tracefs tracepoints (see tp.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "tp.h"

#define TRACEFS_MAGIC	0x74726163

const char *tp_tracefs(void)
{
	static const char *const dirs[] = {
		"/sys/kernel/tracing", "/sys/kernel/debug/tracing",
	};
	struct statfs sfs;
	size_t i;

	/*
	 * The mount point itself must be tracefs: an unmounted
	 * /sys/kernel/tracing is an empty sysfs directory.
	 */
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (!statfs(dirs[i], &sfs) &&
		    (unsigned long)sfs.f_type == TRACEFS_MAGIC)
			return dirs[i];
	return NULL;
}

static int read_file(const char *path, char *buf, size_t bufsz)
{
	ssize_t n;
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (len + 1 < bufsz && (n = read(fd, buf + len, bufsz - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	return (int)len;
}

static void parse_field(struct tp_format *fmt, const char *line)
{
	const char *decl = strstr(line, "field:"), *semi, *p;
	unsigned int off, size;
	int sgn = 0;
	struct tp_field *f;
	char type[128];
	size_t n;

	if (!decl || fmt->nr_fields >= TP_MAX_FIELDS)
		return;
	decl += 6;
	semi = strchr(decl, ';');
	p = strstr(line, "offset:");
	if (!semi || !p || sscanf(p, "offset:%u;\tsize:%u;\tsigned:%d", &off,
				  &size, &sgn) < 2)
		return;
	n = (size_t)(semi - decl);
	if (n >= sizeof(type))
		return;
	memcpy(type, decl, n);
	type[n] = '\0';
	/* The name is the last word, minus an array suffix. */
	p = strrchr(type, ' ');
	if (!p)
		return;
	f = &fmt->fields[fmt->nr_fields];
	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "%s", p + 1);
	if (!strncmp(f->name, "common_", 7))
		return;
	f->is_string = strchr(f->name, '[') && !strncmp(type, "char ", 5);
	f->is_dyn = !strncmp(type, "__data_loc", 10);
	*strchrnul(f->name, '[') = '\0';
	f->offset = off;
	f->size = size;
	f->is_signed = sgn;
	fmt->nr_fields++;
}

int tp_load(const char *tracefs, const char *spec, struct tp_format *fmt)
{
	char path[512], buf[16384], *line, *save;
	const char *colon = strchr(spec, ':');
	int n;

	memset(fmt, 0, sizeof(*fmt));
	if (!colon || colon == spec || !colon[1] ||
	    (size_t)(colon - spec) >= sizeof(fmt->system) ||
	    strlen(colon + 1) >= sizeof(fmt->name) || strchr(spec, '/') ||
	    strstr(spec, ".."))
		return -EINVAL;
	memcpy(fmt->system, spec, (size_t)(colon - spec));
	snprintf(fmt->name, sizeof(fmt->name), "%s", colon + 1);

	snprintf(path, sizeof(path), "%s/events/%s/%s/id", tracefs,
		 fmt->system, fmt->name);
	n = read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	fmt->id = strtoull(buf, NULL, 10);

	snprintf(path, sizeof(path), "%s/events/%s/%s/format", tracefs,
		 fmt->system, fmt->name);
	n = read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		parse_field(fmt, line);
	return 0;
}

/* ---- comm cache: open addressing, tid-keyed, overwrite on collision ---- */

#define COMM_SLOTS	65536u

struct comm_slot {
	uint32_t tid;
	uint32_t used;
	char comm[16];
};

struct tp_comms {
	struct comm_slot slot[COMM_SLOTS];
};

struct tp_comms *tp_comms_new(void)
{
	/* 1.5 MiB, zeroed: calloc maps fresh pages, touched only when used. */
	return calloc(1, sizeof(struct tp_comms));
}

void tp_comms_free(struct tp_comms *c)
{
	free(c);
}

static struct comm_slot *comm_slot(struct tp_comms *c, uint32_t tid)
{
	return &c->slot[(tid * 2654435761u) % COMM_SLOTS];
}

static void comm_set(struct tp_comms *c, uint32_t tid, const char *comm,
		     size_t len)
{
	struct comm_slot *s = comm_slot(c, tid);

	if (len >= sizeof(s->comm))
		len = sizeof(s->comm) - 1;
	s->tid = tid;
	s->used = 1;
	memcpy(s->comm, comm, len);
	s->comm[len] = '\0';
}

static const struct tp_field *find_field(const struct tp_format *fmt,
					 const char *name, size_t len)
{
	int i;

	for (i = 0; i < fmt->nr_fields; i++)
		if (!strncmp(fmt->fields[i].name, name, len) &&
		    !fmt->fields[i].name[len])
			return &fmt->fields[i];
	return NULL;
}

void tp_learn_comms(struct tp_comms *c, const struct tp_format *fmt,
		    const void *raw, size_t len)
{
	const unsigned char *r = raw;
	char pidname[80];
	int i;

	for (i = 0; i < fmt->nr_fields; i++) {
		const struct tp_field *f = &fmt->fields[i], *pf;
		size_t plen = strlen(f->name);
		int32_t pid;

		/* "<prefix>comm" with a matching "<prefix>pid" */
		if (!f->is_string || plen < 4 ||
		    strcmp(f->name + plen - 4, "comm"))
			continue;
		snprintf(pidname, sizeof(pidname), "%.*spid", (int)(plen - 4),
			 f->name);
		pf = find_field(fmt, pidname, strlen(pidname));
		if (!pf || pf->size != 4 || pf->offset + 4 > len ||
		    f->offset + f->size > len)
			continue;
		memcpy(&pid, r + pf->offset, 4);
		if (pid > 0)
			comm_set(c, (uint32_t)pid, (const char *)r + f->offset,
				 strnlen((const char *)r + f->offset, f->size));
	}
}

const char *tp_comm(struct tp_comms *c, uint32_t pid, uint32_t tid)
{
	struct comm_slot *s = comm_slot(c, tid);
	char path[64], buf[64];
	int n;

	if (s->used && s->tid == tid)
		return s->comm;
	if (!tid)
		return "swapper";
	snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", pid, tid);
	n = read_file(path, buf, sizeof(buf));
	if (n <= 0)
		return ":unknown:";
	buf[strcspn(buf, "\n")] = '\0';
	comm_set(c, tid, buf, strlen(buf));
	return s->comm;
}

static int64_t load_int(const unsigned char *p, uint32_t size, int sgn)
{
	switch (size) {
	case 1: {
		uint8_t v;

		memcpy(&v, p, 1);
		return sgn ? (int64_t)(int8_t)v : (int64_t)v;
	}
	case 2: {
		uint16_t v;

		memcpy(&v, p, 2);
		return sgn ? (int64_t)(int16_t)v : (int64_t)v;
	}
	case 4: {
		uint32_t v;

		memcpy(&v, p, 4);
		return sgn ? (int64_t)(int32_t)v : (int64_t)v;
	}
	default: {
		int64_t v;

		memcpy(&v, p, 8);
		return v;
	}
	}
}

void tp_format_fields(const struct tp_format *fmt, const void *raw,
		      size_t len, char *buf, size_t bufsz)
{
	const unsigned char *r = raw;
	size_t used = 0;
	int i, n;

	buf[0] = '\0';
	for (i = 0; i < fmt->nr_fields && used < bufsz; i++) {
		const struct tp_field *f = &fmt->fields[i];
		const char *sep = i ? " " : "";

		if (f->offset + f->size > len)
			break;
		if (f->is_string) {
			n = snprintf(buf + used, bufsz - used, "%s%s=%.*s", sep,
				     f->name, (int)strnlen((const char *)r + f->offset, f->size),
				     (const char *)r + f->offset);
		} else if (f->is_dyn && f->size == 4) {
			uint32_t loc;
			uint32_t off, l;

			memcpy(&loc, r + f->offset, 4);
			off = loc & 0xffff;
			l = loc >> 16;
			if (off > len || l > len - off)
				l = 0;
			n = snprintf(buf + used, bufsz - used, "%s%s=%.*s", sep,
				     f->name, (int)strnlen((const char *)r + off, l),
				     (const char *)r + off);
		} else if (f->size == 1 || f->size == 2 || f->size == 4 ||
			   f->size == 8) {
			int64_t v = load_int(r + f->offset, f->size, f->is_signed);

			if (f->is_signed)
				n = snprintf(buf + used, bufsz - used, "%s%s=%lld",
					     sep, f->name, (long long)v);
			else
				n = snprintf(buf + used, bufsz - used, "%s%s=%llu",
					     sep, f->name, (unsigned long long)v);
		} else {
			n = snprintf(buf + used, bufsz - used, "%s%s=[%u bytes]",
				     sep, f->name, f->size);
		}
		if (n < 0)
			break;
		used += (size_t)n;
	}
}
