/* SPDX-License-Identifier: MIT */
/*
 * What the MCP server sends its client (see mcpserver.h): results, errors,
 * notifications and the shape of a tool's result. A reply that does not fit
 * in the output queue becomes an error that does; a notification that does
 * not fit is dropped.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/util.h"
#include "mcp/mcpserver.h"
#include "rpc/jsonrpc.h"
#include "transport/lineconn.h"

/* ------------------------------------------------------------ sending */

static void send_buf(struct mcp *m, struct ward__buf *b, const struct ward__rpc_id *id)
{
	int r = ward__lineconn_send(m->conn, b->data, b->len);

	if (r == -ENOBUFS && id) {
		/* The client does not read its replies: tell it so, in a reply that fits. */
		struct ward__buf e;

		ward__buf_init(&e, 4096);
		if (ward__rpc_encode_error(&m->codec, &e, id, WARD_RPC_INTERNAL_ERROR,
					   "the reply does not fit in the output queue: the client "
					   "is not reading its replies",
					   NULL) >= 0)
			ward__lineconn_send(m->conn, e.data, e.len);
		ward__buf_release(&e);
	}
}

void ward__mcp_send_result(struct mcp *m, const struct ward__rpc_id *id, json_t *result)
{
	struct ward__buf b;

	ward__buf_init(&b, WARD_MCP_MAX_QUEUE);
	if (ward__rpc_encode_result(&m->codec, &b, id, result) >= 0)
		send_buf(m, &b, id);
	ward__buf_release(&b);
	json_decref(result);
}

void ward__mcp_send_error(struct mcp *m, const struct ward__rpc_id *id, int code, const char *msg)
{
	struct ward__buf b;

	ward__buf_init(&b, 64 * 1024);
	if (ward__rpc_encode_error(&m->codec, &b, id, code, msg, NULL) >= 0)
		send_buf(m, &b, NULL);
	ward__buf_release(&b);
}

void ward__mcp_send_notification(struct mcp *m, const char *method, json_t *params)
{
	struct ward__buf b;

	ward__buf_init(&b, 64 * 1024);
	/* A notification that does not fit is dropped: nobody waits for it. */
	if (ward__rpc_encode_notification(&m->codec, &b, method, params) >= 0)
		ward__lineconn_send(m->conn, b.data, b.len);
	ward__buf_release(&b);
	json_decref(params);
}

/* A tool's result: text content, and the structured form where the revision has it. */
json_t *ward__mcp_tool_result(struct mcp *m, char *text, json_t *structured, bool is_error)
{
	json_t *r = json_object(), *content = json_array(), *t = json_object();

	json_object_set_new(t, "type", json_string("text"));
	json_object_set_new(t, "text",
			    ward__json_string_lossy(text ? text : "", text ? strlen(text) : 0));
	json_array_append_new(content, t);
	json_object_set_new(r, "content", content);
	if (structured && m->structured)
		json_object_set_new(r, "structuredContent", structured);
	else
		json_decref(structured);
	json_object_set_new(r, "isError", json_boolean(is_error));
	free(text);
	return r;
}

json_t *ward__mcp_tool_error(struct mcp *m, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	return ward__mcp_tool_result(m, msg, NULL, true);
}

/* Whether a JSON value (a cancellation's requestId) names this id. */
bool ward__mcp_id_matches(const struct ward__rpc_id *id, const json_t *v)
{
	if (id->type == WARD_RPC_ID_INT && json_is_integer(v))
		return json_integer_value(v) == id->num;
	if (id->type == WARD_RPC_ID_STRING && json_is_string(v))
		return json_string_length(v) == id->len &&
			memcmp(json_string_value(v), id->str, id->len) == 0;
	return false;
}
