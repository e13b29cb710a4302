/* SPDX-License-Identifier: MIT */
/*
 * SipHash-2-4, written from the algorithm's description: four 64-bit words
 * of state set from the key, two rounds per 8-byte little-endian word of the
 * input, the length in the top byte of the last word, four rounds to finish.
 */
#include "basic/siphash.h"

static inline uint64_t rotl(uint64_t x, unsigned b)
{
	return (x << b) | (x >> (64 - b));
}

static inline uint64_t load_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

#define SIP_ROUND(v0, v1, v2, v3)  \
	do {                       \
		v0 += v1;          \
		v1 = rotl(v1, 13); \
		v1 ^= v0;          \
		v0 = rotl(v0, 32); \
		v2 += v3;          \
		v3 = rotl(v3, 16); \
		v3 ^= v2;          \
		v0 += v3;          \
		v3 = rotl(v3, 21); \
		v3 ^= v0;          \
		v2 += v1;          \
		v1 = rotl(v1, 17); \
		v1 ^= v2;          \
		v2 = rotl(v2, 32); \
	} while (0)

uint64_t ward__siphash24(const uint8_t key[WARD_SIPHASH_KEY_SIZE], const void *data, size_t len)
{
	const uint8_t *p = data, *end = p + (len & ~(size_t)7);
	uint64_t k0 = load_le64(key), k1 = load_le64(key + 8);
	uint64_t v0 = k0 ^ UINT64_C(0x736f6d6570736575), v1 = k1 ^ UINT64_C(0x646f72616e646f6d),
		 v2 = k0 ^ UINT64_C(0x6c7967656e657261), v3 = k1 ^ UINT64_C(0x7465646279746573);
	uint64_t last = (uint64_t)len << 56;

	for (; p < end; p += 8) {
		uint64_t m = load_le64(p);

		v3 ^= m;
		SIP_ROUND(v0, v1, v2, v3);
		SIP_ROUND(v0, v1, v2, v3);
		v0 ^= m;
	}
	for (unsigned i = 0; i < (len & 7); i++)
		last |= (uint64_t)p[i] << (8 * i);
	v3 ^= last;
	SIP_ROUND(v0, v1, v2, v3);
	SIP_ROUND(v0, v1, v2, v3);
	v0 ^= last;
	v2 ^= 0xff;
	for (unsigned i = 0; i < 4; i++)
		SIP_ROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}
