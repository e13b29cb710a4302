/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the policy parser (ward_policy_load_json) and the resolution that
 * follows it. The input is the JSON text, merged into a policy that already
 * holds one of each list so that merging is exercised. Invariants checked:
 *
 *   - a rejected document leaves the policy exactly as it was, and the error
 *     is one line that names the origin;
 *   - an accepted document leaves only absolute, NUL-free, bounded paths;
 *   - loading the same document a second time gives the same result and does
 *     not duplicate list entries;
 *   - resolution either succeeds with canonical roots or fails with a message.
 *
 * Built with -fsanitize=fuzzer it is a libFuzzer target; linked with replay.c
 * it replays the corpus (in every test run).
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "policy/policy.h"

#define ORIGIN "<fuzz>"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DUMP_MAX (64u << 20)

static void dump_strv(struct ward__buf *b, const char *name, const struct ward__strv *v)
{
	if (ward__buf_append_str(b, name) < 0)
		abort();
	for (size_t i = 0; i < v->n; i++)
		if (ward__buf_append(b, v->v[i], strlen(v->v[i]) + 1) < 0)
			abort();
	if (ward__buf_append_byte(b, '\n') < 0)
		abort();
}

/* Everything a document can change, as bytes to compare. */
static void dump(const struct ward_policy *p, struct ward__buf *b)
{
	if (ward__buf_init(b, DUMP_MAX) < 0 ||
	    ward__buf_printf(b, "%d %d %d %d %d|%s\n", (int)p->mode, p->network,
			     p->exclude_slash_tmp, p->exclude_tmpdir_env_var, p->require_isolation,
			     p->cwd ? p->cwd : "(null)") < 0)
		abort();
	dump_strv(b, "writable", &p->writable);
	dump_strv(b, "protect", &p->protect);
	dump_strv(b, "deny_read", &p->deny_read);
	dump_strv(b, "sockets", &p->unix_sockets);
}

static void check_paths(const struct ward__strv *v)
{
	if (v->n > WARD_POLICY_MAX_PATHS)
		abort();
	for (size_t i = 0; i < v->n; i++)
		if (v->v[i][0] != '/' || strlen(v->v[i]) >= PATH_MAX)
			abort();
}

static struct ward_policy *seeded(void)
{
	struct ward_policy *p;

	if (ward_policy_new(&p) < 0 || ward_policy_set_cwd(p, "/") < 0 ||
	    ward_policy_add_writable(p, "/var/tmp") < 0 ||
	    ward_policy_add_protect(p, "/var/tmp/x") < 0 ||
	    ward_policy_add_deny_read(p, "/etc/shadow") < 0)
		abort();
	return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ward_policy *p = seeded();
	struct ward__buf before = {0}, after = {0}, again = {0};
	struct ward_error err = {0};
	int r, r2;

	dump(p, &before);
	r = ward_policy_load_json(p, (const char *)data, size, ORIGIN, &err);
	dump(p, &after);
	if (r < 0) {
		if (!err.message[0] || strchr(err.message, '\n') ||
		    strncmp(err.message, "policy '" ORIGIN "'", strlen("policy '" ORIGIN "'")) != 0)
			abort();
		if (before.len != after.len || memcmp(before.data, after.data, before.len) != 0)
			abort();
		goto out;
	}
	if (!p->cwd || p->cwd[0] != '/')
		abort();
	check_paths(&p->writable);
	check_paths(&p->protect);
	check_paths(&p->deny_read);
	check_paths(&p->unix_sockets);

	/* The same document again: same answer, nothing duplicated. */
	r2 = ward_policy_load_json(p, (const char *)data, size, ORIGIN, &err);
	dump(p, &again);
	if (r2 != 0 || again.len != after.len || memcmp(again.data, after.data, after.len) != 0)
		abort();

	memset(&err, 0, sizeof(err));
	if (ward_policy_resolve(p, &err) < 0) {
		if (!err.message[0] || p->resolved)
			abort();
	} else {
		if (!p->resolved || !p->resolved_cwd)
			abort();
		for (size_t i = 0; i < p->roots.n; i++) {
			char canon[PATH_MAX];

			/* Roots are canonical: realpath gives them back unchanged. */
			if (!realpath(p->roots.v[i], canon) || strcmp(canon, p->roots.v[i]) != 0)
				abort();
		}
		if (p->mode != WARD_MODE_WORKSPACE_WRITE && p->n_protected != 0)
			abort();
	}
out:
	ward__buf_release(&before);
	ward__buf_release(&after);
	ward__buf_release(&again);
	ward_policy_free(p);
	return 0;
}
