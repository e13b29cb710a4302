/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "rpc/http.h"

int ward__http_parser_init(struct ward__http_parser *p, const struct ward__http_limits *limits)
{
	struct ward__http_limits l = {
		.max_head = WARD_HTTP_DEFAULT_MAX_HEAD,
		.max_line = WARD_HTTP_DEFAULT_MAX_LINE,
		.max_fields = WARD_HTTP_DEFAULT_MAX_FIELDS,
	};
	int r;

	if (limits)
		l = *limits;
	/* The shortest head, "GET / HTTP/1.1\r\n\r\n", must fit. */
	if (l.max_head < 18 || l.max_head > WARD_HTTP_MAX_MAX_HEAD || l.max_line < 14 ||
	    l.max_line > l.max_head || l.max_fields > WARD_HTTP_MAX_MAX_FIELDS)
		return -EINVAL;
	*p = (struct ward__http_parser){.limits = l, .state = WARD_HTTP_AGAIN};
	r = ward__buf_init(&p->head, l.max_head);
	if (r < 0)
		return r;
	return 0;
}

void ward__http_parser_release(struct ward__http_parser *p)
{
	if (!p)
		return;
	ward__buf_release(&p->head);
	free(p->fields);
	p->fields = NULL;
}

static int refuse(struct ward__http_parser *p, int status, const char *reason)
{
	p->state = WARD_HTTP_ERROR;
	p->status = status;
	p->reason = reason;
	return WARD_HTTP_ERROR;
}

/* ------------------------------------------------------------------ character classes */

/* tchar of RFC 9110 section 5.6.2. */
static bool is_tchar(uint8_t c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		(c != 0 && strchr("!#$%&'*+-.^_`|~", c));
}

/* Bytes a field value may hold: HTAB, SP, VCHAR, obs-text (RFC 9110 section 5.5). */
static bool is_value_byte(uint8_t c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static bool is_ows(uint8_t c)
{
	return c == ' ' || c == '\t';
}

/* ------------------------------------------------------------------ field values */

/* True when the comma-separated list value holds token (case-insensitive), RFC 9110 5.6.1. */
static bool list_has(const char *value, const char *token)
{
	size_t tl = strlen(token);

	for (const char *s = value; *s;) {
		const char *e;
		size_t n;

		while (*s == ',' || is_ows((uint8_t)*s))
			s++;
		e = s;
		while (*e && *e != ',')
			e++;
		n = (size_t)(e - s);
		while (n > 0 && is_ows((uint8_t)s[n - 1]))
			n--;
		if (n == tl && strncasecmp(s, token, tl) == 0)
			return true;
		s = e;
	}
	return false;
}

/* "Bearer" 1*SP token68 (RFC 6750 section 2.1, RFC 9110 section 11.4). */
static void parse_bearer(struct ward__http_request *req, const char *v)
{
	size_t n;

	if (strncasecmp(v, "Bearer", 6) != 0 || v[6] != ' ')
		return;
	v += 6;
	while (*v == ' ')
		v++;
	n = strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/");
	if (n == 0)
		return;
	n += strspn(v + n, "=");
	if (v[n] != '\0')
		return;
	req->bearer = v;
	req->bearer_len = n;
}

/* uri-host [ ":" port ] characters (RFC 3986): enough to refuse anything that is not a host. */
static bool host_valid(const char *v)
{
	return v[strspn(v,
			"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
			"-._~!$&'()*+,;=:[]%")] == '\0';
}

bool ward__http_ws_key_valid(const char *s)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

	if (!s || strlen(s) != 24 || s[22] != '=' || s[23] != '=')
		return false;
	for (int i = 0; i < 22; i++)
		if (!strchr(b64, s[i]) || s[i] == '\0')
			return false;
	/* 16 bytes leave 4 unused bits in the 22nd character: canonical means they are zero. */
	return strchr("AQgw", s[21]) != NULL;
}

/* ------------------------------------------------------------------ the head */

static int parse_request_line(struct ward__http_parser *p, char *line)
{
	struct ward__http_request *req = &p->request;
	char *sp1, *sp2, *q, *v;

	sp1 = strchr(line, ' ');
	if (!sp1 || sp1 == line)
		return refuse(p, 400, "malformed request line");
	*sp1 = '\0';
	for (char *c = line; *c; c++)
		if (!is_tchar((uint8_t)*c))
			return refuse(p, 400, "malformed method");
	sp2 = strchr(sp1 + 1, ' ');
	if (!sp2 || sp2 == sp1 + 1)
		return refuse(p, 400, "malformed request line");
	*sp2 = '\0';
	for (char *c = sp1 + 1; *c; c++)
		if ((uint8_t)*c < 0x21 || (uint8_t)*c > 0x7e)
			return refuse(p, 400, "malformed request target");
	v = sp2 + 1;
	if (strcmp(v, "HTTP/1.1") == 0) {
		req->version_minor = 1;
	} else if (strcmp(v, "HTTP/1.0") == 0) {
		req->version_minor = 0;
	} else if (strncmp(v, "HTTP/", 5) == 0 && v[5] >= '0' && v[5] <= '9' && v[6] == '.' &&
		   v[7] >= '0' && v[7] <= '9' && v[8] == '\0') {
		return refuse(p, 505, "unsupported HTTP version");
	} else {
		return refuse(p, 400, "malformed HTTP version");
	}
	req->method = line;
	if (p->limits.proxy) {
		/*
		 * CONNECT names an authority, everything else an absolute URI
		 * ("scheme://..."); origin-form is for servers, and "*" (OPTIONS)
		 * names no host to check.
		 */
		bool connect = strcmp(line, "CONNECT") == 0;

		if (connect ? strstr(sp1 + 1, "://") || sp1[1] == '/' : !strstr(sp1 + 1, "://"))
			return refuse(p, 400,
				      connect ? "CONNECT needs host:port" : "not an absolute URI");
		req->path = sp1 + 1;
		return 0;
	}
	/* Only origin-form ("/path?query"): no proxy forms, no "*". */
	if (sp1[1] != '/')
		return refuse(p, 400, "request target is not an absolute path");
	req->path = sp1 + 1;
	q = strchr(sp1 + 1, '?');
	if (q) {
		*q = '\0';
		req->query = q + 1;
	}
	return 0;
}

/* Sets *slot to value unless it was set before: fields whose repetition would be ambiguous. */
static int once(struct ward__http_parser *p, const char **slot, const char *value)
{
	if (*slot)
		return refuse(p, 400, "repeated header field");
	*slot = value;
	return 0;
}

static int parse_field(struct ward__http_parser *p, char *line)
{
	struct ward__http_request *req = &p->request;
	char *colon, *v, *end;
	int r = 0;

	if (is_ows((uint8_t)line[0]))
		return refuse(p, 400, "obsolete line folding");
	colon = strchr(line, ':');
	if (!colon || colon == line)
		return refuse(p, 400, "malformed header field");
	for (char *c = line; c < colon; c++)
		if (!is_tchar((uint8_t)*c))
			return refuse(p, 400, "malformed header field name");
	*colon = '\0';
	v = colon + 1;
	while (is_ows((uint8_t)*v))
		v++;
	for (char *c = v; *c; c++)
		if (!is_value_byte((uint8_t)*c))
			return refuse(p, 400, "control character in header field");
	end = v + strlen(v);
	while (end > v && is_ows((uint8_t)end[-1]))
		end--;
	*end = '\0';

	p->fields[req->n_fields++] = (struct ward__http_field){.name = line, .value = v};
	if (strcasecmp(line, "Host") == 0) {
		r = once(p, &req->host, v);
		if (r == 0 && !host_valid(v))
			r = refuse(p, 400, "malformed Host");
	} else if (strcasecmp(line, "Upgrade") == 0) {
		r = once(p, &req->upgrade, v);
		req->upgrade_websocket = list_has(v, "websocket");
	} else if (strcasecmp(line, "Connection") == 0) {
		/* A list: repeated lines add to it (RFC 9110 section 5.3). */
		req->connection_upgrade |= list_has(v, "upgrade");
		req->connection_close |= list_has(v, "close");
	} else if (strcasecmp(line, "Sec-WebSocket-Key") == 0) {
		r = once(p, &req->ws_key, v);
		req->ws_key_valid = ward__http_ws_key_valid(v);
	} else if (strcasecmp(line, "Sec-WebSocket-Version") == 0) {
		r = once(p, &req->ws_version, v);
	} else if (strcasecmp(line, "Origin") == 0 ||
		   strcasecmp(line, "Sec-WebSocket-Origin") == 0) {
		/* Any value, "null" and empty included: a browser sent it. */
		req->has_origin = true;
	} else if (strcasecmp(line, "Authorization") == 0) {
		r = once(p, &req->authorization, v);
		if (r == 0)
			parse_bearer(req, v);
	} else if (strcasecmp(line, "Content-Length") == 0 ||
		   strcasecmp(line, "Transfer-Encoding") == 0) {
		/* Two framings, or two lengths, is the classic request smuggling: refuse. */
		if (req->has_body)
			r = refuse(p, 400, "repeated body framing");
		req->has_body = true;
		if (strcasecmp(line, "Content-Length") == 0)
			req->content_length = v;
		else
			req->transfer_encoding = v;
	}
	return r;
}

/* Parses the complete head (it ends with "\r\n\r\n") once, in place. */
static int parse_head(struct ward__http_parser *p)
{
	struct ward__http_request *req = &p->request;
	char *s = (char *)p->head.data;
	bool first = true;
	int r;

	*req = (struct ward__http_request){.fields = p->fields};
	for (;;) {
		char *cr = strstr(s, "\r\n");

		/* The scan guarantees CRLF line ends and no NUL: cr is never NULL here. */
		if (!cr)
			return refuse(p, 400, "malformed request head");
		*cr = '\0';
		if (*s == '\0')
			break;
		r = first ? parse_request_line(p, s) : parse_field(p, s);
		if (r != 0)
			return r;
		first = false;
		s = cr + 2;
	}
	if (req->version_minor >= 1 && !req->host)
		return refuse(p, 400, "no Host field");
	if (req->has_body && !p->limits.proxy &&
	    (strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0))
		return refuse(p, 400, "a GET with a body");
	p->state = WARD_HTTP_DONE;
	return WARD_HTTP_DONE;
}

int ward__http_feed(struct ward__http_parser *p, const void *data, size_t len, size_t *ret_consumed)
{
	const uint8_t *d = data;
	size_t base = p->head.len, line_len = p->line_len, i;
	unsigned lines = p->lines;
	bool cr = p->cr, done = false;
	int r;

	*ret_consumed = 0;
	if (p->state != WARD_HTTP_AGAIN)
		return p->state;
	if (len > 0 && !d)
		return -EINVAL;
	if (!p->fields) {
		p->fields =
			calloc(p->limits.max_fields ? p->limits.max_fields : 1, sizeof(*p->fields));
		if (!p->fields)
			return -ENOMEM;
	}

	/*
	 * Each byte is looked at once, here; the full parse runs once, on a
	 * complete head. So a client sending a byte at a time costs linear time.
	 */
	for (i = 0; i < len && !done; i++) {
		uint8_t ch = d[i];

		*ret_consumed = i + 1;
		if (base + i >= p->limits.max_head)
			return refuse(p, 431, "request head too large");
		if (cr) {
			if (ch != '\n')
				return refuse(p, 400, "bare CR");
			cr = false;
			if (line_len == 0) {
				if (lines == 0)
					return refuse(p, 400, "empty request line");
				done = true;
				continue;
			}
			lines++;
			line_len = 0;
			/* The request line and max_fields field lines. */
			if (lines > p->limits.max_fields + 1)
				return refuse(p, 431, "too many header fields");
			continue;
		}
		if (ch == '\r') {
			cr = true;
			continue;
		}
		if (ch == '\n')
			return refuse(p, 400, "bare LF");
		if (ch == '\0')
			return refuse(p, 400, "NUL byte in request head");
		if (++line_len > p->limits.max_line)
			return refuse(p, lines == 0 ? 414 : 431,
				      lines == 0 ? "request line too long"
						 : "header field too long");
	}

	r = ward__buf_append(&p->head, d, i);
	if (r < 0) {
		*ret_consumed = 0;
		return r;
	}
	*ret_consumed = i;
	p->line_len = line_len;
	p->lines = lines;
	p->cr = cr;
	if (!done)
		return WARD_HTTP_AGAIN;
	return parse_head(p);
}

int ward__http_check_upgrade(const struct ward__http_request *req, const char **ret_reason)
{
	const char *reason = NULL;
	int status = 0;

	if (req->version_minor < 1)
		status = 400, reason = "a websocket upgrade needs HTTP/1.1";
	else if (!req->upgrade)
		status = 426, reason = "not a websocket request";
	else if (!req->upgrade_websocket)
		status = 400, reason = "Upgrade does not name websocket";
	else if (!req->connection_upgrade)
		status = 400, reason = "Connection does not name upgrade";
	else if (!req->ws_version)
		status = 400, reason = "no Sec-WebSocket-Version";
	else if (strcmp(req->ws_version, "13") != 0)
		status = 426, reason = "unsupported Sec-WebSocket-Version";
	else if (!req->ws_key)
		status = 400, reason = "no Sec-WebSocket-Key";
	else if (!req->ws_key_valid)
		status = 400, reason = "malformed Sec-WebSocket-Key";
	if (ret_reason)
		*ret_reason = reason;
	return status;
}

static const struct {
	int status;
	const char *reason;
	const char *fields;
	const char *body;
} responses[] = {
	{200, "OK", "", "ok\n"},
	{400, "Bad Request", "", "bad request\n"},
	{401, "Unauthorized", "WWW-Authenticate: Bearer\r\n", "unauthorized\n"},
	{403, "Forbidden", "", "forbidden\n"},
	{404, "Not Found", "", "not found\n"},
	{405, "Method Not Allowed", "Allow: GET\r\n", "method not allowed\n"},
	{413, "Content Too Large", "", "content too large\n"},
	{414, "URI Too Long", "", "uri too long\n"},
	{426, "Upgrade Required", "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n",
	 "upgrade required\n"},
	{431, "Request Header Fields Too Large", "", "request header fields too large\n"},
	{500, "Internal Server Error", "", "internal server error\n"},
	{503, "Service Unavailable", "Retry-After: 1\r\n", "service unavailable\n"},
	{505, "HTTP Version Not Supported", "", "http version not supported\n"},
};

int ward__http_respond(struct ward__buf *out, int status)
{
	for (size_t i = 0; i < ELEMENTSOF(responses); i++) {
		if (responses[i].status != status)
			continue;
		return ward__buf_printf(out,
					"HTTP/1.1 %d %s\r\n"
					"%s"
					"Content-Type: text/plain; charset=utf-8\r\n"
					"Content-Length: %zu\r\n"
					"Connection: close\r\n"
					"\r\n"
					"%s",
					status, responses[i].reason, responses[i].fields,
					strlen(responses[i].body), responses[i].body);
	}
	return -EINVAL;
}
