/* SPDX-License-Identifier: MIT */
/*
 * Adding "always allow commands starting with ..." to a rules file.
 *
 * The line is the one Codex writes for an execpolicy amendment
 * (execpolicy/src/amend.rs): prefix_rule(pattern=["a", "b"], decision="allow"),
 * the tokens written as JSON strings (valid Starlark string literals). Codex
 * appends it under an advisory lock; ward writes the whole new file beside
 * the old one, parses it completely (so a file ward itself would refuse to
 * load is never produced), fsyncs it and renames it over the old one, under
 * a lock on the directory: a crash or a concurrent `ward policy allow` leaves
 * either the old file or the new one, never half of a line.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "rules/rules.h"

#define AMEND_LINE_MAX ((size_t)256 << 10)

static bool line_present(const char *text, size_t len, const char *line)
{
	size_t n = strlen(line);

	for (size_t i = 0; i < len;) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t l = nl ? (size_t)(nl - (text + i)) : len - i;

		if (l == n && memcmp(text + i, line, n) == 0)
			return true;
		i += l + 1;
	}
	return false;
}

static int format_line(const char *const *prefix, size_t n, char **ret)
{
	struct ward__buf b;
	int r;

	r = ward__buf_init(&b, AMEND_LINE_MAX);
	if (r < 0)
		return r;
	r = ward__buf_append_str(&b, "prefix_rule(pattern=[");
	for (size_t i = 0; r >= 0 && i < n; i++) {
		if (i)
			r = ward__buf_append_str(&b, ", ");
		if (r >= 0)
			r = ward__rules_json_string(&b, prefix[i]);
	}
	if (r >= 0)
		r = ward__buf_append_str(&b, "], decision=\"allow\")");
	if (r >= 0) {
		*ret = (char *)ward__buf_steal(&b, NULL);
		r = *ret ? 0 : -ENOMEM;
	}
	ward__buf_release(&b);
	return r;
}

static int append_line(const char *path, const char *line, struct ward_error *err);

int ward__rules_append_allow(const char *path, const char *const *prefix, size_t n,
			     struct ward_error *err)
{
	_cleanup_free_ char *line = NULL;
	const char *why = NULL;
	int r;

	if (n == 0)
		return ward__error(err, -EINVAL, "rules", "cannot add a rule: the prefix is empty");
	if (n > WARD_RULES_MAX_TOKENS)
		return ward__error(err, -E2BIG, "rules",
				   "cannot add a rule: the prefix has more than %d words",
				   WARD_RULES_MAX_TOKENS);
	if (ward__prefix_banned(prefix, n, &why) < 0) {
		_cleanup_free_ char *shown = ward__shell_join(prefix, n);

		return ward__error(err, -EPERM, "rules",
				   "cannot add a rule for '%s': %s (name a narrower prefix)",
				   shown ? shown : prefix[0], why);
	}
	r = format_line(prefix, n, &line);
	if (r < 0)
		return ward__error(err, r, "rules", "cannot add a rule: %m");
	return append_line(path, line, err);
}

int ward__rules_append_network(const char *path, const char *host, const char *protocol,
			       struct ward_error *err)
{
	_cleanup_free_ char *line = NULL;
	struct ward__buf b;
	int r;

	/* Codex's amendments name one host: never a wildcard (nor anything a rule would refuse). */
	if (!host || !*host || strpbrk(host, "*?[]/ \t\"\\"))
		return ward__error(err, -EPERM, "rules",
				   "cannot add a network rule for '%.200s': not one host",
				   host ? host : "");
	r = ward__buf_init(&b, 4096);
	if (r >= 0)
		r = ward__buf_printf(
			&b, "network_rule(host=\"%s\", protocol=\"%s\", decision=\"allow\")", host,
			protocol);
	if (r >= 0)
		line = (char *)ward__buf_steal(&b, NULL);
	ward__buf_release(&b);
	if (!line)
		return ward__error(err, -ENOMEM, "rules", "cannot add a rule: %m");
	return append_line(path, line, err);
}

static int append_line(const char *path, const char *line, struct ward_error *err)
{
	_cleanup_free_ char *target = NULL, *dir = NULL, *old = NULL, *text = NULL, *tmp = NULL,
			    *cwd = NULL, *home = NULL;
	_cleanup_close_ int dfd = -1, fd = -1;
	struct ward__rules check;
	struct ward__match_opts o = {.resolve_host_executables = true};
	const char *slash;
	size_t old_len = 0, len;
	mode_t mode = 0644;
	struct stat st;
	int r;

	/* Write where a symlinked rules file really is, keeping the link. */
	target = realpath(path, NULL);
	if (!target) {
		if (errno != ENOENT)
			return ward__error(err, -errno, "rules", "cannot add a rule to '%s': %m",
					   path);
		target = ward__path_absolute(path);
		if (!target)
			return ward__error(err, -errno, "rules", "cannot add a rule to '%s': %m",
					   path);
	}
	slash = strrchr(target, '/');
	dir = strndup(target, slash == target ? 1 : (size_t)(slash - target));
	if (!dir)
		return ward__error(err, -ENOMEM, "rules", "cannot add a rule: %m");
	r = ward__mkdir_parents(dir, 0755);
	if (r < 0)
		return ward__error(err, r, "rules", "cannot create rules directory '%s': %m", dir);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return ward__error(err, -errno, "rules", "cannot open rules directory '%s': %m",
				   dir);
	/* One writer at a time; the lock goes with the descriptor. */
	if (flock(dfd, LOCK_EX) < 0)
		return ward__error(err, -errno, "rules", "cannot lock rules directory '%s': %m",
				   dir);

	r = ward__read_regular_file(target, WARD_RULES_MAX_FILE, &old, &old_len);
	if (r == -ENOENT) {
		old_len = 0;
	} else if (r == -EFBIG) {
		return ward__error(err, r, "rules", "rules file '%s' is larger than %zu bytes",
				   target, WARD_RULES_MAX_FILE);
	} else if (r < 0) {
		return ward__error(err, r, "rules", "cannot read rules file '%s': %m", target);
	} else if (stat(target, &st) == 0) {
		mode = st.st_mode & 07777;
	}
	if (old && line_present(old, old_len, line))
		return 0;

	len = old_len + strlen(line) + 2;
	if (len > WARD_RULES_MAX_FILE)
		return ward__error(err, -E2BIG, "rules",
				   "cannot add a rule: '%s' would be larger than %zu bytes", target,
				   WARD_RULES_MAX_FILE);
	text = malloc(len + 1);
	if (!text)
		return ward__error(err, -ENOMEM, "rules", "cannot add a rule: %m");
	if (old_len)
		memcpy(text, old, old_len);
	len = old_len;
	if (old_len && text[old_len - 1] != '\n')
		text[len++] = '\n';
	memcpy(text + len, line, strlen(line));
	len += strlen(line);
	text[len++] = '\n';
	text[len] = '\0';

	/* The whole new file must load: examples included, nothing ward would refuse later. */
	cwd = getcwd(NULL, 0);
	(void)ward__home_dir(&home);
	o.cwd = cwd;
	o.home = home;
	ward__rules_init(&check);
	r = ward__rules_parse(&check, target, text, len, false, &o, err);
	ward__rules_release(&check);
	if (r < 0) {
		char msg[WARD_ERROR_MESSAGE_MAX];

		snprintf(msg, sizeof(msg), "%s", err ? err->message : "");
		return ward__error(err, r, "rules",
				   "cannot add a rule: the rules file does not load: %s", msg);
	}

	r = asprintf(&tmp, "%s/.%s.XXXXXX", dir, slash + 1);
	if (r < 0) {
		tmp = NULL;
		return ward__error(err, -ENOMEM, "rules", "cannot add a rule: %m");
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		free(tmp);
		tmp = NULL;
		return ward__error(err, r, "rules", "cannot create a file in '%s': %m", dir);
	}
	r = fchmod(fd, mode) < 0 ? -errno : 0;
	if (r >= 0)
		r = ward__write_all(fd, text, len);
	if (r >= 0 && fsync(fd) < 0)
		r = -errno;
	if (r >= 0 && rename(tmp, target) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return ward__error(err, r, "rules", "cannot write rules file '%s': %m", target);
	}
	/* The rename itself must survive a crash too. */
	(void)fsync(dfd);
	return 1;
}
