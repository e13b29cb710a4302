/* SPDX-License-Identifier: MIT */
/*
 * "Approved for this session": Codex's ApprovalStore (core/src/tools/sandboxing.rs)
 * keyed as its unified exec keys approvals (UnifiedExecApprovalKey): the
 * canonical command, the working directory, tty, sandbox_permissions and the
 * additional permissions. Because the directory is part of the key, an answer
 * given in one directory does not approve the same command in another (Codex
 * issue #37603). Held in memory, at most WARD_APPROVAL_CACHE_MAX answers; the
 * oldest is forgotten first.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "approval/approval.h"
#include "basic/buf.h"
#include "basic/cleanup.h"

/* A field: its length as 8 bytes, then its bytes (so no two different keys encode alike). */
static int field(struct ward__buf *b, const void *p, size_t n)
{
	uint64_t len = n;
	int r = ward__buf_append(b, &len, sizeof(len));

	return r < 0 ? r : ward__buf_append(b, p, n);
}

static int str_field(struct ward__buf *b, const char *s)
{
	return field(b, s, strlen(s));
}

static int words(struct ward__buf *b, const char *const *argv, size_t argc)
{
	uint64_t n = argc;
	int r = ward__buf_append(b, &n, sizeof(n));

	for (size_t i = 0; r >= 0 && i < argc; i++)
		r = str_field(b, argv[i]);
	return r;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int ward__approval_key(const char *const *argv, size_t argc, const char *cwd,
		       const struct ward_approval_request *req, char **ret_key, size_t *ret_len)
{
	struct ward__buf b;
	struct ward__cmdv inner = {0};
	const char *script = ward__shell_wrapper_script(argv, argc);
	_cleanup_free_ char **sorted = NULL;
	uint8_t flags[3];
	int r;

	r = ward__buf_init(&b, WARD_APPROVAL_KEY_MAX);
	if (r < 0)
		return r;
	/*
	 * The canonical command (Codex's canonicalize_command_for_approval): a
	 * script of one plain command is that command, so `bash -lc "make"`
	 * and `make` share an answer; any other script is keyed by its text.
	 */
	if (script && ward__shell_split(script, &inner) == 1 && inner.n == 1) {
		r = words(&b, (const char *const *)inner.v[0].argv, inner.v[0].argc);
	} else if (script) {
		const char *canon[] = {"__codex_shell_script__", argv[1], script};

		r = words(&b, canon, 3);
	} else {
		r = words(&b, argv, argc);
	}
	ward__cmdv_release(&inner);
	if (r >= 0)
		r = str_field(&b, cwd ? cwd : "");
	flags[0] = req && req->tty;
	flags[1] = (uint8_t)(req ? req->sandbox_permissions : WARD_SANDBOX_PERMISSIONS_USE_DEFAULT);
	flags[2] = req && req->network;
	if (r >= 0)
		r = field(&b, flags, sizeof(flags));
	/* The additional writable roots, in an order that does not depend on how they were given. */
	if (r >= 0 && req && req->n_writable) {
		sorted = calloc(req->n_writable, sizeof(char *));
		if (!sorted)
			r = -ENOMEM;
		else {
			memcpy(sorted, req->writable, req->n_writable * sizeof(char *));
			qsort(sorted, req->n_writable, sizeof(char *), cmp_str);
			r = words(&b, (const char *const *)sorted, req->n_writable);
		}
	}
	if (r < 0) {
		ward__buf_release(&b);
		return r == -ENOBUFS ? -E2BIG : r;
	}
	*ret_key = (char *)ward__buf_steal(&b, ret_len);
	ward__buf_release(&b);
	return *ret_key ? 0 : -ENOMEM;
}

static struct ward__cache_entry *find(const struct ward_approver *a, const char *key, size_t len)
{
	for (size_t i = 0; i < a->cache_n; i++) {
		const struct ward__cache_entry *e =
			&a->cache[(a->cache_head + i) % WARD_APPROVAL_CACHE_MAX];

		if (e->len == len && memcmp(e->key, key, len) == 0)
			return (struct ward__cache_entry *)e;
	}
	return NULL;
}

bool ward__cache_lookup(const struct ward_approver *a, const char *key, size_t len,
			bool unsandboxed)
{
	const struct ward__cache_entry *e = find(a, key, len);

	/* Approving a sandboxed run does not approve running outside the sandbox. */
	return e && (e->unsandboxed || !unsandboxed);
}

int ward__cache_store(struct ward_approver *a, const char *key, size_t len, bool unsandboxed)
{
	struct ward__cache_entry *e = find(a, key, len);
	char *copy;

	if (e) {
		e->unsandboxed = e->unsandboxed || unsandboxed;
		return 0;
	}
	copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, key, len);
	if (a->cache_n == WARD_APPROVAL_CACHE_MAX) {
		/* Full: the oldest answer is forgotten (it will be asked again). */
		free(a->cache[a->cache_head].key);
		a->cache[a->cache_head] = (struct ward__cache_entry){0};
		a->cache_head = (a->cache_head + 1) % WARD_APPROVAL_CACHE_MAX;
		a->cache_n--;
	}
	a->cache[(a->cache_head + a->cache_n) % WARD_APPROVAL_CACHE_MAX] =
		(struct ward__cache_entry){.key = copy, .len = len, .unsandboxed = unsandboxed};
	a->cache_n++;
	return 0;
}

void ward__cache_release(struct ward_approver *a)
{
	for (size_t i = 0; i < a->cache_n; i++)
		free(a->cache[(a->cache_head + i) % WARD_APPROVAL_CACHE_MAX].key);
	a->cache_n = 0;
	a->cache_head = 0;
}
