/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/macro.h"

/*
 * SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed function of a byte
 * string to 64 bits, fast on short inputs, whose output cannot be predicted
 * or forged without the 128-bit key. ward uses it as a message
 * authentication code for files a sandboxed command might be able to write
 * (the scan cache, src/policy/scan-cache.c).
 */
#define WARD_SIPHASH_KEY_SIZE 16

WARD_INTERNAL uint64_t ward__siphash24(const uint8_t key[WARD_SIPHASH_KEY_SIZE], const void *data,
				       size_t len);
