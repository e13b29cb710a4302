/* SPDX-License-Identifier: MIT */
/*
 * Codex's PermissionProfile (the `sandbox.permissions` of its exec-server,
 * and the canonical form of its policies, reference codex.md §1.3-1.4) mapped
 * onto ward's policy.
 *
 * ward's model is "everything readable but the deny-read paths, writable
 * roots with read-only carve-outs, network on or off", which covers what
 * Codex's built-in profiles and its clients send. What ward cannot enforce
 * exactly is refused with a reason, never widened or narrowed silently: a
 * profile that reads only some paths (no `:root` read), deny globs, a
 * writable path inside a denied one, a workspace that is not writable.
 *
 * Members ward does not know are ignored, as Codex's own parser (serde
 * without deny_unknown_fields) ignores them: a newer client's profile keeps
 * working. Its restrictions are values, not members (an entry's access, a
 * path's kind), and an unknown value is refused, as Codex refuses it.
 */
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/uri.h"
#include "basic/util.h"
#include "policy/policy.h"

enum access {
	ACC_READ = 1,
	ACC_WRITE = 2,
	ACC_DENY = 3, /* deny > write > read between equally specific entries */
};

struct entry {
	char *path; /* absolute, lexically normalised */
	enum access access;
};

struct entries {
	struct entry *v;
	size_t n;
	bool minimal_read; /* the `:minimal` special path was granted */
};

#define MAX_ENTRIES 1024

static void entries_release(struct entries *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i].path);
	free(e->v);
}

#define PFAIL(...)                                                                         \
	do {                                                                               \
		char _m[384];                                                              \
		snprintf(_m, sizeof(_m), __VA_ARGS__);                                     \
		return ward__error(err, -EINVAL, "policy", "policy '%s': %s", origin, _m); \
	} while (0)

/* Adds path with access; a path given twice keeps the stronger access (deny > write > read). */
static int add_entry(struct entries *e, const char *path, enum access a)
{
	_cleanup_free_ char *norm = ward__path_absolute(path);
	struct entry *nv;

	if (!norm)
		return -errno;
	for (size_t i = 0; i < e->n; i++)
		if (strcmp(e->v[i].path, norm) == 0) {
			if (a > e->v[i].access)
				e->v[i].access = a;
			return 0;
		}
	if (e->n >= MAX_ENTRIES)
		return -E2BIG;
	nv = reallocarray(e->v, e->n + 1, sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	e->v = nv;
	e->v[e->n++] = (struct entry){TAKE_PTR(norm), a};
	return 0;
}

static int parse_access(json_t *v, enum access *ret)
{
	const char *s = json_string_value(v);

	if (!s)
		return -EINVAL;
	if (strcmp(s, "read") == 0)
		*ret = ACC_READ;
	else if (strcmp(s, "write") == 0)
		*ret = ACC_WRITE;
	else if (strcmp(s, "deny") == 0 || strcmp(s, "none") == 0)
		*ret = ACC_DENY;
	else
		return -EINVAL;
	return 0;
}

/* A relative subpath of a project root: no "..", no absolute path. */
static bool safe_subpath(const char *s)
{
	if (!s[0] || s[0] == '/')
		return false;
	for (const char *p = s; *p;) {
		const char *end = strchrnul(p, '/');

		if (end - p == 2 && p[0] == '.' && p[1] == '.')
			return false;
		p = *end ? end + 1 : end;
	}
	return true;
}

static int parse_entry(json_t *ent, size_t idx, char *const *roots, size_t n_roots,
		       struct entries *e, const char *origin, struct ward_error *err)
{
	json_t *path = json_object_get(ent, "path"), *acc = json_object_get(ent, "access");
	const char *ptype;
	enum access a;
	int r;

	if (!json_is_object(ent))
		PFAIL("file_system.entries[%zu]: expected an object", idx);
	if (parse_access(acc, &a) < 0)
		PFAIL("file_system.entries[%zu].access: expected \"read\", \"write\" or \"deny\"",
		      idx);
	if (!json_is_object(path) || !json_is_string(json_object_get(path, "type")))
		PFAIL("file_system.entries[%zu].path: expected an object with a \"type\"", idx);
	ptype = json_string_value(json_object_get(path, "type"));
	if (strcmp(ptype, "path") == 0) {
		_cleanup_free_ char *abs = NULL;
		const char *s = json_string_value(json_object_get(path, "path"));

		if (!s || ward__path_or_file_uri(s, &abs) < 0)
			PFAIL("file_system.entries[%zu].path.path: expected an absolute path or a "
			      "file: URI",
			      idx);
		r = add_entry(e, abs, a);
	} else if (strcmp(ptype, "glob_pattern") == 0) {
		PFAIL("file_system.entries[%zu]: glob patterns are not supported by ward (list "
		      "the paths to deny instead)",
		      idx);
	} else if (strcmp(ptype, "special") == 0) {
		json_t *val = json_object_get(path, "value");
		const char *kind = json_string_value(json_object_get(val, "kind"));
		const char *sub = json_string_value(json_object_get(val, "subpath"));

		if (!kind)
			PFAIL("file_system.entries[%zu].path.value: expected a \"kind\"", idx);
		if (json_object_get(val, "subpath") && (!sub || !safe_subpath(sub)))
			PFAIL("file_system.entries[%zu].path.value.subpath: expected a relative "
			      "path without \"..\"",
			      idx);
		if (strcmp(kind, "root") == 0) {
			r = add_entry(e, "/", a);
		} else if (strcmp(kind, "minimal") == 0) {
			if (a == ACC_READ)
				e->minimal_read = true;
			r = 0;
		} else if (strcmp(kind, "project_roots") == 0 ||
			   strcmp(kind, "current_working_directory") == 0) {
			r = 0;
			for (size_t i = 0; i < n_roots && r >= 0; i++) {
				_cleanup_free_ char *p =
					sub ? ward__path_join(roots[i], sub) : strdup(roots[i]);

				r = p ? add_entry(e, p, a) : -ENOMEM;
			}
		} else if (strcmp(kind, "tmpdir") == 0) {
			const char *t = getenv("TMPDIR");

			/* As Codex: only an absolute $TMPDIR counts; otherwise there is nothing. */
			r = t && t[0] == '/' ? add_entry(e, t, a) : 0;
		} else if (strcmp(kind, "slash_tmp") == 0) {
			r = add_entry(e, "/tmp", a);
		} else {
			/* Codex ignores kinds it does not know (forward compatibility): so does ward. */
			r = 0;
		}
	} else {
		PFAIL("file_system.entries[%zu].path.type: expected \"path\", \"special\" or "
		      "\"glob_pattern\"",
		      idx);
	}
	if (r == -E2BIG)
		PFAIL("file_system.entries: more than %d entries", MAX_ENTRIES);
	if (r < 0)
		return ward__error(err, r, "policy", "policy '%s': %m", origin);
	return 0;
}

/* The entry that governs path: the most specific one containing it (NULL: none). */
static const struct entry *governing(const struct entries *e, const char *path)
{
	const struct entry *best = NULL;

	for (size_t i = 0; i < e->n; i++)
		if (ward__path_under(path, e->v[i].path) &&
		    (!best || strlen(e->v[i].path) > strlen(best->path)))
			best = &e->v[i];
	return best;
}

/* The governing entry strictly above path (its parent's rule). */
static const struct entry *governing_parent(const struct entries *e, const char *path)
{
	const struct entry *best = NULL;

	for (size_t i = 0; i < e->n; i++)
		if (strcmp(e->v[i].path, path) != 0 && ward__path_under(path, e->v[i].path) &&
		    (!best || strlen(e->v[i].path) > strlen(best->path)))
			best = &e->v[i];
	return best;
}

static bool same_path(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

/* One list of host patterns of a network object into q; every entry checked. */
static int network_domains(json_t *list, bool deny, struct ward_policy *q, const char *field,
			   const char *origin, struct ward_error *err)
{
	size_t i;
	json_t *e;

	if (!json_is_array(list))
		PFAIL("network.%s: expected an array of host patterns", field);
	json_array_foreach(list, i, e)
	{
		const char *why = "expected a string";
		int r = json_is_string(e)
			? ward__policy_add_domain(q, json_string_value(e), deny, &why)
			: -EINVAL;

		if (r < 0)
			PFAIL("network.%s[%zu]: %s", field, i, why);
	}
	return 0;
}

/*
 * The profile's network: "restricted" or "enabled", or an object with
 * "enabled" and the domain lists of Codex's network proxy settings
 * ("allowed_domains", "denied_domains", or "domains": {"host": "allow" or
 * "deny"}), which make it a network by domain. *ret says whether the whole
 * network is on.
 */
static int parse_network(json_t *v, bool *ret, struct ward_policy *q, const char *origin,
			 struct ward_error *err)
{
	const char *s = json_string_value(v), *key;
	bool enabled = true, has_domains = false;
	json_t *e;
	int r = 0;

	if (!v) {
		*ret = false; /* Codex's default: restricted. */
		return 0;
	}
	/*
	 * The profile says what the network is: it replaces the policy's host
	 * patterns (the operator's --allow-address and --dns-server stay).
	 */
	free(q->allow_domains);
	free(q->deny_domains);
	q->allow_domains = q->deny_domains = NULL;
	q->n_allow_domains = q->n_deny_domains = 0;
	if (s && strcmp(s, "restricted") == 0) {
		*ret = false;
		return 0;
	}
	if (s && strcmp(s, "enabled") == 0) {
		*ret = true;
		return 0;
	}
	if (!json_is_object(v))
		PFAIL("network: expected \"restricted\", \"enabled\" or an object");
	json_object_foreach(v, key, e)
	{
		if (strcmp(key, "enabled") == 0) {
			if (!json_is_boolean(e))
				PFAIL("network.enabled: expected true or false");
			enabled = json_is_true(e);
		} else if (strcmp(key, "allowed_domains") == 0) {
			r = network_domains(e, false, q, key, origin, err);
			has_domains = true;
		} else if (strcmp(key, "denied_domains") == 0) {
			r = network_domains(e, true, q, key, origin, err);
			has_domains = true;
		} else if (strcmp(key, "domains") == 0) {
			const char *host;
			json_t *d;

			if (!json_is_object(e))
				PFAIL("network.domains: expected an object of \"host\": \"allow\" or \"deny\"");
			json_object_foreach(e, host, d)
			{
				const char *why = "expected \"allow\" or \"deny\"";
				const char *dv = json_string_value(d);

				if (!dv || (strcmp(dv, "allow") && strcmp(dv, "deny")))
					r = -EINVAL;
				else
					r = ward__policy_add_domain(q, host,
								    strcmp(dv, "deny") == 0, &why);
				if (r < 0)
					PFAIL("network.domains.\"%.64s\": %s", host, why);
			}
			has_domains = true;
		} else {
			PFAIL("network: unknown field \"%.64s\"", key);
		}
		if (r < 0)
			return r;
	}
	if (has_domains && !enabled)
		PFAIL("network: domains are given but \"enabled\" is false");
	/* Domains keep the sandbox's own network off: they are the proxy's to allow. */
	*ret = enabled && !has_domains;
	return 0;
}

/* Builds the ward policy for a managed profile into q (a copy of the caller's policy). */
static int apply_managed(struct ward_policy *q, json_t *profile, char *const *roots, size_t n_roots,
			 const char *origin, struct ward_error *err)
{
	json_t *fs = json_object_get(profile, "file_system");
	json_t *entries, *v;
	const char *fstype;
	struct entries e = {0};
	const struct entry *root_rule;
	const char *tmpdir = getenv("TMPDIR");
	_cleanup_free_ char *tmpdir_abs = NULL;
	bool network, any_write = false, tmp_written = false, tmpdir_written = false;
	size_t idx;
	int r;

	r = parse_network(json_object_get(profile, "network"), &network, q, origin, err);
	if (r < 0)
		return r;
	if (!json_is_object(fs) || !json_is_string(json_object_get(fs, "type")))
		PFAIL("file_system: expected an object with a \"type\"");
	fstype = json_string_value(json_object_get(fs, "type"));
	q->network = network;
	q->network_set = true;
	if (strcmp(fstype, "unrestricted") == 0) {
		if (network) {
			/* Full disk and network: Codex applies no sandbox (policy_transforms.rs). */
			q->mode = WARD_MODE_DANGER_FULL_ACCESS;
			return 0;
		}
		/* Everything writable, no network: the whole tree a writable root, the protections kept. */
		q->mode = WARD_MODE_WORKSPACE_WRITE;
		return ward__strv_push(&q->writable, "/");
	}
	if (strcmp(fstype, "restricted") != 0)
		PFAIL("file_system.type: expected \"restricted\" or \"unrestricted\"");
	entries = json_object_get(fs, "entries");
	if (entries && !json_is_array(entries))
		PFAIL("file_system.entries: expected an array");
	json_array_foreach(entries, idx, v)
	{
		r = parse_entry(v, idx, roots, n_roots, &e, origin, err);
		if (r < 0)
			goto out;
	}

	root_rule = governing(&e, "/");
	if (!root_rule || root_rule->access == ACC_DENY) {
		r = ward__error(err, -EOPNOTSUPP, "policy",
				"policy '%s': ward cannot limit reads to a list of paths%s: grant "
				"\":root\" read and deny the paths to hide",
				origin, e.minimal_read ? " (\":minimal\")" : "");
		goto out;
	}
	if (tmpdir && tmpdir[0] == '/')
		tmpdir_abs = ward__path_absolute(tmpdir);

	for (size_t i = 0; i < e.n; i++) {
		const struct entry *x = &e.v[i];
		const struct entry *up = governing_parent(&e, x->path);

		if (strcmp(x->path, "/") == 0)
			continue;
		if (up && up->access == ACC_DENY && x->access != ACC_DENY) {
			r = ward__error(
				err, -EOPNOTSUPP, "policy",
				"policy '%s': ward cannot make '%s' %s inside the denied '%s'",
				origin, x->path, x->access == ACC_WRITE ? "writable" : "readable",
				up->path);
			goto out;
		}
		switch (x->access) {
		case ACC_WRITE:
			/* A write rule is redundant under a write rule above it. */
			if ((up && up->access == ACC_WRITE) || root_rule->access == ACC_WRITE) {
				if (same_path(x->path, "/tmp"))
					tmp_written = true;
				if (same_path(x->path, tmpdir_abs))
					tmpdir_written = true;
				break;
			}
			any_write = true;
			if (same_path(x->path, "/tmp"))
				tmp_written = true;
			else if (same_path(x->path, tmpdir_abs))
				tmpdir_written = true;
			else if (!same_path(x->path, q->cwd))
				r = ward__strv_push(&q->writable, x->path);
			break;
		case ACC_READ:
			/* A read rule inside a writable tree is a read-only carve-out. */
			if ((up && up->access == ACC_WRITE) ||
			    (!up && root_rule->access == ACC_WRITE))
				r = ward__strv_push(&q->protect, x->path);
			break;
		case ACC_DENY:
			r = ward__strv_push(&q->deny_read, x->path);
			break;
		}
		if (r < 0) {
			ward__error(err, r, "policy", "policy '%s': %m", origin);
			goto out;
		}
	}

	if (root_rule->access == ACC_WRITE) {
		if (network) {
			q->mode = WARD_MODE_DANGER_FULL_ACCESS;
			if (q->deny_read.n > 0 || q->protect.n > 0) {
				r = ward__error(err, -EOPNOTSUPP, "policy",
						"policy '%s': full disk and network access cannot "
						"keep denied or read-only paths",
						origin);
				goto out;
			}
			r = 0;
			goto out;
		}
		q->mode = WARD_MODE_WORKSPACE_WRITE;
		r = ward__strv_push(&q->writable, "/");
		goto out;
	}
	if (!any_write && !tmp_written && !tmpdir_written) {
		q->mode = WARD_MODE_READ_ONLY;
		r = 0;
		goto out;
	}
	q->mode = WARD_MODE_WORKSPACE_WRITE;
	q->exclude_slash_tmp = !tmp_written;
	q->exclude_tmpdir_env_var = !tmpdir_written;
	/* ward's workspace-write always writes in the working directory; refuse a profile that does not. */
	if (q->cwd) {
		const struct entry *cw = governing(&e, q->cwd);

		if (!cw || cw->access != ACC_WRITE) {
			r = ward__error(err, -EOPNOTSUPP, "policy",
					"policy '%s': the working directory '%s' must be writable "
					"when anything is (ward's workspace-write)",
					origin, q->cwd);
			goto out;
		}
	}
	r = 0;
out:
	entries_release(&e);
	return r;
}

int ward__policy_apply_profile(struct ward_policy *p, json_t *profile, char *const *roots,
			       size_t n_roots, const char *origin, struct ward_error *err)
{
	struct ward_policy *q = NULL, tmp;
	const char *type = json_string_value(json_object_get(profile, "type"));
	int r;

	if (!origin)
		origin = "<sandbox>";
	if (!json_is_object(profile) || !type)
		return ward__error(
			err, -EINVAL, "policy",
			"policy '%s': expected a permission profile object with a \"type\"",
			origin);
	r = ward_policy_copy(p, &q);
	if (r < 0)
		return ward__error(err, r, "policy", "policy '%s': %m", origin);
	if (strcmp(type, "managed") == 0) {
		r = apply_managed(q, profile, roots, n_roots, origin, err);
	} else if (strcmp(type, "disabled") == 0) {
		q->mode = WARD_MODE_DANGER_FULL_ACCESS;
		q->network = true;
		q->network_set = true;
	} else if (strcmp(type, "external") == 0) {
		bool network;

		r = parse_network(json_object_get(profile, "network"), &network, q, origin, err);
		if (r < 0)
			goto out;
		/* The caller isolates the filesystem: ward keeps only what it is asked, the network. */
		q->network = network;
		q->network_set = true;
		if (network) {
			q->mode = WARD_MODE_DANGER_FULL_ACCESS;
		} else {
			q->mode = WARD_MODE_WORKSPACE_WRITE;
			r = ward__strv_push(&q->writable, "/");
		}
	} else {
		r = ward__error(err, -EINVAL, "policy",
				"policy '%s': type: expected \"managed\", \"disabled\" or "
				"\"external\", got \"%.64s\"",
				origin, type);
	}
out:
	if (r >= 0) {
		/* All or nothing: the result replaces p only now. */
		tmp = *p;
		*p = *q;
		*q = tmp;
		p->resolved = false;
		r = 0;
	}
	ward_policy_free(q);
	return r;
}
