/* SPDX-License-Identifier: MIT */
/*
 * The command's environment, built from a policy instead of inherited blindly.
 *
 * The model is Codex's shell_environment_policy (inherit all|core|none,
 * exclude, include_only, set; see ../shared/reference/codex.md §4) so that an
 * agent configured for Codex means the same thing here. Two deliberate
 * differences, both documented in docs/json.md:
 *   - `set` is applied last (after include_only): a variable the caller names
 *     explicitly is always passed, where Codex would filter it again;
 *   - the sandbox markers come after everything, so neither the inherited
 *     environment nor `set` can hide that the command runs in a sandbox.
 * The default excludes (*KEY*, *SECRET*, *TOKEN*) are off by default, as in
 * Codex, whose ignore_default_excludes defaults to true: many tools need
 * their tokens (git credential helpers, package registries), and the sandbox,
 * not the environment, is what stops exfiltration (the network is off).
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "exec/exec.h"

extern char **environ;

const char *const ward__env_core_names[] = {
	"PATH", "SHELL",  "TMPDIR",   "TEMP",	 "TMP",	 "HOME",
	"LANG", "LC_ALL", "LC_CTYPE", "LOGNAME", "USER", NULL,
};

static const char *const default_excludes[] = {"*KEY*", "*SECRET*", "*TOKEN*"};

/* One variable while the environment is assembled: the name is owned, "NAME=VALUE" built at the end. */
struct var {
	char *name;
	const char *value; /* points into environ or the options; not owned */
};

struct env {
	struct var *v;
	size_t n;
	size_t alloc;
	/* Values made here (the proxy variables) rather than borrowed: freed with the set. */
	char *owned[8];
	size_t n_owned;
};

static void env_release(struct env *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->v[i].name);
	free(e->v);
	for (size_t i = 0; i < e->n_owned; i++)
		free(e->owned[i]);
	*e = (struct env){0};
}

/* A value the set keeps (value is malloc()ed, owned from the call on, also on failure). */
static char *env_own(struct env *e, char *value)
{
	if (!value || e->n_owned >= ELEMENTSOF(e->owned)) {
		free(value);
		return NULL;
	}
	e->owned[e->n_owned++] = value;
	return value;
}

static struct var *env_find(struct env *e, const char *name)
{
	for (size_t i = 0; i < e->n; i++)
		if (strcmp(e->v[i].name, name) == 0)
			return &e->v[i];
	return NULL;
}

/* Sets name to value: replaces the existing variable in place, or appends it. */
static int env_put(struct env *e, const char *name, size_t name_len, const char *value)
{
	_cleanup_free_ char *n = strndup(name, name_len);
	struct var *old;

	if (!n)
		return -ENOMEM;
	old = env_find(e, n);
	if (old) {
		old->value = value;
		return 0;
	}
	/* The working set never exceeds the final cap by more than the markers: fail early. */
	if (e->n >= WARD_ENV_MAX_VARS)
		return -E2BIG;
	if (e->n == e->alloc) {
		size_t na = e->alloc ? e->alloc * 2 : 64;
		struct var *nv = reallocarray(e->v, na, sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		e->v = nv;
		e->alloc = na;
	}
	e->v[e->n++] = (struct var){TAKE_PTR(n), value};
	return 0;
}

static bool matches_any(const char *name, char *const *patterns, size_t n)
{
	for (size_t i = 0; i < n; i++)
		/* Case-insensitive, as Codex's EnvironmentVariablePattern. */
		if (fnmatch(patterns[i], name, FNM_CASEFOLD) == 0)
			return true;
	return false;
}

static bool is_core(const char *name)
{
	for (size_t i = 0; ward__env_core_names[i]; i++)
		if (strcmp(name, ward__env_core_names[i]) == 0)
			return true;
	return false;
}

/* Whether an inherited variable survives the exclude and include_only patterns. */
static bool kept(const struct ward_run_options *o, const char *name)
{
	if (o->env_default_excludes &&
	    matches_any(name, (char *const *)default_excludes, ELEMENTSOF(default_excludes)))
		return false;
	if (o->n_env_exclude > 0 && matches_any(name, o->env_exclude, o->n_env_exclude))
		return false;
	if (o->n_env_include_only > 0 &&
	    !matches_any(name, o->env_include_only, o->n_env_include_only))
		return false;
	return true;
}

/*
 * Copies ward's environment, filtered as it goes: the caps apply to what the
 * command gets, not to what ward was given.
 */
static int inherit(struct env *e, const struct ward_run_options *o)
{
	enum ward_env_inherit how = o->env_inherit;

	if (how == WARD_ENV_INHERIT_NONE || !environ)
		return 0;
	for (char **s = environ; *s; s++) {
		const char *eq = strchr(*s, '=');
		_cleanup_free_ char *name = NULL;
		int r;

		/* Entries without '=' or with an empty name are malformed: exec would pass junk. */
		if (!eq || eq == *s)
			continue;
		name = strndup(*s, (size_t)(eq - *s));
		if (!name)
			return -ENOMEM;
		if ((how == WARD_ENV_INHERIT_CORE && !is_core(name)) || !kept(o, name))
			continue;
		/* The first occurrence wins, as getenv() sees it. */
		if (env_find(e, name))
			continue;
		r = env_put(e, name, strlen(name), eq + 1);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * The network by domain: every spelling of the proxy variables the common
 * tools read, pointing at the proxy's listeners on the sandbox's loopback
 * (the inherited ones name the host's proxy, which the sandbox cannot
 * reach). curl reads http_proxy only in lower case; Go, Python and most
 * others read both cases; ALL_PROXY as socks5h:// makes the proxy resolve
 * names; npm, yarn, pip, bundler and docker have keys of their own; Node's
 * own fetch reads them only with NODE_USE_ENV_PROXY=1; Java reads none of
 * them, only system properties, given through JAVA_TOOL_OPTIONS. Tools that
 * read nothing still reach the proxy through the DNS stub (src/net).
 */
static int put_proxy_env(struct env *e)
{
	static const char *const http_names[] = {
		"http_proxy",	      "https_proxy",
		"HTTP_PROXY",	      "HTTPS_PROXY",
		"npm_config_proxy",   "npm_config_https_proxy",
		"NPM_CONFIG_PROXY",   "NPM_CONFIG_HTTPS_PROXY",
		"YARN_HTTP_PROXY",    "YARN_HTTPS_PROXY",
		"PIP_PROXY",	      "BUNDLE_HTTP_PROXY",
		"BUNDLE_HTTPS_PROXY", "DOCKER_HTTP_PROXY",
		"DOCKER_HTTPS_PROXY",
	};
	const struct var *jt = env_find(e, "JAVA_TOOL_OPTIONS");
	char *http = NULL, *socks = NULL, *rsync = NULL, *java = NULL;
	int r = 0;

	/* The values live as long as the set: env_put() keeps pointers, not copies. */
	if (asprintf(&http, "http://127.0.0.1:%d", WARD_NET_HTTP_PORT) < 0 || !env_own(e, http) ||
	    asprintf(&socks, "socks5h://127.0.0.1:%d", WARD_NET_SOCKS5_PORT) < 0 ||
	    !env_own(e, socks) || asprintf(&rsync, "127.0.0.1:%d", WARD_NET_HTTP_PORT) < 0 ||
	    !env_own(e, rsync) ||
	    asprintf(&java,
		     "%s%s-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=%d "
		     "-Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=%d "
		     "-Dhttp.nonProxyHosts=localhost|127.0.0.1|[::1]",
		     jt ? jt->value : "", jt && jt->value[0] ? " " : "", WARD_NET_HTTP_PORT,
		     WARD_NET_HTTP_PORT) < 0 ||
	    !env_own(e, java))
		return -ENOMEM;
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(http_names); i++)
		r = env_put(e, http_names[i], strlen(http_names[i]), http);
	if (r >= 0)
		r = env_put(e, "ALL_PROXY", strlen("ALL_PROXY"), socks);
	if (r >= 0)
		r = env_put(e, "all_proxy", strlen("all_proxy"), socks);
	if (r >= 0)
		r = env_put(e, "RSYNC_PROXY", strlen("RSYNC_PROXY"), rsync);
	/* Loopback stays direct: a command's own servers are inside the sandbox. */
	if (r >= 0)
		r = env_put(e, "NO_PROXY", strlen("NO_PROXY"), "localhost,127.0.0.1,::1");
	if (r >= 0)
		r = env_put(e, "no_proxy", strlen("no_proxy"), "localhost,127.0.0.1,::1");
	if (r >= 0)
		r = env_put(e, "NODE_USE_ENV_PROXY", strlen("NODE_USE_ENV_PROXY"), "1");
	if (r >= 0)
		r = env_put(e, "JAVA_TOOL_OPTIONS", strlen("JAVA_TOOL_OPTIONS"), java);
	if (r >= 0)
		r = env_put(e, "WARD_SANDBOX_NETWORK", strlen("WARD_SANDBOX_NETWORK"), "by-domain");
	return r;
}

/* The set as a NULL-terminated vector of "NAME=VALUE" strings, checked against the caps. */
static int env_export(const struct env *e, char ***ret_envp)
{
	size_t bytes = 0;
	char **envp;

	for (size_t i = 0; i < e->n; i++)
		bytes += strlen(e->v[i].name) + 1 + strlen(e->v[i].value) + 1;
	if (e->n > WARD_ENV_MAX_VARS || bytes > WARD_ENV_MAX_BYTES)
		return -E2BIG;
	envp = calloc(e->n + 1, sizeof(char *));
	if (!envp)
		return -ENOMEM;
	for (size_t i = 0; i < e->n; i++) {
		size_t nl = strlen(e->v[i].name), vl = strlen(e->v[i].value);

		envp[i] = malloc(nl + 1 + vl + 1);
		if (!envp[i]) {
			strv_freep(&envp);
			return -ENOMEM;
		}
		memcpy(envp[i], e->v[i].name, nl);
		envp[i][nl] = '=';
		memcpy(envp[i] + nl + 1, e->v[i].value, vl + 1);
	}
	*ret_envp = envp;
	return 0;
}

int ward__exec_env_add_net(const struct ward_policy *p, char ***envp)
{
	struct env e = {0};
	char **out = NULL;
	int r = 0;

	if (!p || !ward__policy_net_by_domain(p))
		return 0;
	for (char **s = *envp; s && *s && r >= 0; s++) {
		const char *eq = strchr(*s, '=');

		if (eq && eq != *s)
			r = env_put(&e, *s, (size_t)(eq - *s), eq + 1);
	}
	if (r >= 0)
		r = put_proxy_env(&e);
	if (r >= 0)
		r = env_export(&e, &out);
	env_release(&e);
	if (r < 0)
		return r;
	strv_freep(envp);
	*envp = out;
	return 0;
}

int ward__exec_env_build(const struct ward_run_options *o, const struct ward_policy *p,
			 char ***ret_envp)
{
	static const struct ward_run_options defaults = {.env_inherit = WARD_ENV_INHERIT_ALL};
	bool network_off;
	struct env e = {0};
	int r;

	if (!o)
		o = &defaults;
	/* Without a policy, say the network is off: a false "off" is harmless, a false "on" misleads tools. */
	network_off = !p ||
		(!p->network && p->mode != WARD_MODE_DANGER_FULL_ACCESS &&
		 !ward__policy_net_by_domain(p));

	r = inherit(&e, o);
	if (r < 0)
		goto out;
	/* An inherited PWD names ward's directory; the command starts in the policy's. */
	if (p && p->cwd && env_find(&e, "PWD")) {
		r = env_put(&e, "PWD", 3, p->cwd);
		if (r < 0)
			goto out;
	}
	for (size_t i = 0; i < o->n_env_set; i++) {
		const char *eq = strchr(o->env_set[i], '=');

		if (!eq || eq == o->env_set[i]) {
			r = -EINVAL;
			goto out;
		}
		r = env_put(&e, o->env_set[i], (size_t)(eq - o->env_set[i]), eq + 1);
		if (r < 0)
			goto out;
	}
	r = env_put(&e, "WARD_SANDBOX", strlen("WARD_SANDBOX"), "1");
	if (r >= 0 && p && ward__policy_net_by_domain(p))
		r = put_proxy_env(&e);
	if (r >= 0 && network_off)
		r = env_put(&e, "WARD_SANDBOX_NETWORK_DISABLED",
			    strlen("WARD_SANDBOX_NETWORK_DISABLED"), "1");
	if (r >= 0 && network_off)
		r = env_put(&e, "CODEX_SANDBOX_NETWORK_DISABLED",
			    strlen("CODEX_SANDBOX_NETWORK_DISABLED"), "1");
	if (r < 0)
		goto out;

	r = env_export(&e, ret_envp);
out:
	env_release(&e);
	return r;
}
