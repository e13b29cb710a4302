/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/macro.h"

/* SHA-256 (sha256.c): init, update any number of times, then the hex digest (ends the state). */
struct ward__sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t fill;
};

WARD_INTERNAL void ward__sha256_init(struct ward__sha256 *s);
WARD_INTERNAL void ward__sha256_update(struct ward__sha256 *s, const void *data, size_t n);
WARD_INTERNAL void ward__sha256_hex(struct ward__sha256 *s, char out[65]);
