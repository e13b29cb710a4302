/* SPDX-License-Identifier: MIT */
/*
 * The paths a person may lift for one command: when the sandbox refused a
 * command's write to a protected path (an autorun name such as
 * .vscode/tasks.json, a PATH directory, git's hooks), the approval runner
 * asks whether to run the command again with that path unprotected
 * (--unprotect), in the sandbox, this once. This file finds those paths among
 * a run's denials, words the question (each path, its reason and what would
 * run it) and builds the policy of the run again. The step machine
 * (approval.c) decides when to ask.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "approval/approval.h"
#include "basic/buf.h"
#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"

/* Only changes can be lifted: a refused read or connect is not a protected path's. */
static bool is_change(const char *access)
{
	static const char *const changes[] = {"write", "create", "delete", "rename"};

	for (size_t i = 0; i < ELEMENTSOF(changes); i++)
		if (strcmp(access, changes[i]) == 0)
			return true;
	return false;
}

/*
 * Whether path names itself: no component of it is a symlink now (the
 * canonical form of its existing part, with the missing rest as it is, is
 * path). A denial names a path the command may have built: a directory the
 * guard watched, renamed away and replaced by a link, or a protected name
 * that is a link. Lifted, such a path would be made canonical and could lift
 * anything the link leads to, up to the workspace itself; the person is
 * asked about what they read, or not at all.
 */
static bool literal(const char *path)
{
	char anc[PATH_MAX], canon[PATH_MAX];
	size_t cut = strlen(path);

	if (path[0] != '/' || cut >= sizeof(anc))
		return false;
	memcpy(anc, path, cut + 1);
	while (!realpath(anc, canon)) {
		char *slash = strrchr(anc, '/');

		if (errno != ENOENT || !slash || slash == anc)
			return false;
		*slash = '\0';
		cut = (size_t)(slash - anc);
	}
	/* The existing part must be itself, and the missing rest cannot hold a link. */
	return strlen(canon) == cut && memcmp(canon, path, cut) == 0;
}

/*
 * The question's words for a path: control characters escaped, so that a
 * name cannot start lines of its own in the question (a front end may show
 * the text as it is).
 */
static int append_path(struct ward__buf *b, const char *path)
{
	int r = 0;

	for (const unsigned char *c = (const unsigned char *)path; *c && r >= 0; c++)
		r = *c < 0x20 || *c == 0x7f ? ward__buf_printf(b, "\\x%02x", *c)
					    : ward__buf_append_byte(b, *c);
	return r;
}

void ward__lift_release(struct ward__lift *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->paths[i]);
	l->n = 0;
	free(l->text);
	l->text = NULL;
}

int ward__lift_find(const struct ward_policy *p, const struct ward__denial *d, size_t n,
		    const struct ward__lift *already, size_t n_already, struct ward__lift *ret)
{
	struct ward__buf b;
	int r = 0;

	ward__lift_release(ret);
	for (size_t i = 0; i < n && ret->n < WARD_APPROVAL_MAX_LIFT; i++) {
		const char *reason = NULL;
		char *lift = NULL;
		bool dup = false;

		if (!d[i].target || d[i].target[0] != '/' || !is_change(d[i].access))
			continue;
		r = ward__policy_protection_of(p, d[i].target, &lift, &reason);
		if (r == -ENOMEM)
			goto fail;
		if (r < 0)
			continue;
		/* Not what it says (a link on the way): not offered, the refusal stands. */
		dup = !literal(lift);
		for (size_t k = 0; k < ret->n && !dup; k++)
			dup = strcmp(ret->paths[k], lift) == 0;
		/* Lifted once already: refused again, it is not asked about twice. */
		for (size_t a = 0; a < n_already && !dup; a++)
			for (size_t k = 0; k < already[a].n && !dup; k++)
				dup = strcmp(already[a].paths[k], lift) == 0;
		if (dup) {
			free(lift);
			continue;
		}
		ret->reasons[ret->n] = reason;
		ret->paths[ret->n++] = lift;
	}
	r = 0;
	if (ret->n == 0)
		return 0;
	r = ward__buf_init(&b, 64 << 10);
	if (r < 0)
		goto fail;
	r = ward__buf_printf(&b, "the sandbox refused to let it change %s:",
			     ret->n == 1 ? "a protected path" : "protected paths");
	for (size_t i = 0; r >= 0 && i < ret->n; i++) {
		const char *runs = ward__policy_reason_runner(ret->reasons[i]);

		r = ward__buf_append_byte(&b, ' ');
		if (r >= 0)
			r = append_path(&b, ret->paths[i]);
		if (r >= 0)
			r = ward__buf_printf(&b, " (%s%s%s)%s", ret->reasons[i], runs ? ": " : "",
					     runs ? runs : "", i + 1 < ret->n ? ";" : "");
	}
	if (r >= 0)
		r = ward__buf_printf(&b,
				     ". Run it again with %s writable, in the sandbox, this once?",
				     ret->n == 1 ? "it" : "them");
	if (r >= 0)
		ret->text = (char *)ward__buf_steal(&b, NULL);
	ward__buf_release(&b);
	if (r >= 0 && !ret->text)
		r = -ENOMEM;
	if (r < 0)
		goto fail;
	return (int)ret->n;
fail:
	ward__lift_release(ret);
	return r;
}

int ward__lift_policy(const struct ward_policy *base, const struct ward__lift *lifts,
		      size_t n_lifts, struct ward_policy **ret, struct ward_error *err)
{
	struct ward_policy *p;
	int r;

	r = ward_policy_copy(base, &p);
	if (r < 0)
		return ward__error(err, r, "approval", "cannot lift the protection: %m");
	for (size_t k = 0; r >= 0 && k < n_lifts; k++)
		for (size_t i = 0; r >= 0 && i < lifts[k].n; i++)
			r = ward_policy_add_unprotect(p, lifts[k].paths[i]);
	if (r < 0) {
		ward_policy_free(p);
		return ward__error(err, r, "approval", "cannot lift the protection: %m");
	}
	r = ward_policy_resolve(p, err);
	if (r < 0) {
		ward_policy_free(p);
		return r;
	}
	/*
	 * What is lifted is what the person was shown, or nothing: a path that
	 * became a link since the question (or a name that was one) would lift
	 * where it leads once made canonical.
	 */
	for (size_t k = 0; k < n_lifts; k++)
		for (size_t i = 0; i < lifts[k].n; i++)
			if (!ward__strv_contains(&p->unprotected, lifts[k].paths[i])) {
				r = ward__error(
					err, -ELOOP, "approval",
					"cannot lift the protection of '%s': it leads elsewhere now (a symbolic link)",
					lifts[k].paths[i]);
				ward_policy_free(p);
				return r;
			}
	*ret = p;
	return 0;
}
