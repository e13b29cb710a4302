/* SPDX-License-Identifier: MIT */
/*
 * A run's record (record.h): its text form and the names of its states.
 *
 * DESIGN: text, one line per item, rather than JSON: paths are bytes, not
 * necessarily UTF-8, and an escaped byte string reads back exactly; a line
 * format also stays greppable for a person looking at the journal. The
 * record is always written whole (journal.c writes a temporary file and
 * renames it), and its last line is a SHA-256 of the rest: a record cut by
 * a full disk or damaged later is refused as a whole ("damaged or
 * incomplete"), never acted on in part.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/cleanup.h"
#include "basic/util.h"
#include "changes/record.h"
#include "changes/sha256.h"

static const char *const run_states[] = {
	[WARD_RS_RUNNING] = "running",	   [WARD_RS_HELD] = "held",
	[WARD_RS_APPLYING] = "applying",   [WARD_RS_APPLIED] = "applied",
	[WARD_RS_DISCARDED] = "discarded", [WARD_RS_UNDOING] = "undoing",
	[WARD_RS_UNDONE] = "undone",
};

static const char *const change_states[] = {
	[WARD_CS_PENDING] = "pending",	   [WARD_CS_APPLIED] = "applied",
	[WARD_CS_CONFLICT] = "conflict",   [WARD_CS_REFUSED] = "refused",
	[WARD_CS_DISCARDED] = "discarded", [WARD_CS_UNDONE] = "undone",
	[WARD_CS_KEPT_HOST] = "kept-host",
};

static const char *const kinds[] = {
	[WARD_CHANGE_ADD] = "add",	 [WARD_CHANGE_REPLACE] = "replace",
	[WARD_CHANGE_DELETE] = "delete", [WARD_CHANGE_DIRMODE] = "dirmode",
	[WARD_CHANGE_MEMBER] = "member",
};

static const char *const unkept_reasons[] = {
	[WARD_UNKEPT_NONE] = "",
	[WARD_UNKEPT_FILE_BOUND] = "larger than the journal's bound for one file",
	[WARD_UNKEPT_RUN_BOUND] = "past the journal's bound for one run",
	[WARD_UNKEPT_IGNORED] = "in an ignored or generated tree (kept by name and size only)",
	[WARD_UNKEPT_PRUNED] = "dropped to keep the journal within its bound",
};

static const char *name_of(const char *const *t, size_t n, int v)
{
	return v >= 0 && (size_t)v < n && t[v] ? t[v] : "?";
}

static int value_of(const char *const *t, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (t[i] && strcmp(t[i], s) == 0)
			return (int)i;
	return -1;
}

const char *ward__run_state_name(enum ward__run_state s)
{
	return name_of(run_states, ELEMENTSOF(run_states), (int)s);
}

const char *ward__change_state_name(enum ward__change_state s)
{
	return name_of(change_states, ELEMENTSOF(change_states), (int)s);
}

const char *ward__unkept_reason(enum ward__unkept u)
{
	return name_of(unkept_reasons, ELEMENTSOF(unkept_reasons), (int)u);
}

/* ------------------------------------------------------------------ a run in memory */

int ward__changes_run_note(struct ward__changes_run *run, const char *fmt, ...)
{
	char **v;
	char *s;
	va_list ap;
	int r;

	if (run->n_notes >= 64)
		return 0;
	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	for (size_t i = 0; i < run->n_notes; i++)
		if (strcmp(run->notes[i], s) == 0) {
			free(s);
			return 0;
		}
	v = realloc(run->notes, (run->n_notes + 1) * sizeof(*v));
	if (!v) {
		free(s);
		return -ENOMEM;
	}
	run->notes = v;
	v[run->n_notes++] = s;
	return 0;
}

int ward__changes_run_add(struct ward__changes_run *run, const struct ward__change *c)
{
	struct ward__change *e;

	if (run->n >= WARD_CHANGES_MAX_ENTRIES)
		return -E2BIG;
	/* Capacity is implicit: 16, then doubled at every power of two. */
	if (run->n == 0 || (run->n >= 16 && (run->n & (run->n - 1)) == 0)) {
		e = realloc(run->v, (run->n == 0 ? 16 : run->n * 2) * sizeof(*e));
		if (!e)
			return -ENOMEM;
		run->v = e;
	}
	e = &run->v[run->n];
	*e = *c;
	e->path = strdup(c->path);
	e->refused = c->refused ? strdup(c->refused) : NULL;
	if (!e->path || (c->refused && !e->refused)) {
		free(e->path);
		free(e->refused);
		return -ENOMEM;
	}
	run->n++;
	return 0;
}

/* ------------------------------------------------------------------ writing */

static int put_esc(struct ward__buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	int r = 0;

	if (!s || !*s)
		return ward__buf_append_byte(b, '%');
	for (const unsigned char *p = (const unsigned char *)s; *p && r >= 0; p++) {
		if (*p > ' ' && *p < 0x7f && *p != '%') {
			r = ward__buf_append_byte(b, *p);
			continue;
		}
		char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};

		r = ward__buf_append(b, e, 3);
	}
	return r;
}

static char type_char(char t)
{
	return t ? t : '-';
}

static int put_change(struct ward__buf *b, const struct ward__change *c)
{
	int r;

	r = ward__buf_printf(b,
			     "c %u %s %s %x %c %c %o %o %" PRIu64 " %" PRIu64 " %" PRIu64
			     " %" PRIu64 " %" PRId64 " %" PRId64 " %d ",
			     c->root, name_of(kinds, ELEMENTSOF(kinds), (int)c->kind),
			     ward__change_state_name(c->state), c->flags, type_char(c->old_type),
			     type_char(c->new_type), c->old_mode, c->new_mode, c->old_size,
			     c->new_size, c->old_files, c->new_files, c->new_mtime_ns,
			     c->renamed_from, (int)c->unkept);
	if (r >= 0)
		r = put_esc(b, c->refused);
	if (r >= 0)
		r = ward__buf_printf(
			b, " %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64 " ",
			c->sum[0] ? c->sum : "-", c->new_ino, c->old_ino, c->after_ino,
			c->after_size, c->after_ctime_ns);
	if (r >= 0)
		r = put_esc(b, c->path);
	if (r >= 0)
		r = ward__buf_append_byte(b, '\n');
	return r;
}

int ward__record_write(const struct ward__changes_run *run, struct ward__buf *b)
{
	struct ward__sha256 s;
	char sum[65];
	int r;

	r = ward__buf_printf(b,
			     "ward-changes %d\nid %" PRIu64 "\nmode %s\nstate %s\ncommit %d\n"
			     "started %" PRId64 "\nended %" PRId64 "\nexit %d\ndropped %zu\ncwd ",
			     WARD_RECORD_VERSION, run->id,
			     run->mode == WARD_RUN_HOLD ? "hold" : "record",
			     ward__run_state_name(run->state), run->commit_pending ? 1 : 0,
			     run->started_ns, run->ended_ns, run->exit_code, run->members_dropped);
	if (r >= 0)
		r = put_esc(b, run->cwd);
	if (r >= 0)
		r = ward__buf_append_str(b, "\ncommand ");
	if (r >= 0)
		r = put_esc(b, run->command);
	if (r >= 0)
		r = ward__buf_append_byte(b, '\n');
	for (size_t i = 0; r >= 0 && i < run->n_notes; i++) {
		r = ward__buf_append_str(b, "note ");
		if (r >= 0)
			r = put_esc(b, run->notes[i]);
		if (r >= 0)
			r = ward__buf_append_byte(b, '\n');
	}
	for (size_t i = 0; r >= 0 && i < run->n_roots; i++) {
		const struct ward__changes_root *rt = &run->roots[i];

		r = ward__buf_append_str(b, "root ");
		if (r >= 0)
			r = put_esc(b, rt->path);
		if (r >= 0)
			r = ward__buf_printf(b, " %" PRIu64 " %" PRIu64 " %d %zu", rt->dev, rt->ino,
					     rt->layered ? 1 : 0, rt->n_submounts);
		for (size_t k = 0; r >= 0 && k < rt->n_submounts; k++) {
			r = ward__buf_append_byte(b, ' ');
			if (r >= 0)
				r = put_esc(b, rt->submounts[k]);
		}
		if (r >= 0)
			r = ward__buf_append_byte(b, '\n');
	}
	for (size_t i = 0; r >= 0 && i < run->n; i++)
		r = put_change(b, &run->v[i]);
	if (r < 0)
		return r;
	ward__sha256_init(&s);
	ward__sha256_update(&s, b->data, b->len);
	ward__sha256_hex(&s, sum);
	return ward__buf_printf(b, "sum %s\n", sum);
}

/* ------------------------------------------------------------------ reading */

/* Decodes an escaped token in place; false for a malformed escape. */
static bool unesc(char *s)
{
	char *o = s;

	if (strcmp(s, "%") == 0) {
		*s = '\0';
		return true;
	}
	for (char *p = s; *p; p++) {
		if (*p != '%') {
			*o++ = *p;
			continue;
		}
		int h = ward__hexval(p[1]), l = h >= 0 ? ward__hexval(p[2]) : -1;

		if (h < 0 || l < 0 || (h == 0 && l == 0))
			return false;
		*o++ = (char)(h << 4 | l);
		p += 2;
	}
	*o = '\0';
	return true;
}

static int tokens(char *line, char **tok, int max)
{
	int n = 0;

	for (char *p = line; *p && n < max;) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		tok[n++] = p;
		while (*p && *p != ' ')
			p++;
		if (*p)
			*p++ = '\0';
	}
	return n;
}

static bool num_u64(const char *s, uint64_t *ret)
{
	return ward__parse_u64(s, ret) >= 0;
}

static bool num_i64(const char *s, int64_t *ret)
{
	uint64_t v;
	bool neg = s[0] == '-';

	if (!num_u64(neg ? s + 1 : s, &v) || v > INT64_MAX)
		return false;
	*ret = neg ? -(int64_t)v : (int64_t)v;
	return true;
}

static bool num_oct(const char *s, uint32_t *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 8);
	if (errno || *end || end == s || v > 0177777)
		return false;
	*ret = (uint32_t)v;
	return true;
}

static bool type_ok(const char *s, char *ret)
{
	static const char ok[] = "-fdlpso";

	if (strlen(s) != 1 || !strchr(ok, s[0]))
		return false;
	*ret = s[0] == '-' ? WARD_FT_NONE : s[0];
	return true;
}

static int read_change(struct ward__changes_run *run, char **t, int n)
{
	struct ward__change c = {0};
	uint64_t v;
	int64_t from, k;
	int r;

	if (n != 24)
		return -EBADMSG;
	if (!num_u64(t[1], &v) || v >= run->n_roots)
		return -EBADMSG;
	c.root = (unsigned)v;
	k = value_of(kinds, ELEMENTSOF(kinds), t[2]);
	r = value_of(change_states, ELEMENTSOF(change_states), t[3]);
	if (k <= 0 || r <= 0)
		return -EBADMSG;
	c.kind = (enum ward__change_kind)k;
	c.state = (enum ward__change_state)r;
	{
		char *end;
		unsigned long f;

		errno = 0;
		f = strtoul(t[4], &end, 16);
		if (errno || *end || f > 0xffff)
			return -EBADMSG;
		c.flags = (unsigned)f;
	}
	if (!type_ok(t[5], &c.old_type) || !type_ok(t[6], &c.new_type) ||
	    !num_oct(t[7], &c.old_mode) || !num_oct(t[8], &c.new_mode) ||
	    !num_u64(t[9], &c.old_size) || !num_u64(t[10], &c.new_size) ||
	    !num_u64(t[11], &c.old_files) || !num_u64(t[12], &c.new_files) ||
	    !num_i64(t[13], &c.new_mtime_ns) || !num_i64(t[14], &from) || !num_u64(t[15], &v) ||
	    v >= ELEMENTSOF(unkept_reasons))
		return -EBADMSG;
	c.renamed_from = from;
	c.unkept = (enum ward__unkept)v;
	if (!unesc(t[16]))
		return -EBADMSG;
	if (strcmp(t[17], "-") != 0) {
		if (strlen(t[17]) != 64)
			return -EBADMSG;
		memcpy(c.sum, t[17], 65);
	}
	if (!num_u64(t[18], &c.new_ino) || !num_u64(t[19], &c.old_ino) ||
	    !num_u64(t[20], &c.after_ino) || !num_u64(t[21], &c.after_size) ||
	    !num_i64(t[22], &c.after_ctime_ns) || !unesc(t[23]))
		return -EBADMSG;
	/* A path from the record is used beneath a root: nothing that could climb out of it. */
	if (!t[23][0] || t[23][0] == '/' || strstr(t[23], "//") || t[23][strlen(t[23]) - 1] == '/')
		return -EBADMSG;
	for (const char *p = t[23]; p;) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
			return -EBADMSG;
		p = e ? e + 1 : NULL;
	}
	c.path = t[23];
	c.refused = t[16][0] ? t[16] : NULL;
	if (c.renamed_from < -1 || c.renamed_from >= (int64_t)run->n)
		return -EBADMSG;
	return ward__changes_run_add(run, &c);
}

static int read_root(struct ward__changes_run *run, char **t, int n)
{
	struct ward__changes_root *v, *rt;
	uint64_t layered, nsub;

	if (n < 6 || !unesc(t[1]) || t[1][0] != '/' || !num_u64(t[4], &layered) ||
	    !num_u64(t[5], &nsub) || nsub > WARD_LAYER_MAX_SUBMOUNTS || (uint64_t)n != 6 + nsub ||
	    run->n_roots >= WARD_POLICY_MAX_PATHS + 4)
		return -EBADMSG;
	v = realloc(run->roots, (run->n_roots + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	run->roots = v;
	rt = &v[run->n_roots];
	*rt = (struct ward__changes_root){.layered = layered != 0};
	if (!num_u64(t[2], &rt->dev) || !num_u64(t[3], &rt->ino))
		return -EBADMSG;
	rt->path = strdup(t[1]);
	if (!rt->path)
		return -ENOMEM;
	run->n_roots++;
	if (nsub) {
		rt->submounts = calloc(nsub, sizeof(char *));
		if (!rt->submounts)
			return -ENOMEM;
	}
	for (uint64_t k = 0; k < nsub; k++) {
		if (!unesc(t[6 + k]) || t[6 + k][0] != '/')
			return -EBADMSG;
		rt->submounts[k] = strdup(t[6 + k]);
		if (!rt->submounts[k])
			return -ENOMEM;
		rt->n_submounts++;
	}
	return 0;
}

static int read_line(struct ward__changes_run *run, char *line, unsigned *seen)
{
	char *t[6 + WARD_LAYER_MAX_SUBMOUNTS + 24];
	int n = tokens(line, t, (int)ELEMENTSOF(t)), v;
	uint64_t u;
	int64_t i;

	if (n < 2)
		return -EBADMSG;
	if (strcmp(t[0], "c") == 0)
		return read_change(run, t, n);
	if (strcmp(t[0], "root") == 0)
		return read_root(run, t, n);
	if (strcmp(t[0], "note") == 0)
		return n == 2 && unesc(t[1]) ? ward__changes_run_note(run, "%s", t[1]) : -EBADMSG;
	if (n != 2)
		return -EBADMSG;
	if (strcmp(t[0], "id") == 0 && num_u64(t[1], &u) && u > 0)
		run->id = u, *seen |= 1;
	else if (strcmp(t[0], "mode") == 0 &&
		 (strcmp(t[1], "hold") == 0 || strcmp(t[1], "record") == 0))
		run->mode = t[1][0] == 'h' ? WARD_RUN_HOLD : WARD_RUN_RECORD, *seen |= 2;
	else if (strcmp(t[0], "state") == 0 &&
		 (v = value_of(run_states, ELEMENTSOF(run_states), t[1])) > 0)
		run->state = (enum ward__run_state)v, *seen |= 4;
	else if (strcmp(t[0], "commit") == 0 && num_u64(t[1], &u) && u <= 1)
		run->commit_pending = u == 1;
	else if (strcmp(t[0], "started") == 0 && num_i64(t[1], &i))
		run->started_ns = i, *seen |= 8;
	else if (strcmp(t[0], "ended") == 0 && num_i64(t[1], &i))
		run->ended_ns = i;
	else if (strcmp(t[0], "exit") == 0 && num_i64(t[1], &i) && i >= -1 && i < 1000)
		run->exit_code = (int)i;
	else if (strcmp(t[0], "dropped") == 0 && num_u64(t[1], &u))
		run->members_dropped = (size_t)u;
	else if (strcmp(t[0], "cwd") == 0 && unesc(t[1]) && !run->cwd)
		return (run->cwd = strdup(t[1])) ? 0 : -ENOMEM;
	else if (strcmp(t[0], "command") == 0 && unesc(t[1]) && !run->command)
		return (run->command = strdup(t[1])) ? 0 : -ENOMEM;
	else
		return -EBADMSG;
	return 0;
}

int ward__record_read(struct ward__changes_run *run, const char *data, size_t len, char *why,
		      size_t why_size)
{
	_cleanup_free_ char *copy = NULL;
	const char *last, *body_end;
	struct ward__sha256 s;
	char sum[65];
	unsigned seen = 0, lineno = 1;
	char *p;
	int r;

	if (len < 20 || data[len - 1] != '\n') {
		snprintf(why, why_size, "incomplete (no end)");
		return -EBADMSG;
	}
	/* The last line is the checksum of everything before it. */
	for (last = data + len - 1; last > data && last[-1] != '\n'; last--)
		;
	body_end = last;
	if ((size_t)(data + len - last) != 4 + 64 + 1 || strncmp(last, "sum ", 4) != 0) {
		snprintf(why, why_size, "incomplete (no checksum)");
		return -EBADMSG;
	}
	ward__sha256_init(&s);
	ward__sha256_update(&s, data, (size_t)(body_end - data));
	ward__sha256_hex(&s, sum);
	if (memcmp(sum, last + 4, 64) != 0) {
		snprintf(why, why_size, "damaged (checksum mismatch)");
		return -EBADMSG;
	}
	if (memchr(data, '\0', (size_t)(body_end - data))) {
		snprintf(why, why_size, "damaged (a NUL byte)");
		return -EBADMSG;
	}
	copy = strndup(data, (size_t)(body_end - data));
	if (!copy)
		return -ENOMEM;
	p = copy;
	{
		char *nl = strchr(p, '\n');

		if (!nl) {
			snprintf(why, why_size, "incomplete (no header)");
			return -EBADMSG;
		}
		*nl = '\0';
		if (strcmp(p, "ward-changes 1") != 0) {
			snprintf(why, why_size, "an unknown format ('%.40s')", p);
			return -EBADMSG;
		}
		p = nl + 1;
	}
	while (*p) {
		char *nl = strchr(p, '\n');

		lineno++;
		if (!nl) {
			snprintf(why, why_size, "incomplete (line %u)", lineno);
			return -EBADMSG;
		}
		*nl = '\0';
		r = read_line(run, p, &seen);
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			snprintf(why, why_size, "damaged (line %u)", lineno);
			return -EBADMSG;
		}
		p = nl + 1;
	}
	if (seen != 15) {
		snprintf(why, why_size, "incomplete (a required line is missing)");
		return -EBADMSG;
	}
	return 0;
}
