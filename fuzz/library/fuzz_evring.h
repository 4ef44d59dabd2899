/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef FUZZ_EVRING_H
#define FUZZ_EVRING_H

#include <stddef.h>
#include <stdint.h>

/* Shared rings read by the drain (reader 0) or the threaded reader. */
int fuzz_evring(const uint8_t *in, size_t len, int reader);

#endif /* FUZZ_EVRING_H */
