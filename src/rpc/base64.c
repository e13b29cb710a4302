/* SPDX-License-Identifier: MIT */
/* Standard base64 encoding (see base64.h). */
#include <stdint.h>
#include <string.h>

#include "rpc/base64.h"

/* The character of a 6-bit value. */
#define C(x)                                       \
	((char)((x) < 26	    ? 'A' + (x)    \
			: (x) < 52  ? 'a' + (x)-26 \
			: (x) < 62  ? '0' + (x)-52 \
			: (x) == 62 ? '+'          \
				    : '/'))
/* The two characters of a 12-bit value, built at compile time. */
#define P(i)                                  \
	{                                     \
		C(((i) >> 6) & 63), C((i)&63) \
	}
#define P4(i) P(i), P((i) + 1), P((i) + 2), P((i) + 3)
#define P16(i) P4(i), P4((i) + 4), P4((i) + 8), P4((i) + 12)
#define P64(i) P16(i), P16((i) + 16), P16((i) + 32), P16((i) + 48)
#define P256(i) P64(i), P64((i) + 64), P64((i) + 128), P64((i) + 192)
#define P1024(i) P256(i), P256((i) + 256), P256((i) + 512), P256((i) + 768)

static const char pairs[4096][2] = {P1024(0), P1024(1024), P1024(2048), P1024(3072)};
static const char single[64] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t ward__base64_encode(const void *in, size_t len, char *out)
{
	const uint8_t *s = in;
	char *o = out;
	size_t i = 0;

	/*
	 * Six bytes at a time from one 8-byte big-endian load (two bytes past
	 * them must exist: the loop stops 8 bytes before the end).
	 */
	for (; i + 8 <= len; i += 6, o += 8) {
		uint64_t v;

		memcpy(&v, s + i, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		v = __builtin_bswap64(v);
#endif
		v >>= 16;
		memcpy(o, pairs[(v >> 36) & 0xfff], 2);
		memcpy(o + 2, pairs[(v >> 24) & 0xfff], 2);
		memcpy(o + 4, pairs[(v >> 12) & 0xfff], 2);
		memcpy(o + 6, pairs[v & 0xfff], 2);
	}
	for (; i + 3 <= len; i += 3, o += 4) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];

		memcpy(o, pairs[v >> 12], 2);
		memcpy(o + 2, pairs[v & 0xfff], 2);
	}
	if (len - i == 1) {
		o[0] = single[s[i] >> 2];
		o[1] = single[(s[i] & 3) << 4];
		o[2] = o[3] = '=';
		o += 4;
	} else if (len - i == 2) {
		o[0] = single[s[i] >> 2];
		o[1] = single[(s[i] & 3) << 4 | s[i + 1] >> 4];
		o[2] = single[(s[i + 1] & 15) << 2];
		o[3] = '=';
		o += 4;
	}
	return (size_t)(o - out);
}
