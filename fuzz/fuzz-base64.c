/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the base64 encoder (src/rpc/base64.c) against OpenSSL's
 * EVP_EncodeBlock and against decoding: for every input (and every suffix of
 * it, so that each alignment and each tail length is seen) the encoding is
 * byte for byte OpenSSL's, exactly ward__base64_encoded_len() long, nothing
 * is written past it, and it decodes back to the input.
 *
 * Built with -fsanitize=fuzzer it is a libFuzzer target; linked with replay.c
 * it replays the corpus (in every test run).
 */
#include <openssl/evp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rpc/base64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                 \
	do {                     \
		if (!(x))        \
			abort(); \
	} while (0)

static void one(const uint8_t *in, size_t len)
{
	size_t n = ward__base64_encoded_len(len);
	char *ours = malloc(n + 8), *theirs = malloc(n + 1);
	uint8_t *back = malloc(n + 1);
	int k;

	CHECK(ours && theirs && back);
	memset(ours, '#', n + 8);
	CHECK(ward__base64_encode(in, len, ours) == n);
	for (size_t i = n; i < n + 8; i++)
		CHECK(ours[i] == '#');
	CHECK(EVP_EncodeBlock((unsigned char *)theirs, in, (int)len) == (int)n);
	CHECK(memcmp(ours, theirs, n) == 0);
	k = EVP_DecodeBlock(back, (const unsigned char *)ours, (int)n);
	CHECK(k >= 0 && (size_t)k >= len && memcmp(back, in, len) == 0);
	free(ours);
	free(theirs);
	free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 16)
		return 0;
	for (size_t skip = 0; skip <= size && skip < 16; skip++)
		one(data + skip, size - skip);
	return 0;
}
