/* SPDX-License-Identifier: MIT */
/*
 * Where rules files live, and reading them.
 *
 * Sources, lowest precedence first (as Codex orders its config layers):
 * Codex's $CODEX_HOME/rules when asked for, ward's own rules directory in the
 * user's configuration directory, the project's .ward/rules directories from
 * the project root down to the working directory, then each --rules FILE.
 * Decisions do not depend on the order (the strictest match wins); the order
 * is the order of "matchedRules".
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "rules/rules.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir)

int ward__rules_load_file(struct ward__rules *r, const char *path, bool project,
			  const struct ward__match_opts *opts, struct ward_error *err)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int ret;

	ret = ward__read_regular_file(path, WARD_RULES_MAX_FILE, &text, &len);
	if (ret == -EFBIG)
		return ward__error(err, ret, "rules", "rules file '%s' is larger than %zu bytes",
				   path, WARD_RULES_MAX_FILE);
	if (ret == -EINVAL)
		return ward__error(err, ret, "rules", "rules file '%s' is not a regular file",
				   path);
	if (ret < 0)
		return ward__error(err, ret, "rules", "cannot read rules file '%s': %m", path);
	return ward__rules_parse(r, path, text, len, project, opts, err);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int ward__rules_load_dir(struct ward__rules *r, const char *dir, bool project,
			 const struct ward__match_opts *opts, struct ward_error *err)
{
	_cleanup_(closedirp) DIR *d = NULL;
	char **names = NULL;
	size_t n = 0, alloc = 0;
	struct dirent *de;
	int ret = 0;

	d = opendir(dir);
	if (!d) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return ward__error(err, -errno, "rules", "cannot read rules directory '%s': %m",
				   dir);
	}
	while ((errno = 0, de = readdir(d))) {
		size_t len = strlen(de->d_name);
		struct stat st;

		/* "*.rules", not ".rules" itself (Rust's Path::extension has none for a dotfile). */
		if (len <= 6 || strcmp(de->d_name + len - 6, ".rules") != 0)
			continue;
		/* Regular files only, not through symlinks (DirEntry::file_type, as Codex). */
		if (de->d_type == DT_UNKNOWN) {
			if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    !S_ISREG(st.st_mode))
				continue;
		} else if (de->d_type != DT_REG) {
			continue;
		}
		if (n >= WARD_RULES_MAX_FILES) {
			ret = ward__error(err, -E2BIG, "rules",
					  "rules directory '%s' has more than %d rules files", dir,
					  WARD_RULES_MAX_FILES);
			goto out;
		}
		if (n == alloc) {
			char **p;

			alloc = alloc ? alloc * 2 : 8;
			p = reallocarray(names, alloc, sizeof(char *));
			if (!p) {
				ret = -ENOMEM;
				goto out;
			}
			names = p;
		}
		names[n] = ward__path_join(dir, de->d_name);
		if (!names[n]) {
			ret = -ENOMEM;
			goto out;
		}
		n++;
	}
	if (errno) {
		ret = ward__error(err, -errno, "rules", "cannot read rules directory '%s': %m",
				  dir);
		goto out;
	}
	if (n > 1)
		qsort(names, n, sizeof(char *), cmp_names);
	for (size_t i = 0; i < n && ret >= 0; i++)
		ret = ward__rules_load_file(r, names[i], project, opts, err);
out:
	if (ret == -ENOMEM)
		ward__error(err, ret, "rules", "cannot read rules directory '%s': %m", dir);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return ret;
}

int ward__rules_user_dir(char **ret_dir)
{
	const char *x = getenv("XDG_CONFIG_HOME");
	_cleanup_free_ char *home = NULL;
	char *d;
	int r;

	/* The XDG spec: a relative value is invalid and ignored. */
	if (x && x[0] == '/') {
		d = ward__path_join(x, "ward/rules");
	} else {
		r = ward__home_dir(&home);
		if (r < 0)
			return r;
		d = ward__path_join(home, ".config/ward/rules");
	}
	if (!d)
		return -ENOMEM;
	*ret_dir = d;
	return 0;
}

int ward__rules_codex_dir(char **ret_dir)
{
	const char *x = getenv("CODEX_HOME");
	_cleanup_free_ char *home = NULL;
	char *d;
	int r;

	if (x && x[0]) {
		d = ward__path_join(x, "rules");
	} else {
		r = ward__home_dir(&home);
		if (r < 0)
			return r;
		d = ward__path_join(home, ".codex/rules");
	}
	if (!d)
		return -ENOMEM;
	*ret_dir = d;
	return 0;
}

static bool exists(const char *dir, const char *rel, bool want_dir)
{
	_cleanup_free_ char *p = ward__path_join(dir, rel);
	struct stat st;

	if (!p || stat(p, &st) < 0)
		return false;
	return !want_dir || S_ISDIR(st.st_mode);
}

int ward__rules_project_dirs(const char *cwd, char ***ret_dirs)
{
	_cleanup_free_ char *abs = ward__path_absolute(cwd);
	char **dirs = NULL;
	size_t n = 0, depth = 0, root_len;
	bool found_root = false;

	if (!abs)
		return -errno;
	/* The project root: the nearest ancestor (or cwd itself) holding .git. */
	root_len = strlen(abs);
	for (size_t len = strlen(abs);;) {
		char save = abs[len];

		abs[len] = '\0';
		if (exists(len ? abs : "/", ".git", false)) {
			root_len = len;
			found_root = true;
		}
		abs[len] = save;
		if (found_root || len == 0 || depth++ > 4096)
			break;
		while (len > 0 && abs[len - 1] != '/')
			len--;
		if (len > 0)
			len--; /* the slash */
	}
	if (!found_root)
		root_len = strlen(abs);
	dirs = calloc(ward__path_depth(abs) + 3, sizeof(char *));
	if (!dirs)
		return -ENOMEM;
	/* From the root down to cwd: each component boundary after root_len. */
	for (size_t len = root_len;;) {
		char save = abs[len];
		const char *d;

		abs[len] = '\0';
		d = len ? abs : "/";
		if (exists(d, ".ward/rules", true)) {
			dirs[n] = ward__path_join(d, ".ward/rules");
			if (!dirs[n]) {
				abs[len] = save;
				strv_freep(&dirs);
				return -ENOMEM;
			}
			n++;
		}
		abs[len] = save;
		if (!abs[len])
			break;
		len++;
		while (abs[len] && abs[len] != '/')
			len++;
	}
	*ret_dirs = dirs;
	return 0;
}
