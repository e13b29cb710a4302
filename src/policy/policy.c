/* SPDX-License-Identifier: MIT */
/* The policy object: setters, lists, and the lookups the sandbox uses. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "policy/policy.h"

int ward__strv_push(struct ward__strv *v, const char *s)
{
	char **nv;
	char *copy;

	if (v->n >= WARD_POLICY_MAX_PATHS)
		return -E2BIG;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	nv = realloc(v->v, (v->n + 2) * sizeof(*nv));
	if (!nv) {
		free(copy);
		return -ENOMEM;
	}
	nv[v->n++] = copy;
	nv[v->n] = NULL;
	v->v = nv;
	return 0;
}

int ward__strv_push_unbounded(struct ward__strv *v, const char *s)
{
	char **nv;
	char *copy = strdup(s);

	if (!copy)
		return -ENOMEM;
	nv = realloc(v->v, (v->n + 2) * sizeof(*nv));
	if (!nv) {
		free(copy);
		return -ENOMEM;
	}
	nv[v->n++] = copy;
	nv[v->n] = NULL;
	v->v = nv;
	return 0;
}

void ward__strv_release(struct ward__strv *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->v[i]);
	free(v->v);
	v->v = NULL;
	v->n = 0;
}

bool ward__strv_contains(const struct ward__strv *v, const char *s)
{
	for (size_t i = 0; i < v->n; i++)
		if (strcmp(v->v[i], s) == 0)
			return true;
	return false;
}

/* One allocation of n bytes: malloc adds a header and rounds up to 16 bytes. */
static size_t alloc_weight(size_t n)
{
	return n + 24;
}

static size_t str_weight(const char *s)
{
	return s ? alloc_weight(strlen(s) + 1) : 0;
}

static size_t strv_weight(const struct ward__strv *v)
{
	size_t w = v->v ? alloc_weight((v->n + 1) * sizeof(char *)) : 0;

	for (size_t i = 0; i < v->n; i++)
		w += str_weight(v->v[i]);
	return w;
}

size_t ward__policy_weight(const struct ward_policy *p)
{
	size_t w;

	if (!p)
		return 0;
	w = alloc_weight(sizeof(*p)) + str_weight(p->cwd) + str_weight(p->resolved_cwd) +
		strv_weight(&p->writable) + strv_weight(&p->protect) + strv_weight(&p->deny_read) +
		strv_weight(&p->unix_sockets) + strv_weight(&p->roots) + strv_weight(&p->notes);
	if (p->protected)
		w += alloc_weight(p->n_protected * sizeof(*p->protected));
	for (size_t i = 0; i < p->n_protected; i++)
		w += str_weight(p->protected[i].path) + str_weight(p->protected[i].guard_dir) +
			str_weight(p->protected[i].guard_name);
	if (p->deny)
		w += alloc_weight(p->n_deny * sizeof(*p->deny));
	for (size_t i = 0; i < p->n_deny; i++)
		w += str_weight(p->deny[i].path);
	if (p->sockets)
		w += alloc_weight(p->n_sockets * sizeof(*p->sockets));
	for (size_t i = 0; i < p->n_sockets; i++)
		w += str_weight(p->sockets[i].path);
	return w;
}

void ward__policy_clear_resolved(struct ward_policy *p)
{
	free(p->resolved_cwd);
	p->resolved_cwd = NULL;
	ward__strv_release(&p->roots);
	for (size_t i = 0; i < p->n_protected; i++) {
		free(p->protected[i].path);
		free(p->protected[i].guard_dir);
		free(p->protected[i].guard_name);
	}
	free(p->protected);
	p->protected = NULL;
	p->n_protected = p->cap_protected = 0;
	for (size_t i = 0; i < p->n_deny; i++)
		free(p->deny[i].path);
	free(p->deny);
	p->deny = NULL;
	p->n_deny = 0;
	free(p->journal);
	p->journal = NULL;
	for (size_t i = 0; i < p->n_sockets; i++)
		free(p->sockets[i].path);
	free(p->sockets);
	p->sockets = NULL;
	p->n_sockets = 0;
	ward__strv_release(&p->notes);
	ward__strv_release(&p->unprotected);
	ward__strv_release(&p->path_missing);
	free(p->home);
	p->home = NULL;
	for (size_t i = 0; i < p->n_watches; i++) {
		free(p->watches[i].path);
		free(p->watches[i].target);
	}
	free(p->watches);
	p->watches = NULL;
	p->n_watches = 0;
	p->scan_depth = 0;
	p->scan_cut = false;
	p->scan_unread = 0;
	p->scan_cached = 0;
	p->resolved = false;
}

WARD_PUBLIC int ward_policy_new(struct ward_policy **ret_policy)
{
	struct ward_policy *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->mode = WARD_MODE_WORKSPACE_WRITE;
	*ret_policy = p;
	return 0;
}

WARD_PUBLIC void ward_policy_free(struct ward_policy *p)
{
	if (!p)
		return;
	ward__policy_clear_resolved(p);
	free(p->cwd);
	ward__strv_release(&p->writable);
	ward__strv_release(&p->protect);
	ward__strv_release(&p->unprotect);
	ward__strv_release(&p->deny_read);
	ward__strv_release(&p->unix_sockets);
	ward__policy_release_net(p);
	free(p);
}

/* ------------------------------------------------------------ the network by domain */

void ward__policy_release_net(struct ward_policy *p)
{
	free(p->allow_domains);
	free(p->deny_domains);
	free(p->allow_addresses);
	free(p->dns_server);
	p->allow_domains = p->deny_domains = NULL;
	p->allow_addresses = NULL;
	p->dns_server = NULL;
	p->n_allow_domains = p->n_deny_domains = p->n_allow_addresses = 0;
}

int ward__policy_add_domain(struct ward_policy *p, const char *pattern, bool deny, const char **why)
{
	struct ward__net_pattern np, **list = deny ? &p->deny_domains : &p->allow_domains, *n;
	size_t *count = deny ? &p->n_deny_domains : &p->n_allow_domains;
	int r = ward__net_pattern_parse(pattern, deny, &np, why);

	if (r < 0)
		return r;
	for (size_t i = 0; i < *count; i++)
		if (memcmp(&(*list)[i], &np, sizeof(np)) == 0)
			return 0;
	if (*count >= WARD_NET_MAX_PATTERNS) {
		*why = "too many host patterns";
		return -E2BIG;
	}
	n = reallocarray(*list, *count + 1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n[(*count)++] = np;
	*list = n;
	p->resolved = false;
	return 0;
}

int ward__policy_add_address(struct ward_policy *p, const char *cidr, const char **why)
{
	struct ward__net_cidr c, *n;

	if (ward__net_cidr_parse(cidr, &c) < 0) {
		*why = "not an address or range (10.0.0.0/8, fd00::/8, 192.0.2.7)";
		return -EINVAL;
	}
	for (size_t i = 0; i < p->n_allow_addresses; i++)
		if (memcmp(&p->allow_addresses[i], &c, sizeof(c)) == 0)
			return 0;
	if (p->n_allow_addresses >= WARD_NET_MAX_CIDRS) {
		*why = "too many address ranges";
		return -E2BIG;
	}
	n = reallocarray(p->allow_addresses, p->n_allow_addresses + 1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n[p->n_allow_addresses++] = c;
	p->allow_addresses = n;
	p->resolved = false;
	return 0;
}

static int dup_array(void **dst, const void *src, size_t n, size_t size)
{
	*dst = NULL;
	if (n == 0)
		return 0;
	*dst = reallocarray(NULL, n, size);
	if (!*dst)
		return -ENOMEM;
	memcpy(*dst, src, n * size);
	return 0;
}

int ward__policy_copy_net(struct ward_policy *p, const struct ward_policy *src)
{
	struct ward_policy t = {0};
	int r;

	r = dup_array((void **)&t.allow_domains, src->allow_domains, src->n_allow_domains,
		      sizeof(*src->allow_domains));
	if (r >= 0)
		r = dup_array((void **)&t.deny_domains, src->deny_domains, src->n_deny_domains,
			      sizeof(*src->deny_domains));
	if (r >= 0)
		r = dup_array((void **)&t.allow_addresses, src->allow_addresses,
			      src->n_allow_addresses, sizeof(*src->allow_addresses));
	if (r >= 0 && src->dns_server && !(t.dns_server = strdup(src->dns_server)))
		r = -ENOMEM;
	if (r < 0) {
		ward__policy_release_net(&t);
		return r;
	}
	ward__policy_release_net(p);
	p->allow_domains = t.allow_domains;
	p->n_allow_domains = src->n_allow_domains;
	p->deny_domains = t.deny_domains;
	p->n_deny_domains = src->n_deny_domains;
	p->allow_addresses = t.allow_addresses;
	p->n_allow_addresses = src->n_allow_addresses;
	p->dns_server = t.dns_server;
	return 0;
}

WARD_PUBLIC int ward_policy_mode_from_string(const char *s, enum ward_sandbox_mode *ret_mode)
{
	if (!s)
		return -EINVAL;
	if (strcmp(s, "read-only") == 0)
		*ret_mode = WARD_MODE_READ_ONLY;
	else if (strcmp(s, "workspace-write") == 0)
		*ret_mode = WARD_MODE_WORKSPACE_WRITE;
	else if (strcmp(s, "danger-full-access") == 0)
		*ret_mode = WARD_MODE_DANGER_FULL_ACCESS;
	else
		return -EINVAL;
	return 0;
}

WARD_PUBLIC const char *ward_policy_mode_to_string(enum ward_sandbox_mode mode)
{
	switch (mode) {
	case WARD_MODE_READ_ONLY:
		return "read-only";
	case WARD_MODE_WORKSPACE_WRITE:
		return "workspace-write";
	case WARD_MODE_DANGER_FULL_ACCESS:
		return "danger-full-access";
	}
	return "unknown";
}

WARD_PUBLIC int ward_policy_set_mode(struct ward_policy *p, enum ward_sandbox_mode mode)
{
	if (!p ||
	    (mode != WARD_MODE_READ_ONLY && mode != WARD_MODE_WORKSPACE_WRITE &&
	     mode != WARD_MODE_DANGER_FULL_ACCESS))
		return -EINVAL;
	p->mode = mode;
	p->resolved = false;
	return 0;
}

/* Paths are made absolute (lexically) when set, so a later chdir does not change their meaning. */
static int push_path(struct ward__strv *v, const char *path)
{
	_cleanup_free_ char *abs = NULL;

	if (!path || !*path)
		return -EINVAL;
	if (strlen(path) >= PATH_MAX)
		return -ENAMETOOLONG;
	abs = ward__path_absolute(path);
	if (!abs)
		return -errno;
	if (ward__strv_contains(v, abs))
		return 0;
	return ward__strv_push(v, abs);
}

WARD_PUBLIC int ward_policy_set_cwd(struct ward_policy *p, const char *path)
{
	char *abs;

	if (!p || !path || !*path)
		return -EINVAL;
	abs = ward__path_absolute(path);
	if (!abs)
		return -errno;
	free(p->cwd);
	p->cwd = abs;
	p->resolved = false;
	return 0;
}

WARD_PUBLIC int ward_policy_add_writable(struct ward_policy *p, const char *path)
{
	return p ? (p->resolved = false, push_path(&p->writable, path)) : -EINVAL;
}

WARD_PUBLIC int ward_policy_add_protect(struct ward_policy *p, const char *path)
{
	return p ? (p->resolved = false, push_path(&p->protect, path)) : -EINVAL;
}

WARD_PUBLIC int ward_policy_add_unprotect(struct ward_policy *p, const char *path)
{
	return p ? (p->resolved = false, push_path(&p->unprotect, path)) : -EINVAL;
}

WARD_PUBLIC int ward_policy_add_deny_read(struct ward_policy *p, const char *path)
{
	return p ? (p->resolved = false, push_path(&p->deny_read, path)) : -EINVAL;
}

WARD_PUBLIC int ward_policy_add_unix_socket(struct ward_policy *p, const char *path)
{
	return p ? (p->resolved = false, push_path(&p->unix_sockets, path)) : -EINVAL;
}

WARD_PUBLIC int ward_policy_set_network(struct ward_policy *p, bool enabled)
{
	if (!p)
		return -EINVAL;
	p->network = enabled;
	p->network_set = true;
	p->resolved = false;
	return 0;
}

WARD_PUBLIC int ward_policy_add_allow_domain(struct ward_policy *p, const char *pattern,
					     struct ward_error *err)
{
	const char *why = "out of memory";
	int r;

	if (!p || !pattern)
		return -EINVAL;
	r = ward__policy_add_domain(p, pattern, false, &why);
	if (r < 0)
		return ward__error(err, r, "policy", "host pattern '%.300s': %s", pattern, why);
	return 0;
}

WARD_PUBLIC int ward_policy_add_deny_domain(struct ward_policy *p, const char *pattern,
					    struct ward_error *err)
{
	const char *why = "out of memory";
	int r;

	if (!p || !pattern)
		return -EINVAL;
	r = ward__policy_add_domain(p, pattern, true, &why);
	if (r < 0)
		return ward__error(err, r, "policy", "host pattern '%.300s': %s", pattern, why);
	return 0;
}

WARD_PUBLIC int ward_policy_add_allow_address(struct ward_policy *p, const char *cidr,
					      struct ward_error *err)
{
	const char *why = "out of memory";
	int r;

	if (!p || !cidr)
		return -EINVAL;
	r = ward__policy_add_address(p, cidr, &why);
	if (r < 0)
		return ward__error(err, r, "policy", "address '%.300s': %s", cidr, why);
	return 0;
}

WARD_PUBLIC int ward_policy_set_dns_server(struct ward_policy *p, const char *server,
					   struct ward_error *err)
{
	struct ward__net_addr a;
	char host[64];
	const char *colon;
	char *copy = NULL;

	if (!p)
		return -EINVAL;
	if (server) {
		/* "IP", "IP:PORT" or "[IPv6]:PORT": the resolver checks the port again. */
		size_t n = strlen(server);

		if (n >= sizeof(host))
			return ward__error(err, -EINVAL, "policy", "DNS server '%.100s': too long",
					   server);
		memcpy(host, server, n + 1);
		if (host[0] == '[') {
			char *close = strchr(host, ']');

			if (close)
				*close = '\0';
			memmove(host, host + 1, strlen(host));
		} else if ((colon = strchr(host, ':')) && !strchr(colon + 1, ':')) {
			host[colon - host] = '\0';
		}
		if (!ward__net_addr_parse(host, &a))
			return ward__error(
				err, -EINVAL, "policy",
				"DNS server '%.100s': expected an IP address (IP or IP:PORT)",
				server);
		copy = strdup(server);
		if (!copy)
			return -ENOMEM;
	}
	free(p->dns_server);
	p->dns_server = copy;
	p->resolved = false;
	return 0;
}

WARD_PUBLIC int ward_policy_set_exclude_slash_tmp(struct ward_policy *p, bool exclude)
{
	if (!p)
		return -EINVAL;
	p->exclude_slash_tmp = exclude;
	p->resolved = false;
	return 0;
}

WARD_PUBLIC int ward_policy_set_exclude_tmpdir_env_var(struct ward_policy *p, bool exclude)
{
	if (!p)
		return -EINVAL;
	p->exclude_tmpdir_env_var = exclude;
	p->resolved = false;
	return 0;
}

WARD_PUBLIC int ward_policy_set_require_isolation(struct ward_policy *p, bool require)
{
	if (!p)
		return -EINVAL;
	p->require_isolation = require;
	return 0;
}

bool ward__policy_path_writable(const struct ward_policy *p, const char *path)
{
	const struct ward__protected *e;
	bool in_root = false;

	for (size_t i = 0; i < p->roots.n; i++)
		if (ward__path_under(path, p->roots.v[i]))
			in_root = true;
	if (!in_root)
		return false;
	e = ward__policy_protected_for(p, path);
	return !e;
}

const struct ward__protected *ward__policy_protected_for(const struct ward_policy *p,
							 const char *path)
{
	/* Pins keep their contents writable; every other entry covers its subtree. */
	for (size_t i = 0; i < p->n_protected; i++) {
		const struct ward__protected *e = &p->protected[i];

		if (e->kind != WARD_PROTECT_PIN && ward__path_under(path, e->path))
			return e;
	}
	return NULL;
}

bool ward__policy_unprotected(const struct ward_policy *p, const char *path)
{
	for (size_t i = 0; i < p->unprotected.n; i++)
		if (ward__path_under(path, p->unprotected.v[i]))
			return true;
	return false;
}

const struct ward__deny *ward__policy_deny_for(const struct ward_policy *p, const char *path)
{
	for (size_t i = 0; i < p->n_deny; i++)
		if (ward__path_under(path, p->deny[i].path))
			return &p->deny[i];
	return NULL;
}
