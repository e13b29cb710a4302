/* SPDX-License-Identifier: MIT */
/*
 * The policy as JSON (jansson): ward's own form and Codex's legacy
 * SandboxPolicy, parsed strictly (unknown fields, wrong types, relative paths
 * and duplicate keys are errors naming the file and the field), and the
 * resolved policy described for `ward policy show`.
 */
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "policy/policy.h"

/* What one JSON document says, before it is merged into a policy. */
struct parsed {
	bool has_mode, has_cwd, has_network, has_slash, has_tmpdir, has_require, has_limits,
		has_require_limits;
	enum ward_sandbox_mode mode;
	char *cwd;
	bool network, exclude_slash_tmp, exclude_tmpdir_env_var, require_isolation;
	struct ward__strv writable, protect, unprotect, deny_read, sockets;
	struct ward__strv allow_domains, deny_domains, allow_addresses;
	char *dns_server;
	struct ward__limits limits;
	bool require_limits;
};

static void parsed_release(struct parsed *x)
{
	free(x->cwd);
	ward__strv_release(&x->writable);
	ward__strv_release(&x->protect);
	ward__strv_release(&x->unprotect);
	ward__strv_release(&x->deny_read);
	ward__strv_release(&x->sockets);
	ward__strv_release(&x->allow_domains);
	ward__strv_release(&x->deny_domains);
	ward__strv_release(&x->allow_addresses);
	free(x->dns_server);
}

#define FAIL(field, ...)                                                                    \
	do {                                                                                \
		char _m[384];                                                               \
		snprintf(_m, sizeof(_m), __VA_ARGS__);                                      \
		return ward__error(err, -EINVAL, "policy", "policy '%s': field \"%s\": %s", \
				   origin, field, _m);                                      \
	} while (0)

static int get_bool(json_t *v, const char *field, bool *ret, const char *origin,
		    struct ward_error *err)
{
	if (!json_is_boolean(v))
		FAIL(field, "expected true or false");
	*ret = json_is_true(v);
	return 0;
}

/* label is the field as shown in messages: "cwd" or "writable"[2]. */
static int check_path(const char *s, size_t len, const char *label, const char *origin,
		      struct ward_error *err)
{
	const char *why = NULL;

	if (len == 0)
		why = "path is empty";
	else if (strlen(s) != len)
		why = "path contains a NUL byte";
	else if (len >= PATH_MAX)
		why = "path is too long";
	if (why)
		return ward__error(err, -EINVAL, "policy", "policy '%s': field %s: %s", origin,
				   label, why);
	if (s[0] != '/')
		return ward__error(err, -EINVAL, "policy",
				   "policy '%s': field %s: path must be absolute: \"%.200s\"",
				   origin, label, s);
	return 0;
}

static int get_paths(json_t *v, const char *field, struct ward__strv *out, const char *origin,
		     struct ward_error *err)
{
	size_t i;
	json_t *e;
	int r;

	if (!json_is_array(v))
		FAIL(field, "expected an array of absolute paths");
	if (json_array_size(v) > WARD_POLICY_MAX_PATHS)
		FAIL(field, "more than %d paths", WARD_POLICY_MAX_PATHS);
	json_array_foreach(v, i, e)
	{
		char label[96];

		snprintf(label, sizeof(label), "\"%s\"[%zu]", field, i);
		if (!json_is_string(e))
			return ward__error(err, -EINVAL, "policy",
					   "policy '%s': field %s: expected a string", origin,
					   label);
		r = check_path(json_string_value(e), json_string_length(e), label, origin, err);
		if (r < 0)
			return r;
		r = ward__strv_push(out, json_string_value(e));
		if (r < 0)
			return ward__error(err, r, "policy", "policy '%s': field \"%s\": %m",
					   origin, field);
	}
	return 0;
}

/*
 * "allow_domains", "deny_domains" (host patterns) or "allow_addresses"
 * (ranges): each entry checked here, so that a bad one names its field and
 * index before anything is merged.
 */
static int get_net_list(json_t *v, const char *field, struct ward__strv *out, const char *origin,
			struct ward_error *err)
{
	bool addresses = strcmp(field, "allow_addresses") == 0;
	size_t i;
	json_t *e;

	if (!json_is_array(v))
		FAIL(field, "expected an array of strings");
	if (json_array_size(v) > (addresses ? WARD_NET_MAX_CIDRS : WARD_NET_MAX_PATTERNS))
		FAIL(field, "more than %d entries",
		     addresses ? WARD_NET_MAX_CIDRS : WARD_NET_MAX_PATTERNS);
	json_array_foreach(v, i, e)
	{
		struct ward__net_pattern np;
		struct ward__net_cidr c;
		const char *why = "not an address or range";
		const char *str = json_string_value(e);
		int r;

		if (!str || strlen(str) != json_string_length(e))
			return ward__error(err, -EINVAL, "policy",
					   "policy '%s': field \"%s\"[%zu]: expected a string",
					   origin, field, i);
		r = addresses ? ward__net_cidr_parse(str, &c)
			      : ward__net_pattern_parse(str, strcmp(field, "deny_domains") == 0,
							&np, &why);
		if (r < 0)
			return ward__error(err, -EINVAL, "policy",
					   "policy '%s': field \"%s\"[%zu]: '%.200s': %s", origin,
					   field, i, str, why);
		/* The list holds at most the patterns' own cap, above the paths' one. */
		r = ward__strv_push_unbounded(out, str);
		if (r < 0)
			return r;
	}
	return 0;
}

static int parse_own(json_t *root, struct parsed *x, const char *origin, struct ward_error *err)
{
	const char *key;
	json_t *v;
	int r = 0;

	json_object_foreach(root, key, v)
	{
		if (strcmp(key, "version") == 0) {
			if (!json_is_integer(v) || json_integer_value(v) != 1)
				FAIL(key, "expected 1");
		} else if (strcmp(key, "mode") == 0) {
			if (!json_is_string(v) ||
			    ward_policy_mode_from_string(json_string_value(v), &x->mode) < 0)
				FAIL(key,
				     "expected \"read-only\", \"workspace-write\" or \"danger-full-access\"");
			x->has_mode = true;
		} else if (strcmp(key, "cwd") == 0) {
			if (!json_is_string(v))
				FAIL(key, "expected an absolute path");
			r = check_path(json_string_value(v), json_string_length(v), "\"cwd\"",
				       origin, err);
			if (r < 0)
				return r;
			x->cwd = strdup(json_string_value(v));
			if (!x->cwd)
				return -ENOMEM;
			x->has_cwd = true;
		} else if (strcmp(key, "writable") == 0) {
			r = get_paths(v, key, &x->writable, origin, err);
		} else if (strcmp(key, "protect") == 0) {
			r = get_paths(v, key, &x->protect, origin, err);
		} else if (strcmp(key, "unprotect") == 0) {
			r = get_paths(v, key, &x->unprotect, origin, err);
		} else if (strcmp(key, "deny_read") == 0) {
			r = get_paths(v, key, &x->deny_read, origin, err);
		} else if (strcmp(key, "allow_unix_sockets") == 0) {
			r = get_paths(v, key, &x->sockets, origin, err);
		} else if (strcmp(key, "allow_domains") == 0) {
			r = get_net_list(v, key, &x->allow_domains, origin, err);
		} else if (strcmp(key, "deny_domains") == 0) {
			r = get_net_list(v, key, &x->deny_domains, origin, err);
		} else if (strcmp(key, "allow_addresses") == 0) {
			r = get_net_list(v, key, &x->allow_addresses, origin, err);
		} else if (strcmp(key, "dns_server") == 0) {
			if (!json_is_string(v) || json_string_length(v) == 0 ||
			    json_string_length(v) > 64)
				FAIL(key, "expected an address (IP or IP:PORT)");
			free(x->dns_server);
			x->dns_server = strdup(json_string_value(v));
			if (!x->dns_server)
				return -ENOMEM;
		} else if (strcmp(key, "network") == 0) {
			if (json_is_boolean(v))
				x->network = json_is_true(v);
			else if (json_is_string(v) && strcmp(json_string_value(v), "on") == 0)
				x->network = true;
			else if (json_is_string(v) && strcmp(json_string_value(v), "off") == 0)
				x->network = false;
			else
				FAIL(key, "expected \"off\" or \"on\"");
			x->has_network = true;
		} else if (strcmp(key, "exclude_slash_tmp") == 0) {
			r = get_bool(v, key, &x->exclude_slash_tmp, origin, err);
			x->has_slash = true;
		} else if (strcmp(key, "exclude_tmpdir_env_var") == 0) {
			r = get_bool(v, key, &x->exclude_tmpdir_env_var, origin, err);
			x->has_tmpdir = true;
		} else if (strcmp(key, "require_isolation") == 0) {
			r = get_bool(v, key, &x->require_isolation, origin, err);
			x->has_require = true;
		} else if (strcmp(key, "limits") == 0) {
			r = ward__limits_from_json(v, &x->limits, origin, err);
			x->has_limits = true;
		} else if (strcmp(key, "require_limits") == 0) {
			r = get_bool(v, key, &x->require_limits, origin, err);
			x->has_require_limits = true;
		} else {
			FAIL(key, "unknown field");
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* Codex's SandboxPolicy (protocol/src/protocol.rs), accepted unchanged. */
static int parse_codex(json_t *root, struct parsed *x, const char *origin, struct ward_error *err)
{
	json_t *type = json_object_get(root, "type");
	const char *key, *t;
	json_t *v;
	int r = 0;

	if (!json_is_string(type))
		FAIL("type", "expected a string");
	t = json_string_value(type);
	if (strcmp(t, "read-only") == 0)
		x->mode = WARD_MODE_READ_ONLY;
	else if (strcmp(t, "workspace-write") == 0)
		x->mode = WARD_MODE_WORKSPACE_WRITE;
	else if (strcmp(t, "danger-full-access") == 0)
		x->mode = WARD_MODE_DANGER_FULL_ACCESS;
	else if (strcmp(t, "external-sandbox") == 0)
		FAIL("type",
		     "\"external-sandbox\" means no sandbox from ward; use \"danger-full-access\" explicitly");
	else
		FAIL("type",
		     "expected \"read-only\", \"workspace-write\" or \"danger-full-access\", got \"%.64s\"",
		     t);
	x->has_mode = true;
	/* Codex's legacy policy has the network off unless network_access says otherwise. */
	x->has_network = true;

	json_object_foreach(root, key, v)
	{
		if (strcmp(key, "type") == 0)
			continue;
		if (strcmp(key, "network_access") == 0 && x->mode != WARD_MODE_DANGER_FULL_ACCESS) {
			r = get_bool(v, key, &x->network, origin, err);
		} else if (x->mode == WARD_MODE_WORKSPACE_WRITE &&
			   strcmp(key, "writable_roots") == 0) {
			r = get_paths(v, key, &x->writable, origin, err);
		} else if (x->mode == WARD_MODE_WORKSPACE_WRITE &&
			   strcmp(key, "exclude_tmpdir_env_var") == 0) {
			r = get_bool(v, key, &x->exclude_tmpdir_env_var, origin, err);
			x->has_tmpdir = true;
		} else if (x->mode == WARD_MODE_WORKSPACE_WRITE &&
			   strcmp(key, "exclude_slash_tmp") == 0) {
			r = get_bool(v, key, &x->exclude_slash_tmp, origin, err);
			x->has_slash = true;
		} else {
			FAIL(key, "unknown field for type \"%s\"", t);
		}
		if (r < 0)
			return r;
	}
	if (x->mode == WARD_MODE_DANGER_FULL_ACCESS)
		x->network = true;
	return 0;
}

/* Codex's PermissionProfile is tagged managed/disabled/external; its legacy policy otherwise. */
static bool is_permission_profile(json_t *root)
{
	const char *t = json_string_value(json_object_get(root, "type"));

	return t &&
		(strcmp(t, "managed") == 0 || strcmp(t, "disabled") == 0 ||
		 strcmp(t, "external") == 0);
}

/*
 * How many entries merging from into into would add: the distinct ones not
 * there yet. The cap is on the merged list, so a document loaded twice (its
 * paths all there already) adds nothing and cannot exceed it.
 */
static size_t count_new(const struct ward__strv *into, const struct ward__strv *from)
{
	size_t n = 0;

	for (size_t i = 0; i < from->n; i++) {
		bool seen = ward__strv_contains(into, from->v[i]);

		for (size_t j = 0; j < i && !seen; j++)
			seen = strcmp(from->v[j], from->v[i]) == 0;
		n += !seen;
	}
	return n;
}

static bool merge_fits(const struct ward__strv *into, const struct ward__strv *from)
{
	return into->n + count_new(into, from) <= WARD_POLICY_MAX_PATHS;
}

static int merge_list(struct ward__strv *into, const struct ward__strv *from)
{
	if (!merge_fits(into, from))
		return -E2BIG;
	for (size_t i = 0; i < from->n; i++) {
		int r;

		if (ward__strv_contains(into, from->v[i]))
			continue;
		r = ward__strv_push(into, from->v[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

WARD_PUBLIC int ward_policy_load_json(struct ward_policy *p, const char *json, size_t len,
				      const char *origin, struct ward_error *err)
{
	json_auto_t *root = NULL;
	struct parsed x = {0};
	const char *why = "out of memory";
	json_error_t je;
	int r;

	if (!p || !json)
		return -EINVAL;
	if (!origin)
		origin = "<string>";
	if (len > WARD_POLICY_MAX_FILE)
		return ward__error(err, -EFBIG, "policy", "policy '%s': larger than %d bytes",
				   origin, WARD_POLICY_MAX_FILE);
	root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!root)
		return ward__error(err, -EINVAL, "policy",
				   "policy '%s': invalid JSON at line %d, column %d: %s", origin,
				   je.line, je.column, je.text);
	if (!json_is_object(root))
		return ward__error(err, -EINVAL, "policy",
				   "policy '%s': expected a JSON object at the top level", origin);

	if (is_permission_profile(root)) {
		/* Codex's PermissionProfile: its project roots are the policy's working directory. */
		_cleanup_free_ char *cwd = p->cwd ? strdup(p->cwd) : ward__path_absolute(".");
		char *roots[1] = {cwd};

		if (!cwd)
			return ward__error(err, -ENOMEM, "policy", "out of memory");
		return ward__policy_apply_profile(p, root, roots, 1, origin, err);
	}
	r = json_object_get(root, "type") ? parse_codex(root, &x, origin, err)
					  : parse_own(root, &x, origin, err);
	if (r < 0)
		goto out;

	/* Lists first: a cap error must leave the policy as it was. */
	if (!merge_fits(&p->writable, &x.writable) || !merge_fits(&p->protect, &x.protect) ||
	    !merge_fits(&p->unprotect, &x.unprotect) || !merge_fits(&p->deny_read, &x.deny_read) ||
	    !merge_fits(&p->unix_sockets, &x.sockets)) {
		r = ward__error(err, -E2BIG, "policy",
				"policy '%s': more than %d paths in one list", origin,
				WARD_POLICY_MAX_PATHS);
		goto out;
	}
	if ((r = merge_list(&p->writable, &x.writable)) < 0 ||
	    (r = merge_list(&p->protect, &x.protect)) < 0 ||
	    (r = merge_list(&p->unprotect, &x.unprotect)) < 0 ||
	    (r = merge_list(&p->deny_read, &x.deny_read)) < 0 ||
	    (r = merge_list(&p->unix_sockets, &x.sockets)) < 0) {
		ward__error(err, r, "policy", "policy '%s': %m", origin);
		goto out;
	}
	if (p->n_allow_domains + x.allow_domains.n > WARD_NET_MAX_PATTERNS ||
	    p->n_deny_domains + x.deny_domains.n > WARD_NET_MAX_PATTERNS ||
	    p->n_allow_addresses + x.allow_addresses.n > WARD_NET_MAX_CIDRS) {
		r = ward__error(err, -E2BIG, "policy", "policy '%s': too many host patterns",
				origin);
		goto out;
	}
	for (size_t i = 0; r >= 0 && i < x.allow_domains.n; i++)
		r = ward__policy_add_domain(p, x.allow_domains.v[i], false, &why);
	for (size_t i = 0; r >= 0 && i < x.deny_domains.n; i++)
		r = ward__policy_add_domain(p, x.deny_domains.v[i], true, &why);
	for (size_t i = 0; r >= 0 && i < x.allow_addresses.n; i++)
		r = ward__policy_add_address(p, x.allow_addresses.v[i], &why);
	if (r < 0) {
		ward__error(err, r, "policy", "policy '%s': %s", origin, why);
		goto out;
	}
	if (x.dns_server) {
		free(p->dns_server);
		p->dns_server = TAKE_PTR(x.dns_server);
	}
	if (x.has_mode)
		p->mode = x.mode;
	if (x.has_cwd) {
		free(p->cwd);
		p->cwd = TAKE_PTR(x.cwd);
	}
	if (x.has_network) {
		p->network = x.network;
		p->network_set = true;
	}
	if (x.has_slash)
		p->exclude_slash_tmp = x.exclude_slash_tmp;
	if (x.has_tmpdir)
		p->exclude_tmpdir_env_var = x.exclude_tmpdir_env_var;
	if (x.has_require)
		p->require_isolation = x.require_isolation;
	if (x.has_limits) {
		/* The limits a document names replace the same ones; the others stay. */
		bool req = p->limits.require;
		struct ward__limits l = x.limits;

		if (!l.memory)
			l.memory = p->limits.memory;
		if (!l.pids)
			l.pids = p->limits.pids;
		if (!l.cpu_milli)
			l.cpu_milli = p->limits.cpu_milli;
		for (int i = 0; i < WARD_RLIMIT_N; i++)
			if (!l.rlimit_set[i] && p->limits.rlimit_set[i]) {
				l.rlimit_set[i] = true;
				l.rlimit[i] = p->limits.rlimit[i];
			}
		p->limits = l;
		p->limits.require = req;
	}
	if (x.has_require_limits)
		p->limits.require = x.require_limits;
	p->resolved = false;
	r = 0;
out:
	parsed_release(&x);
	return r;
}

WARD_PUBLIC int ward_policy_load_file(struct ward_policy *p, const char *path,
				      struct ward_error *err)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	if (!p || !path)
		return -EINVAL;
	r = ward__read_file(path, WARD_POLICY_MAX_FILE, &buf, &len);
	if (r == -EFBIG)
		return ward__error(err, r, "policy", "policy '%s': larger than %d bytes", path,
				   WARD_POLICY_MAX_FILE);
	if (r < 0)
		return ward__error(err, r, "policy", "cannot read policy '%s': %m", path);
	return ward_policy_load_json(p, buf, len, path, err);
}

/*
 * A path (or a note naming one) as a JSON string. A name need not be UTF-8,
 * and jansson refuses what is not: such a path would vanish from the report
 * (an entry without its "path"), so its bytes past ASCII are written \xNN.
 */
static json_t *path_json(const char *s)
{
	json_t *j = json_string(s);
	char *esc;
	size_t k = 0;

	if (j || !s)
		return j;
	esc = malloc(strlen(s) * 4 + 1);
	if (!esc)
		return NULL;
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		k += (size_t)(*c < 0x80 ? snprintf(esc + k, 2, "%c", *c)
					: snprintf(esc + k, 5, "\\x%02x", *c));
	j = json_string(esc);
	free(esc);
	return j;
}

static json_t *strv_json(const struct ward__strv *v)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < v->n; i++)
		json_array_append_new(a, path_json(v->v[i]));
	return a;
}

/*
 * The directories where autorun names are watched for (beyond the missing
 * ones listed at each root): how deep the scan went, whether a cap stopped
 * it, how many directories the scan cache answered for, and each directory
 * looked into.
 */
static json_t *autorun_json(const struct ward_policy *p)
{
	json_t *o = json_object(), *dirs = json_array();

	if (!o || !dirs) {
		json_decref(o);
		json_decref(dirs);
		return NULL;
	}
	json_object_set_new(o, "depth", json_integer(WARD_AUTORUN_DEPTH));
	json_object_set_new(o, "complete", json_boolean(!p->scan_cut));
	json_object_set_new(o, "depth_complete", json_integer(p->scan_depth));
	json_object_set_new(o, "unread", json_integer((json_int_t)p->scan_unread));
	json_object_set_new(o, "cached", json_integer(p->scan_cached));
	json_object_set_new(o, "home", p->home ? path_json(p->home) : json_null());
	json_object_set_new(o, "missing_path_dirs", strv_json(&p->path_missing));
	for (size_t i = 0; i < p->n_watches; i++)
		json_array_append_new(dirs, path_json(p->watches[i].path));
	json_object_set_new(o, "watched", dirs);
	return o;
}

json_t *ward__policy_to_json(const struct ward_policy *p)
{
	json_t *o = json_object(), *prot = json_array(), *deny = json_array(),
	       *socks = json_array();

	if (!o || !prot || !deny || !socks) {
		json_decref(o);
		json_decref(prot);
		json_decref(deny);
		json_decref(socks);
		return NULL;
	}
	json_object_set_new(o, "mode", json_string(ward_policy_mode_to_string(p->mode)));
	json_object_set_new(o, "cwd", path_json(p->resolved_cwd ? p->resolved_cwd : ""));
	json_object_set_new(o, "writable_roots", strv_json(&p->roots));
	for (size_t i = 0; i < p->n_protected; i++) {
		const struct ward__protected *e = &p->protected[i];
		json_t *j = json_object();

		json_object_set_new(j, "path", path_json(e->path));
		json_object_set_new(j, "kind",
				    json_string(e->kind == WARD_PROTECT_READONLY ? "read-only"
							: e->kind == WARD_PROTECT_PIN
							? "pinned"
							: "missing-guarded"));
		json_object_set_new(j, "reason", json_string(e->reason));
		if (ward__policy_reason_runner(e->reason))
			json_object_set_new(j, "runs",
					    json_string(ward__policy_reason_runner(e->reason)));
		if (e->kind == WARD_PROTECT_MISSING) {
			json_object_set_new(j, "guard_dir", path_json(e->guard_dir));
			json_object_set_new(j, "guard_name", path_json(e->guard_name));
		}
		json_array_append_new(prot, j);
	}
	json_object_set_new(o, "protected", prot);
	json_object_set_new(o, "unprotected", strv_json(&p->unprotected));
	json_object_set_new(o, "autorun", autorun_json(p));
	for (size_t i = 0; i < p->n_deny; i++) {
		json_t *j = json_object();

		json_object_set_new(j, "path", path_json(p->deny[i].path));
		json_object_set_new(j, "type",
				    json_string(p->deny[i].is_dir ? "directory" : "file"));
		json_array_append_new(deny, j);
	}
	json_object_set_new(o, "deny_read", deny);
	json_object_set_new(o, "network",
			    json_string(p->network || p->mode == WARD_MODE_DANGER_FULL_ACCESS ? "on"
						: ward__policy_net_by_domain(p) ? "by-domain"
										: "off"));
	if (ward__policy_net_by_domain(p)) {
		json_t *allow = json_array(), *denyl = json_array(), *addrs = json_array();
		char buf[WARD_NET_HOST_MAX + 16];

		for (size_t i = 0; allow && i < p->n_allow_domains; i++) {
			ward__net_pattern_format(&p->allow_domains[i], buf, sizeof(buf));
			json_array_append_new(allow, json_string(buf));
		}
		for (size_t i = 0; denyl && i < p->n_deny_domains; i++) {
			ward__net_pattern_format(&p->deny_domains[i], buf, sizeof(buf));
			json_array_append_new(denyl, json_string(buf));
		}
		for (size_t i = 0; addrs && i < p->n_allow_addresses; i++) {
			ward__net_cidr_format(&p->allow_addresses[i], buf, sizeof(buf));
			json_array_append_new(addrs, json_string(buf));
		}
		json_object_set_new(o, "allow_domains", allow);
		json_object_set_new(o, "deny_domains", denyl);
		json_object_set_new(o, "allow_addresses", addrs);
		json_object_set_new(o, "dns_server",
				    p->dns_server ? json_string(p->dns_server) : json_null());
	}
	for (size_t i = 0; i < p->n_sockets; i++)
		json_array_append_new(socks, path_json(p->sockets[i].path));
	json_object_set_new(o, "allow_unix_sockets", socks);
	json_object_set_new(o, "exclude_slash_tmp", json_boolean(p->exclude_slash_tmp));
	json_object_set_new(o, "exclude_tmpdir_env_var", json_boolean(p->exclude_tmpdir_env_var));
	json_object_set_new(o, "require_isolation", json_boolean(p->require_isolation));
	json_object_set_new(o, "limits", ward__limits_to_json(&p->limits));
	json_object_set_new(o, "require_limits", json_boolean(p->limits.require));
	json_object_set_new(o, "notes", strv_json(&p->notes));
	return o;
}
