/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * demo_flush: tracepoints through tracefs — find a tracepoint's id, parse
 * its format file, and print a raw sample's fields the way perf script
 * does ("name=value ..."). A tid -> comm cache (struct tp_comms, owned
 * by the caller) is fed by the *_comm / *_pid field pairs it sees
 * (sched_switch's prev/next, sched_wakeup's).
 */
#ifndef DEMO_TP_H
#define DEMO_TP_H

#include <stddef.h>
#include <stdint.h>

#define TP_MAX_FIELDS	32

struct tp_comms;

struct tp_field {
	char name[64];
	uint32_t offset, size;
	int is_signed;
	int is_string;		/* char name[N] */
	int is_dyn;		/* __data_loc: u32 (len << 16 | offset) */
};

struct tp_format {
	char system[64], name[128];
	uint64_t id;
	int nr_fields;
	struct tp_field fields[TP_MAX_FIELDS];	/* common_* skipped */
};

/* The tracefs mount point, or NULL when tracefs is not mounted. */
const char *tp_tracefs(void);

/*
 * Load "system:name". 0 on success; -ENOENT unknown tracepoint, -EACCES
 * no permission to read tracefs, -EINVAL malformed name, other -errno.
 */
int tp_load(const char *tracefs, const char *spec, struct tp_format *fmt);

/* The comm cache: NULL with errno on failure; tp_comms_free(NULL) is a no-op. */
struct tp_comms *tp_comms_new(void);
void tp_comms_free(struct tp_comms *c);

/* Feed the comm cache from a raw record of this tracepoint. */
void tp_learn_comms(struct tp_comms *c, const struct tp_format *fmt,
		    const void *raw, size_t len);

/*
 * comm of tid: from the cache, else /proc (cached then). Never NULL; the
 * string is the cache's, valid until a later call reuses its slot.
 */
const char *tp_comm(struct tp_comms *c, uint32_t pid, uint32_t tid);

/* Format the fields of a raw record into buf ("a=1 b=foo ..."). */
void tp_format_fields(const struct tp_format *fmt, const void *raw,
		      size_t len, char *buf, size_t bufsz);

#endif /* DEMO_TP_H */
