/* SPDX-License-Identifier: MIT */
/*
 * The SOCKS5 codec (RFC 1928), server side.
 *
 * Written here rather than taken from a library: the part a proxy needs is
 * two short binary messages and a reply, smaller than any binding to a
 * library would be, and being pure it is fuzzed on its own
 * (fuzz/fuzz-net-socks5.c). Nothing is allocated: the longest request fits
 * in the parser.
 */
#include <arpa/inet.h>
#include <string.h>

#include "net/net.h"

static enum ward__socks5_state fail(struct ward__socks5 *s, uint8_t reply)
{
	s->state = WARD_SOCKS5_FAILED;
	s->reply = reply;
	return s->state;
}

/* The length the request in s->buf will have once its address type is known; 0 while unknown. */
static size_t request_len(const struct ward__socks5 *s)
{
	if (s->len < 4)
		return 0;
	switch (s->buf[3]) {
	case WARD_SOCKS5_ATYP_V4:
		return 4 + 4 + 2;
	case WARD_SOCKS5_ATYP_V6:
		return 4 + 16 + 2;
	case WARD_SOCKS5_ATYP_DOMAIN:
		return s->len < 5 ? 0 : 4 + 1 + (size_t)s->buf[4] + 2;
	default:
		return SIZE_MAX;
	}
}

static enum ward__socks5_state finish_request(struct ward__socks5 *s)
{
	const uint8_t *b = s->buf;
	size_t off = 4;

	if (b[0] != 5 || b[2] != 0)
		return fail(s, WARD_SOCKS5_FAILURE);
	s->cmd = b[1];
	s->atyp = b[3];
	switch (s->atyp) {
	case WARD_SOCKS5_ATYP_V4:
		s->addr = (struct ward__net_addr){.family = AF_INET};
		memcpy(s->addr.bytes, b + off, 4);
		off += 4;
		inet_ntop(AF_INET, s->addr.bytes, s->host, sizeof(s->host));
		break;
	case WARD_SOCKS5_ATYP_V6:
		s->addr = (struct ward__net_addr){.family = AF_INET6};
		memcpy(s->addr.bytes, b + off, 16);
		off += 16;
		inet_ntop(AF_INET6, s->addr.bytes, s->host, sizeof(s->host));
		break;
	case WARD_SOCKS5_ATYP_DOMAIN: {
		size_t n = b[off++];

		if (n == 0 || memchr(b + off, '\0', n))
			return fail(s, WARD_SOCKS5_HOST_UNREACHABLE);
		memcpy(s->host, b + off, n);
		s->host[n] = '\0';
		off += n;
		break;
	}
	default:
		return fail(s, WARD_SOCKS5_ATYP_UNSUPPORTED);
	}
	s->port = (uint16_t)((b[off] << 8) | b[off + 1]);
	if (s->cmd != WARD_SOCKS5_CMD_CONNECT && s->cmd != WARD_SOCKS5_CMD_UDP)
		return fail(s, WARD_SOCKS5_CMD_UNSUPPORTED);
	s->state = WARD_SOCKS5_DONE;
	return s->state;
}

enum ward__socks5_state ward__socks5_feed(struct ward__socks5 *s, const void *data, size_t len,
					  size_t *ret_consumed, uint8_t *out, size_t *ret_out)
{
	const uint8_t *d = data;
	size_t i = 0;

	*ret_consumed = 0;
	*ret_out = 0;
	while (i < len && (s->state == WARD_SOCKS5_GREETING || s->state == WARD_SOCKS5_REQUEST)) {
		if (s->len >= sizeof(s->buf))
			return fail(s, WARD_SOCKS5_FAILURE);
		s->buf[s->len++] = d[i++];
		*ret_consumed = i;
		if (s->state == WARD_SOCKS5_GREETING) {
			if (s->buf[0] != 5) {
				/* Not SOCKS5 at all (SOCKS4, or garbage): no reply we could send is understood. */
				s->reply = 0xff;
				s->state = WARD_SOCKS5_FAILED;
				return s->state;
			}
			if (s->len < 2)
				continue;
			if (s->buf[1] == 0) {
				out[0] = 5, out[1] = 0xff;
				*ret_out = 2;
				return fail(s, 0xff);
			}
			if (s->len < 2 + (size_t)s->buf[1])
				continue;
			for (size_t m = 0; m < s->buf[1]; m++)
				if (s->buf[2 + m] == 0)
					s->no_auth_offered = true;
			out[0] = 5;
			out[1] = s->no_auth_offered ? 0 : 0xff;
			*ret_out = 2;
			if (!s->no_auth_offered)
				return fail(s, 0xff);
			s->state = WARD_SOCKS5_REQUEST;
			s->len = 0;
			/* The reply goes out before anything else is read: the request comes after it. */
			return s->state;
		}
		size_t want = request_len(s);

		if (want == SIZE_MAX) {
			if (s->buf[0] != 5)
				return fail(s, WARD_SOCKS5_FAILURE);
			return fail(s, WARD_SOCKS5_ATYP_UNSUPPORTED);
		}
		if (want && s->len == want)
			return finish_request(s);
	}
	return s->state;
}

static size_t put_addr(uint8_t *out, const struct ward__net_addr *a, uint16_t port)
{
	size_t o = 0;

	if (a && a->family == AF_INET6) {
		out[o++] = WARD_SOCKS5_ATYP_V6;
		memcpy(out + o, a->bytes, 16);
		o += 16;
	} else {
		out[o++] = WARD_SOCKS5_ATYP_V4;
		if (a && a->family == AF_INET)
			memcpy(out + o, a->bytes, 4);
		else
			memset(out + o, 0, 4);
		o += 4;
	}
	out[o++] = (uint8_t)(port >> 8);
	out[o++] = (uint8_t)port;
	return o;
}

size_t ward__socks5_reply(uint8_t code, const struct ward__net_addr *bound, uint16_t bound_port,
			  uint8_t out[22])
{
	out[0] = 5;
	out[1] = code;
	out[2] = 0;
	return 3 + put_addr(out + 3, bound, bound_port);
}

int ward__socks5_udp_parse(const void *data, size_t len, char host[256],
			   struct ward__net_addr *addr, bool *ret_is_addr, uint16_t *ret_port)
{
	const uint8_t *b = data;
	size_t off = 4;

	if (len < 4 || b[0] != 0 || b[1] != 0 || b[2] != 0)
		return -EINVAL;
	switch (b[3]) {
	case WARD_SOCKS5_ATYP_V4:
		if (len < off + 6)
			return -EINVAL;
		*addr = (struct ward__net_addr){.family = AF_INET};
		memcpy(addr->bytes, b + off, 4);
		off += 4;
		inet_ntop(AF_INET, addr->bytes, host, 256);
		*ret_is_addr = true;
		break;
	case WARD_SOCKS5_ATYP_V6:
		if (len < off + 18)
			return -EINVAL;
		*addr = (struct ward__net_addr){.family = AF_INET6};
		memcpy(addr->bytes, b + off, 16);
		off += 16;
		inet_ntop(AF_INET6, addr->bytes, host, 256);
		*ret_is_addr = true;
		break;
	case WARD_SOCKS5_ATYP_DOMAIN: {
		size_t n;

		if (len < off + 1)
			return -EINVAL;
		n = b[off++];
		if (n == 0 || len < off + n + 2 || memchr(b + off, '\0', n))
			return -EINVAL;
		memcpy(host, b + off, n);
		host[n] = '\0';
		off += n;
		*ret_is_addr = false;
		break;
	}
	default:
		return -EINVAL;
	}
	*ret_port = (uint16_t)((b[off] << 8) | b[off + 1]);
	return (int)(off + 2);
}

size_t ward__socks5_udp_header(const struct ward__net_addr *a, uint16_t port, uint8_t out[22])
{
	out[0] = out[1] = out[2] = 0;
	return 3 + put_addr(out + 3, a, port);
}
