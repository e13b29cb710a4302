/* SPDX-License-Identifier: MIT */
/*
 * The exec server (see execserver.h and docs/protocol.md): Codex's
 * exec-server dialect of JSON-RPC over any transport. This file holds the
 * sessions, initialize, the dispatch and the connections; xserver.h lists
 * the others.
 *
 * Objects:
 *   - a connection (struct xconn) speaks for at most one exec session once
 *     it has sent initialize;
 *   - a session (struct xsession) owns processes; when its connection goes,
 *     it waits WARD_XS_DETACHED_TTL_MS for a client to resume it, its
 *     processes running and their output retained, then everything of it is
 *     killed;
 *   - a process (struct xproc) is a sandboxed proc (src/exec/proc.c) with its
 *     retained output (a bounded list of chunks, numbered by seq), its waiting
 *     process/read calls and the writeIds it has seen.
 *
 * Output flows as process/output notifications to the attached connection
 * and into retention for process/read. A connection that does not
 * keep up (its send queue above the high-water mark) makes the server stop
 * reading its processes' output: the processes block in write(), as under any
 * slow reader, and ward's memory stays bounded. Without a connection, output
 * is read on and only the newest WARD_XS_RETAIN_BYTES are kept.
 *
 * What all processes retain together is bounded too (retain_total): past
 * it, the oldest chunks of the process that has gone longest without output
 * go first (exited processes, typically), whatever its session.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/uri.h"
#include "basic/util.h"
#include "execserver/execserver.h"
#include "rpc/jsonrpc.h"
#include "sandbox/limits.h"

#include "execserver/fsops.h"

#include "execserver/xserver.h"

#include "rpc/args.h"

#include "ward-config.h"

/* Codex's error code for resuming a session another connection holds. */
#define XS_SESSION_ATTACHED (-32010)

/* ------------------------------------------------------------ small helpers */

static void uuid_v4(char out[37])
{
	uint8_t b[16];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
		uint64_t t = ward__now_ns();

		for (size_t i = 0; i < sizeof(b); i++)
			b[i] = (uint8_t)(t >> (i % 8 * 8)) ^ (uint8_t)i;
	}
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
}

/* ------------------------------------------------------------ sessions */

static void session_free(struct xsession *se)
{
	struct ward__xserver *s = se->srv;

	/*
	 * Every sandbox is killed first, together: a process whose changes are
	 * recorded waits for its sandbox to be gone before they are read, and
	 * one by one those waits would add up.
	 */
	for (struct xproc *p = se->procs; p; p = p->next)
		if (p->crun)
			ward__proc_terminate(p->proc);
	while (se->procs)
		ward__xs_proc_free(se->procs);
	ward__proc_pool_free(se->pool);
	ward__loop_del_timer(s->loop, se->ttl_timer);
	if (se->conn)
		se->conn->sess = NULL;
	if (se->prev)
		se->prev->next = se->next;
	else if (s->sessions == se)
		s->sessions = se->next;
	if (se->next)
		se->next->prev = se->prev;
	s->n_sessions--;
	free(se);
}

static void on_session_ttl(struct ward__loop *l, void *userdata)
{
	struct xsession *se = userdata;

	se->ttl_timer = 0;
	/* Nobody resumed it: everything of the session dies. */
	session_free(se);
}

static void session_detach(struct xsession *se)
{
	struct ward__xserver *s = se->srv;
	struct xsession *oldest = NULL;
	size_t detached = 0;

	se->conn = NULL;
	se->detached_at = ward__now_ns();
	/*
	 * A client that connects, starts processes and goes, again and again,
	 * would leave sessions (and their processes and output) without end for
	 * the TTL: at most --max-connections wait to be resumed, the one
	 * detached longest is killed for the newest.
	 */
	for (struct xsession *o = s->sessions; o; o = o->next)
		if (!o->conn && o != se) {
			detached++;
			if (!oldest || o->detached_at < oldest->detached_at)
				oldest = o;
		}
	if (oldest && detached >= s->cfg.max_connections)
		session_free(oldest);
	/*
	 * What was prepared for this connection goes with it: a prepared sandbox
	 * is never handed to another connection, even one resuming the session.
	 */
	ward__proc_pool_flush(se->pool);
	/* Nobody reads now: retention keeps the newest output, processes are never blocked. */
	ward__xs_procs_pause(se, false);
	ward__loop_add_timer(s->loop, ward__now_ns() + (uint64_t)s->cfg.detached_ttl_ms * 1000000,
			     on_session_ttl, se, &se->ttl_timer);
}

static struct xsession *find_session(struct ward__xserver *s, const char *id)
{
	for (struct xsession *se = s->sessions; se; se = se->next)
		if (strcmp(se->id, id) == 0)
			return se;
	return NULL;
}

/* ------------------------------------------------------------ environment */

static const char *server_shell(void)
{
	const char *sh = getenv("SHELL");

	if (sh && sh[0] == '/' && access(sh, X_OK) == 0)
		return sh;
	return access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
}

/*
 * environment/info, in Codex's shape (its client reads these names). The
 * capabilities say what a client may send: ward has no network proxy, no
 * environment config files and no capability discovery; it has sandboxed
 * file streaming and block writes (fs/open).
 */
static json_t *environment_info(struct ward__xserver *s)
{
	const char *shell = server_shell();
	const char *base = strrchr(shell, '/');
	const char *tmp = getenv("TMPDIR"), *home = getenv("HOME");
	_cleanup_free_ char *cwd_uri = ward__path_to_file_uri(s->cwd);
	_cleanup_free_ char *home_uri = ward__path_to_file_uri(home && home[0] == '/' ? home : "/");
	_cleanup_free_ char *tmp_uri = ward__path_to_file_uri("/tmp");
	_cleanup_free_ char *tmpdir_uri = tmp && tmp[0] == '/' ? ward__path_to_file_uri(tmp) : NULL;
	json_t *tmps = json_array();

	if (tmpdir_uri)
		json_array_append_new(tmps, json_string(tmpdir_uri));
	return json_pack(
		"{s:{s:s, s:s}, s:s, s:s, s:s, s:s, s:o, s:s, s:{s:b, s:b, s:b, s:b, s:b, s:b, s:b, "
		"s:b, s:b, s:b, s:b, s:b, s:b}, s:{s:s, s:b, s:b}}",
		"shell", "name", base ? base + 1 : shell, "path", shell, "executorVersion",
		WARD_VERSION, "cwd", cwd_uri ? cwd_uri : "file:///", "userHomeDir",
		home_uri ? home_uri : "file:///", "platformOs", "linux", "temporaryDirectories",
		tmps, "tempDir", tmpdir_uri ? tmpdir_uri : (tmp_uri ? tmp_uri : "file:///tmp"),
		"capabilities", "networkProxyLaunch", 0, "networkProxyReviewDomains", 0,
		"credentialMasking", 0, "credentialMaskingCustomProviders", 0,
		"capabilityDiscoverySandbox", 0, "fsWatchMissing", 0, "capabilityDiscoveryV2", 0,
		"environmentConfigRead", 0, "httpHeaderEnvVars", 0, "sandboxedFileStreaming", 1,
		"fileWriteStreaming", 1, "shellSnapshotV2", 0, "windowsMxc", 0, "ward", "version",
		WARD_VERSION, "exactDenials", 1, "allowUnsandboxed", s->cfg.allow_unsandboxed);
}

/* ------------------------------------------------------------ lifecycle */

static void handle_initialize(struct xconn *x, const struct ward__rpc_msg *m)
{
	struct ward__xserver *s = x->srv;
	const char *resume = NULL, *client = NULL;
	struct xsession *se;
	char why[160];
	json_t *res;

	if (!m->params ||
	    ward__arg_str(m->params, "clientName", &client, NULL, why, sizeof(why)) < 0 ||
	    ward__arg_str(m->params, "resumeSessionId", &resume, NULL, why, sizeof(why)) < 0) {
		ward__xs_reply_error(
			x, &m->id, WARD_RPC_INVALID_PARAMS, "%s",
			m->params ? why : "invalid type: null, expected struct InitializeParams");
		return;
	}
	if (!client) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS,
				     "missing field `clientName`");
		return;
	}
	/* As Codex: one successful initialize per connection (a failed one may be retried). */
	if (x->initialize_answered) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_REQUEST,
				     "initialize may only be sent once per connection");
		return;
	}
	if (resume) {
		se = find_session(s, resume);
		if (!se) {
			ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_REQUEST,
					     "unknown session id %.64s", resume);
			return;
		}
		if (se->conn) {
			ward__xs_reply_error(x, &m->id, XS_SESSION_ATTACHED,
					     "session %s is already attached to another connection",
					     se->id);
			return;
		}
		ward__loop_del_timer(s->loop, se->ttl_timer);
		se->ttl_timer = 0;
		se->detached_at = 0;
		snprintf(se->client, sizeof(se->client), "%s", client);
	} else {
		se = calloc(1, sizeof(*se));
		if (!se) {
			ward__xs_reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR, "out of memory");
			return;
		}
		se->srv = s;
		if (ward__proc_pool_new(s->loop, &se->pool) < 0) {
			free(se);
			ward__xs_reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR, "out of memory");
			return;
		}
		uuid_v4(se->id);
		snprintf(se->client, sizeof(se->client), "%s", client);
		se->next = s->sessions;
		if (s->sessions)
			s->sessions->prev = se;
		s->sessions = se;
		s->n_sessions++;
	}
	se->conn = x;
	x->sess = se;
	x->initialize_answered = true;
	res = json_pack("{s:s, s:o}", "sessionId", se->id, "environmentInfo", environment_info(s));
	ward__xs_reply(x, &m->id, res);
}

static void on_fs_reply(void *reply_ctx, json_t *result, int code, const char *message)
{
	struct xfsop *op = reply_ctx;
	struct xconn *x = op->conn;

	if (x) {
		for (struct xfsop **pp = &x->fsops; *pp; pp = &(*pp)->next)
			if (*pp == op) {
				*pp = op->next;
				break;
			}
		if (result) {
			ward__xs_reply(x, &op->id, result);
		} else {
			/* Whole: a message quotes a path (up to PATH_MAX), as Codex's does. */
			struct ward__buf b;

			ward__buf_init(&b, 64 * 1024);
			if (ward__rpc_encode_error(&x->srv->codec, &b, &op->id, code,
						   message ? message : "failed", NULL) >= 0)
				ward__xs_send_bytes(x, &b);
			ward__buf_release(&b);
		}
	} else {
		json_decref(result);
	}
	ward__rpc_id_release(&op->id);
	free(op);
}

static void handle_fs(struct xconn *x, const struct ward__rpc_msg *m)
{
	struct ward__xfs_context ctx = {
		.policy = x->srv->policy,
		.cwd = x->srv->cwd,
		.allow_unsandboxed = x->srv->cfg.allow_unsandboxed,
		.orphans = &x->srv->fs_orphans,
		.own_dir = x->srv->cfg.own_dir,
	};
	struct xfsop *op = calloc(1, sizeof(*op));

	if (!op || ward__rpc_id_dup(&op->id, &m->id) < 0) {
		free(op);
		ward__xs_reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR, "out of memory");
		return;
	}
	op->conn = x;
	op->next = x->fsops;
	x->fsops = op;
	ward__xfs_handle(x->srv->loop, x->fs, &ctx, m->method, m->params, on_fs_reply, op);
}

/* The family word of Codex's gating errors, or NULL for a method ward does not serve. */
static const char *method_family(const char *meth)
{
	static const char *const exec_methods[] = {"process/start", "process/read", "process/write",
						   "process/signal", "process/terminate"};

	for (size_t i = 0; i < ELEMENTSOF(exec_methods); i++)
		if (strcmp(meth, exec_methods[i]) == 0)
			return "exec";
	if (ward__xfs_is_method(meth))
		return "filesystem";
	if (strcmp(meth, "environment/info") == 0)
		return "environment info";
	if (strcmp(meth, "environment/status") == 0)
		return "environment status";
	if (strncmp(meth, "ward/changes/", 13) == 0)
		return "changes";
	return NULL;
}

static void handle_request(struct xconn *x, const struct ward__rpc_msg *m)
{
	const char *meth = m->method;
	const char *family;

	if (m->params && !json_is_object(m->params)) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS,
				     "params must be an object");
		return;
	}
	if (strcmp(meth, "initialize") == 0) {
		handle_initialize(x, m);
		return;
	}
	family = method_family(meth);
	if (!family) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_METHOD_NOT_FOUND,
				     "exec-server does not implement `%s`", meth);
		return;
	}
	/* Codex's gate, in its words: the method family named. */
	if (!x->initialize_answered || !x->initialized) {
		ward__xs_reply_error(
			x, &m->id, WARD_RPC_INVALID_REQUEST,
			"client must %s before using %s methods",
			x->initialize_answered ? "send initialized" : "call initialize", family);
		return;
	}
	if (strcmp(meth, "process/start") == 0)
		ward__xs_handle_start(x, m);
	else if (strcmp(meth, "process/read") == 0)
		ward__xs_handle_read(x, m);
	else if (strcmp(meth, "process/write") == 0)
		ward__xs_handle_write(x, m);
	else if (strcmp(meth, "process/signal") == 0)
		ward__xs_handle_signal(x, m);
	else if (strcmp(meth, "process/terminate") == 0)
		ward__xs_handle_terminate(x, m);
	else if (strcmp(meth, "environment/info") == 0)
		ward__xs_reply(x, &m->id, environment_info(x->srv));
	else if (strcmp(meth, "environment/status") == 0)
		ward__xs_reply(x, &m->id, json_pack("{s:s}", "status", "ready"));
	else if (strncmp(meth, "ward/changes/", 13) == 0)
		ward__xs_handle_changes(x, m);
	else
		handle_fs(x, m);
}

/* ------------------------------------------------------------ connections */

static void *on_opened(struct ward__conn *c, void *server_userdata)
{
	struct ward__xserver *s = server_userdata;
	struct xconn *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->srv = s;
	x->c = c;
	if (ward__xfs_new(&x->fs) < 0) {
		free(x);
		return NULL;
	}
	/* Its budget's cgroup comes with its first process (procmethods.c): none yet. */
	{
		static const struct ward__limits none;

		ward__cgroup_new(&none, NULL, &x->group, NULL);
	}
	x->next = s->conns;
	if (s->conns)
		s->conns->prev = x;
	s->conns = x;
	s->n_conns++;
	return x;
}

/*
 * A message that could not be read, answered as Codex answers: code -32600
 * and id -1, unless ward recovered the request's own id (a client waiting for
 * that id then learns why).
 */
static void answer_failure(struct xconn *x, const struct ward__rpc_failure *f)
{
	struct ward__rpc_id id = f->id;
	char msg[WARD_RPC_MESSAGE_MAX + 64];
	struct ward__buf b;

	if (id.type != WARD_RPC_ID_INT && id.type != WARD_RPC_ID_STRING)
		id = ward__rpc_id_int(-1);
	snprintf(msg, sizeof(msg), "failed to parse JSON-RPC message: %s",
		 f->batch ? "batches are not supported" : f->message);
	ward__buf_init(&b, 64 * 1024);
	if (ward__rpc_encode_error(&x->srv->codec, &b, &id, WARD_RPC_INVALID_REQUEST, msg, NULL) >=
	    0)
		ward__xs_send_bytes(x, &b);
	ward__buf_release(&b);
}

/* Ends a connection that broke the protocol, from the loop (its session is detached). */
static void drop_connection(struct xconn *x)
{
	if (x->overflowed)
		return;
	x->overflowed = true;
	ward__loop_add_timer(x->srv->loop, 0, ward__xs_on_abort, x, &x->abort_timer);
}

static void on_message(struct ward__conn *c, const char *data, size_t len, void *userdata)
{
	struct xconn *x = userdata;
	struct ward__rpc_msg m;
	struct ward__rpc_failure f;
	size_t i;

	if (x->overflowed)
		return;
	for (i = 0; i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r'); i++)
		;
	if (i == len)
		return;
	if (ward__rpc_parse(&x->srv->codec, data, len, &m, &f) < 0) {
		answer_failure(x, &f);
		return;
	}
	switch (m.kind) {
	case WARD_RPC_REQUEST:
		handle_request(x, &m);
		break;
	case WARD_RPC_NOTIFICATION:
		if (strcmp(m.method, "initialized") == 0 && x->initialize_answered) {
			x->initialized = true;
			break;
		}
		/* As Codex 0.169: an unexpected notification ends the connection, silently. */
		drop_connection(x);
		break;
	case WARD_RPC_RESULT:
	case WARD_RPC_ERROR:
		/* ward sends no requests: a response from the client ends it too (as Codex). */
		drop_connection(x);
		break;
	}
	ward__rpc_msg_release(&m);
}

static void on_too_large(struct ward__conn *c, const char *prefix, size_t len, void *userdata)
{
	struct xconn *x = userdata;
	struct ward__rpc_failure f;

	ward__rpc_fail_oversized(&x->srv->codec, prefix, len, &f);
	answer_failure(x, &f);
}

static void on_drained(struct ward__conn *c, void *userdata)
{
	struct xconn *x = userdata;

	if (x->sess)
		ward__xs_procs_pause(x->sess, false);
}

static void on_closed(struct ward__conn *c, void *userdata)
{
	struct xconn *x = userdata;
	struct ward__xserver *s = x->srv;

	/* Reads this connection was waiting for die with it. */
	for (struct xsession *se = s->sessions; se; se = se->next)
		for (struct xproc *p = se->procs; p; p = p->next)
			for (struct xread *r = p->reads, *n; r; r = n) {
				n = r->next;
				if (r->conn == x)
					ward__xs_read_free(r);
			}
	if (x->sess)
		session_detach(x->sess);
	/* Filesystem requests still running answer nobody; their memory goes when they end. */
	for (struct xfsop *op = x->fsops; op; op = op->next)
		op->conn = NULL;
	ward__xfs_free(x->fs);
	/* Its processes in sessions that wait to be resumed stay in it: removed once they are gone. */
	ward__cgroup_bury(&x->group);
	ward__loop_del_timer(s->loop, x->abort_timer);
	if (x->prev)
		x->prev->next = x->next;
	else if (s->conns == x)
		s->conns = x->next;
	if (x->next)
		x->next->prev = x->prev;
	s->n_conns--;
	free(x);
}

static int on_admit(void *server_userdata)
{
	struct ward__xserver *s = server_userdata;

	/*
	 * A filesystem operation whose connection went still runs in its
	 * sandbox: it counts as a connection until it ends, so that clients
	 * that leave one behind each time cannot pile them up.
	 */
	return s->n_conns + s->fs_orphans.n >= s->cfg.max_connections ? 503 : 0;
}

static const struct ward__conn_handler handler = {
	.opened = on_opened,
	.message = on_message,
	.too_large = on_too_large,
	.drained = on_drained,
	.closed = on_closed,
	.admit = on_admit,
};

const struct ward__conn_handler *ward__xserver_handler(void)
{
	return &handler;
}

/* ------------------------------------------------------------ the server */

int ward__xserver_new(struct ward__loop *l, const struct ward__xserver_config *c,
		      struct ward__xserver **ret, struct ward_error *err)
{
	struct ward__xserver *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return ward__error(err, -ENOMEM, "serve", "out of memory");
	s->loop = l;
	s->cfg = *c;
	ward__buf_init(&s->notify_buf, (size_t)1 << 30);
	if (!s->cfg.max_connections)
		s->cfg.max_connections = WARD_XS_DEFAULT_MAX_CONNECTIONS;
	if (!s->cfg.max_processes)
		s->cfg.max_processes = WARD_XS_DEFAULT_MAX_PROCESSES;
	if (!s->cfg.retain_bytes)
		s->cfg.retain_bytes = WARD_XS_RETAIN_BYTES;
	if (!s->cfg.retain_chunks)
		s->cfg.retain_chunks = WARD_XS_RETAIN_CHUNKS;
	if (!s->cfg.retain_total)
		s->cfg.retain_total = WARD_XS_RETAIN_TOTAL;
	if (!s->cfg.detached_ttl_ms)
		s->cfg.detached_ttl_ms = WARD_XS_DETACHED_TTL_MS;
	if (!s->cfg.exited_ttl_ms)
		s->cfg.exited_ttl_ms = WARD_XS_EXITED_TTL_MS;
	r = ward__rpc_codec_init(&s->codec, WARD_RPC_CODEX,
				 &(struct ward__rpc_limits){
					 .max_bytes = s->cfg.max_message
						 ? s->cfg.max_message
						 : WARD_RPC_DEFAULT_MAX_BYTES,
					 .max_depth = WARD_RPC_DEFAULT_MAX_DEPTH,
					 .max_values = WARD_RPC_DEFAULT_MAX_VALUES,
				 });
	if (r >= 0)
		r = ward_policy_copy(c->policy, &s->policy);
	if (r < 0) {
		ward__xserver_free(s);
		return ward__error(err, r, "serve", "cannot set up the server: %m");
	}
	s->cwd = c->policy->cwd ? strdup(c->policy->cwd) : ward__path_absolute(".");
	if (!s->cwd) {
		ward__xserver_free(s);
		return ward__error(err, -ENOMEM, "serve", "out of memory");
	}
	s->cfg.policy = s->policy;
	*ret = s;
	return 0;
}

void ward__xserver_free(struct ward__xserver *s)
{
	if (!s)
		return;
	while (s->conns)
		ward__conn_abort(s->conns->c);
	while (s->sessions)
		session_free(s->sessions);
	ward__xfs_orphans_release(&s->fs_orphans);
	ward_policy_free(s->policy);
	ward__buf_release(&s->notify_buf);
	free(s->cwd);
	free(s);
}

void ward__xserver_counts(const struct ward__xserver *s, size_t *ret_sessions,
			  size_t *ret_processes, size_t *ret_connections)
{
	if (ret_sessions)
		*ret_sessions = s->n_sessions;
	if (ret_processes)
		*ret_processes = s->n_procs;
	if (ret_connections)
		*ret_connections = s->n_conns;
}
