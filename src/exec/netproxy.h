/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/macro.h"
#include "net/proxy.h"
#include "sandbox/sandbox.h"

/*
 * The proxy of one started sandbox whose network is by domain: src/net's
 * engine fed with the listeners the sandbox hands out on its net socket
 * (sb->net_fd), now and whenever init makes a pool listener, with the
 * policy's patterns and ranges, and its refusals kept as the sandbox's
 * denials. It lives on the holder's event loop (a server's), or on a loop
 * of its own whose fd the holder polls (ward run, ward_run()).
 *
 * Free it before the sandbox is released: it holds sb.
 */
struct ward__netproxy;

/*
 * Starts serving sb. loop NULL: a loop of its own (ward__netproxy_fd() to
 * poll, ward__netproxy_dispatch() when it is readable). hooks (may be NULL)
 * decide what the patterns leave open, ask people, and hear every event;
 * ask says whether questions may be asked at all. Raises the soft limit of
 * open files towards the hard one once per process: a proxy holds a few
 * descriptors per connection. -errno with err.
 */
WARD_INTERNAL int ward__netproxy_start(struct ward__loop *loop, struct ward__sandbox *sb,
				       const struct ward_policy *p,
				       const struct ward_net_hooks *hooks, bool ask,
				       struct ward__netproxy **ret, struct ward_error *err);
WARD_INTERNAL void ward__netproxy_free(struct ward__netproxy *np);
/* With a loop of its own: the fd to poll for POLLIN, and what to call then. */
WARD_INTERNAL int ward__netproxy_fd(const struct ward__netproxy *np);
WARD_INTERNAL void ward__netproxy_dispatch(struct ward__netproxy *np);
/* The engine, for the answer to a question (ward__net_proxy_answer()). */
WARD_INTERNAL struct ward_net_proxy *ward__netproxy_engine(struct ward__netproxy *np);
