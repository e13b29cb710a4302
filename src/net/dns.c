/* SPDX-License-Identifier: MIT */
/*
 * The DNS stub's codec (RFC 1035 section 4): one question in, one answer out.
 *
 * Written here, not with a DNS library: the stub never resolves anything
 * and never forwards a query (a forwarded query is a channel out of the
 * sandbox: the name itself carries data), it only reads the one question a
 * stub resolver asks and answers it with an address of ward's choosing or a
 * refusal. That is a header, a name without compression and two numbers;
 * c-ares (which ward uses to resolve for real, outside the sandbox) has no
 * server side. Pure, and fuzzed (fuzz/fuzz-net-dns.c).
 */
#include <string.h>

#include "net/net.h"

#define DNS_QR 0x8000
#define DNS_AA 0x0400
#define DNS_TC 0x0200
#define DNS_RD 0x0100
#define DNS_RA 0x0080

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

int ward__dns_parse_query(const void *msg, size_t len, struct ward__dns_query *q,
			  bool *ret_id_valid)
{
	const uint8_t *m = msg;
	size_t off = 12, name_len = 0;

	*ret_id_valid = false;
	memset(q, 0, sizeof(*q));
	if (len < 12 || len > WARD_DNS_MAX_MESSAGE)
		return -EINVAL;
	q->id = get16(m);
	q->flags = get16(m + 2);
	/* A response (QR set) is never answered: two stubs must not talk to each other forever. */
	if (q->flags & DNS_QR)
		return -EINVAL;
	*ret_id_valid = true;
	if (((q->flags >> 11) & 0xf) != 0)
		return WARD_DNS_RCODE_NOTIMP;
	if (get16(m + 4) != 1 || get16(m + 6) != 0 || get16(m + 8) != 0)
		return WARD_DNS_RCODE_FORMERR;

	for (;;) {
		uint8_t l;

		if (off >= len)
			return WARD_DNS_RCODE_FORMERR;
		l = m[off++];
		if (l == 0)
			break;
		/* Compression pointers and the extended label types have no place in a lone question. */
		if (l & 0xc0)
			return WARD_DNS_RCODE_FORMERR;
		if (off + l > len || name_len + l + 1 > WARD_NET_HOST_MAX + 1)
			return WARD_DNS_RCODE_FORMERR;
		if (name_len > 0)
			q->name[name_len++] = '.';
		for (unsigned i = 0; i < l; i++) {
			uint8_t c = m[off + i];

			/* A label holding a dot or a control byte has no text form to match. */
			if (c == '.' || c < 0x21 || c > 0x7e) {
				q->question = NULL;
				return WARD_DNS_RCODE_REFUSED;
			}
			if (c >= 'A' && c <= 'Z')
				c = (uint8_t)(c - 'A' + 'a');
			q->name[name_len++] = (char)c;
		}
		off += l;
	}
	q->name[name_len] = '\0';
	if (off + 4 > len)
		return WARD_DNS_RCODE_FORMERR;
	q->qtype = get16(m + off);
	q->qclass = get16(m + off + 2);
	off += 4;
	q->question = m + 12;
	q->question_len = off - 12;
	return 0;
}

size_t ward__dns_build_answer(const struct ward__dns_query *q, int rcode,
			      const struct ward__net_addr *addr, uint32_t ttl, uint8_t *out,
			      size_t size)
{
	bool answer = rcode == WARD_DNS_RCODE_NOERROR && addr && q->question &&
		((addr->family == AF_INET && q->qtype == WARD_DNS_TYPE_A) ||
		 (addr->family == AF_INET6 && q->qtype == WARD_DNS_TYPE_AAAA));
	size_t alen = addr && addr->family == AF_INET6 ? 16 : 4;
	size_t need = 12 + (q->question ? q->question_len : 0) + (answer ? 12 + alen : 0);
	size_t off = 12;

	if (size < need)
		return 0;
	put16(out, q->id);
	put16(out + 2, (uint16_t)(DNS_QR | DNS_AA | (q->flags & DNS_RD) | DNS_RA | (rcode & 0xf)));
	put16(out + 4, q->question ? 1 : 0);
	put16(out + 6, answer ? 1 : 0);
	put16(out + 8, 0);
	put16(out + 10, 0);
	if (q->question) {
		/* Echoed byte for byte: resolvers that randomise the case of names check it. */
		memcpy(out + off, q->question, q->question_len);
		off += q->question_len;
	}
	if (answer) {
		put16(out + off, 0xc00c); /* the name: a pointer to the question's */
		put16(out + off + 2, q->qtype);
		put16(out + off + 4, WARD_DNS_CLASS_IN);
		put16(out + off + 6, (uint16_t)(ttl >> 16));
		put16(out + off + 8, (uint16_t)ttl);
		put16(out + off + 10, (uint16_t)alen);
		memcpy(out + off + 12, addr->bytes, alen);
		off += 12 + alen;
	}
	return off;
}
