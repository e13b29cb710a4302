/* SPDX-License-Identifier: MIT */
/*
 * src/changes without a sandbox: the checksum, the record's text form (a
 * round trip; damaged, cut and hostile records refused), the path-safe
 * opens, the journal's numbering and bounds. The layer itself (overlayfs in
 * a sandbox), apply and undo are tests/integration/test-changes.sh's.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/util.h"
#include "changes/changes.h"
#include "changes/fsops.h"
#include "changes/record.h"
#include "changes/sha256.h"
#include "tap.h"

static void hex_of(const char *s, char out[65])
{
	struct ward__sha256 h;

	ward__sha256_init(&h);
	ward__sha256_update(&h, s, strlen(s));
	ward__sha256_hex(&h, out);
}

TEST(sha256_vectors)
{
	char out[65];
	struct ward__sha256 h;
	static char million[1000001];

	hex_of("", out);
	ASSERT_STREQ(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	hex_of("abc", out);
	ASSERT_STREQ(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", out);
	ASSERT_STREQ(out, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	/* Fed in uneven pieces: the same digest. */
	memset(million, 'a', 1000000);
	ward__sha256_init(&h);
	for (size_t off = 0; off < 1000000;) {
		size_t n = MIN((off % 97) + 1, 1000000 - off);

		ward__sha256_update(&h, million + off, n);
		off += n;
	}
	ward__sha256_hex(&h, out);
	ASSERT_STREQ(out, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static struct ward__changes_run *sample_run(struct ward__changes_cfg *cfg)
{
	struct ward__changes_run *run = calloc(1, sizeof(*run));
	struct ward__change c = {
		.path = (char *)"dir/with space/é\t\x01%x",
		.kind = WARD_CHANGE_REPLACE,
		.state = WARD_CS_APPLIED,
		.flags = WARD_CF_CONTENT | WARD_CF_BINARY,
		.old_type = WARD_FT_REG,
		.new_type = WARD_FT_LNK,
		.old_mode = 0644,
		.new_mode = 0777,
		.old_size = 12,
		.new_size = 0,
		.old_files = 1,
		.renamed_from = -1,
		.unkept = WARD_UNKEPT_FILE_BOUND,
		.new_ino = 42,
		.after_ctime_ns = -5,
	};

	ASSERT_TRUE(run != NULL);
	run->cfg = cfg;
	run->id = 17;
	run->lock_fd = -1;
	run->mode = WARD_RUN_HOLD;
	run->state = WARD_RS_APPLIED;
	run->started_ns = 1234567890123;
	run->exit_code = 3;
	run->cwd = strdup("/ws");
	run->command = strdup("sh -c 'echo x'");
	run->roots = calloc(1, sizeof(*run->roots));
	run->roots[0].path = strdup("/ws");
	run->roots[0].layered = true;
	run->roots[0].dev = 7;
	run->n_roots = 1;
	ASSERT_OK(ward__changes_run_add(run, &c));
	c.path = (char *)"added";
	c.kind = WARD_CHANGE_ADD;
	c.refused = (char *)"autorun: editor tasks";
	c.state = WARD_CS_REFUSED;
	memcpy(c.sum, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 65);
	ASSERT_OK(ward__changes_run_add(run, &c));
	ASSERT_OK(ward__changes_run_note(run, "a note with\nnewline"));
	return run;
}

static int read_back(const char *data, size_t len, struct ward__changes_run **ret)
{
	struct ward__changes_run *run = calloc(1, sizeof(*run));
	char why[96];
	int r;

	run->lock_fd = -1;
	r = ward__record_read(run, data, len, why, sizeof(why));
	if (r < 0) {
		ward__changes_run_free(run);
		return r;
	}
	*ret = run;
	return 0;
}

TEST(record_round_trip)
{
	struct ward__changes_cfg cfg = {0};
	struct ward__changes_run *run = sample_run(&cfg), *back = NULL;
	struct ward__buf b;

	ASSERT_OK(ward__buf_init(&b, 1 << 20));
	ASSERT_OK(ward__record_write(run, &b));
	ASSERT_OK(read_back((const char *)b.data, b.len, &back));
	ASSERT_EQ(back->id, 17u);
	ASSERT_EQ(back->mode, WARD_RUN_HOLD);
	ASSERT_EQ(back->state, WARD_RS_APPLIED);
	ASSERT_EQ(back->started_ns, 1234567890123);
	ASSERT_EQ(back->exit_code, 3);
	ASSERT_STREQ(back->command, "sh -c 'echo x'");
	ASSERT_EQ(back->n, 2u);
	ASSERT_STREQ(back->v[0].path, "dir/with space/é\t\x01%x");
	ASSERT_EQ(back->v[0].new_type, WARD_FT_LNK);
	ASSERT_EQ(back->v[0].old_mode, 0644u);
	ASSERT_EQ(back->v[0].unkept, WARD_UNKEPT_FILE_BOUND);
	ASSERT_EQ(back->v[0].after_ctime_ns, -5);
	ASSERT_STREQ(back->v[1].refused, "autorun: editor tasks");
	ASSERT_STREQ(back->v[1].sum, run->v[1].sum);
	ASSERT_STREQ(back->notes[0], "a note with\nnewline");
	ASSERT_STREQ(back->roots[0].path, "/ws");
	ward__changes_run_free(back);
	ward__changes_run_free(run);
	ward__buf_release(&b);
}

TEST(record_damaged_or_cut)
{
	struct ward__changes_cfg cfg = {0};
	struct ward__changes_run *run = sample_run(&cfg), *back = NULL;
	struct ward__buf b;
	char *copy;

	ASSERT_OK(ward__buf_init(&b, 1 << 20));
	ASSERT_OK(ward__record_write(run, &b));
	copy = malloc(b.len);
	/* One byte changed anywhere: refused. */
	for (size_t i = 0; i < b.len; i += 7) {
		memcpy(copy, b.data, b.len);
		copy[i] ^= 0x20;
		ASSERT_EQ(read_back(copy, b.len, &back), -EBADMSG);
	}
	/* Cut anywhere: refused. */
	for (size_t n = 0; n < b.len; n += 5)
		ASSERT_EQ(read_back((const char *)b.data, n, &back), -EBADMSG);
	free(copy);
	ward__changes_run_free(run);
	ward__buf_release(&b);
}

/* A record whose checksum is right but whose paths would climb out of a root. */
TEST(record_hostile_paths)
{
	static const char *const bad[] = {"../x", "a/../../x", "/etc/passwd", "a//b",
					  "a/",	  ".",	       "a/./b"};
	struct ward__changes_cfg cfg = {0};

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct ward__changes_run *run = sample_run(&cfg), *back = NULL;
		struct ward__buf b;

		free(run->v[0].path);
		run->v[0].path = strdup(bad[i]);
		ASSERT_OK(ward__buf_init(&b, 1 << 20));
		ASSERT_OK(ward__record_write(run, &b));
		ASSERT_EQ(read_back((const char *)b.data, b.len, &back), -EBADMSG);
		ward__changes_run_free(run);
		ward__buf_release(&b);
	}
}

TEST(open_beneath_refuses_the_ways_out)
{
	char tmpl[] = "/var/tmp/ward-changes-XXXXXX";
	char *dir = mkdtemp(tmpl), path[PATH_MAX];
	int root, fd;
	const char *name;

	ASSERT_TRUE(dir != NULL);
	snprintf(path, sizeof(path), "%s/sub", dir);
	ASSERT_EQ(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/link", dir);
	ASSERT_EQ(symlink("/etc", path), 0);
	snprintf(path, sizeof(path), "%s/rel", dir);
	ASSERT_EQ(symlink("sub", path), 0);
	root = ward__fs_open_root(dir, 0, 0);
	ASSERT_GE(root, 0);
	ASSERT_EQ(ward__fs_open_beneath(root, "link/passwd", O_RDONLY, 0), -ELOOP);
	ASSERT_EQ(ward__fs_open_beneath(root, "rel", O_PATH, 0), -ELOOP);
	ASSERT_EQ(ward__fs_open_beneath(root, "../x", O_PATH, 0), -EXDEV);
	ASSERT_EQ(ward__fs_open_beneath(root, "/etc", O_PATH, 0), -EXDEV);
	fd = ward__fs_open_parent(root, "link/passwd", &name);
	ASSERT_EQ(fd, -ELOOP);
	fd = ward__fs_make_parent(root, "sub/new/deeper/file", &name);
	ASSERT_GE(fd, 0);
	ASSERT_STREQ(name, "file");
	close(fd);
	/* A root swapped since the run: refused by its identity. */
	{
		struct stat st;

		ASSERT_EQ(stat(dir, &st), 0);
		ASSERT_EQ(ward__fs_open_root(dir, (uint64_t)st.st_dev, (uint64_t)st.st_ino + 1),
			  -ESTALE);
		ASSERT_EQ(ward__fs_open_root(path, 0, 0), -ELOOP);
	}
	close(root);
	root = open("/var/tmp", O_PATH | O_DIRECTORY);
	ASSERT_OK(ward__fs_remove_at(root, dir + strlen("/var/tmp/")));
	close(root);
}

TEST(journal_numbers_and_bounds)
{
	char tmpl[] = "/var/tmp/ward-journal-XXXXXX";
	char *dir = mkdtemp(tmpl);
	struct ward__changes_cfg cfg = {
		.max_file = 1 << 20, .max_run = 1 << 20, .max_total = 1 << 30, .max_runs = 3};
	uint64_t *ids = NULL;
	size_t n = 0;
	int root;

	ASSERT_TRUE(dir != NULL);
	cfg.dir = dir;
	for (int i = 0; i < 5; i++) {
		struct ward__changes_run *run = NULL;
		struct ward__change c = {.path = (char *)"f",
					 .kind = WARD_CHANGE_ADD,
					 .state = WARD_CS_APPLIED,
					 .renamed_from = -1};
		char *const argv[] = {(char *)"true", NULL};

		ASSERT_OK(ward__journal_create(&cfg, WARD_RUN_RECORD, "/", argv, &run, NULL));
		ASSERT_EQ(run->id, 0u);
		run->roots = calloc(1, sizeof(*run->roots));
		run->roots[0].path = strdup("/x");
		run->n_roots = 1;
		ASSERT_OK(ward__changes_run_add(run, &c));
		run->state = WARD_RS_APPLIED;
		ASSERT_OK(ward__journal_number(run, NULL));
		ASSERT_EQ(run->id, (uint64_t)i + 1);
		ASSERT_OK(ward__journal_save(run, NULL));
		ward__changes_run_free(run);
	}
	ASSERT_OK(ward__journal_prune(&cfg, 0, NULL));
	ASSERT_OK(ward__journal_list(&cfg, &ids, &n, NULL));
	ASSERT_EQ(n, 3u);
	ASSERT_EQ(ids[0], 5u);
	ASSERT_EQ(ids[2], 3u);
	free(ids);
	{
		struct ward__changes_run *run = NULL;

		ASSERT_EQ(ward__journal_open(&cfg, "1", false, &run, NULL), -ENOENT);
		ASSERT_EQ(ward__journal_open(&cfg, "x", false, &run, NULL), -EINVAL);
		ASSERT_OK(ward__journal_open(&cfg, NULL, true, &run, NULL));
		ASSERT_EQ(run->id, 5u);
		ward__changes_run_free(run);
	}
	root = open("/var/tmp", O_PATH | O_DIRECTORY);
	ASSERT_OK(ward__fs_remove_at(root, dir + strlen("/var/tmp/")));
	close(root);
}

int main(void)
{
	return tap_main();
}
