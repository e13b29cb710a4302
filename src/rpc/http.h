/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/buf.h"
#include "basic/macro.h"

/*
 * A strict incremental parser of one HTTP/1.1 request head, for what the
 * exec server's socket has to answer: the WebSocket upgrade (RFC 6455,
 * section 4) and a few plain GET endpoints (GET /readyz). Pure: the caller
 * feeds the bytes it read and gets back "need more", "complete" (with how
 * many of the bytes belonged to the head: the rest are the first bytes of
 * the next protocol) or the status to answer with.
 *
 * Strict, because the head comes from anyone who can connect before any
 * authentication, or from a sandboxed command talking to the egress proxy
 * (RFC 9112 lets a server refuse what it does not need):
 *   - lines end in CRLF; a bare CR or a bare LF is refused (400), as is
 *     obs-fold (a line starting with SP or HTAB) and whitespace between a
 *     field name and its colon (RFC 9112 section 5.1, request smuggling);
 *   - the request line is METHOD SP origin-form SP HTTP/1.x with single
 *     spaces, the target printable ASCII starting with "/"; any other
 *     HTTP version is 505;
 *   - field names are tokens, values printable (HTAB, SP, VCHAR, obs-text);
 *     every other control byte, NUL included, is refused;
 *   - limits on the request line (414), on each field line, on the number
 *     of fields and on the whole head (431), so memory and time are bounded
 *     whatever arrives, and every byte is looked at once;
 *   - fields whose repetition would be ambiguous (Host, Upgrade,
 *     Authorization, Sec-WebSocket-Key, Sec-WebSocket-Version,
 *     Content-Length, Transfer-Encoding) appear at most once (400);
 *   - a GET or HEAD with Content-Length or Transfer-Encoding is refused
 *     (400): these endpoints take no body, and a body the server would not
 *     read could be taken for the next request.
 */

/* Defaults of struct ward__http_limits (docs/protocol.md explains them). */
#define WARD_HTTP_DEFAULT_MAX_HEAD ((size_t)16 << 10)
#define WARD_HTTP_DEFAULT_MAX_LINE ((size_t)8 << 10)
#define WARD_HTTP_DEFAULT_MAX_FIELDS 64u
/* Ceilings a configuration may not exceed. */
#define WARD_HTTP_MAX_MAX_HEAD ((size_t)1 << 20)
#define WARD_HTTP_MAX_MAX_FIELDS 1024u

/* The "+ 1" of RFC 6455 section 1.3: the GUID appended to the key before hashing. */
#define WARD_WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
/* Sec-WebSocket-Accept: base64 of a SHA-1 digest, 28 characters. */
#define WARD_WS_ACCEPT_LEN 28

struct ward__http_limits {
	size_t max_head; /* request line + fields + the empty line, in bytes */
	size_t max_line; /* one line without its CRLF */
	unsigned max_fields; /* field lines */
	/*
	 * A forward proxy's requests (src/net): the request target is in
	 * absolute-form ("http://host/path") or, for CONNECT only, in
	 * authority-form ("host:443"), never origin-form; request->path is the
	 * whole target (no query split), and any method may carry a body.
	 */
	bool proxy;
};

struct ward__http_field {
	const char *name; /* as sent; compare with strcasecmp */
	const char *value; /* leading and trailing whitespace removed */
};

/*
 * What the server needs of a request. Strings point into the parser and are
 * NUL-terminated (no field can hold a NUL: the parser refuses them); valid
 * until the parser is released or reset.
 */
struct ward__http_request {
	const char *method;
	const char *path; /* the request-target up to "?" */
	const char *query; /* after "?", or NULL */
	int version_minor; /* HTTP/1.0 or HTTP/1.1 */
	const char *host; /* NULL when absent (only possible with HTTP/1.0) */
	const char *upgrade; /* the Upgrade field, or NULL */
	bool upgrade_websocket; /* Upgrade lists the "websocket" token */
	bool connection_upgrade; /* Connection lists the "upgrade" token */
	bool connection_close; /* Connection lists the "close" token */
	const char *ws_key; /* Sec-WebSocket-Key, or NULL */
	bool ws_key_valid; /* it is the base64 of 16 bytes (canonical, padded) */
	const char *ws_version; /* Sec-WebSocket-Version, or NULL */
	bool has_origin; /* any Origin (or Sec-WebSocket-Origin) field, whatever its value */
	const char *authorization; /* the Authorization field, or NULL */
	const char *bearer; /* its token when the scheme is Bearer (RFC 6750 syntax), or NULL */
	size_t bearer_len;
	bool has_body; /* Content-Length or Transfer-Encoding present */
	const char *content_length; /* the field's value, or NULL */
	const char *transfer_encoding; /* the field's value, or NULL */
	const struct ward__http_field *fields;
	size_t n_fields;
};

enum ward__http_result {
	WARD_HTTP_AGAIN = 0, /* every byte consumed, the head is not complete yet */
	WARD_HTTP_DONE = 1, /* the head is complete: parser->request is filled */
	WARD_HTTP_ERROR = 2, /* refused: answer parser->status, then close */
};

struct ward__http_parser {
	struct ward__http_limits limits;
	struct ward__buf head; /* the bytes of the head, at most max_head */
	struct ward__http_field *fields; /* max_fields entries, allocated with the head */
	size_t line_len; /* bytes of the current line so far, CRLF excluded */
	unsigned lines; /* lines completed, the request line included */
	bool cr; /* the previous byte was a CR */
	enum ward__http_result state;
	int status; /* ERROR: the HTTP status to answer with */
	const char *reason; /* ERROR: a short lowercase explanation, for logs */
	struct ward__http_request request; /* DONE */
};

/* Sets up a parser; limits NULL means the defaults. Allocates nothing. -EINVAL for bad limits. */
WARD_INTERNAL int ward__http_parser_init(struct ward__http_parser *p,
					 const struct ward__http_limits *limits);
/* Frees what the parser holds. Accepts a zeroed parser. */
WARD_INTERNAL void ward__http_parser_release(struct ward__http_parser *p);

/*
 * Feeds bytes. Returns the result (an enum ward__http_result) and sets
 * *ret_consumed: for AGAIN all of len; for DONE the bytes up to and including
 * the empty line that ends the head (the rest belongs to what follows); for
 * ERROR the bytes looked at. After DONE or ERROR further calls return the
 * same result and consume nothing. -ENOMEM when the head cannot be kept
 * (nothing consumed; the call may be repeated).
 */
WARD_INTERNAL int ward__http_feed(struct ward__http_parser *p, const void *data, size_t len,
				  size_t *ret_consumed);

/*
 * Checks a complete request as a WebSocket opening handshake (RFC 6455
 * section 4.2.1), the method excepted (the caller answers 405 first).
 * Returns 0 when it is one, else the status to answer with: 426 with no
 * Upgrade field at all (a plain HTTP client) or a Sec-WebSocket-Version
 * other than 13 (the response then names 13, section 4.4); 400 for the
 * rest (HTTP/1.0, an Upgrade without "websocket", no "upgrade" in
 * Connection, a missing or malformed key, a missing version). *ret_reason
 * (optional) gets a short explanation.
 */
WARD_INTERNAL int ward__http_check_upgrade(const struct ward__http_request *req,
					   const char **ret_reason);

/* True when s is the canonical base64 of exactly 16 bytes (24 characters ending "=="). */
WARD_INTERNAL bool ward__http_ws_key_valid(const char *s);

/*
 * Computes Sec-WebSocket-Accept for a key (RFC 6455 section 4.2.2): base64
 * of SHA-1 over the key and WARD_WS_GUID, through libcrypto. ret must hold
 * WARD_WS_ACCEPT_LEN + 1 bytes. -EINVAL for an invalid key, -EIO when
 * libcrypto fails.
 */
WARD_INTERNAL int ward__http_ws_accept(const char *key, char ret[WARD_WS_ACCEPT_LEN + 1]);

/*
 * Compares a presented secret with the expected one in time independent of
 * their contents and of the expected one's length: both are hashed with
 * SHA-256 and the digests compared with CRYPTO_memcmp. A NULL or empty
 * presented secret never matches. Returns true only on equality.
 */
WARD_INTERNAL bool ward__http_token_equal(const void *presented, size_t presented_len,
					  const void *expected, size_t expected_len);

/*
 * Response builders. Each appends a complete response head (and short body)
 * to out, all or nothing; -ENOBUFS when it does not fit.
 */
/* 101 Switching Protocols for a valid key (-EINVAL otherwise). */
WARD_INTERNAL int ward__http_respond_upgrade(struct ward__buf *out, const char *ws_key);
/*
 * Any other status: 200 (body "ok"), 400, 401 (WWW-Authenticate: Bearer),
 * 403, 404, 405 (Allow: GET), 413, 414, 426 (Upgrade: websocket and
 * Sec-WebSocket-Version: 13), 431, 500, 503 (Retry-After: 1), 505. Always
 * "Connection: close" with a short text/plain body naming the status; the
 * body carries nothing from the request. -EINVAL for another status.
 */
WARD_INTERNAL int ward__http_respond(struct ward__buf *out, int status);
