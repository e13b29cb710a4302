/* SPDX-License-Identifier: MIT */
/*
 * DESIGN: src/policy owns the policy model: what a sandbox may write, read
 * and reach, and why a path is protected (policy.c, policy-copy.c), its JSON
 * forms, ward's own and Codex's (policy-json.c, profile.c), and its
 * resolution against the host's real paths (resolve.c). It starts nothing
 * and confines nothing.
 *
 * It may call src/basic only (and include/ward/ward.h). Every folder above
 * reads it, src/sandbox first; it calls none of them (the one-way rule of
 * DESIGN.md).
 */
#pragma once

#include <jansson.h>
#include <sys/types.h>

#include "basic/macro.h"
#include "net/net.h"
#include "ward/ward.h"

/*
 * The policy model. struct ward_policy is opaque to library users; the sandbox
 * reads the resolved_* fields, which ward_policy_resolve() fills.
 *
 * Hard caps: every list an agent can grow is bounded so a hostile policy file
 * cannot exhaust memory or the kernel's mount table.
 */
#define WARD_POLICY_MAX_PATHS 256 /* per list: writable, protect, deny_read, unix sockets */
#define WARD_POLICY_MAX_FILE 1048576 /* bytes of a --policy file */

/* Why a path is protected, shown by `ward policy show` and in denial reports. */
enum ward__protect_kind {
	/* An existing file or directory bound read-only over itself. */
	WARD_PROTECT_READONLY = 1,
	/*
	 * An existing directory bound read-write over itself. It stays writable,
	 * but being a mount point it cannot be renamed, removed or replaced
	 * (EBUSY), which stops "mv .git .git.old && mkdir .git" from sidestepping
	 * the read-only binds beneath it.
	 */
	WARD_PROTECT_PIN = 2,
	/*
	 * A path that does not exist yet inside a writable root. Nothing is
	 * mounted (ward never creates mount points on the host); the parent watches
	 * `guard_dir` for `guard_name` being created (see sandbox/guard).
	 */
	WARD_PROTECT_MISSING = 3,
};

struct ward__protected {
	char *path; /* canonical absolute path (for MISSING: canonical parent + rest) */
	enum ward__protect_kind kind;
	bool is_dir;
	char *guard_dir; /* MISSING only: deepest existing ancestor (canonical) */
	char *guard_name; /* MISSING only: first missing component under guard_dir */
	const char *
		reason; /* static string: "git hooks", "git config", "agent config", "--protect", ... */
};

struct ward__deny {
	char *path; /* canonical absolute */
	bool is_dir;
};

struct ward__unix_socket {
	char *path; /* canonical absolute */
	dev_t dev;
	ino_t ino;
};

struct ward__strv {
	char **v;
	size_t n;
};

struct ward_policy {
	enum ward_sandbox_mode mode;
	char *cwd; /* absolute (made absolute when set); NULL means the caller's cwd */
	struct ward__strv writable; /* as given, absolute */
	struct ward__strv protect;
	struct ward__strv deny_read;
	struct ward__strv unix_sockets;
	bool network;
	bool network_set; /* network was given explicitly (setter, --network, JSON) */
	/*
	 * The network by domain (--allow-domain, --deny-domain): with any
	 * pattern, the sandbox keeps its empty network namespace (network stays
	 * false) and reaches the network only through ward's proxy (src/net),
	 * which allows what the patterns (and the rules, and a person) allow.
	 */
	struct ward__net_pattern *allow_domains;
	size_t n_allow_domains;
	struct ward__net_pattern *deny_domains;
	size_t n_deny_domains;
	/* Non-public ranges the proxy may connect to anyway (--allow-address). */
	struct ward__net_cidr *allow_addresses;
	size_t n_allow_addresses;
	char *dns_server; /* the server the proxy resolves with (--dns-server), or NULL */
	bool exclude_slash_tmp;
	bool exclude_tmpdir_env_var;
	bool require_isolation;

	/* Filled by ward_policy_resolve(). */
	bool resolved;
	char *resolved_cwd; /* canonical */
	struct ward__strv roots; /* canonical existing directories, sorted so parents come first */
	struct ward__protected *protected; /* sorted so parents come first */
	size_t n_protected;
	struct ward__deny *deny;
	size_t n_deny;
	struct ward__unix_socket *sockets;
	size_t n_sockets;
	struct ward__strv
		notes; /* human-readable notes from resolution ("skipped missing root ...") */
};

/* Whether the network is by domain: reached only through ward's proxy. */
static inline bool ward__policy_net_by_domain(const struct ward_policy *p)
{
	return p->n_allow_domains + p->n_deny_domains > 0;
}
/*
 * Adds a host pattern (deny: to the deny list) or an address range, as the
 * options and the JSON forms give them. -EINVAL with *why (static) for a
 * malformed one, -E2BIG past the caps; a pattern already there is not
 * added twice.
 */
WARD_INTERNAL int ward__policy_add_domain(struct ward_policy *p, const char *pattern, bool deny,
					  const char **why);
WARD_INTERNAL int ward__policy_add_address(struct ward_policy *p, const char *cidr,
					   const char **why);
/* Copies the network-by-domain settings of src into p (replacing p's). */
WARD_INTERNAL int ward__policy_copy_net(struct ward_policy *p, const struct ward_policy *src);
WARD_INTERNAL void ward__policy_release_net(struct ward_policy *p);

/* strv helpers: bounded by WARD_POLICY_MAX_PATHS. */
WARD_INTERNAL int ward__strv_push(struct ward__strv *v, const char *s);
/* Without the cap: for lists whose caller enforces a cap of its own. */
WARD_INTERNAL int ward__strv_push_unbounded(struct ward__strv *v, const char *s);
WARD_INTERNAL void ward__strv_release(struct ward__strv *v);
WARD_INTERNAL bool ward__strv_contains(const struct ward__strv *v, const char *s);

/* Drops the resolved_* state (called by resolve and free). */
WARD_INTERNAL void ward__policy_clear_resolved(struct ward_policy *p);

/* True when path (canonical) is inside (or equal to) one of the resolved writable roots. */
WARD_INTERNAL bool ward__policy_path_writable(const struct ward_policy *p, const char *path);
/* Returns the protected entry covering path, or NULL. */
WARD_INTERNAL const struct ward__protected *ward__policy_protected_for(const struct ward_policy *p,
								       const char *path);
/* Returns the deny entry covering path, or NULL. */
WARD_INTERNAL const struct ward__deny *ward__policy_deny_for(const struct ward_policy *p,
							     const char *path);

/*
 * Applies Codex's PermissionProfile (managed / disabled / external, see
 * docs/policy.md) to p, all or nothing. roots are the absolute directories
 * ":project_roots" stands for (the command's cwd first, then the workspace
 * roots). What ward cannot enforce exactly is refused (-EOPNOTSUPP), malformed
 * profiles -EINVAL, with err naming origin and the reason.
 */
WARD_INTERNAL int ward__policy_apply_profile(struct ward_policy *p, json_t *profile,
					     char *const *roots, size_t n_roots, const char *origin,
					     struct ward_error *err);

struct ward__buf;
/*
 * Appends to b a canonical form of the resolved policy: every field the
 * sandbox is built from (mode, network, cwd, roots, protected paths with
 * their kinds, deny-read paths, allowed sockets) and the identity (device,
 * inode, type) the paths it mounts have now. Two policies with the same
 * fingerprint give the same sandbox: a prepared sandbox is used only for a
 * process whose policy, resolved at its start, has the fingerprint the
 * sandbox was built for. -EINVAL when p is not resolved; -ENOBUFS past b's cap.
 */
WARD_INTERNAL int ward__policy_fingerprint(const struct ward_policy *p, struct ward__buf *b);

/* The resolved policy as a JSON object (ward policy show; the caller adds "enforcement"). */
WARD_INTERNAL json_t *ward__policy_to_json(const struct ward_policy *p);
