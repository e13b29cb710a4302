/* SPDX-License-Identifier: MIT */
/*
 * What the exec server sends a connection (see xserver.h): replies, errors
 * and notifications, encoded in Codex's dialect and queued on the
 * transport; a connection that stops reading is dropped, never waited for.
 */
#include <stdarg.h>
#include <stdio.h>

#include "execserver/xserver.h"
#include "rpc/jsonrpc.h"
#include "transport/transport.h"

/* ------------------------------------------------------------ sending */

void ward__xs_on_abort(struct ward__loop *l, void *userdata)
{
	struct xconn *x = userdata;

	x->abort_timer = 0;
	ward__conn_abort(x->c);
}

/*
 * Queues an encoded message. A reply that does not fit means the client has
 * stopped reading while asking more: the connection is dropped (from the
 * loop), its session detached as after any disconnect.
 */
void ward__xs_send_bytes(struct xconn *x, const struct ward__buf *b)
{
	int r;

	if (!x || x->overflowed)
		return;
	r = ward__conn_send(x->c, b->data, b->len);
	if (r == -ENOBUFS) {
		x->overflowed = true;
		ward__loop_add_timer(x->srv->loop, 0, ward__xs_on_abort, x, &x->abort_timer);
	}
}

void ward__xs_reply(struct xconn *x, const struct ward__rpc_id *id, json_t *result)
{
	struct ward__buf b;

	ward__buf_init(&b, (size_t)1 << 30);
	if (ward__rpc_encode_result(&x->srv->codec, &b, id, result) >= 0)
		ward__xs_send_bytes(x, &b);
	ward__buf_release(&b);
	json_decref(result);
}

void ward__xs_reply_error(struct xconn *x, const struct ward__rpc_id *id, int code, const char *fmt,
			  ...)
{
	char msg[512];
	struct ward__buf b;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ward__buf_init(&b, 64 * 1024);
	if (ward__rpc_encode_error(&x->srv->codec, &b, id, code, msg, NULL) >= 0)
		ward__xs_send_bytes(x, &b);
	ward__buf_release(&b);
}

void ward__xs_notify(struct xconn *x, const char *method, json_t *params)
{
	struct ward__buf b;

	ward__buf_init(&b, (size_t)1 << 30);
	if (ward__rpc_encode_notification(&x->srv->codec, &b, method, params) >= 0)
		ward__xs_send_bytes(x, &b);
	ward__buf_release(&b);
	json_decref(params);
}
