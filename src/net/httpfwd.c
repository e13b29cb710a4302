/* SPDX-License-Identifier: MIT */
/*
 * What the plain HTTP proxy needs beyond the head parser (rpc/http.c, in
 * its proxy mode): the destination of a request, the head to send upstream,
 * the framing of the request body, and the refusals.
 *
 * One request per connection, on both sides. A proxy that keeps a client's
 * connection open across requests must find each request's end and the
 * next one's start exactly as the upstream will, or a request hidden in the
 * body of another reaches a host nobody checked (request smuggling, the
 * CL.TE and TE.CL games). Here the body is framed by the one framing the
 * head allows (a second Content-Length or both fields are refused by the
 * parser), exactly that many bytes go upstream, and nothing after them is
 * ever read: the upstream gets "Connection: close", and when its answer
 * ends, the client's connection ends too. Clients open a new connection for
 * the next request, as they do after any "Connection: close".
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "basic/buf.h"
#include "net/net.h"
#include "rpc/http.h"

/* The chunked framer's states (RFC 9112 section 7.1). */
enum {
	CH_SIZE = 0, /* hex digits of the chunk size */
	CH_EXT, /* a chunk extension, up to CR */
	CH_SIZE_LF, /* the LF after the size line's CR */
	CH_DATA, /* chunk data */
	CH_DATA_CR, /* the CRLF after chunk data */
	CH_DATA_LF,
	CH_TRAILER, /* a trailer line (or the final empty line) */
	CH_TRAILER_LF,
	CH_DONE,
};

#define CHUNK_LINE_MAX 4096u
#define TRAILER_MAX (16u << 10)

static ssize_t body_fail(struct ward__body *b)
{
	b->failed = true;
	return -EINVAL;
}

static ssize_t chunked_feed(struct ward__body *b, const uint8_t *d, size_t len)
{
	size_t i = 0;

	while (i < len && b->cstate != CH_DONE) {
		uint8_t c = d[i];

		switch (b->cstate) {
		case CH_SIZE: {
			int v = c >= '0' && c <= '9'   ? c - '0'
				: c >= 'a' && c <= 'f' ? c - 'a' + 10
				: c >= 'A' && c <= 'F' ? c - 'A' + 10
						       : -1;

			if (v >= 0) {
				/* Sixteen hex digits would already pass any sane chunk. */
				if (b->left >> 56)
					return body_fail(b);
				b->left = (b->left << 4) | (uint64_t)v;
				b->line++;
			} else if (b->line == 0) {
				return body_fail(b);
			} else if (c == ';' || c == ' ' || c == '\t') {
				b->cstate = CH_EXT;
			} else if (c == '\r') {
				b->cstate = CH_SIZE_LF;
			} else {
				return body_fail(b);
			}
			i++;
			break;
		}
		case CH_EXT:
			if (c == '\r')
				b->cstate = CH_SIZE_LF;
			else if (c == '\n' || c == 0 || ++b->line > CHUNK_LINE_MAX)
				return body_fail(b);
			i++;
			break;
		case CH_SIZE_LF:
			if (c != '\n')
				return body_fail(b);
			i++;
			b->line = 0;
			b->cstate = b->left == 0 ? CH_TRAILER : CH_DATA;
			break;
		case CH_DATA: {
			size_t n = MIN((uint64_t)(len - i), b->left);

			i += n;
			b->left -= n;
			if (b->left == 0)
				b->cstate = CH_DATA_CR;
			break;
		}
		case CH_DATA_CR:
			if (c != '\r')
				return body_fail(b);
			b->cstate = CH_DATA_LF;
			i++;
			break;
		case CH_DATA_LF:
			if (c != '\n')
				return body_fail(b);
			b->cstate = CH_SIZE;
			b->line = 0;
			i++;
			break;
		case CH_TRAILER:
			if (c == '\r') {
				b->cstate = CH_TRAILER_LF;
			} else if (c == '\n' || c == 0 || ++b->trailer_bytes > TRAILER_MAX) {
				return body_fail(b);
			} else {
				b->line++;
			}
			i++;
			break;
		case CH_TRAILER_LF:
			if (c != '\n')
				return body_fail(b);
			i++;
			if (b->line == 0) {
				b->cstate = CH_DONE;
				b->done = true;
			} else {
				b->line = 0;
				b->cstate = CH_TRAILER;
			}
			break;
		default:
			return body_fail(b);
		}
	}
	return (ssize_t)i;
}

ssize_t ward__body_feed(struct ward__body *b, const void *data, size_t len)
{
	if (b->failed)
		return -EINVAL;
	if (b->done)
		return 0;
	switch (b->kind) {
	case WARD_BODY_NONE:
		b->done = true;
		return 0;
	case WARD_BODY_LENGTH: {
		size_t n = (size_t)MIN((uint64_t)len, b->left);

		b->left -= n;
		b->done = b->left == 0;
		return (ssize_t)n;
	}
	case WARD_BODY_CHUNKED:
		return chunked_feed(b, data, len);
	}
	return body_fail(b);
}

/* Splits "host:port" or "[v6]:port"; port_required for CONNECT. */
static int split_authority(const char *a, size_t len, bool port_required,
			   char host[WARD_NET_HOST_MAX + 1], uint16_t *ret_port)
{
	const char *colon = NULL;
	size_t hl = len;
	unsigned port = 0;

	if (len == 0 || memchr(a, '@', len))
		return -EINVAL;
	if (a[0] == '[') {
		const char *close = memchr(a, ']', len);

		if (!close)
			return -EINVAL;
		hl = (size_t)(close - a) + 1;
		if (hl < len) {
			if (a[hl] != ':')
				return -EINVAL;
			colon = a + hl;
		}
	} else {
		colon = memchr(a, ':', len);
		if (colon) {
			hl = (size_t)(colon - a);
			if (memchr(colon + 1, ':', len - hl - 1))
				return -EINVAL;
		}
	}
	if (colon) {
		size_t pl = len - (size_t)(colon - a) - 1;

		if (pl == 0 || pl > 5)
			return -EINVAL;
		for (size_t i = 0; i < pl; i++) {
			if (colon[1 + i] < '0' || colon[1 + i] > '9')
				return -EINVAL;
			port = port * 10 + (unsigned)(colon[1 + i] - '0');
		}
		if (port == 0 || port > 65535)
			return -EINVAL;
	} else if (port_required) {
		return -EINVAL;
	} else {
		port = 80;
	}
	if (ward__net_host_normalize(a, hl, false, host) < 0)
		return -EINVAL;
	*ret_port = (uint16_t)port;
	return 0;
}

/* For "http://authority/path": where the authority starts and ends. */
static int absolute_parts(const char *t, const char **ret_auth, size_t *ret_auth_len,
			  const char **ret_path)
{
	const char *auth, *end;

	if (strncasecmp(t, "http://", 7) != 0)
		return -EPROTONOSUPPORT;
	auth = t + 7;
	end = auth + strcspn(auth, "/?#");
	*ret_auth = auth;
	*ret_auth_len = (size_t)(end - auth);
	*ret_path = end;
	return 0;
}

int ward__httpfwd_target(const struct ward__http_request *req, bool *ret_connect,
			 char host[WARD_NET_HOST_MAX + 1], uint16_t *ret_port,
			 struct ward__body *ret_body, const char **why)
{
	struct ward__body body = {.kind = WARD_BODY_NONE};
	bool connect = strcmp(req->method, "CONNECT") == 0;
	const char *auth, *path;
	size_t auth_len;
	int r;

	if (connect) {
		if (req->has_body) {
			*why = "CONNECT with a body";
			return 400;
		}
		if (split_authority(req->path, strlen(req->path), true, host, ret_port) < 0) {
			*why = "CONNECT target is not host:port";
			return 400;
		}
		*ret_connect = true;
		*ret_body = body;
		return 0;
	}
	r = absolute_parts(req->path, &auth, &auth_len, &path);
	if (r == -EPROTONOSUPPORT) {
		*why = "only http:// URLs are proxied as requests (use CONNECT for https)";
		return 400;
	}
	if (r < 0 || split_authority(auth, auth_len, false, host, ret_port) < 0) {
		*why = "the URL names no valid host";
		return 400;
	}
	if (*path == '#') {
		*why = "a fragment in the request target";
		return 400;
	}
	if (req->content_length) {
		const char *v = req->content_length;
		uint64_t n = 0;

		if (!*v || strlen(v) > 18 || strspn(v, "0123456789") != strlen(v)) {
			*why = "malformed Content-Length";
			return 400;
		}
		for (; *v; v++)
			n = n * 10 + (uint64_t)(*v - '0');
		if (n > 0)
			body = (struct ward__body){.kind = WARD_BODY_LENGTH, .left = n};
	} else if (req->transfer_encoding) {
		if (strcasecmp(req->transfer_encoding, "chunked") != 0) {
			*why = "a transfer coding other than chunked";
			return 501;
		}
		body = (struct ward__body){.kind = WARD_BODY_CHUNKED};
	}
	*ret_connect = false;
	*ret_body = body;
	return 0;
}

static bool list_names(const char *list, const char *name)
{
	size_t nl = strlen(name);

	for (const char *s = list; *s;) {
		size_t n;

		s += strspn(s, " \t,");
		n = strcspn(s, ",");
		while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		if (n == nl && strncasecmp(s, name, nl) == 0)
			return true;
		s += strcspn(s, ",");
	}
	return false;
}

static bool hop_by_hop(const struct ward__http_request *req, const char *name)
{
	static const char *const fixed[] = {
		"Connection",
		"Proxy-Connection",
		"Keep-Alive",
		"Proxy-Authorization",
		"Proxy-Authenticate",
		"TE",
		"Trailer",
		"Upgrade",
		"Host",
	};

	for (size_t i = 0; i < ELEMENTSOF(fixed); i++)
		if (strcasecmp(name, fixed[i]) == 0)
			return true;
	/* Fields the client's Connection names are for this hop only (RFC 9110 section 7.6.1). */
	for (size_t i = 0; i < req->n_fields; i++)
		if (strcasecmp(req->fields[i].name, "Connection") == 0 &&
		    list_names(req->fields[i].value, name))
			return true;
	return false;
}

int ward__httpfwd_head(const struct ward__http_request *req, struct ward__buf *out)
{
	const char *auth, *path;
	size_t auth_len;
	int r;

	if (absolute_parts(req->path, &auth, &auth_len, &path) < 0)
		return -EINVAL;
	/*
	 * The Host field is the URL's authority, whatever the client's Host
	 * said: the upstream picks its virtual host by it, and the name checked
	 * must be the name served.
	 */
	r = ward__buf_printf(out, "%s %s%s HTTP/1.1\r\nHost: %.*s\r\n", req->method,
			     *path == '/' ? "" : "/", path, (int)auth_len, auth);
	for (size_t i = 0; r >= 0 && i < req->n_fields; i++) {
		if (hop_by_hop(req, req->fields[i].name))
			continue;
		r = ward__buf_printf(out, "%s: %s\r\n", req->fields[i].name, req->fields[i].value);
	}
	if (r >= 0)
		r = ward__buf_append_str(out, "Connection: close\r\n\r\n");
	/* On failure the caller drops out whole: the connection is refused. */
	return r < 0 ? r : 0;
}

static const char *status_text(int status)
{
	switch (status) {
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 414:
		return "URI Too Long";
	case 431:
		return "Request Header Fields Too Large";
	case 501:
		return "Not Implemented";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	case 505:
		return "HTTP Version Not Supported";
	default:
		return "Error";
	}
}

int ward__httpfwd_error(struct ward__buf *out, int status, const char *proxy_error,
			const char *message)
{
	return ward__buf_printf(out,
				"HTTP/1.1 %d %s\r\n"
				"%s%s%s"
				"Content-Type: text/plain; charset=utf-8\r\n"
				"Content-Length: %zu\r\n"
				"Connection: close\r\n"
				"\r\n"
				"%s\n",
				status, status_text(status), proxy_error ? "X-Proxy-Error: " : "",
				proxy_error ? proxy_error : "", proxy_error ? "\r\n" : "",
				strlen(message) + 1, message);
}
