/* SPDX-License-Identifier: MIT */
/*
 * What protects a path, asked after the fact: by the approval runner (which
 * path a person may lift for one command) and by the sandbox's reports
 * (the reason a denial carries). The entries of the resolved policy first,
 * then the autorun names the guard refuses where a command creates them
 * (autorun.c's matcher, from the directories the scan looked into).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/util.h"
#include "policy/policy.h"

/*
 * The walk from the deepest directory the scan looked into down to path,
 * asking the matcher at each component, as the guard would have asked when
 * the command created them.
 */
static int autorun_beneath(const struct ward_policy *p, const char *path, char **ret_lift,
			   const char **ret_reason)
{
	const struct ward__autorun_watch *w = NULL;
	struct ward__autorun_point at;
	char dir[PATH_MAX];
	const char *rest;

	for (size_t i = 0; i < p->n_watches; i++)
		if (strcmp(p->watches[i].path, path) != 0 &&
		    ward__path_under(path, p->watches[i].path) &&
		    (!w || strlen(p->watches[i].path) > strlen(w->path)))
			w = &p->watches[i];
	if (!w || strlen(path) >= sizeof(dir))
		return -ENOENT;
	at = w->at;
	snprintf(dir, sizeof(dir), "%s", w->path);
	rest = path + (strcmp(w->path, "/") == 0 ? 1 : strlen(w->path) + 1);
	while (*rest) {
		size_t len = strcspn(rest, "/");
		char name[NAME_MAX + 1];
		struct ward__autorun_point child;
		const char *reason = NULL;

		if (len == 0 || len > NAME_MAX)
			return -ENOENT;
		memcpy(name, rest, len);
		name[len] = '\0';
		switch (ward__autorun_match(p, &at, dir, name, true, &child, &reason)) {
		case WARD_AUTORUN_NONE:
			return -ENOENT;
		case WARD_AUTORUN_PROTECTED:
			*ret_lift = strndup(path, (size_t)(rest - path) + len);
			if (!*ret_lift)
				return -ENOMEM;
			*ret_reason = reason;
			return 0;
		case WARD_AUTORUN_DESCEND:
			break;
		}
		at = child;
		/* The next directory is path up to this component (path is canonical). */
		memcpy(dir, path, (size_t)(rest - path) + len);
		dir[(size_t)(rest - path) + len] = '\0';
		rest += len;
		while (*rest == '/')
			rest++;
	}
	return -ENOENT;
}

int ward__policy_protection_of(const struct ward_policy *p, const char *path, char **ret_lift,
			       const char **ret_reason)
{
	const struct ward__protected *e = ward__policy_protected_for(p, path);

	if (e) {
		/* The caller's own (--protect) and ward's cannot be lifted; neither can what holds one. */
		if (strcmp(e->reason, "--protect") == 0 || e->reason == ward__policy_reason_own)
			return -EPERM;
		*ret_lift = strdup(e->path);
		if (!*ret_lift)
			return -ENOMEM;
		*ret_reason = e->reason;
		return 0;
	}
	return autorun_beneath(p, path, ret_lift, ret_reason);
}

const char *ward__policy_denial_reason(const struct ward_policy *p, const char *access,
				       const char *target)
{
	static const char *const changes[] = {"write", "create", "delete", "rename"};
	const struct ward__protected *e;
	bool change = false;
	char *lift = NULL;
	const char *reason = NULL;

	if (!p || !access || !target)
		return NULL;
	for (size_t i = 0; i < ELEMENTSOF(changes); i++)
		change |= strcmp(access, changes[i]) == 0;
	if (strcmp(access, "read") == 0)
		return target[0] == '/' && ward__policy_deny_for(p, target) ? "deny-read" : NULL;
	if (strcmp(access, "connect") == 0 || strcmp(access, "sendto") == 0)
		return p->network ? NULL : "network off";
	if (strcmp(access, "syscall") == 0 || strcmp(access, "socket") == 0)
		return "seccomp filter";
	if (!change || target[0] != '/')
		return NULL;
	if (p->mode == WARD_MODE_READ_ONLY)
		return "read-only sandbox";
	if (!ward__policy_path_writable(p, target) && !ward__policy_protected_for(p, target)) {
		bool in_root = false;

		for (size_t i = 0; i < p->roots.n; i++)
			in_root |= ward__path_under(target, p->roots.v[i]);
		if (!in_root)
			return "outside the writable roots";
	}
	e = ward__policy_protected_for(p, target);
	if (e)
		return e->reason;
	if (autorun_beneath(p, target, &lift, &reason) == 0) {
		free(lift);
		return reason;
	}
	/* A pinned directory itself: renaming or removing it is refused (a mount point). */
	for (size_t i = 0; i < p->n_protected; i++)
		if (p->protected[i].kind == WARD_PROTECT_PIN &&
		    strcmp(p->protected[i].path, target) == 0)
			return p->protected[i].reason;
	return NULL;
}
