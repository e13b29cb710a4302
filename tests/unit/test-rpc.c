/* SPDX-License-Identifier: MIT */
/*
 * The pure codecs of src/rpc: JSON-RPC messages (both dialects, every
 * refusal with its code, message and id, the limits), newline framing and
 * the HTTP upgrade request. Byte-exact expectations: these are wire formats.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

#include "basic/buf.h"
#include "rpc/jsonrpc.h"
#include "rpc/http.h"
#include "rpc/lines.h"

/* ------------------------------------------------------------------ helpers */

static struct ward__rpc_codec codec(enum ward__rpc_dialect d)
{
	struct ward__rpc_codec c;

	if (ward__rpc_codec_init(&c, d, NULL) < 0)
		abort();
	return c;
}

static struct ward__rpc_codec codex(void)
{
	return codec(WARD_RPC_CODEX);
}

static struct ward__rpc_codec strict(void)
{
	return codec(WARD_RPC_JSONRPC2);
}

static int parse(const struct ward__rpc_codec *c, const char *s, struct ward__rpc_msg *m,
		 struct ward__rpc_failure *f)
{
	return ward__rpc_parse(c, s, strlen(s), m, f);
}

/* Parses s, expects a refusal with code, and returns the failure for more checks. */
#define REFUSED(c, s, want_r, want_code, f)                      \
	do {                                                     \
		struct ward__rpc_msg _m = {0};                   \
		int _r = parse(c, s, &_m, f);                    \
		ASSERT_EQ(_r, want_r);                           \
		ASSERT_EQ((f)->code, want_code);                 \
		ASSERT_TRUE(_m.root == NULL);                    \
		ASSERT_TRUE((f)->message[0] != '\0');            \
		for (const char *_p = (f)->message; *_p; _p++)   \
			ASSERT_TRUE(*_p >= 0x20 && *_p <= 0x7e); \
	} while (0)

static char *repeat(char ch, size_t n)
{
	char *s = malloc(n + 1);

	if (!s)
		abort();
	memset(s, ch, n);
	s[n] = '\0';
	return s;
}

static char *str_printf(const char *fmt, ...) _printf_(1, 2);
static char *str_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		abort();
	va_end(ap);
	return s;
}

/* ------------------------------------------------------------------ jsonrpc: parse */

TEST(rpc_codec_init_checks_limits)
{
	struct ward__rpc_codec c;
	struct ward__rpc_limits l = {.max_bytes = 10, .max_depth = 2, .max_values = 3};

	ASSERT_OK(ward__rpc_codec_init(&c, WARD_RPC_CODEX, NULL));
	ASSERT_EQ(c.limits.max_bytes, WARD_RPC_DEFAULT_MAX_BYTES);
	ASSERT_EQ(c.limits.max_depth, WARD_RPC_DEFAULT_MAX_DEPTH);
	ASSERT_EQ(c.limits.max_values, WARD_RPC_DEFAULT_MAX_VALUES);
	ASSERT_OK(ward__rpc_codec_init(&c, WARD_RPC_JSONRPC2, &l));
	ASSERT_EQ(c.limits.max_depth, 2);
	l.max_depth = 0;
	ASSERT_EQ(ward__rpc_codec_init(&c, WARD_RPC_CODEX, &l), -EINVAL);
	l.max_depth = WARD_RPC_MAX_MAX_DEPTH + 1;
	ASSERT_EQ(ward__rpc_codec_init(&c, WARD_RPC_CODEX, &l), -EINVAL);
	l.max_depth = 2;
	l.max_bytes = 0;
	ASSERT_EQ(ward__rpc_codec_init(&c, WARD_RPC_CODEX, &l), -EINVAL);
	l.max_bytes = WARD_RPC_MAX_MAX_BYTES + 1;
	ASSERT_EQ(ward__rpc_codec_init(&c, WARD_RPC_CODEX, &l), -EINVAL);
	l.max_bytes = 10;
	l.max_values = 0;
	ASSERT_EQ(ward__rpc_codec_init(&c, WARD_RPC_CODEX, &l), -EINVAL);
	ASSERT_EQ(ward__rpc_codec_init(&c, (enum ward__rpc_dialect)7, NULL), -EINVAL);
}

TEST(rpc_parse_codex_request)
{
	struct ward__rpc_codec c = codex();
	struct ward__rpc_msg m;
	struct ward__rpc_failure f;

	ASSERT_OK(parse(&c,
			"{\"id\":1,\"method\":\"initialize\",\"params\":{\"clientName\":\"x\"}}",
			&m, &f));
	ASSERT_EQ(m.kind, WARD_RPC_REQUEST);
	ASSERT_EQ(m.id.type, WARD_RPC_ID_INT);
	ASSERT_EQ(m.id.num, 1);
	ASSERT_STREQ(m.method, "initialize");
	ASSERT_TRUE(json_is_object(m.params));
	ASSERT_STREQ(json_string_value(json_object_get(m.params, "clientName")), "x");
	ward__rpc_msg_release(&m);
	ASSERT_TRUE(m.root == NULL);
	ward__rpc_msg_release(&m); /* twice is fine */

	/* The Codex transcript's own request, "arg0":null inside params and all. */
	ASSERT_OK(parse(
		&c,
		"{\"id\":2,\"method\":\"process/start\",\"params\":{\"processId\":\"p1\","
		"\"argv\":[\"echo\",\"hi\"],\"cwd\":\"file:///tmp\",\"env\":{\"PATH\":\"/bin\"},"
		"\"tty\":false,\"pipeStdin\":false,\"arg0\":null}}",
		&m, &f));
	ASSERT_EQ(m.kind, WARD_RPC_REQUEST);
	ASSERT_STREQ(m.method, "process/start");
	ward__rpc_msg_release(&m);
}

TEST(rpc_parse_ids)
{
	struct ward__rpc_codec c = codex();
	struct ward__rpc_msg m;
	struct ward__rpc_failure f;

	ASSERT_OK(parse(&c, "{\"id\":\"abc-1\",\"method\":\"m\"}", &m, &f));
	ASSERT_EQ(m.id.type, WARD_RPC_ID_STRING);
	ASSERT_STREQ(m.id.str, "abc-1");
	ASSERT_EQ(m.id.len, 5);
	ward__rpc_msg_release(&m);

	ASSERT_OK(parse(&c, "{\"id\":9223372036854775807,\"method\":\"m\"}", &m, &f));
	ASSERT_TRUE(m.id.num == INT64_MAX);
	ward__rpc_msg_release(&m);
	ASSERT_OK(parse(&c, "{\"id\":-9223372036854775808,\"method\":\"m\"}", &m, &f));
	ASSERT_TRUE(m.id.num == INT64_MIN);
	ward__rpc_msg_release(&m);
	ASSERT_OK(parse(&c, "{\"id\":\"\",\"method\":\"m\"}", &m, &f));
	ASSERT_EQ(m.id.len, 0);
	ward__rpc_msg_release(&m);
	/* An escaped key is the same key. */
	ASSERT_OK(parse(&c, "{\"i\\u0064\":4,\"method\":\"m\"}", &m, &f));
	ASSERT_EQ(m.id.num, 4);
	ward__rpc_msg_release(&m);

	/* Wrong types: refused, and no id to answer with. */
	static const char *const bad[] = {
		"{\"id\":1.5,\"method\":\"m\"}",  "{\"id\":1e3,\"method\":\"m\"}",
		"{\"id\":true,\"method\":\"m\"}", "{\"id\":{},\"method\":\"m\"}",
		"{\"id\":[1],\"method\":\"m\"}",  "{\"id\":null,\"method\":\"m\"}",
		"{\"id\":null,\"result\":1}",
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		REFUSED(&c, bad[i], -EBADMSG, WARD_RPC_INVALID_REQUEST, &f);
		ASSERT_EQ(f.id.type, WARD_RPC_ID_NULL);
	}

	/* A string id longer than the cap is refused rather than echoed. */
	char *lid = repeat('a', WARD_RPC_MAX_ID_LEN + 1);
	char *msg = str_printf("{\"id\":\"%s\",\"method\":\"m\"}", lid);
	REFUSED(&c, msg, -EBADMSG, WARD_RPC_INVALID_REQUEST, &f);
	ASSERT_EQ(f.id.type, WARD_RPC_ID_NULL);
	free(msg);
	lid[WARD_RPC_MAX_ID_LEN] = '\0';
	msg = str_printf("{\"id\":\"%s\",\"method\":\"m\"}", lid);
	ASSERT_OK(parse(&c, msg, &m, &f));
	ASSERT_EQ(m.id.len, WARD_RPC_MAX_ID_LEN);
	ward__rpc_msg_release(&m);
	free(msg);
	free(lid);
}

TEST(rpc_parse_notifications_and_params)
{
	struct ward__rpc_codec c = codex(), s = strict();
	struct ward__rpc_msg m;
	struct ward__rpc_failure f;

	ASSERT_OK(parse(&c, "{\"method\":\"initialized\"}", &m, &f));
	ASSERT_EQ(m.kind, WARD_RPC_NOTIFICATION);
	ASSERT_EQ(m.id.type, WARD_RPC_ID_NONE);
	ASSERT_TRUE(m.params == NULL);
	ward__rpc_msg_release(&m);
	ASSERT_OK(parse(&c, "{\"method\":\"initialized\",\"params\":{}}", &m, &f));
	ASSERT_TRUE(json_is_object(m.params));
	ward__rpc_msg_release(&m);
	ASSERT_OK(parse(&c, "{\"method\":\"n\",\"params\":[1,2]}", &m, &f));
	ASSERT_TRUE(json_is_array(m.params));
	ward__rpc_msg_release(&m);

	/* Codex reads "params":null as absent; strict JSON-RPC 2.0 does not. */
	ASSERT_OK(parse(&c, "{\"id\":3,\"method\":\"n\",\"params\":null}", &m, &f));
	ASSERT_TRUE(m.params == NULL);
	ward__rpc_msg_release(&m);
	REFUSED(&s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"n\",\"params\":null}", -EBADMSG,
		WARD_RPC_INVALID_REQUEST, &f);
	ASSERT_EQ(f.id.type, WARD_RPC_ID_INT);
	ASSERT_EQ(f.id.num, 3);
	ASSERT_CONTAINS(f.message, "params");

	static const char *const bad_params[] = {"1", "\"x\"", "true", "false"};
	for (size_t i = 0; i < ELEMENTSOF(bad_params); i++) {
		char *msg =
			str_printf("{\"id\":\"r\",\"method\":\"n\",\"params\":%s}", bad_params[i]);
		REFUSED(&c, msg, -EBADMSG, WARD_RPC_INVALID_REQUEST, &f);
		ASSERT_EQ(f.id.type, WARD_RPC_ID_STRING);
		ASSERT_STREQ(f.id.str, "r");
		free(msg);
	}
}

TEST(rpc_parse_method_checks_keep_the_id)
{
	struct ward__rpc_codec c = codex();
	struct ward__rpc_failure f;
	char *long_method = repeat('m', WARD_RPC_MAX_METHOD_LEN + 1);
	char *msg = str_printf("{\"id\":5,\"method\":\"%s\"}", long_method);

	REFUSED(&c, "{\"id\":5,\"method\":12}", -EBADMSG, WARD_RPC_INVALID_REQUEST, &f);
	ASSERT_EQ(f.id.num, 5);
	ASSERT_STREQ(f.message, "invalid request: \"method\" must be a string");
	REFUSED(&c, "{\"id\":5,\"method\":\"\"}", -EBADMSG, WARD_RPC_INVALID_REQUEST, &f);
	ASSERT_EQ(f.id.num, 5);
	REFUSED(&c, msg, -EBADMSG, WARD_RPC_INVALID_REQUEST, &f);
	ASSERT_EQ(f.id.num, 5);
	ASSERT_CONTAINS(f.message, "longer than 256 bytes");
	REFUSED(&c, "{\"id\":5,\"method\":\"m\",\"result\":1}", -EBADMSG, WARD_RPC_INVALID_REQUEST,
		&f);
	ASSERT_EQ(f.id.num, 5);
	REFUSED(&c, "{\"id\":5,\"method\":\"m\",\"error\":{}}", -EBADMSG, WARD_RPC_INVALID_REQUEST,
		&f);
	REFUSED(&c, "{\"id\":5}", -EBADMSG, WARD_RPC_INVALID_REQUEST, &f);
	ASSERT_EQ(f.id.num, 5);
	ASSERT_CONTAINS(f.message, "no \"method\"");
	REFUSED(&c, "{}", -EBADMSG, WARD_RPC_INVALID_REQUEST, &f);
	ASSERT_EQ(f.id.type, WARD_RPC_ID_NULL);
	free(msg);
	free(long_method);
}

TEST(rpc_parse_jsonrpc_member_per_dialect)
{
	struct ward__rpc_codec c = codex(), s = strict();
	struct ward__rpc_msg m;
	struct ward__rpc_failure f;

	ASSERT_OK(parse(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &m, &f));
	ASSERT_EQ(m.kind, WARD_RPC_REQUEST);
	ward__rpc_msg_release(&m);
	REFUSED(&s, "{\"id\":1,\"method\":\"ping\"}", -EBADMSG, WARD_RPC_INVALID_REQUEST, &f);
	ASSERT_EQ(f.id.num, 1);
	ASSERT_CONTAINS(f.message, "\"jsonrpc\":\"2.0\" is missing");
	REFUSED(&s, "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", -EBADMSG,
		WARD_RPC_INVALID_REQUEST, &f);
	REFUSED(&s, "{\"jsonrpc\":2.0,\"id\":1,\"method\":\"ping\"}", -EBADMSG,
		WARD_RPC_INVALID_REQUEST, &f);

	/* Codex: optional, but a present one must still say 2.0. */
	ASSERT_OK(parse(&c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &m, &f));
	ward__rpc_msg_release(&m);
	ASSERT_OK(parse(&c, "{\"id\":1,\"method\":\"ping\"}", &m, &f));
	ward__rpc_msg_release(&m);
	REFUSED(&c, "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", -EBADMSG,
		WARD_RPC_INVALID_REQUEST, &f);
	ASSERT_EQ(f.id.num, 1);

	/* Unknown members are ignored, as JSON-RPC and Codex's serde types do. */
	ASSERT_OK(parse(&c, "{\"id\":1,\"method\":\"ping\",\"extra\":[1,{\"a\":2}]}", &m, &f));
	ward__rpc_msg_release(&m);
}

TEST(rpc_parse_responses)
{
	struct ward__rpc_codec c = codex(), s = strict();
	struct ward__rpc_msg m;
	struct ward__rpc_failure f;

	ASSERT_OK(parse(&c, "{\"id\":1,\"result\":{\"sessionId\":\"x\"}}", &m, &f));
	ASSERT_EQ(m.kind, WARD_RPC_RESULT);
	ASSERT_EQ(m.id.num, 1);
	ASSERT_TRUE(json_is_object(m.result));
	ward__rpc_msg_release(&m);
	ASSERT_OK(parse(&c, "{\"id\":\"q\",\"result\":null}", &m, &f));
	ASSERT_EQ(m.kind, WARD_RPC_RESULT);
	ASSERT_TRUE(json_is_null(m.result));
	ward__rpc_msg_release(&m);

	ASSERT_OK(parse(&s,
			"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
			"\"message\":\"bad\",\"data\":{\"x\":1}}}",
			&m, &f));
	ASSERT_EQ(m.kind, WARD_RPC_ERROR);
	ASSERT_EQ(m.id.type, WARD_RPC_ID_NULL);
	ASSERT_EQ(m.error_code, -32700);
	ASSERT_STREQ(m.error_message, "bad");
	ASSERT_TRUE(json_is_object(m.error_data));
	ward__rpc_msg_release(&m);
	ASSERT_OK(parse(&c, "{\"id\":-1,\"error\":{\"code\":-32600,\"message\":\"\"}}", &m, &f));
	ASSERT_EQ(m.id.num, -1);
	ASSERT_TRUE(m.error_data == NULL);
	ward__rpc_msg_release(&m);

	REFUSED(&c, "{\"result\":1}", -EBADMSG, WARD_RPC_INVALID_REQUEST, &f);
	REFUSED(&c, "{\"error\":{\"code\":1,\"message\":\"m\"}}", -EBADMSG,
		WARD_RPC_INVALID_REQUEST, &f);
	REFUSED(&c, "{\"id\":1,\"result\":1,\"error\":{\"code\":1,\"message\":\"m\"}}", -EBADMSG,
		WARD_RPC_INVALID_REQUEST, &f);
	ASSERT_EQ(f.id.num, 1);
	REFUSED(&c, "{\"id\":1,\"error\":[]}", -EBADMSG, WARD_RPC_INVALID_REQUEST, &f);
	REFUSED(&c, "{\"id\":1,\"error\":{\"code\":1.0,\"message\":\"m\"}}", -EBADMSG,
		WARD_RPC_INVALID_REQUEST, &f);
	REFUSED(&c, "{\"id\":1,\"error\":{\"code\":\"1\",\"message\":\"m\"}}", -EBADMSG,
		WARD_RPC_INVALID_REQUEST, &f);
	REFUSED(&c, "{\"id\":1,\"error\":{\"code\":1}}", -EBADMSG, WARD_RPC_INVALID_REQUEST, &f);
	REFUSED(&c, "{\"id\":1,\"error\":{\"code\":1,\"message\":null}}", -EBADMSG,
		WARD_RPC_INVALID_REQUEST, &f);
}

TEST(rpc_parse_batches_and_scalars)
{
	struct ward__rpc_codec c = codex();
	struct ward__rpc_failure f;

	REFUSED(&c, "[{\"id\":1,\"method\":\"m\"}]", -EBADMSG, WARD_RPC_INVALID_REQUEST, &f);
	ASSERT_TRUE(f.batch);
	ASSERT_CONTAINS(f.message, "batches are not supported");
	ASSERT_EQ(f.id.type, WARD_RPC_ID_NULL);
	REFUSED(&c, " []", -EBADMSG, WARD_RPC_INVALID_REQUEST, &f);
	ASSERT_TRUE(f.batch);
	ASSERT_CONTAINS(f.message, "empty batch");

	static const char *const scalars[] = {"1", "\"x\"", "null", "true", " 3 "};
	for (size_t i = 0; i < ELEMENTSOF(scalars); i++) {
		REFUSED(&c, scalars[i], -EBADMSG, WARD_RPC_INVALID_REQUEST, &f);
		ASSERT_FALSE(f.batch);
	}
	/* A batch that is not even JSON is a parse error (JSON-RPC 2.0, section 7). */
	REFUSED(&c, "[{\"id\":1,\"method\":\"m\"},", -EBADMSG, WARD_RPC_PARSE_ERROR, &f);
}

TEST(rpc_parse_errors)
{
	struct ward__rpc_codec c = codex();
	struct ward__rpc_msg m;
	struct ward__rpc_failure f;

	static const char *const bad[] = {
		"",
		"   ",
		"{",
		"{\"id\":1,",
		"{\"id\":1,\"method\":\"m\"} x",
		"{\"id\":1,\"method\":\"m\"}{}",
		"{'id':1}",
		"{\"id\":01,\"method\":\"m\"}",
		"{\"id\":1,\"method\":\"m\",}",
		"{\"method\":\"\xff\"}",
		"{\"method\":\"\xc0\xaf\"}", /* overlong '/' */
		"{\"method\":\"\xed\xa0\x80\"}", /* a UTF-8 encoded surrogate */
		"{\"method\":\"\xf4\x90\x80\x80\"}", /* past U+10FFFF */
		"{\"method\":\"\\ud800\"}", /* unpaired surrogate escape */
		"{\"method\":\"a\\u0000b\"}",
		"{\"method\":\"tab\tinside\"}", /* a raw control character in a string */
		"\xef\xbb\xbf{\"method\":\"m\"}", /* a byte order mark */
		"{\"id\":99999999999999999999,\"method\":\"m\"}",
		"{\"id\":1,\"method\":\"m\",\"params\":[1e999]}",
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		REFUSED(&c, bad[i], -EBADMSG, WARD_RPC_PARSE_ERROR, &f);
		/* JSON-RPC 2.0: the id of an answer to a parse error is null. */
		ASSERT_EQ(f.id.type, WARD_RPC_ID_NULL);
		ASSERT_CONTAINS(f.message, "invalid JSON");
	}

	/* A raw NUL byte, inside or outside a string. */
	static const char nul1[] = "{\"method\":\"a\0b\"}";
	static const char nul2[] = "{\"method\":\"m\"}\0";
	ASSERT_EQ(ward__rpc_parse(&c, nul1, sizeof(nul1) - 1, &m, &f), -EBADMSG);
	ASSERT_EQ(f.code, WARD_RPC_PARSE_ERROR);
	ASSERT_STREQ(f.message, "invalid JSON: NUL byte at offset 12");
	ASSERT_EQ(ward__rpc_parse(&c, nul2, sizeof(nul2) - 1, &m, &f), -EBADMSG);
	ASSERT_EQ(f.code, WARD_RPC_PARSE_ERROR);

	/* Trailing JSON whitespace (a CR left by CRLF framing) is fine. */
	ASSERT_OK(parse(&c, "\t{\"method\":\"m\"} \r", &m, &f));
	ward__rpc_msg_release(&m);

	/* Bytes of the input quoted by the message become '?'. */
	REFUSED(&c, "{\"id\":\x01\x02}", -EBADMSG, WARD_RPC_PARSE_ERROR, &f);
	ASSERT_TRUE(strchr(f.message, '\x01') == NULL);
}

TEST(rpc_parse_duplicate_keys)
{
	struct ward__rpc_codec c = codex();
	struct ward__rpc_failure f;

	REFUSED(&c, "{\"id\":1,\"id\":2,\"method\":\"m\"}", -EBADMSG, WARD_RPC_INVALID_REQUEST, &f);
	ASSERT_EQ(f.id.type, WARD_RPC_ID_NULL);
	ASSERT_CONTAINS(f.message, "duplicate");
	REFUSED(&c, "{\"id\":1,\"method\":\"m\",\"params\":{\"a\":1,\"a\":1}}", -EBADMSG,
		WARD_RPC_INVALID_REQUEST, &f);
	REFUSED(&c, "{\"id\":1,\"method\":\"m\",\"method\":\"n\"}", -EBADMSG,
		WARD_RPC_INVALID_REQUEST, &f);
}

static char *nested(unsigned levels, const char *id)
{
	char *open = repeat('[', levels), *close = repeat(']', levels);
	char *s = str_printf("{\"id\":%s,\"method\":\"m\",\"params\":%s%s}", id, open, close);

	free(open);
	free(close);
	return s;
}

TEST(rpc_parse_depth_limit)
{
	struct ward__rpc_codec c = codex();
	struct ward__rpc_msg m;
	struct ward__rpc_failure f;
	/* The top-level object is one level: 127 arrays inside make 128. */
	char *ok = nested(WARD_RPC_DEFAULT_MAX_DEPTH - 1, "7");
	char *deep = nested(WARD_RPC_DEFAULT_MAX_DEPTH, "7");
	char *very = nested(100000, "\"deep\"");
	char *in_string;

	ASSERT_OK(parse(&c, ok, &m, &f));
	ward__rpc_msg_release(&m);
	REFUSED(&c, deep, -EMSGSIZE, WARD_RPC_INVALID_REQUEST, &f);
	ASSERT_TRUE(f.too_large);
	ASSERT_STREQ(f.message, "message nested deeper than 128 levels");
	/* The id came before the violation: the answer carries it. */
	ASSERT_EQ(f.id.type, WARD_RPC_ID_INT);
	ASSERT_EQ(f.id.num, 7);
	REFUSED(&c, very, -EMSGSIZE, WARD_RPC_INVALID_REQUEST, &f);
	ASSERT_STREQ(f.id.str, "deep");

	/* Brackets inside strings are text, not nesting. */
	char *brackets = repeat('[', 5000);
	in_string = str_printf("{\"id\":1,\"method\":\"m\",\"params\":[\"%s\\\"[\"]}", brackets);
	ASSERT_OK(parse(&c, in_string, &m, &f));
	ward__rpc_msg_release(&m);
	free(brackets);
	free(in_string);
	free(ok);
	free(deep);
	free(very);

	/* Objects nest too. */
	struct ward__rpc_limits l = {.max_bytes = 1000, .max_depth = 3, .max_values = 100};
	ASSERT_OK(ward__rpc_codec_init(&c, WARD_RPC_CODEX, &l));
	ASSERT_OK(parse(&c, "{\"method\":\"m\",\"params\":{\"a\":{\"b\":1}}}", &m, &f));
	ward__rpc_msg_release(&m);
	REFUSED(&c, "{\"method\":\"m\",\"params\":{\"a\":{\"b\":{}}}}", -EMSGSIZE,
		WARD_RPC_INVALID_REQUEST, &f);
}

TEST(rpc_parse_value_limit)
{
	struct ward__rpc_limits l = {.max_bytes = 1 << 20, .max_depth = 16, .max_values = 10};
	struct ward__rpc_codec c;
	struct ward__rpc_msg m;
	struct ward__rpc_failure f;

	ASSERT_OK(ward__rpc_codec_init(&c, WARD_RPC_CODEX, &l));
	/* object + id + method + params array = 4, and 6 elements: 10 exactly. Keys do not count. */
	ASSERT_OK(parse(&c, "{\"id\":1,\"method\":\"m\",\"params\":[1,\"a\",true,null,{},[]]}", &m,
			&f));
	ward__rpc_msg_release(&m);
	REFUSED(&c, "{\"id\":1,\"method\":\"m\",\"params\":[1,\"a\",true,null,{},[],-2.5e3]}",
		-EMSGSIZE, WARD_RPC_INVALID_REQUEST, &f);
	ASSERT_TRUE(f.too_large);
	ASSERT_EQ(f.id.num, 1);
	ASSERT_STREQ(f.message, "message has more than 10 JSON values");
	/* Object members: keys are free, values count. */
	ASSERT_OK(parse(&c,
			"{\"id\":1,\"method\":\"m\",\"params\":{\"a\":1,\"b\":2,\"c\":3,"
			"\"d\":4,\"e\":5,\"f\":6}}",
			&m, &f));
	ward__rpc_msg_release(&m);

	/* The default: 256 Ki values, as Codex. */
	c = codex();
	size_t n = WARD_RPC_DEFAULT_MAX_VALUES;
	struct ward__buf b;
	ASSERT_OK(ward__buf_init(&b, 8u << 20));
	ASSERT_OK(ward__buf_append_str(&b, "{\"id\":1,\"method\":\"m\",\"params\":[0"));
	/* 5 values so far with the first element: n - 5 more reach the limit exactly. */
	for (size_t i = 0; i < n - 5; i++)
		ASSERT_OK(ward__buf_append_str(&b, ",0"));
	ASSERT_OK(ward__buf_append_str(&b, "]}"));
	ASSERT_OK(ward__rpc_parse(&c, b.data, b.len, &m, &f));
	ASSERT_EQ(json_array_size(m.params), n - 4);
	ward__rpc_msg_release(&m);
	b.len -= 2;
	ASSERT_OK(ward__buf_append_str(&b, ",0]}"));
	ASSERT_EQ(ward__rpc_parse(&c, b.data, b.len, &m, &f), -EMSGSIZE);
	ward__buf_release(&b);
}

TEST(rpc_parse_byte_limit_and_oversized_prefix)
{
	struct ward__rpc_limits l = {.max_bytes = 40, .max_depth = 16, .max_values = 100};
	struct ward__rpc_codec c;
	struct ward__rpc_msg m;
	struct ward__rpc_failure f;
	const char *exact = "{\"id\":12,\"method\":\"m\",\"params\":[123456]}"; /* 40 bytes */

	ASSERT_EQ(strlen(exact), 40);
	ASSERT_OK(ward__rpc_codec_init(&c, WARD_RPC_CODEX, &l));
	ASSERT_OK(parse(&c, exact, &m, &f));
	ward__rpc_msg_release(&m);
	REFUSED(&c, "{\"id\":12,\"method\":\"m\",\"params\":[1234567]}", -EMSGSIZE,
		WARD_RPC_INVALID_REQUEST, &f);
	ASSERT_TRUE(f.too_large);
	ASSERT_STREQ(f.message, "message larger than 40 bytes");
	ASSERT_EQ(f.id.num, 12);

	/* Prefixes of a message too large to keep: the id only when complete. */
	static const struct {
		const char *prefix;
		enum ward__rpc_id_type type;
		int64_t num;
		const char *str;
	} cases[] = {
		{"{\"id\":123,\"method\"", WARD_RPC_ID_INT, 123, NULL},
		{"{\"id\":12", WARD_RPC_ID_NULL, 0, NULL},
		{"{\"id\":\"ab\\\"c\"", WARD_RPC_ID_STRING, 0, "ab\"c"},
		{"{\"id\":\"abc", WARD_RPC_ID_NULL, 0, NULL},
		{" { \"method\" : \"x\" , \"id\" : -4 ,", WARD_RPC_ID_INT, -4, NULL},
		{"{\"params\":{\"id\":5},\"id\":6}", WARD_RPC_ID_INT, 6, NULL},
		{"{\"params\":{\"id\":5}", WARD_RPC_ID_NULL, 0, NULL},
		{"{\"method\":\"\\\"id\\\":5\",", WARD_RPC_ID_NULL, 0, NULL},
		{"{\"id\":true,", WARD_RPC_ID_NULL, 0, NULL},
		{"{\"id\":[1],", WARD_RPC_ID_NULL, 0, NULL},
		{"{\"id\":1.5,", WARD_RPC_ID_NULL, 0, NULL},
		{"{\"id\":1,\"id\":2,", WARD_RPC_ID_INT, 1, NULL},
		{"[{\"id\":1,", WARD_RPC_ID_NULL, 0, NULL},
		{"{\"xid\":1,", WARD_RPC_ID_NULL, 0, NULL},
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		ward__rpc_fail_oversized(&c, cases[i].prefix, strlen(cases[i].prefix), &f);
		ASSERT_EQ(f.code, WARD_RPC_INVALID_REQUEST);
		ASSERT_TRUE(f.too_large);
		if (f.id.type != cases[i].type)
			tap_fail(__FILE__, __LINE__, "case %zu: id type %d, want %d", i, f.id.type,
				 cases[i].type);
		if (cases[i].type == WARD_RPC_ID_INT)
			ASSERT_EQ(f.id.num, cases[i].num);
		if (cases[i].str)
			ASSERT_STREQ(f.id.str, cases[i].str);
	}
	ward__rpc_fail_oversized(&c, "[", 1, &f);
	ASSERT_TRUE(f.batch);
	ward__rpc_fail_oversized(&c, NULL, 0, &f);
	ASSERT_EQ(f.id.type, WARD_RPC_ID_NULL);
}

/* ------------------------------------------------------------------ jsonrpc: encode */

#define ENCODES(expr, out, want)                                            \
	do {                                                                \
		ward__buf_clear(out);                                       \
		ASSERT_OK(expr);                                            \
		ASSERT_STREQ((const char *)(out)->data, want);              \
		ASSERT_TRUE(memchr((out)->data, '\n', (out)->len) == NULL); \
	} while (0)

TEST(rpc_encode_both_dialects)
{
	struct ward__rpc_codec c = codex(), s = strict();
	struct ward__rpc_id one = ward__rpc_id_int(1), null = ward__rpc_id_null();
	struct ward__rpc_id sid = {.type = WARD_RPC_ID_STRING, .str = "a\"b", .len = 3};
	struct ward__buf out;
	json_t *params = json_pack("{s:s}", "clientName", "c");
	json_t *empty = json_object();
	json_t *arr = json_pack("[i,s]", 1, "x");

	ASSERT_OK(ward__buf_init(&out, 4096));
	ENCODES(ward__rpc_encode_request(&c, &out, &one, "initialize", params), &out,
		"{\"id\":1,\"method\":\"initialize\",\"params\":{\"clientName\":\"c\"}}");
	ENCODES(ward__rpc_encode_request(&s, &out, &sid, "ping", NULL), &out,
		"{\"jsonrpc\":\"2.0\",\"id\":\"a\\\"b\",\"method\":\"ping\"}");
	ENCODES(ward__rpc_encode_notification(&c, &out, "initialized", empty), &out,
		"{\"method\":\"initialized\",\"params\":{}}");
	ENCODES(ward__rpc_encode_notification(&s, &out, "n", arr), &out,
		"{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":[1,\"x\"]}");
	ENCODES(ward__rpc_encode_result(&c, &out, &one, params), &out,
		"{\"id\":1,\"result\":{\"clientName\":\"c\"}}");
	ENCODES(ward__rpc_encode_result(&s, &out, &sid, NULL), &out,
		"{\"jsonrpc\":\"2.0\",\"id\":\"a\\\"b\",\"result\":null}");
	ENCODES(ward__rpc_encode_error(&c, &out, &one, -32601, "method not found: 'x'", NULL), &out,
		"{\"id\":1,\"error\":{\"code\":-32601,\"message\":\"method not found: 'x'\"}}");
	ENCODES(ward__rpc_encode_error(&s, &out, &null, -32700, "bad", arr), &out,
		"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"bad\","
		"\"data\":[1,\"x\"]}}");
	ENCODES(ward__rpc_encode_error(&c, &out, NULL, -32600, "x", NULL), &out,
		"{\"id\":null,\"error\":{\"code\":-32600,\"message\":\"x\"}}");
	json_decref(params);
	json_decref(empty);
	json_decref(arr);
	ward__buf_release(&out);
}

TEST(rpc_encode_is_one_line_and_valid_utf8)
{
	struct ward__rpc_codec c = codex();
	struct ward__rpc_id one = ward__rpc_id_int(1);
	struct ward__buf out;
	json_t *r = json_pack("{s:s}", "text", "line 1\nline 2\r\n\x01\xe2\x80\xa8");

	ASSERT_OK(ward__buf_init(&out, 4096));
	ENCODES(ward__rpc_encode_result(&c, &out, &one, r), &out,
		"{\"id\":1,\"result\":{\"text\":\"line 1\\nline 2\\r\\n\\u0001\xe2\x80\xa8\"}}");
	/* A message that is not UTF-8 is still sent, with U+FFFD in place of each bad byte. */
	ENCODES(ward__rpc_encode_error(&c, &out, &one, 1, "a\xff\xc0\xafz\xed\xa0\x80", NULL), &out,
		"{\"id\":1,\"error\":{\"code\":1,\"message\":\"a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz"
		"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"}}");
	ENCODES(ward__rpc_encode_error(&c, &out, &one, 1, "\xf0\x9f\x98\x80 \xf0\x9f", NULL), &out,
		"{\"id\":1,\"error\":{\"code\":1,\"message\":\"\xf0\x9f\x98\x80 "
		"\xef\xbf\xbd\xef\xbf\xbd\"}}");
	json_decref(r);
	ward__buf_release(&out);
}

TEST(rpc_encode_refusals_leave_out_unchanged)
{
	struct ward__rpc_codec c = codex();
	struct ward__rpc_id one = ward__rpc_id_int(1), none = {0}, null = ward__rpc_id_null();
	struct ward__rpc_id bad_utf8 = {.type = WARD_RPC_ID_STRING, .str = "\xff", .len = 1};
	struct ward__buf out, small;
	json_t *scalar = json_integer(3);
	json_t *bad = json_pack("{s:o}", "s", json_stringn_nocheck("\xff", 1));
	char *long_method = repeat('m', WARD_RPC_MAX_METHOD_LEN + 1);

	ASSERT_OK(ward__buf_init(&out, 4096));
	ASSERT_OK(ward__buf_append_str(&out, "keep"));
	ASSERT_EQ(ward__rpc_encode_request(&c, &out, &none, "m", NULL), -EINVAL);
	ASSERT_EQ(ward__rpc_encode_request(&c, &out, &null, "m", NULL), -EINVAL);
	ASSERT_EQ(ward__rpc_encode_request(&c, &out, &one, "", NULL), -EINVAL);
	ASSERT_EQ(ward__rpc_encode_request(&c, &out, &one, long_method, NULL), -EINVAL);
	ASSERT_EQ(ward__rpc_encode_request(&c, &out, &one, "m", scalar), -EINVAL);
	ASSERT_EQ(ward__rpc_encode_request(&c, &out, &bad_utf8, "m", NULL), -EINVAL);
	ASSERT_EQ(ward__rpc_encode_notification(&c, &out, "\xff", NULL), -EINVAL);
	ASSERT_EQ(ward__rpc_encode_notification(&c, &out, NULL, NULL), -EINVAL);
	ASSERT_EQ(ward__rpc_encode_result(&c, &out, &null, NULL), -EINVAL);
	ASSERT_EQ(ward__rpc_encode_result(&c, &out, &one, bad), -EINVAL);
	ASSERT_EQ(ward__rpc_encode_error(&c, &out, &one, 1, NULL, NULL), -EINVAL);
	ASSERT_EQ(out.len, 4);
	ASSERT_STREQ((const char *)out.data, "keep");
	/* Appending after what is there works. */
	ASSERT_OK(ward__rpc_encode_result(&c, &out, &one, scalar));
	ASSERT_STREQ((const char *)out.data, "keep{\"id\":1,\"result\":3}");

	/* Too small: -ENOBUFS, all or nothing, whether the buffer was empty or not. */
	ASSERT_OK(ward__buf_init(&small, 18)); /* the answer is 19 bytes */
	ASSERT_EQ(ward__rpc_encode_result(&c, &small, &one, scalar), -ENOBUFS);
	ASSERT_EQ(small.len, 0);
	ASSERT_OK(ward__buf_append_str(&small, "x"));
	ASSERT_EQ(ward__rpc_encode_result(&c, &small, &one, scalar), -ENOBUFS);
	ASSERT_EQ(small.len, 1);
	ward__buf_release(&small);
	ASSERT_OK(ward__buf_init(&small, 100));
	ASSERT_EQ(ward__rpc_encode_result(&c, &small, &one, bad), -EINVAL);
	ASSERT_EQ(small.len, 0);
	json_decref(scalar);
	json_decref(bad);
	free(long_method);
	ward__buf_release(&out);
	ward__buf_release(&small);
}

TEST(rpc_round_trip)
{
	for (int d = 0; d < 2; d++) {
		struct ward__rpc_codec c = codec(d ? WARD_RPC_CODEX : WARD_RPC_JSONRPC2);
		struct ward__rpc_id sid = {
			.type = WARD_RPC_ID_STRING, .str = "id-\xc3\xa9", .len = 5};
		struct ward__rpc_id big = ward__rpc_id_int(INT64_MIN);
		struct ward__buf out;
		struct ward__rpc_msg m;
		struct ward__rpc_failure f;
		json_t *p = json_pack("{s:[i,i],s:{s:b}}", "a", 1, 2, "b", "c", 1);

		ASSERT_OK(ward__buf_init(&out, 1 << 16));
		ASSERT_OK(ward__rpc_encode_request(&c, &out, &sid, "process/start", p));
		ASSERT_OK(ward__rpc_parse(&c, out.data, out.len, &m, &f));
		ASSERT_EQ(m.kind, WARD_RPC_REQUEST);
		ASSERT_STREQ(m.id.str, "id-\xc3\xa9");
		ASSERT_STREQ(m.method, "process/start");
		ASSERT_TRUE(json_equal(m.params, p));
		ward__rpc_msg_release(&m);

		ward__buf_clear(&out);
		ASSERT_OK(ward__rpc_encode_result(&c, &out, &big, p));
		ASSERT_OK(ward__rpc_parse(&c, out.data, out.len, &m, &f));
		ASSERT_EQ(m.kind, WARD_RPC_RESULT);
		ASSERT_TRUE(m.id.num == INT64_MIN);
		ASSERT_TRUE(json_equal(m.result, p));
		ward__rpc_msg_release(&m);

		/* A refusal, answered, parses back as an error response with the same id. */
		ASSERT_EQ(parse(&c, "{\"jsonrpc\":\"2.0\",\"id\":\"z\",\"method\":5}", &m, &f),
			  -EBADMSG);
		ward__buf_clear(&out);
		ASSERT_OK(ward__rpc_encode_failure(&c, &out, &f));
		ASSERT_OK(ward__rpc_parse(&c, out.data, out.len, &m, &f));
		ASSERT_EQ(m.kind, WARD_RPC_ERROR);
		ASSERT_STREQ(m.id.str, "z");
		ASSERT_EQ(m.error_code, WARD_RPC_INVALID_REQUEST);
		ASSERT_STREQ(m.error_message, "invalid request: \"method\" must be a string");
		ward__rpc_msg_release(&m);
		json_decref(p);
		ward__buf_release(&out);
	}
}

/* ------------------------------------------------------------------ lines */

/* Expects the next event on s (a C string) from offset *off, checking line and consumed bytes. */
#define NEXT(l, s, off, want_ev, want_line)                                                 \
	do {                                                                                \
		struct ward__line _line = {0};                                              \
		size_t _used = 0, _len = strlen(s);                                         \
		int _ev = ward__lines_next(l, (s) + *(off), _len - *(off), &_used, &_line); \
		ASSERT_EQ(_ev, want_ev);                                                    \
		ASSERT_LE(_used, _len - *(off));                                            \
		*(off) += _used;                                                            \
		if ((want_ev) != WARD_LINES_NEED_MORE) {                                    \
			const char *_w = (want_line);                                       \
			ASSERT_EQ(_line.len, strlen(_w));                                   \
			ASSERT_TRUE(memcmp(_line.data, _w, _line.len) == 0);                \
		} else {                                                                    \
			ASSERT_EQ(*(off), _len);                                            \
		}                                                                           \
	} while (0)

TEST(lines_whole_and_split)
{
	struct ward__lines l;
	struct ward__line line;
	size_t off = 0;

	ASSERT_EQ(ward__lines_init(&l, 0), -EINVAL);
	ASSERT_EQ(ward__lines_init(&l, WARD_LINES_MAX_LINE + 1), -EINVAL);
	ASSERT_OK(ward__lines_init(&l, 100));
	ASSERT_TRUE(l.partial.data == NULL); /* nothing allocated until a line straddles */

	const char *a = "a\nbb\n\n\r\nc\r\rd\r\n";
	NEXT(&l, a, &off, WARD_LINES_LINE, "a");
	ASSERT_EQ(off, 2);
	NEXT(&l, a, &off, WARD_LINES_LINE, "bb");
	NEXT(&l, a, &off, WARD_LINES_LINE, "");
	NEXT(&l, a, &off, WARD_LINES_LINE, "");
	NEXT(&l, a, &off, WARD_LINES_LINE, "c\r\rd"); /* only the "\r" of the CRLF goes */
	NEXT(&l, a, &off, WARD_LINES_NEED_MORE, "");
	ASSERT_TRUE(l.partial.data == NULL);

	/* A line across three reads, the CRLF split between two. */
	off = 0;
	NEXT(&l, "{\"id\"", &off, WARD_LINES_NEED_MORE, "");
	off = 0;
	NEXT(&l, ":1}\r", &off, WARD_LINES_NEED_MORE, "");
	off = 0;
	NEXT(&l, "\nnext", &off, WARD_LINES_LINE, "{\"id\":1}");
	ASSERT_EQ(off, 1);
	NEXT(&l, "\nnext", &off, WARD_LINES_NEED_MORE, "");
	ASSERT_EQ(ward__lines_finish(&l, &line), WARD_LINES_LINE);
	ASSERT_EQ(line.len, 4);
	ASSERT_TRUE(memcmp(line.data, "next", 4) == 0);
	ASSERT_EQ(ward__lines_finish(&l, &line), WARD_LINES_NEED_MORE);

	/* A last line that ends in a lone "\r" loses it, as with CRLF. */
	off = 0;
	NEXT(&l, "tail\r", &off, WARD_LINES_NEED_MORE, "");
	ASSERT_EQ(ward__lines_finish(&l, &line), WARD_LINES_LINE);
	ASSERT_EQ(line.len, 4);

	/* NUL bytes are bytes: the codec refuses them, not the framing. */
	size_t used;
	ASSERT_EQ(ward__lines_next(&l, "a\0b\nc", 5, &used, &line), WARD_LINES_LINE);
	ASSERT_EQ(used, 4);
	ASSERT_EQ(line.len, 3);
	ward__lines_release(&l);
	ward__lines_release(&l);
}

TEST(lines_limit_is_exact)
{
	struct ward__lines l;
	size_t off;

	ASSERT_OK(ward__lines_init(&l, 4));
	off = 0;
	NEXT(&l, "abcd\nabcd\r\nabcde\nok\n", &off, WARD_LINES_LINE, "abcd");
	NEXT(&l, "abcd\nabcd\r\nabcde\nok\n", &off, WARD_LINES_LINE, "abcd");
	NEXT(&l, "abcd\nabcd\r\nabcde\nok\n", &off, WARD_LINES_TOO_LONG, "abcd");
	/* That one's "\n" was in sight: consumed with it, nothing to skip. */
	ASSERT_FALSE(l.discarding);
	NEXT(&l, "abcd\nabcd\r\nabcde\nok\n", &off, WARD_LINES_LINE, "ok");
	/* "abcde\r\n" is five bytes of content. */
	off = 0;
	NEXT(&l, "abcde\r\nz\n", &off, WARD_LINES_TOO_LONG, "abcd");
	NEXT(&l, "abcde\r\nz\n", &off, WARD_LINES_LINE, "z");
	ward__lines_release(&l);
}

TEST(lines_too_long_is_reported_once_and_skipped)
{
	struct ward__lines l;
	size_t off;

	ASSERT_OK(ward__lines_init(&l, 4));
	/* Whole in one read: reported as soon as 6 bytes show no "\n"; the rest is skipped. */
	off = 0;
	NEXT(&l, "0123456789", &off, WARD_LINES_TOO_LONG, "0123");
	ASSERT_EQ(off, 6);
	ASSERT_TRUE(l.discarding);
	NEXT(&l, "0123456789", &off, WARD_LINES_NEED_MORE, "");
	off = 0;
	NEXT(&l, "more and more", &off, WARD_LINES_NEED_MORE, "");
	off = 0;
	NEXT(&l, "end\nok\n", &off, WARD_LINES_LINE, "ok");
	ASSERT_FALSE(l.discarding);

	/* Across reads: "ab" kept, "cde" makes 5 bytes that cannot be a CRLF line. */
	off = 0;
	NEXT(&l, "ab", &off, WARD_LINES_NEED_MORE, "");
	off = 0;
	NEXT(&l, "cde", &off, WARD_LINES_TOO_LONG, "abcd");
	off = 0;
	NEXT(&l, "x\ny\n", &off, WARD_LINES_LINE, "y");

	/* "abcd\r" may still be a CRLF line; the next byte decides. */
	off = 0;
	NEXT(&l, "abcd\r", &off, WARD_LINES_NEED_MORE, "");
	off = 0;
	NEXT(&l, "\n", &off, WARD_LINES_LINE, "abcd");
	off = 0;
	NEXT(&l, "abcd\r", &off, WARD_LINES_NEED_MORE, "");
	off = 0;
	NEXT(&l, "x\nz\n", &off, WARD_LINES_TOO_LONG, "abcd");
	ASSERT_EQ(off, 1);
	NEXT(&l, "x\nz\n", &off, WARD_LINES_LINE, "z");

	/* A too-long last line without "\n" was reported already: finish has nothing. */
	struct ward__line line;
	off = 0;
	NEXT(&l, "0123456789", &off, WARD_LINES_TOO_LONG, "0123");
	NEXT(&l, "0123456789", &off, WARD_LINES_NEED_MORE, "");
	ASSERT_EQ(ward__lines_finish(&l, &line), WARD_LINES_NEED_MORE);
	ward__lines_release(&l);
}

TEST(lines_memory_is_bounded)
{
	struct ward__lines l;
	struct ward__line line;
	size_t used, total = 0, reports = 0;
	char *chunk = repeat('x', 65536);

	ASSERT_OK(ward__lines_init(&l, 1000));
	/* 64 MiB without a newline, in odd-sized pieces. */
	for (size_t i = 0; i < 1024; i++) {
		size_t n = 65536 - (i % 7), off = 0;

		while (off < n) {
			int ev = ward__lines_next(&l, chunk + off, n - off, &used, &line);

			ASSERT_GE(ev, 0);
			off += used;
			total += used;
			if (ev == WARD_LINES_TOO_LONG) {
				reports++;
				ASSERT_EQ(line.len, 1000);
			}
			ASSERT_LE(l.partial.len, 1001);
			ASSERT_LE(l.partial.alloc, 1002);
			if (ev == WARD_LINES_NEED_MORE)
				break;
		}
	}
	ASSERT_EQ(reports, 1);
	ASSERT_EQ(ward__lines_next(&l, "\nfine\n", 6, &used, &line), WARD_LINES_LINE);
	ASSERT_EQ(line.len, 4);
	free(chunk);
	ward__lines_release(&l);
}

/* ------------------------------------------------------------------ http */

/* What python3-websockets 10.4 sends (plus a token), and a first frame right behind it. */
static const char py_request[] =
	"GET /?x=1 HTTP/1.1\r\n"
	"Host: 127.0.0.1:4242\r\n"
	"Upgrade: websocket\r\n"
	"Connection: Upgrade\r\n"
	"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	"Sec-WebSocket-Version: 13\r\n"
	"Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n"
	"User-Agent: Python/3.11 websockets/10.4\r\n"
	"Authorization: Bearer s3cr3t-T0ken_~+/==\r\n"
	"\r\n"
	"\x81\x85";

static int feed_str(struct ward__http_parser *p, const char *s, size_t *consumed)
{
	return ward__http_feed(p, s, strlen(s), consumed);
}

static void check_py_request(const struct ward__http_request *req)
{
	ASSERT_STREQ(req->method, "GET");
	ASSERT_STREQ(req->path, "/");
	ASSERT_STREQ(req->query, "x=1");
	ASSERT_EQ(req->version_minor, 1);
	ASSERT_STREQ(req->host, "127.0.0.1:4242");
	ASSERT_STREQ(req->upgrade, "websocket");
	ASSERT_TRUE(req->upgrade_websocket);
	ASSERT_TRUE(req->connection_upgrade);
	ASSERT_FALSE(req->connection_close);
	ASSERT_STREQ(req->ws_key, "dGhlIHNhbXBsZSBub25jZQ==");
	ASSERT_TRUE(req->ws_key_valid);
	ASSERT_STREQ(req->ws_version, "13");
	ASSERT_FALSE(req->has_origin);
	ASSERT_FALSE(req->has_body);
	ASSERT_STREQ(req->authorization, "Bearer s3cr3t-T0ken_~+/==");
	ASSERT_EQ(req->bearer_len, strlen("s3cr3t-T0ken_~+/=="));
	ASSERT_TRUE(memcmp(req->bearer, "s3cr3t-T0ken_~+/==", req->bearer_len) == 0);
	ASSERT_EQ(req->n_fields, 8);
	ASSERT_STREQ(req->fields[5].name, "Sec-WebSocket-Extensions");
	ASSERT_STREQ(req->fields[5].value, "permessage-deflate; client_max_window_bits");
	ASSERT_EQ(ward__http_check_upgrade(req, NULL), 0);
}

TEST(http_upgrade_request_whole_and_byte_by_byte)
{
	struct ward__http_parser p;
	size_t used, head_len = strlen(py_request) - 2;

	ASSERT_OK(ward__http_parser_init(&p, NULL));
	ASSERT_EQ(feed_str(&p, py_request, &used), WARD_HTTP_DONE);
	/* The frame bytes after the head are not the parser's. */
	ASSERT_EQ(used, head_len);
	check_py_request(&p.request);
	ASSERT_EQ(feed_str(&p, "more", &used), WARD_HTTP_DONE);
	ASSERT_EQ(used, 0);
	ward__http_parser_release(&p);

	ASSERT_OK(ward__http_parser_init(&p, NULL));
	for (size_t i = 0; i < head_len; i++) {
		int r = ward__http_feed(&p, py_request + i, 1, &used);

		ASSERT_EQ(used, 1);
		ASSERT_EQ(r, i + 1 == head_len ? WARD_HTTP_DONE : WARD_HTTP_AGAIN);
	}
	check_py_request(&p.request);
	ward__http_parser_release(&p);
	ward__http_parser_release(&p);
}

TEST(http_names_and_tokens_are_case_insensitive)
{
	struct ward__http_parser p;
	size_t used;

	ASSERT_OK(ward__http_parser_init(&p, NULL));
	ASSERT_EQ(
		feed_str(
			&p,
			"GET / HTTP/1.1\r\nhOsT: localhost\r\nUPGRADE: WebSocket\r\n"
			"connection: keep-alive\r\nConnection:  ,Upgrade , close \t\r\n"
			"sec-websocket-key: AAAAAAAAAAAAAAAAAAAAAA==\r\nSEC-WEBSOCKET-VERSION:13\r\n"
			"origin: null\r\nauthorization: bearer   tok\r\nX-Bytes: caf\xc3\xa9\r\n\r\n",
			&used),
		WARD_HTTP_DONE);
	ASSERT_STREQ(p.request.host, "localhost");
	ASSERT_TRUE(p.request.upgrade_websocket);
	ASSERT_TRUE(p.request.connection_upgrade);
	ASSERT_TRUE(p.request.connection_close);
	ASSERT_TRUE(p.request.ws_key_valid);
	ASSERT_TRUE(p.request.has_origin);
	ASSERT_EQ(p.request.bearer_len, 3);
	ASSERT_EQ(ward__http_check_upgrade(&p.request, NULL), 0);
	ward__http_parser_release(&p);
}

TEST(http_refusals)
{
	static const struct {
		const char *head;
		int status;
	} cases[] = {
		{"GET / HTTP/1.1\nHost: x\n\n", 400},
		{"GET / HTTP/1.1\r\nHost: x\n\r\n", 400},
		{"GET / HTTP/1.1\r\nHost: x\rX\r\n\r\n", 400},
		{"GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400},
		{"GET / HTTP/1.1\r\nHost: x\r\n\tfolded\r\n\r\n", 400},
		{"GET / HTTP/1.1\r\nHost : x\r\n\r\n", 400},
		{"GET / HTTP/1.1\r\n: x\r\nHost: x\r\n\r\n", 400},
		{"GET / HTTP/1.1\r\nHost x\r\n\r\n", 400},
		{"GET / HTTP/1.1\r\nHo(st: x\r\n\r\n", 400},
		{"GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"GET / HTTP/1.1 \r\nHost: x\r\n\r\n", 400},
		{" GET / HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"GET /\r\nHost: x\r\n\r\n", 400},
		{"G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505},
		{"GET / HTTP/1.2\r\nHost: x\r\n\r\n", 505},
		{"GET / HTTP/0.9\r\nHost: x\r\n\r\n", 505},
		{"GET / HTTPS/1.1\r\nHost: x\r\n\r\n", 400},
		{"GET / http/1.1\r\nHost: x\r\n\r\n", 400},
		{"GET / HTTP/1.10\r\nHost: x\r\n\r\n", 400},
		{"GET http://x/ HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"GET / HTTP/1.1\r\n\r\n", 400},
		{"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400},
		{"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
		{"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400},
		{"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", 400},
		{"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
		{"HEAD / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n", 400},
		{"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
		 400},
		{"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: x\r\n\r\n",
		 400},
		{"GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n",
		 400},
		{"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nUpgrade: websocket\r\n\r\n",
		 400},
		{"GET / HTTP/1.1\r\nHost: x\r\nSec-WebSocket-Key: a\r\nSec-WebSocket-Key: a\r\n\r\n",
		 400},
		{"GET / HTTP/1.1\r\nHost: x\r\nX: a\x01b\r\n\r\n", 400},
		{"GET / HTTP/1.1\r\nHost: x\r\nX: a\x7f\r\n\r\n", 400},
		{"\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", 400},
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct ward__http_parser p;
		size_t used;
		int r;

		ASSERT_OK(ward__http_parser_init(&p, NULL));
		r = feed_str(&p, cases[i].head, &used);
		if (r != WARD_HTTP_ERROR || p.status != cases[i].status)
			tap_fail(__FILE__, __LINE__,
				 "case %zu: result %d status %d, want status %d", i, r, p.status,
				 cases[i].status);
		ASSERT_TRUE(p.reason && p.reason[0]);
		ASSERT_LE(used, strlen(cases[i].head));
		ASSERT_EQ(feed_str(&p, "x", &used), WARD_HTTP_ERROR);
		ASSERT_EQ(used, 0);
		ward__http_parser_release(&p);
	}

	/* A NUL byte anywhere. */
	struct ward__http_parser p;
	size_t used;
	ASSERT_OK(ward__http_parser_init(&p, NULL));
	ASSERT_EQ(ward__http_feed(&p, "GET /\0 HTTP/1.1\r\n\r\n", 19, &used), WARD_HTTP_ERROR);
	ASSERT_EQ(p.status, 400);
	ward__http_parser_release(&p);

	/* Accepted: HTTP/1.0 without Host, obs-text in a value, a POST with a body (405 later). */
	static const char *const fine[] = {
		"GET /readyz HTTP/1.0\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\nX: \xff\xfe\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n",
		"GET / HTTP/1.1\r\nHost:\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n",
	};
	for (size_t i = 0; i < ELEMENTSOF(fine); i++) {
		ASSERT_OK(ward__http_parser_init(&p, NULL));
		ASSERT_EQ(feed_str(&p, fine[i], &used), WARD_HTTP_DONE);
		ASSERT_EQ(used, strlen(fine[i]));
		ward__http_parser_release(&p);
	}
	ASSERT_OK(ward__http_parser_init(&p, NULL));
	ASSERT_EQ(feed_str(&p, fine[2], &used), WARD_HTTP_DONE);
	ASSERT_TRUE(p.request.has_body);
	ASSERT_STREQ(p.request.method, "POST");
	ward__http_parser_release(&p);
}

TEST(http_limits_are_exact)
{
	struct ward__http_limits l = {.max_head = 64, .max_line = 30, .max_fields = 2};
	struct ward__http_parser p;
	size_t used;
	char head[256];

	ASSERT_EQ(ward__http_parser_init(&p, &(struct ward__http_limits){17, 14, 1}), -EINVAL);
	ASSERT_EQ(ward__http_parser_init(&p, &(struct ward__http_limits){64, 65, 1}), -EINVAL);
	ASSERT_EQ(ward__http_parser_init(
			  &p, &(struct ward__http_limits){WARD_HTTP_MAX_MAX_HEAD + 1, 100, 1}),
		  -EINVAL);

	/* A request line of exactly 30 bytes, then 31. */
	ASSERT_OK(ward__http_parser_init(&p, &l));
	ASSERT_EQ(feed_str(&p, "GET /2345678901234567 HTTP/1.1\r\nHost: x\r\n\r\n", &used),
		  WARD_HTTP_DONE);
	ward__http_parser_release(&p);
	ASSERT_OK(ward__http_parser_init(&p, &l));
	ASSERT_EQ(feed_str(&p, "GET /23456789012345678 HTTP/1.1\r\n", &used), WARD_HTTP_ERROR);
	ASSERT_EQ(p.status, 414);
	ward__http_parser_release(&p);

	/* A field line of 30, then 31. */
	ASSERT_OK(ward__http_parser_init(&p, &l));
	ASSERT_EQ(feed_str(&p, "GET / HTTP/1.1\r\nHost: 678901234567890123456789\r\n\r\n", &used),
		  WARD_HTTP_DONE);
	ward__http_parser_release(&p);
	ASSERT_OK(ward__http_parser_init(&p, &l));
	ASSERT_EQ(feed_str(&p, "GET / HTTP/1.1\r\nHost: 6789012345678901234567890\r\n", &used),
		  WARD_HTTP_ERROR);
	ASSERT_EQ(p.status, 431);
	ward__http_parser_release(&p);

	/* Two fields, then three. */
	ASSERT_OK(ward__http_parser_init(&p, &l));
	ASSERT_EQ(feed_str(&p, "GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\n\r\n", &used), WARD_HTTP_DONE);
	ward__http_parser_release(&p);
	ASSERT_OK(ward__http_parser_init(&p, &l));
	ASSERT_EQ(feed_str(&p, "GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\n", &used),
		  WARD_HTTP_ERROR);
	ASSERT_EQ(p.status, 431);
	ward__http_parser_release(&p);

	/* A head of exactly 64 bytes, then 65. */
	l.max_line = 40;
	snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nHost: x\r\nA: %s\r\n\r\n",
		 "12345678901234567890123456789012");
	ASSERT_EQ(strlen(head), 64);
	ASSERT_OK(ward__http_parser_init(&p, &l));
	ASSERT_EQ(feed_str(&p, head, &used), WARD_HTTP_DONE);
	ASSERT_EQ(used, 64);
	ward__http_parser_release(&p);
	snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nHost: x\r\nA: %s\r\n\r\n",
		 "123456789012345678901234567890123");
	ASSERT_OK(ward__http_parser_init(&p, &l));
	ASSERT_EQ(feed_str(&p, head, &used), WARD_HTTP_ERROR);
	ASSERT_EQ(p.status, 431);
	ASSERT_EQ(used, 65);
	ASSERT_LE(p.head.alloc, 65);
	ward__http_parser_release(&p);
}

TEST(http_bearer_and_origin)
{
	static const struct {
		const char *value;
		const char *token;
	} cases[] = {
		{"Bearer abc.DEF-_~+/==", "abc.DEF-_~+/=="},
		{"bearer   tok", "tok"},
		{"BEARER t", "t"},
		{"Bearer", NULL},
		{"Bearer ", NULL},
		{"Bearer a b", NULL},
		{"Bearer tok=x", NULL},
		{"Bearer\ttok", NULL},
		{"Basic dXNlcjpwYXNz", NULL},
		{"Bearertok", NULL},
		{"Bearer t\xc3\xa9", NULL},
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct ward__http_parser p;
		char head[256];
		size_t used;

		snprintf(head, sizeof(head),
			 "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\n\r\n", cases[i].value);
		ASSERT_OK(ward__http_parser_init(&p, NULL));
		ASSERT_EQ(feed_str(&p, head, &used), WARD_HTTP_DONE);
		ASSERT_TRUE(p.request.authorization != NULL);
		if (!cases[i].token) {
			ASSERT_TRUE(p.request.bearer == NULL);
		} else {
			ASSERT_EQ(p.request.bearer_len, strlen(cases[i].token));
			ASSERT_TRUE(memcmp(p.request.bearer, cases[i].token,
					   p.request.bearer_len) == 0);
		}
		ward__http_parser_release(&p);
	}

	static const char *const origins[] = {"Origin: null", "origin: http://evil.example",
					      "Sec-WebSocket-Origin: x", "ORIGIN:"};
	for (size_t i = 0; i < ELEMENTSOF(origins); i++) {
		struct ward__http_parser p;
		char head[256];
		size_t used;

		snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nHost: x\r\n%s\r\n\r\n", origins[i]);
		ASSERT_OK(ward__http_parser_init(&p, NULL));
		ASSERT_EQ(feed_str(&p, head, &used), WARD_HTTP_DONE);
		ASSERT_TRUE(p.request.has_origin);
		ward__http_parser_release(&p);
	}
}

static int upgrade_status(const char *fields)
{
	struct ward__http_parser p;
	char head[1024];
	size_t used;
	int status;

	snprintf(head, sizeof(head), "%s\r\n\r\n", fields);
	if (ward__http_parser_init(&p, NULL) < 0 || feed_str(&p, head, &used) != WARD_HTTP_DONE)
		abort();
	status = ward__http_check_upgrade(&p.request, NULL);
	ward__http_parser_release(&p);
	return status;
}

#define UP_LINE "GET / HTTP/1.1\r\nHost: x\r\n"
#define UP_OK_FIELDS                                                                 \
	"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" \
	"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="

TEST(http_upgrade_checks)
{
	ASSERT_EQ(upgrade_status(UP_LINE UP_OK_FIELDS), 0);
	ASSERT_EQ(upgrade_status("GET / HTTP/1.0\r\n" UP_OK_FIELDS), 400);
	ASSERT_EQ(upgrade_status(UP_LINE "Accept: */*"), 426);
	ASSERT_EQ(upgrade_status(UP_LINE "Upgrade: h2c\r\nConnection: Upgrade\r\n"
					 "Sec-WebSocket-Version: 13\r\n"
					 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="),
		  400);
	ASSERT_EQ(upgrade_status(UP_LINE "Upgrade: websocket\r\nConnection: keep-alive\r\n"
					 "Sec-WebSocket-Version: 13\r\n"
					 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="),
		  400);
	ASSERT_EQ(upgrade_status(UP_LINE "Upgrade: websocket\r\nConnection: Upgrade\r\n"
					 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="),
		  400);
	ASSERT_EQ(upgrade_status(UP_LINE "Upgrade: websocket\r\nConnection: Upgrade\r\n"
					 "Sec-WebSocket-Version: 8\r\n"
					 "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="),
		  426);
	ASSERT_EQ(upgrade_status(UP_LINE "Upgrade: websocket\r\nConnection: Upgrade\r\n"
					 "Sec-WebSocket-Version: 13"),
		  400);
	ASSERT_EQ(upgrade_status(UP_LINE "Upgrade: websocket\r\nConnection: Upgrade\r\n"
					 "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: abc"),
		  400);
}

TEST(http_ws_key_and_accept)
{
	char accept[WARD_WS_ACCEPT_LEN + 1];

	ASSERT_TRUE(ward__http_ws_key_valid("dGhlIHNhbXBsZSBub25jZQ=="));
	ASSERT_TRUE(ward__http_ws_key_valid("AAAAAAAAAAAAAAAAAAAAAA=="));
	ASSERT_TRUE(ward__http_ws_key_valid("+/+/+/+/+/+/+/+/+/+/+w=="));
	ASSERT_FALSE(ward__http_ws_key_valid("dGhlIHNhbXBsZSBub25jZR==")); /* non-canonical */
	ASSERT_FALSE(ward__http_ws_key_valid("dGhlIHNhbXBsZSBub25jZQ="));
	ASSERT_FALSE(ward__http_ws_key_valid("dGhlIHNhbXBsZSBub25jZQ==="));
	ASSERT_FALSE(ward__http_ws_key_valid("dGhlIHNhbXBsZSBub25jZQAA"));
	ASSERT_FALSE(ward__http_ws_key_valid("dGhlIHNhbX*sZSBub25jZQ=="));
	ASSERT_FALSE(ward__http_ws_key_valid("dGhlIHNhbX sZSBub25jZQ=="));
	ASSERT_FALSE(ward__http_ws_key_valid("dGhlIHNhbXBsZSBub25j=Q=="));
	ASSERT_FALSE(ward__http_ws_key_valid(""));
	ASSERT_FALSE(ward__http_ws_key_valid(NULL));

	/* RFC 6455 section 1.3's own example. */
	ASSERT_OK(ward__http_ws_accept("dGhlIHNhbXBsZSBub25jZQ==", accept));
	ASSERT_STREQ(accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
	ASSERT_EQ(ward__http_ws_accept("bad", accept), -EINVAL);
}

TEST(http_token_equal)
{
	static const char token[] = "0123456789abcdef0123456789abcdef";

	ASSERT_TRUE(ward__http_token_equal(token, 32, token, 32));
	ASSERT_TRUE(ward__http_token_equal("x", 1, "x", 1));
	ASSERT_FALSE(ward__http_token_equal("0123456789abcdef0123456789abcdeF", 32, token, 32));
	ASSERT_FALSE(ward__http_token_equal(token, 31, token, 32));
	ASSERT_FALSE(ward__http_token_equal(token, 32, token, 31));
	ASSERT_FALSE(ward__http_token_equal("", 0, token, 32));
	ASSERT_FALSE(ward__http_token_equal(NULL, 0, token, 32));
	ASSERT_FALSE(ward__http_token_equal(token, 32, NULL, 0));
	ASSERT_FALSE(ward__http_token_equal("", 0, "", 0));
}

TEST(http_responses)
{
	static const int statuses[] = {200, 400, 401, 403, 404, 405, 413,
				       414, 426, 431, 500, 503, 505};
	struct ward__buf out;

	ASSERT_OK(ward__buf_init(&out, 4096));
	for (size_t i = 0; i < ELEMENTSOF(statuses); i++) {
		char first[64];
		const char *body;

		ward__buf_clear(&out);
		ASSERT_OK(ward__http_respond(&out, statuses[i]));
		snprintf(first, sizeof(first), "HTTP/1.1 %d ", statuses[i]);
		ASSERT_TRUE(strncmp((char *)out.data, first, strlen(first)) == 0);
		ASSERT_CONTAINS((char *)out.data, "\r\nConnection: close\r\n");
		body = strstr((char *)out.data, "\r\n\r\n");
		ASSERT_TRUE(body != NULL);
		body += 4;
		snprintf(first, sizeof(first), "\r\nContent-Length: %zu\r\n", strlen(body));
		ASSERT_CONTAINS((char *)out.data, first);
		ASSERT_TRUE(strlen(body) > 0 && body[strlen(body) - 1] == '\n');
	}
	ward__buf_clear(&out);
	ASSERT_OK(ward__http_respond(&out, 200));
	ASSERT_STREQ((char *)out.data,
		     "HTTP/1.1 200 OK\r\n"
		     "Content-Type: text/plain; charset=utf-8\r\n"
		     "Content-Length: 3\r\n"
		     "Connection: close\r\n"
		     "\r\n"
		     "ok\n");
	ward__buf_clear(&out);
	ASSERT_OK(ward__http_respond(&out, 401));
	ASSERT_CONTAINS((char *)out.data, "\r\nWWW-Authenticate: Bearer\r\n");
	ward__buf_clear(&out);
	ASSERT_OK(ward__http_respond(&out, 426));
	ASSERT_CONTAINS((char *)out.data, "\r\nSec-WebSocket-Version: 13\r\n");
	ASSERT_CONTAINS((char *)out.data, "\r\nUpgrade: websocket\r\n");
	ward__buf_clear(&out);
	ASSERT_OK(ward__http_respond(&out, 405));
	ASSERT_CONTAINS((char *)out.data, "\r\nAllow: GET\r\n");
	ASSERT_EQ(ward__http_respond(&out, 302), -EINVAL);

	ward__buf_clear(&out);
	ASSERT_OK(ward__http_respond_upgrade(&out, "dGhlIHNhbXBsZSBub25jZQ=="));
	ASSERT_STREQ((char *)out.data,
		     "HTTP/1.1 101 Switching Protocols\r\n"
		     "Upgrade: websocket\r\n"
		     "Connection: Upgrade\r\n"
		     "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
		     "\r\n");
	ASSERT_EQ(ward__http_respond_upgrade(&out, "nope"), -EINVAL);
	ward__buf_release(&out);

	/* All or nothing. */
	ASSERT_OK(ward__buf_init(&out, 20));
	ASSERT_OK(ward__buf_append_str(&out, "x"));
	ASSERT_EQ(ward__http_respond(&out, 404), -ENOBUFS);
	ASSERT_EQ(ward__http_respond_upgrade(&out, "dGhlIHNhbXBsZSBub25jZQ=="), -ENOBUFS);
	ASSERT_EQ(out.len, 1);
	ward__buf_release(&out);
}

int main(void)
{
	return tap_main();
}
