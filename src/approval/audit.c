/* SPDX-License-Identifier: MIT */
/*
 * The audit log: every approval decision and every run outside the sandbox,
 * and every command a server (ward serve, ward mcp) starts for a client, with
 * the client's thread and tool call when it names them; one JSON object per line, in $XDG_STATE_HOME/ward/audit.jsonl (default
 * ~/.local/state/ward/audit.jsonl). `ward audit` shows it.
 *
 * Several ward processes may write at once. Each line goes out in one
 * write(2) on an O_APPEND descriptor, so lines never interleave; the log is
 * rotated (renamed to audit.jsonl.1, replacing the previous one) once it
 * passes WARD_AUDIT_MAX. Writers hold a shared flock on "<log>.lock" while
 * they open and write, the rotating writer an exclusive one while it renames:
 * a line is never written to a file that has just been renamed away twice,
 * so rotation loses no line (only the file it replaces).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "approval/approval.h"
#include "basic/buf.h"
#include "basic/cleanup.h"
#include "basic/util.h"

/* The limits of the compact form a record falls back to when it would be too long. */
#define COMPACT_ARGS 16
#define COMPACT_ARG_BYTES 64
#define COMPACT_TEXT_BYTES 512

static int kv_string(struct ward__buf *b, const char *key, const char *value, size_t max)
{
	size_t n = strlen(value);
	int r = ward__buf_printf(b, ",\"%s\":", key);

	if (r >= 0)
		r = ward__json_append_string(b, value, MIN(n, max));
	return r;
}

static int format(struct ward__buf *b, const struct ward__audit_record *rec, bool compact)
{
	struct timespec ts;
	struct tm tm;
	char when[64];
	size_t argc = compact ? MIN(rec->argc, (size_t)COMPACT_ARGS) : rec->argc;
	size_t arg_max = compact ? COMPACT_ARG_BYTES : SIZE_MAX;
	size_t text_max = compact ? COMPACT_TEXT_BYTES : SIZE_MAX;
	int r;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	r = ward__buf_printf(b, "{\"time\":\"%s.%03ldZ\",\"pid\":%ld,\"uid\":%lu,\"event\":\"%s\"",
			     when, ts.tv_nsec / 1000000, (long)getpid(), (unsigned long)getuid(),
			     rec->event);
	if (r >= 0)
		r = ward__buf_append_str(b, ",\"command\":[");
	for (size_t i = 0; r >= 0 && i < argc; i++) {
		if (i)
			r = ward__buf_append_byte(b, ',');
		if (r >= 0)
			r = ward__json_append_string(b, rec->argv[i],
						     MIN(strlen(rec->argv[i]), arg_max));
	}
	if (r >= 0)
		r = ward__buf_append_byte(b, ']');
	if (r >= 0)
		r = kv_string(b, "cwd", rec->cwd ? rec->cwd : "", text_max);
	if (r >= 0 && rec->mode)
		r = kv_string(b, "mode", rec->mode, text_max);
	if (r >= 0 && rec->decision)
		r = kv_string(b, "decision", rec->decision, text_max);
	if (r >= 0 && rec->source)
		r = kv_string(b, "source", rec->source, text_max);
	if (r >= 0 && rec->sandbox)
		r = kv_string(b, "sandbox", rec->sandbox, text_max);
	if (r >= 0 && rec->client)
		r = kv_string(b, "client", rec->client, text_max);
	if (r >= 0 && rec->process)
		r = kv_string(b, "process", rec->process, text_max);
	if (r >= 0 && rec->thread)
		r = kv_string(b, "thread", rec->thread, text_max);
	if (r >= 0 && rec->tool_call)
		r = kv_string(b, "tool_call", rec->tool_call, text_max);
	if (r >= 0)
		r = ward__buf_printf(b, ",\"sandboxed\":%s", rec->sandboxed ? "true" : "false");
	if (r >= 0 && rec->have_exit_code)
		r = ward__buf_printf(b, ",\"exit_code\":%d", rec->exit_code);
	else if (r >= 0 && !rec->no_exit_code)
		r = ward__buf_append_str(b, ",\"exit_code\":null");
	if (r >= 0 && rec->reason)
		r = kv_string(b, "reason", rec->reason, text_max);
	if (r >= 0 && rec->net) {
		const struct ward_net_event *ev = rec->net;

		r = ward__buf_append_str(b, ",\"network\":{\"host\":");
		if (r >= 0)
			r = ward__json_append_string(b, ev->target->host, strlen(ev->target->host));
		if (r >= 0)
			r = ward__buf_printf(b, ",\"port\":%u,\"protocol\":\"%s\"",
					     ev->target->port,
					     ward__net_protocol_name(ev->target->protocol));
		if (r >= 0 && ev->address)
			r = kv_string(b, "address", ev->address, text_max);
		if (r >= 0)
			r = ward__buf_printf(b, ",\"bytes_out\":%llu,\"bytes_in\":%llu}",
					     (unsigned long long)ev->bytes_out,
					     (unsigned long long)ev->bytes_in);
	}
	if (r >= 0 && compact)
		r = ward__buf_append_str(b, ",\"truncated\":true");
	if (r >= 0)
		r = ward__buf_append_byte(b, '}');
	return r;
}

int ward__audit_format(const struct ward__audit_record *rec, char **ret_line)
{
	struct ward__buf b;
	int r;

	for (int compact = 0; compact < 2; compact++) {
		r = ward__buf_init(&b, WARD_AUDIT_RECORD_MAX - 1);
		if (r < 0)
			return r;
		r = format(&b, rec, compact);
		if (r >= 0) {
			*ret_line = (char *)ward__buf_steal(&b, NULL);
			ward__buf_release(&b);
			return *ret_line ? 0 : -ENOMEM;
		}
		ward__buf_release(&b);
		if (r != -ENOBUFS)
			return r;
	}
	return -E2BIG;
}

int ward__audit_append(const char *path, const struct ward__audit_record *rec)
{
	_cleanup_free_ char *line = NULL, *dir = NULL, *lock = NULL, *old = NULL;
	_cleanup_close_ int lfd = -1, fd = -1;
	const char *slash = strrchr(path, '/');
	struct stat st;
	size_t len;
	ssize_t n;
	int r;

	if (!slash || path[0] != '/')
		return -EINVAL;
	r = ward__audit_format(rec, &line);
	if (r < 0)
		return r;
	len = strlen(line);
	line[len++] = '\n'; /* the buffer had room: its capacity is one byte over the record */
	dir = strndup(path, slash == path ? 1 : (size_t)(slash - path));
	if (!dir || asprintf(&lock, "%s.lock", path) < 0 || asprintf(&old, "%s.1", path) < 0) {
		lock = old = NULL;
		return -ENOMEM;
	}
	r = ward__mkdir_parents(dir, 0700);
	if (r < 0)
		return r;
	lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (lfd < 0)
		return -errno;
	if (flock(lfd, LOCK_SH) < 0)
		return -errno;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (fd < 0)
		return -errno;
	/* One write: with O_APPEND the kernel places it whole at the end, whoever else writes. */
	n = write(fd, line, len);
	if (n < 0)
		return -errno;
	if ((size_t)n != len)
		return -EIO;
	if (fstat(fd, &st) < 0)
		return -errno;
	if ((size_t)st.st_size < WARD_AUDIT_MAX)
		return 0;
	/* Rotate: exclusively, and only if nobody did it while we waited for the lock. */
	if (flock(lfd, LOCK_EX) < 0)
		return -errno;
	if (stat(path, &st) == 0 && (size_t)st.st_size >= WARD_AUDIT_MAX && rename(path, old) < 0)
		return -errno;
	return 0;
}

int ward__audit_default_path(char **ret_path)
{
	const char *x = getenv("XDG_STATE_HOME");
	_cleanup_free_ char *home = NULL;
	char *p;
	int r;

	if (x && x[0] == '/') {
		p = ward__path_join(x, "ward/audit.jsonl");
	} else {
		r = ward__home_dir(&home);
		if (r < 0)
			return r;
		p = ward__path_join(home, ".local/state/ward/audit.jsonl");
	}
	if (!p)
		return -ENOMEM;
	*ret_path = p;
	return 0;
}
