// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * demo_flush: error exits. die() for an error (exit 1), die_usage() for a
 * usage error (exit 2, pointing at --help). Both say "demo_flush: " first
 * and end the line, so every message the tool promises reads alike.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "demo.h"

void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("demo_flush: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void die_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("demo_flush: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see --help)\n", stderr);
	exit(2);
}
