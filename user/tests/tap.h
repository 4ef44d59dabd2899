/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Minimal TAP output for the host tests. Results are "ok - ..." or
 * "not ok - ..."; tests/check.sh numbers them and writes the summary.
 * Anything else a test prints starts with "# ".
 */
#ifndef PERFCLOCK_TAP_H
#define PERFCLOCK_TAP_H

#include <stdarg.h>
#include <stdio.h>

/*
 * One pair of counters per program, even one built from several files
 * (test_unit, test_device): weak definitions, merged by the linker.
 */
__attribute__((weak)) int tap_passed, tap_failed;

__attribute__((format(printf, 2, 3), unused))
static int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s - ", cond ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (cond)
		tap_passed++;
	else
		tap_failed++;
	return cond;
}

__attribute__((format(printf, 1, 2), unused))
static void tap_skip(const char *fmt, ...)
{
	va_list ap;

	printf("ok - ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	tap_passed++;
}

__attribute__((format(printf, 1, 2), unused))
static void tap_diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

__attribute__((unused))
static int tap_exit(void)
{
	fflush(stdout);
	return tap_failed ? 1 : 0;
}

#endif
