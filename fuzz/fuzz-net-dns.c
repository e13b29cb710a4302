/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the DNS stub's codec (src/net/dns.c) with whole messages. A query
 * that parses has a lowercase name within RFC 1035's length and a question
 * inside the message; its answers (an address, a refusal) fit the limit,
 * carry the query's id, are marked as responses and echo the question byte
 * for byte. A message that is refused with an rcode still gets an answer of
 * just a header.
 *
 * Built with -fsanitize=fuzzer it is a libFuzzer target; linked with replay.c
 * it replays the corpus (in every test run).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                 \
	do {                     \
		if (!(x))        \
			abort(); \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ward__dns_query q;
	struct ward__net_addr v4 = {.family = AF_INET, .bytes = {198, 18, 0, 1}};
	struct ward__net_addr v6 = {.family = AF_INET6, .bytes = {0xfd}};
	uint8_t out[WARD_DNS_MAX_MESSAGE];
	bool id_valid;
	size_t m;
	int r = ward__dns_parse_query(data, size, &q, &id_valid);

	if (r < 0)
		return 0;
	CHECK(id_valid);
	if (r > 0) {
		m = ward__dns_build_answer(&q, r, NULL, 0, out, sizeof(out));
		CHECK(m >= 12 && m <= sizeof(out));
		CHECK((out[3] & 0x0f) == r);
		return 0;
	}
	CHECK(strlen(q.name) <= WARD_NET_HOST_MAX + 1);
	for (const char *c = q.name; *c; c++)
		CHECK(!(*c >= 'A' && *c <= 'Z') && (uint8_t)*c > 0x20 && (uint8_t)*c < 0x7f);
	CHECK(q.question >= data + 12 && q.question + q.question_len <= data + size);
	for (int i = 0; i < 3; i++) {
		const struct ward__net_addr *a = i == 0 ? &v4 : i == 1 ? &v6 : NULL;

		m = ward__dns_build_answer(&q, a ? 0 : WARD_DNS_RCODE_REFUSED, a, 60, out,
					   sizeof(out));
		CHECK(m >= 12 + q.question_len && m <= sizeof(out));
		CHECK(out[0] == data[0] && out[1] == data[1]);
		CHECK(out[2] & 0x80);
		CHECK(memcmp(out + 12, q.question, q.question_len) == 0);
	}
	return 0;
}
