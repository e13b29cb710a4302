/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rpc/jsonrpc.h"

int ward__rpc_codec_init(struct ward__rpc_codec *c, enum ward__rpc_dialect dialect,
			 const struct ward__rpc_limits *limits)
{
	struct ward__rpc_limits l = {
		.max_bytes = WARD_RPC_DEFAULT_MAX_BYTES,
		.max_depth = WARD_RPC_DEFAULT_MAX_DEPTH,
		.max_values = WARD_RPC_DEFAULT_MAX_VALUES,
	};

	if (dialect != WARD_RPC_JSONRPC2 && dialect != WARD_RPC_CODEX)
		return -EINVAL;
	if (limits)
		l = *limits;
	if (l.max_bytes < 1 || l.max_bytes > WARD_RPC_MAX_MAX_BYTES || l.max_depth < 1 ||
	    l.max_depth > WARD_RPC_MAX_MAX_DEPTH || l.max_values < 1)
		return -EINVAL;
	*c = (struct ward__rpc_codec){.dialect = dialect, .limits = l};
	return 0;
}

void ward__rpc_msg_release(struct ward__rpc_msg *m)
{
	if (!m)
		return;
	json_decref(m->root);
	*m = (struct ward__rpc_msg){0};
}

/* ------------------------------------------------------------------ failures */

static void fail_reset(struct ward__rpc_failure *f)
{
	f->code = 0;
	f->batch = false;
	f->too_large = false;
	f->id = (struct ward__rpc_id){.type = WARD_RPC_ID_NULL};
	f->message[0] = '\0';
	f->id_buf[0] = '\0';
}

/*
 * Sets the code and the message. The message may quote bytes of the input
 * (jansson's error text does): everything but printable ASCII becomes '?',
 * so the answer is one line of plain text whatever the peer sent.
 */
_printf_(3, 4) static void fail_set(struct ward__rpc_failure *f, int code, const char *fmt, ...)
{
	va_list ap;

	f->code = code;
	va_start(ap, fmt);
	vsnprintf(f->message, sizeof(f->message), fmt, ap);
	va_end(ap);
	for (char *p = f->message; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
			*p = '?';
}

static void fail_take_id(struct ward__rpc_failure *f, const struct ward__rpc_id *id)
{
	if (id->type == WARD_RPC_ID_INT) {
		f->id = *id;
	} else if (id->type == WARD_RPC_ID_STRING && id->len <= WARD_RPC_MAX_ID_LEN) {
		memcpy(f->id_buf, id->str, id->len);
		f->id_buf[id->len] = '\0';
		f->id = (struct ward__rpc_id){
			.type = WARD_RPC_ID_STRING, .str = f->id_buf, .len = id->len};
	}
}

/* ------------------------------------------------------------------ the pre-scan */

enum scan_violation {
	SCAN_OK = 0,
	SCAN_NUL,
	SCAN_DEPTH,
	SCAN_VALUES,
};

struct scan {
	enum scan_violation violation;
	size_t offset; /* of the violation */
	bool top_array;
	bool have_id; /* the top-level "id" member's value is [id_start, id_end) */
	size_t id_start, id_end;
};

static bool is_literal_byte(uint8_t ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		ch == '-' || ch == '+' || ch == '.';
}

/*
 * One linear pass over the bytes, before jansson sees them: the nesting
 * depth, the number of values and raw NUL bytes, and where the top-level
 * "id" member's value is (for the error answer of a message refused before
 * or without a tree). It tracks strings and escapes exactly, so brackets in
 * strings do not count, and otherwise does not validate: jansson does that
 * on the messages that pass. For valid JSON the counts are exact; for
 * anything else they are what the bytes look like, which only matters in
 * that the message is refused either way. Stack and time are bounded by the
 * limits whatever the input.
 */
static void scan(const struct ward__rpc_limits *lim, const uint8_t *p, size_t n, struct scan *s)
{
	/* One bit per open container: 1 for an object, 0 for an array. */
	uint64_t stack[WARD_RPC_MAX_MAX_DEPTH / 64] = {0};
	enum { CAP_NONE, CAP_WANT, CAP_STRING, CAP_LITERAL, CAP_DONE } cap = CAP_NONE;
	bool in_string = false, escape = false, in_literal = false, string_is_key = false;
	bool expect_key = false, key_is_id = false, first = true;
	size_t values = 0, key_start = 0;
	unsigned depth = 0;

	*s = (struct scan){0};
	for (size_t i = 0; i < n; i++) {
		uint8_t ch = p[i];
		bool value = false;

		if (ch == '\0') {
			s->violation = SCAN_NUL;
			s->offset = i;
			return;
		}
		if (in_string) {
			if (escape) {
				escape = false;
			} else if (ch == '\\') {
				escape = true;
			} else if (ch == '"') {
				in_string = false;
				if (string_is_key && depth == 1 && i - key_start == 3 &&
				    memcmp(p + key_start + 1, "id", 2) == 0)
					key_is_id = true;
				if (cap == CAP_STRING) {
					s->id_end = i + 1;
					s->have_id = true;
					cap = CAP_DONE;
				}
			}
			continue;
		}
		if (is_literal_byte(ch)) {
			if (!in_literal) {
				in_literal = true;
				value = true;
			}
		} else {
			if (in_literal && cap == CAP_LITERAL) {
				s->id_end = i;
				s->have_id = true;
				cap = CAP_DONE;
			}
			in_literal = false;
		}
		if (first && ch != ' ' && ch != '\t' && ch != '\r' && ch != '\n') {
			first = false;
			s->top_array = ch == '[';
		}
		switch (ch) {
		case '"':
			in_string = true;
			string_is_key = expect_key;
			if (expect_key) {
				expect_key = false;
				key_start = i;
			} else {
				value = true;
			}
			break;
		case '{':
		case '[':
			value = true;
			break;
		case '}':
		case ']':
			if (depth > 0)
				depth--;
			expect_key = false;
			break;
		case ',':
			expect_key =
				depth > 0 && (stack[(depth - 1) / 64] >> ((depth - 1) % 64) & 1);
			break;
		case ':':
			expect_key = false;
			if (key_is_id && cap == CAP_NONE)
				cap = CAP_WANT;
			key_is_id = false;
			break;
		default:
			break;
		}
		if (!value)
			continue;
		if (++values > lim->max_values) {
			s->violation = SCAN_VALUES;
			s->offset = i;
			return;
		}
		if (cap == CAP_WANT) {
			/* The value of the top-level "id": only a string or a literal can be an id. */
			s->id_start = i;
			cap = ch == '"' ? CAP_STRING : is_literal_byte(ch) ? CAP_LITERAL : CAP_DONE;
		}
		if (ch == '{' || ch == '[') {
			if (depth >= lim->max_depth) {
				s->violation = SCAN_DEPTH;
				s->offset = i;
				return;
			}
			if (ch == '{')
				stack[depth / 64] |= (uint64_t)1 << (depth % 64);
			else
				stack[depth / 64] &= ~((uint64_t)1 << (depth % 64));
			depth++;
			expect_key = ch == '{';
		}
	}
}

/* Decodes the id the scan located, when it is a valid id. */
static void scan_take_id(const uint8_t *p, const struct scan *s, struct ward__rpc_failure *f)
{
	json_t *v;
	json_error_t je;

	if (!s->have_id || s->id_end - s->id_start > WARD_RPC_MAX_ID_LEN * 6 + 2)
		return;
	v = json_loadb((const char *)p + s->id_start, s->id_end - s->id_start, JSON_DECODE_ANY,
		       &je);
	if (!v)
		return;
	if (json_is_integer(v)) {
		struct ward__rpc_id id = ward__rpc_id_int(json_integer_value(v));

		fail_take_id(f, &id);
	} else if (json_is_string(v)) {
		struct ward__rpc_id id = {
			.type = WARD_RPC_ID_STRING,
			.str = json_string_value(v),
			.len = json_string_length(v),
		};

		fail_take_id(f, &id);
	}
	json_decref(v);
}

void ward__rpc_fail_oversized(const struct ward__rpc_codec *c, const void *prefix, size_t len,
			      struct ward__rpc_failure *ret_fail)
{
	struct scan s;

	fail_reset(ret_fail);
	ret_fail->too_large = true;
	fail_set(ret_fail, WARD_RPC_INVALID_REQUEST, "message larger than %zu bytes",
		 c->limits.max_bytes);
	if (!prefix)
		return;
	scan(&c->limits, prefix, MIN(len, c->limits.max_bytes), &s);
	ret_fail->batch = s.top_array;
	scan_take_id(prefix, &s, ret_fail);
}

/* ------------------------------------------------------------------ parsing */

/* Reads an id member: 0 valid (NONE when absent), -EINVAL when it has the wrong type. */
static int get_id(const json_t *v, struct ward__rpc_id *ret)
{
	if (!v) {
		*ret = (struct ward__rpc_id){.type = WARD_RPC_ID_NONE};
	} else if (json_is_null(v)) {
		*ret = ward__rpc_id_null();
	} else if (json_is_integer(v)) {
		*ret = ward__rpc_id_int(json_integer_value(v));
	} else if (json_is_string(v) && json_string_length(v) <= WARD_RPC_MAX_ID_LEN) {
		*ret = (struct ward__rpc_id){
			.type = WARD_RPC_ID_STRING,
			.str = json_string_value(v),
			.len = json_string_length(v),
		};
	} else {
		return -EINVAL;
	}
	return 0;
}

#define INVALID(...)                                                                    \
	do {                                                                            \
		fail_set(f, WARD_RPC_INVALID_REQUEST, "invalid request: " __VA_ARGS__); \
		return -EBADMSG;                                                        \
	} while (0)

/* Checks the members of a message object and fills m (which points into root). */
static int check_message(const struct ward__rpc_codec *c, json_t *root, struct ward__rpc_msg *m,
			 struct ward__rpc_failure *f)
{
	json_t *jsonrpc = json_object_get(root, "jsonrpc");
	json_t *id = json_object_get(root, "id");
	json_t *method = json_object_get(root, "method");
	json_t *params = json_object_get(root, "params");
	json_t *result = json_object_get(root, "result");
	json_t *error = json_object_get(root, "error");
	bool id_ok = get_id(id, &m->id) == 0;

	/* Every later refusal carries the id once it is known to be valid. */
	if (id_ok)
		fail_take_id(f, &m->id);
	if (jsonrpc) {
		if (!json_is_string(jsonrpc) || strcmp(json_string_value(jsonrpc), "2.0") != 0)
			INVALID("\"jsonrpc\" must be \"2.0\"");
	} else if (c->dialect == WARD_RPC_JSONRPC2) {
		INVALID("\"jsonrpc\":\"2.0\" is missing");
	}
	if (!id_ok)
		INVALID("\"id\" must be an integer or a string of at most %u bytes",
			WARD_RPC_MAX_ID_LEN);

	if (method) {
		size_t len;

		if (result || error)
			INVALID("\"method\" together with \"%s\"", result ? "result" : "error");
		if (!json_is_string(method))
			INVALID("\"method\" must be a string");
		len = json_string_length(method);
		if (len == 0)
			INVALID("\"method\" is empty");
		if (len > WARD_RPC_MAX_METHOD_LEN)
			INVALID("\"method\" is longer than %u bytes", WARD_RPC_MAX_METHOD_LEN);
		if (m->id.type == WARD_RPC_ID_NULL)
			INVALID("\"id\" of a request must not be null");
		if (params && json_is_null(params) && c->dialect == WARD_RPC_CODEX)
			params =
				NULL; /* serde's Option reads null as absent; Codex clients send it. */
		if (params && !json_is_object(params) && !json_is_array(params))
			INVALID("\"params\" must be an object or an array");
		m->kind = m->id.type == WARD_RPC_ID_NONE ? WARD_RPC_NOTIFICATION : WARD_RPC_REQUEST;
		m->method = json_string_value(method);
		m->params = params;
		return 0;
	}
	if (result && error)
		INVALID("both \"result\" and \"error\"");
	if (result) {
		if (m->id.type != WARD_RPC_ID_INT && m->id.type != WARD_RPC_ID_STRING)
			INVALID("a result needs an integer or string \"id\"");
		m->kind = WARD_RPC_RESULT;
		m->result = result;
		return 0;
	}
	if (error) {
		json_t *code, *message, *data;

		if (m->id.type == WARD_RPC_ID_NONE)
			INVALID("an error response needs an \"id\" (null allowed)");
		if (!json_is_object(error))
			INVALID("\"error\" must be an object");
		code = json_object_get(error, "code");
		message = json_object_get(error, "message");
		data = json_object_get(error, "data");
		if (!json_is_integer(code))
			INVALID("\"error.code\" must be an integer");
		if (!json_is_string(message))
			INVALID("\"error.message\" must be a string");
		m->kind = WARD_RPC_ERROR;
		m->error_code = json_integer_value(code);
		m->error_message = json_string_value(message);
		m->error_data = data;
		return 0;
	}
	INVALID("no \"method\", \"result\" or \"error\"");
}

int ward__rpc_parse(const struct ward__rpc_codec *c, const void *data, size_t len,
		    struct ward__rpc_msg *ret_msg, struct ward__rpc_failure *ret_fail)
{
	struct ward__rpc_failure *f = ret_fail;
	struct ward__rpc_msg m = {0};
	json_error_t je;
	struct scan s;
	int r;

	fail_reset(f);
	if (!data && len > 0) {
		fail_set(f, WARD_RPC_INTERNAL_ERROR, "no message");
		return -EINVAL;
	}
	if (len > c->limits.max_bytes) {
		ward__rpc_fail_oversized(c, data, len, f);
		return -EMSGSIZE;
	}

	/* Limits first: jansson must never build a tree past them. */
	scan(&c->limits, data, len, &s);
	switch (s.violation) {
	case SCAN_OK:
		break;
	case SCAN_NUL:
		fail_set(f, WARD_RPC_PARSE_ERROR, "invalid JSON: NUL byte at offset %zu", s.offset);
		return -EBADMSG;
	case SCAN_DEPTH:
		f->too_large = true;
		f->batch = s.top_array;
		fail_set(f, WARD_RPC_INVALID_REQUEST, "message nested deeper than %u levels",
			 c->limits.max_depth);
		scan_take_id(data, &s, f);
		return -EMSGSIZE;
	case SCAN_VALUES:
		f->too_large = true;
		f->batch = s.top_array;
		fail_set(f, WARD_RPC_INVALID_REQUEST, "message has more than %zu JSON values",
			 c->limits.max_values);
		scan_take_id(data, &s, f);
		return -EMSGSIZE;
	}

	/*
	 * JSON_DECODE_ANY: a bare scalar is valid JSON but not a message, which
	 * JSON-RPC answers with -32600, not -32700. JSON_REJECT_DUPLICATES: see
	 * the header. No JSON_ALLOW_NUL: "\u0000" is refused.
	 */
	m.root = json_loadb(data, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
	if (!m.root) {
		enum json_error_code code = json_error_code(&je);

		if (code == json_error_out_of_memory) {
			fail_set(f, WARD_RPC_INTERNAL_ERROR, "out of memory");
			return -ENOMEM;
		}
		if (code == json_error_duplicate_key) {
			/* The id itself may be the duplicate: none is safe to answer with. */
			fail_set(f, WARD_RPC_INVALID_REQUEST, "invalid request: %s", je.text);
			return -EBADMSG;
		}
		fail_set(f, WARD_RPC_PARSE_ERROR, "invalid JSON at line %d, column %d: %s", je.line,
			 je.column, je.text);
		return -EBADMSG;
	}
	if (json_is_array(m.root)) {
		f->batch = true;
		fail_set(f, WARD_RPC_INVALID_REQUEST, "invalid request: %s",
			 json_array_size(m.root) == 0 ? "empty batch"
						      : "batches are not supported");
		json_decref(m.root);
		return -EBADMSG;
	}
	if (!json_is_object(m.root)) {
		fail_set(f, WARD_RPC_INVALID_REQUEST, "invalid request: expected a JSON object");
		json_decref(m.root);
		return -EBADMSG;
	}
	r = check_message(c, m.root, &m, f);
	if (r < 0) {
		json_decref(m.root);
		return r;
	}
	fail_reset(f);
	*ret_msg = m;
	return 0;
}

/* ------------------------------------------------------------------ encoding */

struct dump_ctx {
	struct ward__buf *b;
	int err;
};

static int dump_cb(const char *buffer, size_t size, void *data)
{
	struct dump_ctx *d = data;
	int r = ward__buf_append(d->b, buffer, size);

	if (r < 0) {
		d->err = r;
		return -1;
	}
	return 0;
}

/*
 * Appends one JSON value, compact (JSON_COMPACT never writes a newline, and
 * jansson escapes control characters in strings, so the line stays one line).
 */
static int put_json(const struct ward__rpc_codec *c, struct ward__buf *b, const json_t *v)
{
	struct dump_ctx d = {.b = b};
	size_t flags = JSON_COMPACT | JSON_ENCODE_ANY;

	if (c && c->real_digits > 0 && c->real_digits <= 17)
		flags |= JSON_REAL_PRECISION(c->real_digits);
	if (json_dump_callback(v, dump_cb, &d, flags) < 0)
		return d.err < 0 ? d.err : -EINVAL; /* invalid UTF-8 in a string, or a cycle */
	return 0;
}

static int put_string(struct ward__buf *b, const char *s, size_t len)
{
	json_t *v = json_stringn(s, len); /* NULL for invalid UTF-8 (or no memory) */
	int r;

	if (!v)
		return -EINVAL;
	r = put_json(NULL, b, v);
	json_decref(v);
	return r;
}

static int put_id(struct ward__buf *b, const struct ward__rpc_id *id)
{
	switch (id->type) {
	case WARD_RPC_ID_INT:
		return ward__buf_printf(b, "%" PRId64, id->num);
	case WARD_RPC_ID_STRING:
		if (!id->str || id->len > WARD_RPC_MAX_ID_LEN || memchr(id->str, '\0', id->len))
			return -EINVAL;
		return put_string(b, id->str, id->len);
	case WARD_RPC_ID_NULL:
	case WARD_RPC_ID_NONE:
		return ward__buf_append_str(b, "null");
	}
	return -EINVAL;
}

static int put_head(const struct ward__rpc_codec *c, struct ward__buf *b)
{
	return ward__buf_append_str(
		b, c->dialect == WARD_RPC_JSONRPC2 ? "{\"jsonrpc\":\"2.0\"," : "{");
}

enum encode_kind {
	ENC_REQUEST,
	ENC_NOTIFICATION,
	ENC_RESULT,
	ENC_ERROR,
};

struct encode_args {
	enum encode_kind kind;
	const struct ward__rpc_id *id;
	const char *method;
	const json_t *value; /* params, result or error data */
	int64_t code;
	const char *message;
};

/* Copies s replacing every byte that does not start valid UTF-8 with U+FFFD. */
static char *utf8_sanitized(const char *s)
{
	size_t n = strlen(s), o = 0;
	char *out;

	if (n > (SIZE_MAX - 1) / 3)
		return NULL;
	out = malloc(n * 3 + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < n;) {
		const uint8_t *p = (const uint8_t *)s + i;
		size_t want = 0;
		uint32_t cp = 0, min = 0;

		if (p[0] < 0x80)
			want = 1, cp = p[0];
		else if ((p[0] & 0xe0) == 0xc0)
			want = 2, cp = p[0] & 0x1f, min = 0x80;
		else if ((p[0] & 0xf0) == 0xe0)
			want = 3, cp = p[0] & 0x0f, min = 0x800;
		else if ((p[0] & 0xf8) == 0xf0)
			want = 4, cp = p[0] & 0x07, min = 0x10000;
		if (want == 0 || i + want > n)
			goto bad;
		for (size_t k = 1; k < want; k++) {
			if ((p[k] & 0xc0) != 0x80)
				goto bad;
			cp = cp << 6 | (p[k] & 0x3f);
		}
		/* Overlong forms, surrogates and code points past U+10FFFF are not UTF-8. */
		if (cp < min || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
			goto bad;
		memcpy(out + o, p, want);
		o += want;
		i += want;
		continue;
	bad:
		memcpy(out + o, "\xef\xbf\xbd", 3);
		o += 3;
		i++;
	}
	out[o] = '\0';
	return out;
}

static int build(const struct ward__rpc_codec *c, struct ward__buf *b, const struct encode_args *a)
{
	int r;

	if ((r = put_head(c, b)) < 0)
		return r;
	if (a->kind != ENC_NOTIFICATION) {
		if ((r = ward__buf_append_str(b, "\"id\":")) < 0 || (r = put_id(b, a->id)) < 0 ||
		    (r = ward__buf_append_byte(b, ',')) < 0)
			return r;
	}
	switch (a->kind) {
	case ENC_REQUEST:
	case ENC_NOTIFICATION:
		if ((r = ward__buf_append_str(b, "\"method\":")) < 0 ||
		    (r = put_string(b, a->method, strlen(a->method))) < 0)
			return r;
		if (a->value &&
		    ((r = ward__buf_append_str(b, ",\"params\":")) < 0 ||
		     (r = put_json(c, b, a->value)) < 0))
			return r;
		break;
	case ENC_RESULT:
		if ((r = ward__buf_append_str(b, "\"result\":")) < 0)
			return r;
		r = a->value ? put_json(c, b, a->value) : ward__buf_append_str(b, "null");
		if (r < 0)
			return r;
		break;
	case ENC_ERROR: {
		char *msg = utf8_sanitized(a->message);

		if (!msg)
			return -ENOMEM;
		r = ward__buf_printf(b, "\"error\":{\"code\":%" PRId64 ",\"message\":", a->code);
		if (r >= 0)
			r = put_string(b, msg, strlen(msg));
		free(msg);
		if (r < 0)
			return r;
		if (a->value &&
		    ((r = ward__buf_append_str(b, ",\"data\":")) < 0 ||
		     (r = put_json(c, b, a->value)) < 0))
			return r;
		if ((r = ward__buf_append_byte(b, '}')) < 0)
			return r;
		break;
	}
	}
	return ward__buf_append_byte(b, '}');
}

/* Builds into out directly when it is empty, else into a scratch buffer: all or nothing. */
static int encode(const struct ward__rpc_codec *c, struct ward__buf *out,
		  const struct encode_args *a)
{
	struct ward__buf tmp;
	int r;

	if (!c || !out)
		return -EINVAL;
	if (out->len == 0) {
		r = build(c, out, a);
		if (r < 0)
			ward__buf_clear(out);
		return r;
	}
	r = ward__buf_init(&tmp, ward__buf_room(out));
	if (r < 0)
		return r;
	r = build(c, &tmp, a);
	if (r >= 0)
		r = ward__buf_append(out, tmp.data, tmp.len);
	ward__buf_release(&tmp);
	return r;
}

static bool id_is_request_id(const struct ward__rpc_id *id)
{
	return id && (id->type == WARD_RPC_ID_INT || id->type == WARD_RPC_ID_STRING);
}

static bool params_ok(const json_t *params)
{
	return !params || json_is_object(params) || json_is_array(params);
}

static bool method_ok(const char *method)
{
	return method && method[0] && strlen(method) <= WARD_RPC_MAX_METHOD_LEN;
}

int ward__rpc_encode_request(const struct ward__rpc_codec *c, struct ward__buf *out,
			     const struct ward__rpc_id *id, const char *method,
			     const json_t *params)
{
	if (!id_is_request_id(id) || !method_ok(method) || !params_ok(params))
		return -EINVAL;
	return encode(c, out,
		      &(struct encode_args){
			      .kind = ENC_REQUEST, .id = id, .method = method, .value = params});
}

int ward__rpc_encode_notification(const struct ward__rpc_codec *c, struct ward__buf *out,
				  const char *method, const json_t *params)
{
	if (!method_ok(method) || !params_ok(params))
		return -EINVAL;
	return encode(
		c, out,
		&(struct encode_args){.kind = ENC_NOTIFICATION, .method = method, .value = params});
}

int ward__rpc_encode_result(const struct ward__rpc_codec *c, struct ward__buf *out,
			    const struct ward__rpc_id *id, const json_t *result)
{
	if (!id_is_request_id(id))
		return -EINVAL;
	return encode(c, out, &(struct encode_args){.kind = ENC_RESULT, .id = id, .value = result});
}

int ward__rpc_encode_error(const struct ward__rpc_codec *c, struct ward__buf *out,
			   const struct ward__rpc_id *id, int64_t code, const char *message,
			   const json_t *data)
{
	static const struct ward__rpc_id null_id = {.type = WARD_RPC_ID_NULL};

	if (!message)
		return -EINVAL;
	return encode(c, out,
		      &(struct encode_args){.kind = ENC_ERROR,
					    .id = id ? id : &null_id,
					    .code = code,
					    .message = message,
					    .value = data});
}

int ward__rpc_encode_failure(const struct ward__rpc_codec *c, struct ward__buf *out,
			     const struct ward__rpc_failure *f)
{
	if (!f)
		return -EINVAL;
	return ward__rpc_encode_error(c, out, &f->id, f->code, f->message, NULL);
}

int ward__rpc_id_dup(struct ward__rpc_id *dst, const struct ward__rpc_id *src)
{
	*dst = *src;
	if (src->type == WARD_RPC_ID_STRING) {
		char *s = strndup(src->str, src->len);

		if (!s)
			return -ENOMEM;
		dst->str = s;
	}
	return 0;
}

void ward__rpc_id_release(struct ward__rpc_id *id)
{
	if (id->type == WARD_RPC_ID_STRING)
		free((char *)id->str);
	*id = (struct ward__rpc_id){0};
}
