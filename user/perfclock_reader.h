/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libperfclock: the threaded reader's first header name, kept so that
 * #include "perfclock_reader.h" and <perfclock/perfclock_reader.h> go on
 * working. The reader is perfclock/reader.h; this name gives the whole
 * library, as it always did.
 */
#include "libperfclock.h"
