/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/macro.h"
#include "policy/policy.h"

/*
 * Inside the policy folder: adding protected paths while a policy is being
 * resolved (protect.c), used by the git walk (git.c) and the resolution
 * (resolve.c).
 */

/* The reason of the caller's own protections (--protect): never lifted by --unprotect. */
WARD_INTERNAL extern const char ward__policy_reason_explicit[];

/* realpath() with a one-entry cache, on for the time of one resolution (per thread). */
WARD_INTERNAL char *ward__policy_canon(const char *path, char *out);
WARD_INTERNAL int ward__policy_canon_cache(bool on);

/* Records "<what> '<path>'<why>" for `ward policy show`. */
WARD_INTERNAL int ward__policy_note(struct ward_policy *p, const char *what, const char *path,
				    const char *why);
WARD_INTERNAL bool ward__policy_in_roots(const struct ward_policy *p, const char *path);
WARD_INTERNAL bool ward__policy_is_root(const struct ward_policy *p, const char *path);

/* Adds one entry as it is (the same path and kind once); -E2BIG past WARD_POLICY_MAX_PROTECTED. */
WARD_INTERNAL int ward__policy_add_entry(struct ward_policy *p, const char *path,
					 enum ward__protect_kind kind, bool is_dir,
					 const char *guard_dir, const char *guard_name,
					 const char *reason);
/* Pins a directory inside a writable root (not a root: roots are mount points already). */
WARD_INTERNAL int ward__policy_pin(struct ward_policy *p, const char *path, const char *reason);
/*
 * Protects path (absolute, maybe not canonical, maybe missing): an existing
 * path inside a writable root is bound read-only; a missing one is guarded on
 * its deepest existing ancestor; a symlink protects its target and guards its
 * own name. Lifted by --unprotect unless reason is ward__policy_reason_explicit.
 */
WARD_INTERNAL int ward__policy_protect(struct ward_policy *p, const char *path, const char *reason);
/* Pins every directory between the enclosing writable root and canonical (and it, inclusive). */
WARD_INTERNAL int ward__policy_pin_ancestors(struct ward_policy *p, const char *canonical,
					     bool inclusive);
/* The same for every writable root and every protected entry so far. */
WARD_INTERNAL int ward__policy_pin_all_ancestors(struct ward_policy *p);

/* The git protections of one writable root (git.c). */
WARD_INTERNAL int ward__policy_protect_git(struct ward_policy *p, const char *root);
