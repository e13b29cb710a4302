/* SPDX-License-Identifier: MIT */
/* Codex's PermissionProfile mapped onto ward's policy (src/policy/profile.c), and file: URIs. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

#include "basic/uri.h"
#include "policy/policy.h"

static const char *const roots_v[] = {"/work/repo", "/work/extra"};

static int apply(struct ward_policy *p, const char *json, struct ward_error *e)
{
	json_t *j = json_loads(json, 0, NULL);
	int r;

	if (!j)
		tap_fail(__FILE__, __LINE__, "bad test JSON: %s", json);
	r = ward__policy_apply_profile(p, j, (char *const *)roots_v, 2, "test", e);
	json_decref(j);
	return r;
}

static struct ward_policy *fresh(void)
{
	struct ward_policy *p;

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, "/work/repo"));
	return p;
}

#define ROOT_READ \
	"{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"root\"}},\"access\":\"read\"}"
#define PROJ_WRITE                                                                            \
	"{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"project_roots\"}},\"access\":" \
	"\"write\"}"
#define TMP_WRITE \
	"{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"slash_tmp\"}},\"access\":\"write\"}"
#define MANAGED(entries, net)                                                                  \
	"{\"type\":\"managed\",\"file_system\":{\"type\":\"restricted\",\"entries\":[" entries \
	"]},\"network\":\"" net "\"}"

TEST(workspace_profile_is_workspace_write)
{
	struct ward_policy *p = fresh();
	struct ward_error e = {0};

	ASSERT_OK(apply(p,
			MANAGED(ROOT_READ
				"," PROJ_WRITE "," TMP_WRITE
				",{\"path\":{\"type\":\"path\",\"path\":\"file:///work/repo/"
				"docs%20old\"},\"access\":\"read\"},{\"path\":{\"type\":"
				"\"path\",\"path\":\"/home/u/.ssh\"},\"access\":\"deny\"}",
				"restricted"),
			&e));
	ASSERT_EQ(p->mode, WARD_MODE_WORKSPACE_WRITE);
	ASSERT_FALSE(p->network);
	ASSERT_FALSE(p->exclude_slash_tmp);
	ASSERT_TRUE(p->exclude_tmpdir_env_var || getenv("TMPDIR"));
	/* The second project root is writable; the first is the cwd (writable anyway). */
	ASSERT_TRUE(ward__strv_contains(&p->writable, "/work/extra"));
	ASSERT_FALSE(ward__strv_contains(&p->writable, "/work/repo"));
	ASSERT_TRUE(ward__strv_contains(&p->protect, "/work/repo/docs old"));
	ASSERT_TRUE(ward__strv_contains(&p->deny_read, "/home/u/.ssh"));
	ward_policy_free(p);
}

TEST(read_only_and_network)
{
	struct ward_policy *p = fresh();

	ASSERT_OK(apply(p, MANAGED(ROOT_READ, "enabled"), NULL));
	ASSERT_EQ(p->mode, WARD_MODE_READ_ONLY);
	ASSERT_TRUE(p->network);
	ward_policy_free(p);
}

TEST(disabled_and_external)
{
	struct ward_policy *p = fresh();

	ASSERT_OK(apply(p, "{\"type\":\"disabled\"}", NULL));
	ASSERT_EQ(p->mode, WARD_MODE_DANGER_FULL_ACCESS);
	ward_policy_free(p);
	p = fresh();
	ASSERT_OK(apply(p, "{\"type\":\"external\",\"network\":\"restricted\"}", NULL));
	ASSERT_EQ(p->mode, WARD_MODE_WORKSPACE_WRITE);
	ASSERT_FALSE(p->network);
	ASSERT_TRUE(ward__strv_contains(&p->writable, "/"));
	ward_policy_free(p);
	p = fresh();
	ASSERT_OK(apply(p,
			"{\"type\":\"managed\",\"file_system\":{\"type\":\"unrestricted\"},"
			"\"network\":\"enabled\"}",
			NULL));
	ASSERT_EQ(p->mode, WARD_MODE_DANGER_FULL_ACCESS);
	ward_policy_free(p);
}

/*
 * A newer client's profile: members ward does not know, at every level, are
 * ignored as Codex's own parser ignores them; the profile means what it says.
 */
TEST(unknown_members_are_ignored_at_every_level)
{
	struct ward_policy *p = fresh();
	struct ward_error e = {0};

	ASSERT_OK(apply(p,
			"{\"type\":\"managed\",\"future\":1,\"file_system\":{\"type\":"
			"\"restricted\",\"glob_scan_max_depth\":3,\"futureFs\":{\"x\":[]},"
			"\"entries\":[{\"path\":{\"type\":\"special\",\"value\":{\"kind\":"
			"\"root\",\"futureValue\":1},\"futurePath\":2},\"access\":\"read\","
			"\"futureEntry\":\"x\"}," PROJ_WRITE
			",{\"path\":{\"type\":\"path\",\"path\":\"/home/u/.ssh\"},\"access\":"
			"\"deny\",\"missing_path_behavior\":\"skip\",\"futureEntry\":null}]},"
			"\"network\":\"restricted\"}",
			&e));
	ASSERT_EQ(p->mode, WARD_MODE_WORKSPACE_WRITE);
	ASSERT_FALSE(p->network);
	ASSERT_TRUE(ward__strv_contains(&p->deny_read, "/home/u/.ssh"));
	ward_policy_free(p);
	p = fresh();
	ASSERT_OK(apply(p, "{\"type\":\"disabled\",\"future\":true}", NULL));
	ASSERT_EQ(p->mode, WARD_MODE_DANGER_FULL_ACCESS);
	ward_policy_free(p);
	p = fresh();
	ASSERT_OK(
		apply(p, "{\"type\":\"external\",\"network\":\"restricted\",\"future\":1}", NULL));
	ASSERT_FALSE(p->network);
	ward_policy_free(p);
	/* An unknown value of a known member is refused, as Codex refuses it. */
	p = fresh();
	ASSERT_TRUE(apply(p,
			  MANAGED("{\"path\":{\"type\":\"special\",\"value\":{\"kind\":"
				  "\"weird_new_kind\"}},\"access\":\"read\"}",
				  "restricted"),
			  &e) < 0);
	ASSERT_EQ(p->mode, WARD_MODE_WORKSPACE_WRITE);
	ward_policy_free(p);
}

TEST(what_ward_cannot_enforce_is_refused_and_nothing_changes)
{
	static const char *const bad[][2] = {
		{MANAGED("{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"minimal\"}},"
			 "\"access\":\"read\"}",
			 "restricted"),
		 "cannot limit reads"},
		{MANAGED(ROOT_READ
			 ",{\"path\":{\"type\":\"glob_pattern\",\"pattern\":\"**/*.env\"},"
			 "\"access\":\"deny\"}",
			 "restricted"),
		 "glob patterns"},
		{MANAGED(ROOT_READ
			 ",{\"path\":{\"type\":\"path\",\"path\":\"/work\"},\"access\":"
			 "\"deny\"},{\"path\":{\"type\":\"path\",\"path\":\"/work/repo/x\"},"
			 "\"access\":\"write\"}",
			 "restricted"),
		 "inside the denied"},
		{MANAGED(ROOT_READ
			 ",{\"path\":{\"type\":\"path\",\"path\":\"/elsewhere\"},\"access\":"
			 "\"write\"}",
			 "restricted"),
		 "working directory"},
		{MANAGED(ROOT_READ
			 ",{\"path\":{\"type\":\"path\",\"path\":\"relative\"},\"access\":"
			 "\"read\"}",
			 "restricted"),
		 "absolute path"},
		{MANAGED(ROOT_READ ",{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"project_"
				   "roots\",\"subpath\":\"../up\"}},\"access\":\"write\"}",
			 "restricted"),
		 "without \"..\""},
		{MANAGED(ROOT_READ, "sometimes"), "network"},
		{"{\"type\":\"bogus\"}", "expected \"managed\""},
		{MANAGED("{\"path\":{\"type\":\"path\",\"path\":\"file://otherhost/x\"},\"access\":"
			 "\"read\"}",
			 "restricted"),
		 "absolute path"},
	};

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct ward_policy *p = fresh();
		struct ward_error e = {0};

		ASSERT_TRUE(apply(p, bad[i][0], &e) < 0);
		ASSERT_CONTAINS(e.message, bad[i][1]);
		ASSERT_EQ(p->mode, WARD_MODE_WORKSPACE_WRITE);
		ASSERT_EQ(p->writable.n, 0);
		ASSERT_EQ(p->deny_read.n, 0);
		ward_policy_free(p);
	}
}

TEST(file_uris)
{
	char *s = NULL;

	ASSERT_OK(ward__file_uri_to_path("file:///a%20b/c", &s));
	ASSERT_STREQ(s, "/a b/c");
	free(s);
	ASSERT_OK(ward__file_uri_to_path("file://localhost/x", &s));
	ASSERT_STREQ(s, "/x");
	free(s);
	ASSERT_EQ(ward__file_uri_to_path("file:///a%00b", &s), -EINVAL);
	ASSERT_EQ(ward__file_uri_to_path("file:///a%zz", &s), -EINVAL);
	ASSERT_EQ(ward__file_uri_to_path("file://host/x", &s), -EINVAL);
	ASSERT_EQ(ward__file_uri_to_path("http://x/y", &s), -EPROTONOSUPPORT);
	ASSERT_EQ(ward__path_or_file_uri("relative", &s), -EINVAL);
	s = ward__path_to_file_uri("/a b/%c\xc3\xa9");
	ASSERT_STREQ(s, "file:///a%20b/%25c%C3%A9");
	free(s);
}

int main(void)
{
	return tap_main();
}
