/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the JSON-RPC codec (src/rpc/jsonrpc.c). The first byte picks the
 * dialect and whether small limits are used; the rest is one message.
 * Invariants checked:
 *
 *   - a refusal has a JSON-RPC code, a non-empty one-line printable message,
 *     an id only of a valid type, and its answer encodes and parses back as
 *     an error response with the same code and id;
 *   - an accepted message is within every limit (its tree is measured, so
 *     the pre-scan can never under-count), has the fields its kind requires,
 *     and encodes back to a line that parses to the same message;
 *   - ward__rpc_fail_oversized() on any prefix gives a -32600 answer.
 *
 * Built with -fsanitize=fuzzer it is a libFuzzer target; linked with replay.c
 * it replays the corpus (in every test run).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "rpc/jsonrpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                 \
	do {                     \
		if (!(x))        \
			abort(); \
	} while (0)

/* Depth and number of values of a tree (keys not counted), as the limits define them. */
static void measure(const json_t *v, unsigned depth, unsigned *max_depth, size_t *values)
{
	const char *key;
	json_t *child;
	size_t i;

	(*values)++;
	if (!json_is_object(v) && !json_is_array(v))
		return;
	depth++;
	if (depth > *max_depth)
		*max_depth = depth;
	CHECK(depth <= WARD_RPC_MAX_MAX_DEPTH);
	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, key, child)
			measure(child, depth, max_depth, values);
	} else {
		json_array_foreach(v, i, child) measure(child, depth, max_depth, values);
	}
}

static void check_message_text(const char *m)
{
	CHECK(m[0] != '\0');
	for (; *m; m++)
		CHECK(*m >= 0x20 && *m <= 0x7e);
}

static void check_id(const struct ward__rpc_id *id)
{
	CHECK(id->type == WARD_RPC_ID_NULL || id->type == WARD_RPC_ID_INT ||
	      id->type == WARD_RPC_ID_STRING);
	if (id->type == WARD_RPC_ID_STRING)
		CHECK(id->str && id->len <= WARD_RPC_MAX_ID_LEN && strlen(id->str) == id->len);
}

static bool same_id(const struct ward__rpc_id *a, const struct ward__rpc_id *b)
{
	if (a->type != b->type)
		return false;
	if (a->type == WARD_RPC_ID_INT)
		return a->num == b->num;
	if (a->type == WARD_RPC_ID_STRING)
		return a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
	return true;
}

static void check_failure(const struct ward__rpc_codec *c, const struct ward__rpc_failure *f)
{
	struct ward__rpc_codec reader;
	struct ward__buf out;
	struct ward__rpc_msg m;
	struct ward__rpc_failure f2;

	CHECK(f->code == WARD_RPC_PARSE_ERROR || f->code == WARD_RPC_INVALID_REQUEST ||
	      f->code == WARD_RPC_INTERNAL_ERROR);
	check_message_text(f->message);
	check_id(&f->id);
	if (f->code == WARD_RPC_PARSE_ERROR)
		CHECK(f->id.type == WARD_RPC_ID_NULL);

	/* The answer is read back without the small limits a test codec may have. */
	CHECK(ward__rpc_codec_init(&reader, c->dialect, NULL) == 0);
	CHECK(ward__buf_init(&out, 16384) == 0);
	CHECK(ward__rpc_encode_failure(c, &out, f) == 0);
	CHECK(memchr(out.data, '\n', out.len) == NULL);
	CHECK(ward__rpc_parse(&reader, out.data, out.len, &m, &f2) == 0);
	CHECK(m.kind == WARD_RPC_ERROR && m.error_code == f->code);
	CHECK(strcmp(m.error_message, f->message) == 0);
	CHECK(same_id(&m.id, &f->id));
	ward__rpc_msg_release(&m);
	ward__buf_release(&out);
}

static void check_accepted(const struct ward__rpc_codec *c, const uint8_t *data, size_t size,
			   const struct ward__rpc_msg *m)
{
	unsigned depth = 0;
	size_t values = 0;
	struct ward__buf out;
	struct ward__rpc_msg m2;
	struct ward__rpc_failure f;
	int r = -1;

	CHECK(size <= c->limits.max_bytes);
	measure(m->root, 0, &depth, &values);
	CHECK(depth <= c->limits.max_depth);
	CHECK(values <= c->limits.max_values);
	CHECK(json_is_object(m->root));
	if (c->dialect == WARD_RPC_JSONRPC2)
		CHECK(json_object_get(m->root, "jsonrpc"));

	CHECK(ward__buf_init(&out, (size_t)64 << 20) == 0);
	switch (m->kind) {
	case WARD_RPC_REQUEST:
	case WARD_RPC_NOTIFICATION:
		CHECK(m->method && m->method[0] && strlen(m->method) <= WARD_RPC_MAX_METHOD_LEN);
		CHECK(!m->params || json_is_object(m->params) || json_is_array(m->params));
		if (m->kind == WARD_RPC_REQUEST) {
			CHECK(m->id.type == WARD_RPC_ID_INT || m->id.type == WARD_RPC_ID_STRING);
			r = ward__rpc_encode_request(c, &out, &m->id, m->method, m->params);
		} else {
			CHECK(m->id.type == WARD_RPC_ID_NONE);
			r = ward__rpc_encode_notification(c, &out, m->method, m->params);
		}
		break;
	case WARD_RPC_RESULT:
		CHECK(m->id.type == WARD_RPC_ID_INT || m->id.type == WARD_RPC_ID_STRING);
		CHECK(m->result);
		r = ward__rpc_encode_result(c, &out, &m->id, m->result);
		break;
	case WARD_RPC_ERROR:
		CHECK(m->id.type != WARD_RPC_ID_NONE && m->error_message);
		r = ward__rpc_encode_error(c, &out, &m->id, m->error_code, m->error_message,
					   m->error_data);
		break;
	default:
		abort();
	}
	CHECK(r == 0);
	CHECK(memchr(out.data, '\n', out.len) == NULL);

	/*
	 * The re-encoded line parses back to the same message when it is within
	 * the limits (compact output can be longer than the input: escapes).
	 */
	if (out.len <= c->limits.max_bytes) {
		CHECK(ward__rpc_parse(c, out.data, out.len, &m2, &f) == 0);
		CHECK(m2.kind == m->kind);
		CHECK(same_id(&m2.id, &m->id));
		if (m->method)
			CHECK(strcmp(m2.method, m->method) == 0);
		CHECK(json_equal(m2.params, m->params) || (!m2.params && !m->params));
		CHECK(json_equal(m2.result, m->result) || (!m2.result && !m->result));
		if (m->kind == WARD_RPC_ERROR) {
			CHECK(m2.error_code == m->error_code);
			CHECK(strcmp(m2.error_message, m->error_message) == 0);
		}
		ward__rpc_msg_release(&m2);
	}
	ward__buf_release(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ward__rpc_codec c;
	struct ward__rpc_limits small = {.max_bytes = 256, .max_depth = 4, .max_values = 16};
	struct ward__rpc_msg m;
	struct ward__rpc_failure f;
	int r;

	if (size < 1)
		return 0;
	CHECK(ward__rpc_codec_init(&c, data[0] & 1 ? WARD_RPC_JSONRPC2 : WARD_RPC_CODEX,
				   data[0] & 2 ? &small : NULL) == 0);
	data++;
	size--;

	r = ward__rpc_parse(&c, data, size, &m, &f);
	if (r == 0) {
		check_accepted(&c, data, size, &m);
		ward__rpc_msg_release(&m);
	} else {
		CHECK(r == -EBADMSG || r == -EMSGSIZE || r == -ENOMEM);
		CHECK((r == -EMSGSIZE) == f.too_large);
		check_failure(&c, &f);
	}

	ward__rpc_fail_oversized(&c, data, size, &f);
	CHECK(f.too_large && f.code == WARD_RPC_INVALID_REQUEST);
	check_failure(&c, &f);
	return 0;
}
