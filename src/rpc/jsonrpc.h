/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * DESIGN. src/rpc/ holds the pure codecs of the servers: JSON-RPC in both
 * dialects (jsonrpc.h), newline framing (lines.h), the HTTP upgrade request
 * (http.h), base64 (base64.h), and the checked JSON arguments of methods
 * and tools (args.h). Bytes or JSON in, structures out: no I/O and no
 * global state, so each is fuzzed as it stands (fuzz/).
 * One-way rule: it calls only src/basic; src/transport, src/execserver and
 * src/mcp call it.
 */

#include <jansson.h>

#include "basic/buf.h"
#include "basic/macro.h"

/*
 * The JSON-RPC codec: one message from bytes to a checked structure, and
 * structures to one compact line of bytes. Pure (no I/O, no global state),
 * so it is fuzzed as it stands (fuzz/fuzz-jsonrpc.c).
 *
 * Two dialects share it:
 *   - WARD_RPC_JSONRPC2, JSON-RPC 2.0 as MCP speaks it: "jsonrpc":"2.0" is
 *     required on every message read and written on every message sent;
 *   - WARD_RPC_CODEX, the dialect of Codex's exec-server: "jsonrpc" may be
 *     absent on input (when present it must be "2.0") and is never written.
 *
 * Every message read is bounded before jansson builds anything: its size in
 * bytes, its nesting depth and its number of JSON values are checked by a
 * linear pre-scan of the bytes, so a hostile peer cannot make the tree cost
 * more memory or stack than the limits allow (docs/protocol.md, "Transports
 * and limits", says why each limit has its value).
 *
 * Decisions, each for a reason:
 *   - Duplicate object keys anywhere in a message are refused (-32600, id
 *     null): two parsers could read {"id":1,"id":2} differently, and an
 *     answer for the wrong id is worse than none.
 *   - Invalid UTF-8, unpaired surrogate escapes, raw NUL bytes and the
 *     escape \u0000 are parse errors (-32700): no string the server handles
 *     can hold a NUL or bytes that are not text.
 *   - Top-level arrays (batches) are reported apart (failure.batch) so that
 *     the caller can refuse them: neither MCP (since 2025-06-18) nor Codex
 *     uses them.
 *   - Unknown top-level members are ignored, as JSON-RPC 2.0 and Codex's
 *     serde types do; members that contradict each other (method with result
 *     or error, result with error) are refused.
 */

/* JSON-RPC 2.0 error codes (section 5.1 of the specification). */
#define WARD_RPC_PARSE_ERROR (-32700)
#define WARD_RPC_INVALID_REQUEST (-32600)
#define WARD_RPC_METHOD_NOT_FOUND (-32601)
#define WARD_RPC_INVALID_PARAMS (-32602)
#define WARD_RPC_INTERNAL_ERROR (-32603)

/* Defaults of struct ward__rpc_limits (docs/protocol.md explains them). */
#define WARD_RPC_DEFAULT_MAX_BYTES ((size_t)16 << 20)
#define WARD_RPC_DEFAULT_MAX_DEPTH 128u
#define WARD_RPC_DEFAULT_MAX_VALUES ((size_t)256 << 10)
/* Hard ceilings a configuration may not exceed. */
#define WARD_RPC_MAX_MAX_BYTES ((size_t)1 << 30)
#define WARD_RPC_MAX_MAX_DEPTH 1024u
/* Longest string id and method name accepted, in bytes. */
#define WARD_RPC_MAX_ID_LEN 1024u
#define WARD_RPC_MAX_METHOD_LEN 256u
/* Longest failure message, terminating NUL included. */
#define WARD_RPC_MESSAGE_MAX 192

enum ward__rpc_dialect {
	WARD_RPC_JSONRPC2 = 0,
	WARD_RPC_CODEX = 1,
};

struct ward__rpc_limits {
	size_t max_bytes; /* bytes of one message, 1 .. WARD_RPC_MAX_MAX_BYTES */
	unsigned max_depth; /* nesting of arrays and objects, 1 .. WARD_RPC_MAX_MAX_DEPTH */
	size_t max_values; /* JSON values in one message (object keys not counted), >= 1 */
};

/* A codec: a dialect and limits, fixed at init, read-only afterwards (shareable). */
struct ward__rpc_codec {
	enum ward__rpc_dialect dialect;
	struct ward__rpc_limits limits;
	/*
	 * Significant digits of the reals it writes: 0 is jansson's 17 (every
	 * double read back exactly). A server that writes only its own rounded
	 * figures (wall times to 0.1 ms) gives 15, so that 4.078 is written
	 * "4.078" and not "4.0780000000000003" to a model that reads it.
	 */
	int real_digits;
};

enum ward__rpc_id_type {
	WARD_RPC_ID_NONE = 0, /* no id member (a notification) */
	WARD_RPC_ID_NULL, /* "id": null (error responses only) */
	WARD_RPC_ID_INT,
	WARD_RPC_ID_STRING,
};

/* A request id. str is NUL-terminated, holds no NUL, len <= WARD_RPC_MAX_ID_LEN. */
struct ward__rpc_id {
	enum ward__rpc_id_type type;
	int64_t num;
	const char *str;
	size_t len;
};

enum ward__rpc_kind {
	WARD_RPC_REQUEST = 1, /* method + id */
	WARD_RPC_NOTIFICATION, /* method, no id */
	WARD_RPC_RESULT, /* id + result */
	WARD_RPC_ERROR, /* id (maybe null) + error */
};

/*
 * One parsed message. Everything points into root, which the message owns:
 * valid until ward__rpc_msg_release(). params is an object or an array, or
 * NULL when absent; result is any JSON value (never NULL for a RESULT).
 */
struct ward__rpc_msg {
	enum ward__rpc_kind kind;
	struct ward__rpc_id id; /* NONE for notifications */
	const char *method; /* requests and notifications; 1..WARD_RPC_MAX_METHOD_LEN bytes */
	json_t *params;
	json_t *result;
	int64_t error_code; /* ERROR */
	const char *error_message; /* ERROR */
	json_t *error_data; /* ERROR, NULL when absent */
	json_t *root;
};

/*
 * Why a message was refused: the JSON-RPC error code to answer with, a
 * one-line message for the answer (printable ASCII only, so it can be sent
 * and logged as it is) and the request id when it could be recovered (else
 * NULL type), as JSON-RPC 2.0 section 5 asks. Self-contained: id.str points
 * into id_buf, so a failure can be copied and kept.
 */
struct ward__rpc_failure {
	int code; /* WARD_RPC_PARSE_ERROR or WARD_RPC_INVALID_REQUEST */
	bool batch; /* the message was a top-level array */
	bool too_large; /* refused by a limit (bytes, depth, values) */
	struct ward__rpc_id id; /* NULL type unless recovered */
	char message[WARD_RPC_MESSAGE_MAX];
	char id_buf[WARD_RPC_MAX_ID_LEN + 1];
};

/* Sets up a codec; limits NULL means the defaults. -EINVAL for a limit out of range. */
WARD_INTERNAL int ward__rpc_codec_init(struct ward__rpc_codec *c, enum ward__rpc_dialect dialect,
				       const struct ward__rpc_limits *limits);

/*
 * Parses one message of len bytes (not NUL-terminated; a trailing "\r" or
 * other JSON whitespace is fine). Returns 0 and fills *ret_msg (release it),
 * or a negative errno and fills *ret_fail (always given):
 *   -EMSGSIZE  a limit was exceeded (code -32600, too_large set);
 *   -EBADMSG   not JSON (-32700) or not a valid message (-32600; batch set
 *              for a top-level array);
 *   -ENOMEM    out of memory (code -32603).
 * *ret_msg is written only on success.
 */
WARD_INTERNAL int ward__rpc_parse(const struct ward__rpc_codec *c, const void *data, size_t len,
				  struct ward__rpc_msg *ret_msg,
				  struct ward__rpc_failure *ret_fail);

/*
 * Fills *ret_fail for a message that was too large to keep (a line or a
 * WebSocket message over the byte limit) of which only the first len bytes
 * are known: code -32600, too_large, and the id when those bytes hold the
 * top-level "id" member complete, so that the client still learns which of
 * its requests failed.
 */
WARD_INTERNAL void ward__rpc_fail_oversized(const struct ward__rpc_codec *c, const void *prefix,
					    size_t len, struct ward__rpc_failure *ret_fail);

/*
 * A copy of an id that outlives its message (a request answered later): the
 * string is duplicated. -ENOMEM. Release with ward__rpc_id_release().
 */
WARD_INTERNAL int ward__rpc_id_dup(struct ward__rpc_id *dst, const struct ward__rpc_id *src);
WARD_INTERNAL void ward__rpc_id_release(struct ward__rpc_id *id);

/* Frees what a message owns and zeroes it. Accepts a zeroed message. */
WARD_INTERNAL void ward__rpc_msg_release(struct ward__rpc_msg *m);

/* Ids for the encoders. */
static inline struct ward__rpc_id ward__rpc_id_int(int64_t n)
{
	return (struct ward__rpc_id){.type = WARD_RPC_ID_INT, .num = n};
}

static inline struct ward__rpc_id ward__rpc_id_null(void)
{
	return (struct ward__rpc_id){.type = WARD_RPC_ID_NULL};
}

/*
 * Encoders. Each appends one message to out as compact JSON on one line
 * (no newline inside, none at the end: a newline-delimited transport adds
 * its own), in the codec's dialect. All or nothing: on failure out is left
 * as it was. Return 0, or:
 *   -EINVAL   a bad argument (an id of the wrong type for the message, an
 *             empty method, params that are not an object or array, a string
 *             id that is not UTF-8 or too long);
 *   -ENOBUFS  the message does not fit in out's capacity;
 *   -ENOMEM.
 * JSON values passed in are only read. A string in them that is not valid
 * UTF-8 makes the encoding fail (-EINVAL): jansson never creates such strings
 * unless told not to check.
 */
/* A request: id INT or STRING; params NULL (omitted), an object or an array. */
WARD_INTERNAL int ward__rpc_encode_request(const struct ward__rpc_codec *c, struct ward__buf *out,
					   const struct ward__rpc_id *id, const char *method,
					   const json_t *params);
/* A notification: params NULL (omitted), an object or an array. */
WARD_INTERNAL int ward__rpc_encode_notification(const struct ward__rpc_codec *c,
						struct ward__buf *out, const char *method,
						const json_t *params);
/* A result: id INT or STRING; result NULL is written as null. */
WARD_INTERNAL int ward__rpc_encode_result(const struct ward__rpc_codec *c, struct ward__buf *out,
					  const struct ward__rpc_id *id, const json_t *result);
/*
 * An error: id INT, STRING or NULL (NONE is written as null too); message
 * is any C string: bytes that are not valid UTF-8 are replaced by U+FFFD so
 * the answer is always sent; data NULL is omitted.
 */
WARD_INTERNAL int ward__rpc_encode_error(const struct ward__rpc_codec *c, struct ward__buf *out,
					 const struct ward__rpc_id *id, int64_t code,
					 const char *message, const json_t *data);
/* The error answering a failure of ward__rpc_parse() or ward__rpc_fail_oversized(). */
WARD_INTERNAL int ward__rpc_encode_failure(const struct ward__rpc_codec *c, struct ward__buf *out,
					   const struct ward__rpc_failure *f);
