/* SPDX-License-Identifier: MIT */
/*
 * The process methods of the exec server (see xserver.h): process/start
 * (argv, the environment and the policy a request names) and
 * process/read, process/write, process/signal, process/terminate on a
 * process of the connection's session.
 */
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "exec/proc.h"
#include "rpc/jsonrpc.h"

#include "basic/uri.h"
#include "basic/util.h"

#include "changes/changes.h"
#include "execserver/xpolicy.h"
#include "policy/policy.h"
#include "execserver/xserver.h"

#include "rpc/args.h"

/* ------------------------------------------------------------ small helpers */

/* Strict base64 (RFC 4648, padded): -EINVAL for anything else. */
static int b64_decode(const char *s, size_t len, uint8_t **ret, size_t *ret_len)
{
	uint8_t *out;
	size_t pad = 0, n;
	int k;

	if (len % 4 != 0)
		return -EINVAL;
	if (len == 0) {
		*ret = malloc(1);
		*ret_len = 0;
		return *ret ? 0 : -ENOMEM;
	}
	for (size_t i = 0; i < len; i++) {
		char ch = s[i];

		if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		      (ch >= '0' && ch <= '9') || ch == '+' || ch == '/' ||
		      (ch == '=' && i >= len - 2)))
			return -EINVAL;
	}
	if (s[len - 1] == '=')
		pad++;
	if (s[len - 2] == '=')
		pad++;
	if (pad == 1 && s[len - 2] == '=')
		return -EINVAL;
	if (len > INT32_MAX)
		return -E2BIG;
	out = malloc(len / 4 * 3 + 1);
	if (!out)
		return -ENOMEM;
	k = EVP_DecodeBlock(out, (const unsigned char *)s, (int)len);
	if (k < 0) {
		free(out);
		return -EINVAL;
	}
	n = (size_t)k - pad;
	*ret = out;
	*ret_len = n;
	return 0;
}

/* ------------------------------------------------------------ process/start */

/* argv from a JSON array of strings, bounded. */
static int parse_argv(json_t *v, char ***ret, char *why, size_t size)
{
	size_t n = json_array_size(v), bytes = 0, i;
	char **argv;
	json_t *e;

	if (!json_is_array(v) || n == 0) {
		snprintf(why, size, "argv must be a non-empty array of strings");
		return -1;
	}
	if (n > 65536) {
		snprintf(why, size, "argv has more than 65536 arguments");
		return -1;
	}
	argv = calloc(n + 1, sizeof(*argv));
	if (!argv) {
		snprintf(why, size, "out of memory");
		return -1;
	}
	json_array_foreach(v, i, e)
	{
		if (!json_is_string(e) || strlen(json_string_value(e)) != json_string_length(e) ||
		    (bytes += json_string_length(e) + 1) > WARD_XS_MAX_ARGV) {
			snprintf(why, size,
				 "argv[%zu] must be a string without NUL (argv at most %zu bytes)",
				 i, WARD_XS_MAX_ARGV);
			strv_freep(&argv);
			return -1;
		}
		argv[i] = strdup(json_string_value(e));
		if (!argv[i]) {
			snprintf(why, size, "out of memory");
			strv_freep(&argv);
			return -1;
		}
	}
	*ret = argv;
	return 0;
}

/* "NAME=VALUE" entries from a JSON object, appended to a vector. */
static int append_env(json_t *obj, char ***envp, size_t *n, char *why, size_t size)
{
	const char *k;
	json_t *v;
	size_t bytes = 0;

	json_object_foreach(obj, k, v)
	{
		char *kv, **nv;
		size_t i;

		if (!json_is_string(v) || !k[0] || strchr(k, '=') ||
		    strlen(json_string_value(v)) != json_string_length(v)) {
			snprintf(why, size,
				 "env: \"%.64s\" must be a name without '=' and a string "
				 "value without NUL",
				 k);
			return -1;
		}
		bytes += strlen(k) + json_string_length(v) + 2;
		if (*n >= WARD_ENV_MAX_VARS || bytes > WARD_ENV_MAX_BYTES) {
			snprintf(why, size, "env: more than %d variables or %zu bytes",
				 WARD_ENV_MAX_VARS, WARD_ENV_MAX_BYTES);
			return -1;
		}
		if (asprintf(&kv, "%s=%s", k, json_string_value(v)) < 0)
			return -1;
		/* A later value for the same name replaces the earlier one. */
		for (i = 0; i < *n; i++)
			if (strncmp((*envp)[i], kv, strlen(k) + 1) == 0)
				break;
		if (i < *n) {
			free((*envp)[i]);
			(*envp)[i] = kv;
			continue;
		}
		nv = reallocarray(*envp, *n + 2, sizeof(char *));
		if (!nv) {
			free(kv);
			return -1;
		}
		*envp = nv;
		nv[(*n)++] = kv;
		nv[*n] = NULL;
	}
	return 0;
}

static int strv_len(char **v)
{
	int n = 0;

	for (; v && v[n]; n++)
		;
	return n;
}

/*
 * The command's environment: exactly `env` (as Codex), or with envPolicy the
 * server's own environment filtered by it (inherit, excludes, includeOnly,
 * set) and then `env` on top.
 */
static int build_env(struct ward__xserver *s, json_t *params, const struct ward_policy *pol,
		     char ***ret, char *why, size_t size)
{
	json_t *env = json_object_get(params, "env"), *ep = json_object_get(params, "envPolicy");
	char **envp = NULL;
	size_t n = 0;

	if (env && !json_is_null(env) && !json_is_object(env)) {
		snprintf(why, size, "env must be an object of strings");
		return -1;
	}
	if (ep && !json_is_null(ep)) {
		struct ward_run_options *o = NULL;
		const char *inherit = json_string_value(json_object_get(ep, "inherit"));
		json_t *v;
		size_t i;
		int r = ward_run_options_new(&o);

		if (!json_is_object(ep) || r < 0) {
			ward_run_options_free(o);
			snprintf(why, size, "envPolicy must be an object");
			return -1;
		}
		if (!inherit || strcmp(inherit, "all") == 0)
			o->env_inherit = WARD_ENV_INHERIT_ALL;
		else if (strcmp(inherit, "core") == 0)
			o->env_inherit = WARD_ENV_INHERIT_CORE;
		else if (strcmp(inherit, "none") == 0)
			o->env_inherit = WARD_ENV_INHERIT_NONE;
		else
			r = -EINVAL;
		o->env_default_excludes =
			!json_is_true(json_object_get(ep, "ignoreDefaultExcludes"));
		json_array_foreach(json_object_get(ep, "exclude"), i, v) if (r >= 0) r =
			json_is_string(v) ? ward_run_options_env_exclude(o, json_string_value(v))
					  : -EINVAL;
		json_array_foreach(json_object_get(ep, "includeOnly"), i, v) if (r >= 0) r =
			json_is_string(v)
			? ward_run_options_env_include_only(o, json_string_value(v))
			: -EINVAL;
		{
			const char *k;

			json_object_foreach(json_object_get(ep, "set"), k, v) if (r >= 0) r =
				json_is_string(v)
				? ward_run_options_env_set(o, k, json_string_value(v))
				: -EINVAL;
		}
		if (r >= 0)
			r = ward__exec_env_build(o, pol, &envp);
		ward_run_options_free(o);
		if (r < 0) {
			snprintf(why, size, "envPolicy is invalid or too large: %s", strerror(-r));
			return -1;
		}
		n = (size_t)strv_len(envp);
	} else {
		envp = calloc(1, sizeof(char *));
		if (!envp)
			return -1;
	}
	if (env && json_is_object(env) && append_env(env, &envp, &n, why, size) < 0) {
		strv_freep(&envp);
		return -1;
	}
	/* The network by domain: the proxy variables, whatever env the client gave. */
	if (ward__exec_env_add_net(pol, &envp) < 0) {
		strv_freep(&envp);
		snprintf(why, size, "the environment is too large for the proxy variables");
		return -1;
	}
	*ret = envp;
	return 0;
}

/*
 * The process's policy: the server's (its workspace stays the server's: the
 * process's cwd is only where it starts), or the request's own (a sandbox
 * object or wardPolicy), whose workspace is the sandbox's cwd, else the
 * process's (as Codex).
 */
static int build_policy(struct ward__xserver *s, json_t *params, const char *cwd,
			struct ward_policy **ret, bool *ret_sandboxed, struct ward_error *e)
{
	return ward__xs_build_policy(s->policy, s->cfg.allow_unsandboxed, s->cfg.own_dir, params,
				     cwd, ret, ret_sandboxed, e);
}

/*
 * What a running process holds because of its policy: the policy (kept with
 * the process), the sandbox's own copy of it, and its guard's record of each
 * protected path (the path again and about 256 bytes of state). Measured at
 * three times the policy's weight and that much per protected path.
 */
static size_t policy_charge(const struct ward_policy *pol)
{
	return 3 * ward__policy_weight(pol) + 256 * pol->n_protected;
}

static char *json_quote(const char *s)
{
	json_t *j = json_string(s);
	char *out = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;

	json_decref(j);
	return out;
}

/*
 * Codex's metadata: {threadId, toolCallId}, both optional strings, kept with
 * the process for the audit log (which tool call ran what). Members beyond
 * these are ignored like any other; a known one of the wrong type is not.
 */
static int parse_metadata(json_t *v, char **ret_thread, char **ret_tool_call, char *why,
			  size_t size)
{
	static const char *const names[] = {"threadId", "toolCallId"};
	char **rets[] = {ret_thread, ret_tool_call};

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v)) {
		snprintf(why, size, "'metadata' must be an object");
		return -1;
	}
	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		const char *str = NULL;

		if (ward__arg_str(v, names[i], &str, NULL, why, size) < 0)
			return -1;
		if (!str)
			continue;
		if (strlen(str) > WARD_XS_MAX_METADATA) {
			snprintf(why, size, "'metadata.%s' is longer than %d bytes", names[i],
				 WARD_XS_MAX_METADATA);
			return -1;
		}
		*rets[i] = strdup(str);
		if (!*rets[i]) {
			snprintf(why, size, "out of memory");
			return -1;
		}
	}
	return 0;
}

void ward__xs_handle_start(struct xconn *x, const struct ward__rpc_msg *m)
{
	struct ward__xserver *s = x->srv;
	struct xsession *se = x->sess;
	json_t *params = m->params;
	const char *pid = NULL, *cwd_s = NULL, *arg0 = NULL;
	_cleanup_free_ char *thread = NULL, *tool_call = NULL;
	_cleanup_free_ char *cwd = NULL;
	_cleanup_strv_free_ char **argv = NULL, **envp = NULL;
	_cleanup_free_ char *exec_path = NULL;
	struct ward__proc_spec spec = {0};
	struct stat st = {0};
	struct ward_error e = {0};
	struct xproc *p;
	int64_t timeout = 0, rows = 0, cols = 0;
	bool tty = false, pipe_stdin = false, managed = false;
	char why[256];
	int r;

	if (!params || !json_is_object(params)) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS,
				     "process/start needs params");
		return;
	}
	if (ward__arg_str(params, "processId", &pid, NULL, why, sizeof(why)) < 0 ||
	    ward__arg_str(params, "cwd", &cwd_s, NULL, why, sizeof(why)) < 0 ||
	    ward__arg_str(params, "arg0", &arg0, NULL, why, sizeof(why)) < 0 ||
	    ward__arg_bool(params, "tty", &tty, why, sizeof(why)) < 0 ||
	    ward__arg_bool(params, "pipeStdin", &pipe_stdin, why, sizeof(why)) < 0 ||
	    ward__arg_bool(params, "enforceManagedNetwork", &managed, why, sizeof(why)) < 0 ||
	    ward__arg_int(params, "timeoutMs", 1, INT64_C(1000000000000), &timeout, why,
			  sizeof(why)) < 0 ||
	    ward__arg_int(params, "rows", 1, 65535, &rows, why, sizeof(why)) < 0 ||
	    ward__arg_int(params, "cols", 1, 65535, &cols, why, sizeof(why)) < 0) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "%s", why);
		return;
	}
	if (!pid || !pid[0] || strlen(pid) > WARD_XS_MAX_PROCESS_ID) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS,
				     "processId must be a non-empty string of at most %u bytes",
				     WARD_XS_MAX_PROCESS_ID);
		return;
	}
	if (parse_argv(json_object_get(params, "argv"), &argv, why, sizeof(why)) < 0 ||
	    parse_metadata(json_object_get(params, "metadata"), &thread, &tool_call, why,
			   sizeof(why)) < 0) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "%s", why);
		return;
	}
	if (cwd_s && ward__path_or_file_uri(cwd_s, &cwd) < 0) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS,
				     "cwd must be an absolute file: URI, got \"%.200s\"", cwd_s);
		return;
	}
	if (!cwd) {
		cwd = strdup(s->cwd);
		if (!cwd) {
			ward__xs_reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR, "out of memory");
			return;
		}
	}
	if (managed ||
	    (json_object_get(params, "managedNetwork") &&
	     !json_is_null(json_object_get(params, "managedNetwork")))) {
		/* Never pretend: the network would be whatever the policy says, not a proxy's. */
		ward__xs_reply_error(
			x, &m->id, WARD_RPC_INVALID_PARAMS,
			"managedNetwork is not supported by ward: give the hosts in the sandbox's "
			"permissions (network: {\"enabled\": true, \"allowed_domains\": [...]}) "
			"or in wardPolicy (\"allow_domains\")");
		return;
	}
	if (ward__xs_proc_find(se, pid)) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_REQUEST,
				     "process %s already exists", pid);
		return;
	}
	if (se->n_procs >= s->cfg.max_processes) {
		ward__xs_reply_error(
			x, &m->id, WARD_RPC_INVALID_REQUEST,
			"too many processes in this session (%zu): terminate some first",
			s->cfg.max_processes);
		return;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR, "out of memory");
		return;
	}
	p->sess = se;
	p->tty = tty;
	p->pipe_stdin = pipe_stdin && !tty;
	p->exit_code = -1;
	p->id = strdup(pid);
	p->id_json = json_quote(pid);
	if (!p->id || !p->id_json) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR, "out of memory");
		goto fail;
	}
	r = build_policy(s, params, cwd, &p->policy, &p->sandboxed, &e);
	if (r < 0) {
		ward__xs_reply_error(
			x, &m->id, r == -ENOMEM ? WARD_RPC_INTERNAL_ERROR : WARD_RPC_INVALID_PARAMS,
			"%s", e.message);
		goto fail;
	}
	/*
	 * The policy is kept while the process runs: what it holds is charged,
	 * so that a client naming hundreds of long paths in every request
	 * cannot make a session hold gigabytes.
	 */
	p->policy_weight = policy_charge(p->policy);
	if (p->policy_weight > WARD_XS_MAX_POLICY) {
		ward__xs_reply_error(
			x, &m->id, WARD_RPC_INVALID_PARAMS,
			"the sandbox's policy holds %zu bytes once resolved, with the "
			"sandbox's copy and its guard (at most %zu): name fewer or shorter "
			"paths",
			p->policy_weight, WARD_XS_MAX_POLICY);
		goto fail;
	}
	if (se->policy_bytes + p->policy_weight > WARD_XS_SESSION_POLICIES) {
		ward__xs_reply_error(
			x, &m->id, WARD_RPC_INVALID_REQUEST,
			"the policies of this session's running processes hold %zu bytes "
			"(at most %zu): wait for some to end, or terminate them",
			se->policy_bytes, WARD_XS_SESSION_POLICIES);
		goto fail;
	}
	/*
	 * As Codex, a cwd that is not a directory fails the start (an internal
	 * error there). Under a policy that hides paths (deny-read) the sandbox
	 * decides instead, when it enters the directory: the server sees what
	 * the sandbox hides (it would tell a hidden directory, a hidden file and
	 * a missing path apart), so it does not look; the process then ends at
	 * once with the sandbox's own answer as its failure.
	 */
	if (!(p->sandboxed && p->policy->n_deny > 0) &&
	    (stat(cwd, &st) < 0 || !S_ISDIR(st.st_mode))) {
		int why_errno = stat(cwd, &st) < 0 ? errno : ENOTDIR;

		ward__xs_reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR, "cwd %s: %s", cwd,
				     strerror(why_errno));
		goto fail;
	}
	p->thread = TAKE_PTR(thread);
	p->tool_call = TAKE_PTR(tool_call);
	if (build_env(s, params, p->policy, &envp, why, sizeof(why)) < 0) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "%s", why);
		goto fail;
	}
	if (arg0 && arg0[0]) {
		/* The program is argv[0] (looked up in PATH); the process sees arg0 as its name. */
		exec_path = argv[0];
		argv[0] = strdup(arg0);
		if (!argv[0]) {
			argv[0] = exec_path;
			exec_path = NULL;
			ward__xs_reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR, "out of memory");
			goto fail;
		}
		spec.exec_path = exec_path;
	}
	spec.policy = p->policy;
	spec.argv = argv;
	spec.cwd = cwd;
	spec.envp = envp;
	spec.tty = tty;
	spec.rows = (unsigned short)rows;
	spec.cols = (unsigned short)cols;
	spec.stdin_pipe = p->pipe_stdin;
	spec.timeout_ms = (uint64_t)timeout;
	spec.pool = se->pool;
	/*
	 * The connection's total, beneath the server's: what its processes use
	 * together, whichever session they run in. Made with its first process
	 * (a connection that never starts one costs no cgroup). Without a cgroup
	 * for it the server's total alone holds.
	 */
	if (!x->group.active && !x->group_tried) {
		static unsigned n;
		char name[32];

		x->group_tried = true;
		snprintf(name, sizeof(name), "conn-%u", ++n);
		if ((s->cfg.connection_memory || s->cfg.connection_pids) && s->cfg.cg_total &&
		    s->cfg.cg_total->active)
			ward__cgroup_group_new(s->cfg.cg_total, name, s->cfg.connection_memory,
					       s->cfg.connection_pids, &x->group, NULL);
	}
	spec.cg_parent = x->group.active ? &x->group : s->cfg.cg_total;
	/* A spent budget refuses the start: never another client's process killed to make room. */
	r = ward__cgroup_admit(x->group.active ? &x->group : NULL, 2, "this connection's", &e);
	if (r >= 0)
		r = ward__cgroup_admit(s->cfg.cg_total, 2, "the server's", &e);
	if (r < 0) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_REQUEST, "%s (%s)", e.message,
				     e.hint);
		goto fail;
	}
	if (s->cfg.audit_path) {
		ward__xs_audit_net_hooks(p);
		spec.net_hooks = &p->net_hooks;
	}
	r = ward__xs_changes_begin(s, p, params, argv, &spec, &e);
	if (r < 0) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "%s", e.message);
		goto fail;
	}
	/* Linked before the start: callbacks may come as soon as the loop runs. */
	se->policy_bytes += p->policy_weight;
	p->next = se->procs;
	if (se->procs)
		se->procs->prev = p;
	se->procs = p;
	se->n_procs++;
	s->n_procs++;
	r = ward__proc_start(s->loop, &spec, &ward__xs_proc_ops, p, &p->proc, &e);
	if (r < 0) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR, "cannot start '%s': %s",
				     argv[0], e.message);
		ward__xs_proc_free(p);
		return;
	}
	if (x->c && ward__conn_congested(x->c)) {
		p->paused = true;
		ward__proc_pause_output(p->proc, true);
	}
	ward__xs_reply(x, &m->id,
		       json_pack("{s:s, s:s}", "processId", pid, "sandboxType",
				 p->sandboxed ? "linuxSeccomp" : "none"));
	ward__xs_audit_start(s, p, argv, cwd);
	return;
fail:
	if (p->crun) {
		(void)ward__journal_remove(p->crun);
		ward__changes_run_free(p->crun);
	}
	ward_policy_free(p->policy);
	free(p->id);
	free(p->id_json);
	free(p->thread);
	free(p->tool_call);
	free(p);
}

/* ------------------------------------------------------------ process methods */

/* The process named by params.processId, or an error answered. */
static struct xproc *param_proc(struct xconn *x, const struct ward__rpc_msg *m, bool answer)
{
	const char *pid =
		json_string_value(m->params ? json_object_get(m->params, "processId") : NULL);
	struct xproc *p;

	if (!pid) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS,
				     "processId must be a string");
		return NULL;
	}
	p = ward__xs_proc_find(x->sess, pid);
	if (!p && answer)
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_REQUEST, "unknown process id %s",
				     pid);
	return p;
}

void ward__xs_handle_read(struct xconn *x, const struct ward__rpc_msg *m)
{
	int64_t after = 0, max_bytes = 0, wait_ms = 0;
	struct xproc *p;
	struct xread *r;
	char why[160];

	if (!m->params ||
	    ward__arg_int(m->params, "afterSeq", 0, INT64_MAX, &after, why, sizeof(why)) < 0 ||
	    ward__arg_int(m->params, "maxBytes", 0, INT64_MAX, &max_bytes, why, sizeof(why)) < 0 ||
	    ward__arg_int(m->params, "waitMs", 0, INT64_MAX, &wait_ms, why, sizeof(why)) < 0) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "%s",
				     m->params ? why
					       : "invalid type: null, expected struct ReadParams");
		return;
	}
	p = param_proc(x, m, true);
	if (!p)
		return;
	/*
	 * Bounded: no long-poll longer than 5 minutes, and a few waiting reads
	 * per process and per connection; more are answered at once, as a wait
	 * that ended, which every client handles.
	 */
	wait_ms = MIN(wait_ms, (int64_t)WARD_XS_MAX_READ_WAIT_MS);
	if (ward__xs_read_ready(p, (uint64_t)after) || wait_ms == 0 ||
	    p->n_reads >= WARD_XS_PROC_READS || x->n_reads >= WARD_XS_CONN_READS) {
		ward__xs_reply(x, &m->id,
			       ward__xs_read_result(p, (uint64_t)after, (size_t)max_bytes));
		return;
	}
	r = calloc(1, sizeof(*r));
	if (!r || ward__rpc_id_dup(&r->id, &m->id) < 0) {
		free(r);
		ward__xs_reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR, "out of memory");
		return;
	}
	r->proc = p;
	r->conn = x;
	r->after_seq = (uint64_t)after;
	r->max_bytes = (size_t)max_bytes;
	r->next = p->reads;
	p->reads = r;
	p->n_reads++;
	x->n_reads++;
	ward__loop_add_timer(x->srv->loop, ward__now_ns() + (uint64_t)wait_ms * 1000000,
			     ward__xs_on_read_timeout, r, &r->timer);
}

/*
 * The memory the stdin queues of a session's processes hold: 1 MiB each
 * would make 4 GiB for a session of 4,096 processes that never read.
 */
static size_t session_stdin_held(const struct xsession *se)
{
	size_t n = 0;

	for (const struct xproc *q = se->procs; q; q = q->next)
		if (q->proc)
			n += ward__proc_stdin_held(q->proc);
	return n;
}

void ward__xs_handle_write(struct xconn *x, const struct ward__rpc_msg *m)
{
	const char *chunk = NULL, *wid = NULL;
	size_t chunk_len = 0, len = 0;
	_cleanup_free_ uint8_t *data = NULL;
	bool close_stdin = false;
	struct xproc *p;
	char why[160];
	int r;

	if (!m->params ||
	    ward__arg_str(m->params, "chunk", &chunk, &chunk_len, why, sizeof(why)) < 0 ||
	    ward__arg_str(m->params, "writeId", &wid, NULL, why, sizeof(why)) < 0 ||
	    ward__arg_bool(m->params, "closeStdin", &close_stdin, why, sizeof(why)) < 0) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "%s",
				     m->params ? why
					       : "invalid type: null, expected struct WriteParams");
		return;
	}
	if (!json_is_string(json_object_get(m->params, "processId"))) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS,
				     "missing field `processId`");
		return;
	}
	if (!chunk) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "missing field `chunk`");
		return;
	}
	if (!wid) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS, "missing field `writeId`");
		return;
	}
	if (!wid[0] || strlen(wid) > 256) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS,
				     "writeId must not be empty (nor longer than 256 bytes)");
		return;
	}
	/* No queue takes more than this at once: refused before it is decoded. */
	if (chunk_len / 4 * 3 > WARD_PROC_STDIN_QUEUE_MAX + 2) {
		ward__xs_reply_error(
			x, &m->id, WARD_RPC_INTERNAL_ERROR,
			"failed to write to process stdin: a chunk may hold at most %zu "
			"bytes",
			WARD_PROC_STDIN_QUEUE_MAX);
		return;
	}
	if (b64_decode(chunk, chunk_len, &data, &len) < 0) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS,
				     "chunk must be standard base64");
		return;
	}
	p = param_proc(x, m, false);
	if (!p) {
		ward__xs_reply(x, &m->id, json_pack("{s:s}", "status", "unknownProcess"));
		return;
	}
	/* A retried write (same writeId) is answered again and not written twice (as Codex). */
	if (ward__xs_write_id_seen(p, wid)) {
		ward__xs_reply(x, &m->id, json_pack("{s:s}", "status", "accepted"));
		return;
	}
	if (!p->tty && !p->pipe_stdin) {
		ward__xs_reply(x, &m->id, json_pack("{s:s}", "status", "stdinClosed"));
		return;
	}
	if (len > 0 && session_stdin_held(p->sess) + len > WARD_XS_SESSION_STDIN) {
		/* Not remembered either: the same writeId may be retried once the processes read. */
		ward__xs_reply_error(
			x, &m->id, WARD_RPC_INTERNAL_ERROR,
			"failed to write to process stdin: this session's processes hold "
			"%zu bytes of input they have not read (at most %zu)",
			session_stdin_held(p->sess), WARD_XS_SESSION_STDIN);
		return;
	}
	r = p->proc && !p->exited ? ward__proc_write(p->proc, data, len) : -EPIPE;
	if (r == -ENOBUFS) {
		/* Not remembered: the same writeId may be retried once the process reads. */
		ward__xs_reply_error(
			x, &m->id, WARD_RPC_INTERNAL_ERROR,
			"failed to write to process stdin: %zu bytes wait unread already",
			WARD_PROC_STDIN_QUEUE_MAX);
		return;
	}
	if (r < 0) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INTERNAL_ERROR,
				     "failed to write to process stdin");
		return;
	}
	if (close_stdin)
		ward__proc_close_stdin(p->proc);
	ward__xs_write_id_remember(p, wid);
	ward__xs_reply(x, &m->id, json_pack("{s:s}", "status", "accepted"));
}

static const struct {
	const char *name;
	int sig;
} signal_names[] = {
	{"interrupt", SIGINT}, {"terminate", SIGTERM}, {"kill", SIGKILL},    {"hangup", SIGHUP},
	{"quit", SIGQUIT},     {"SIGINT", SIGINT},     {"SIGTERM", SIGTERM}, {"SIGKILL", SIGKILL},
	{"SIGHUP", SIGHUP},    {"SIGQUIT", SIGQUIT},
};

void ward__xs_handle_signal(struct xconn *x, const struct ward__rpc_msg *m)
{
	const char *name =
		json_string_value(m->params ? json_object_get(m->params, "signal") : NULL);
	struct xproc *p;
	int sig = 0;

	if (!m->params || !json_is_string(json_object_get(m->params, "processId"))) {
		ward__xs_reply_error(x, &m->id, WARD_RPC_INVALID_PARAMS,
				     "missing field `processId`");
		return;
	}
	for (size_t i = 0; name && i < ELEMENTSOF(signal_names); i++)
		if (strcmp(name, signal_names[i].name) == 0)
			sig = signal_names[i].sig;
	if (!sig) {
		ward__xs_reply_error(
			x, &m->id, WARD_RPC_INVALID_PARAMS,
			"unknown signal, expected `interrupt` (ward also takes terminate, kill, "
			"hangup, quit)");
		return;
	}
	/* An unknown or finished process: nothing to signal, and no error (as Codex). */
	p = param_proc(x, m, false);
	if (p && p->proc && !p->exited) {
		if (sig == SIGKILL)
			ward__proc_terminate(p->proc);
		else
			ward__proc_signal(p->proc, sig);
	}
	ward__xs_reply(x, &m->id, json_object());
}

void ward__xs_handle_terminate(struct xconn *x, const struct ward__rpc_msg *m)
{
	struct xproc *p = param_proc(x, m, false);
	bool running;

	if (!p) {
		if (json_is_string(json_object_get(m->params, "processId")))
			ward__xs_reply(x, &m->id, json_pack("{s:b}", "running", 0));
		return;
	}
	running = p->proc && !p->exited;
	if (running)
		ward__proc_terminate(p->proc);
	ward__xs_reply(x, &m->id, json_pack("{s:b}", "running", running));
}
