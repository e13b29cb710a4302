/* SPDX-License-Identifier: MIT */
/*
 * The forms of a run a person or a client reads (changes.h): the summary
 * printed at the end of a held run and by `ward changes`, and the JSON of
 * docs/json.md ("changes") that `ward run --json`, the MCP tools and the
 * ward/changes methods of ward serve return.
 */
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "changes/changes.h"
#include "exec/exec.h"

/* A JSON string of bytes that may not be UTF-8 (a path): invalid sequences become U+FFFD. */
static json_t *lossy(const char *s)
{
	return s ? ward__json_string_lossy(s, strlen(s)) : json_null();
}

struct counts {
	size_t added, modified, deleted, renamed, mode, touched, refused, conflicts, unkept;
};

static bool is_rename_source(const struct ward__changes_run *run, size_t i)
{
	for (size_t k = 0; k < run->n; k++)
		if (run->v[k].renamed_from == (int64_t)i)
			return true;
	return false;
}

const char *ward__change_word(const struct ward__changes_run *run, const struct ward__change *c)
{
	switch (c->kind) {
	case WARD_CHANGE_ADD:
		return c->renamed_from >= 0 ? "renamed" : "added";
	case WARD_CHANGE_DELETE:
		return "deleted";
	case WARD_CHANGE_DIRMODE:
		return "mode";
	case WARD_CHANGE_MEMBER:
		return (c->flags & WARD_CF_MEMBER_OF_DEL) ? "deleted" : "added";
	case WARD_CHANGE_REPLACE:
		if (c->flags & WARD_CF_TYPE)
			return "type";
		if (c->flags & WARD_CF_CONTENT)
			return "modified";
		if (c->flags & WARD_CF_MODE)
			return "mode";
		if (c->flags & WARD_CF_LINKS)
			return "linked";
		return "touched";
	}
	(void)run;
	return "changed";
}

static bool cannot_undo(const struct ward__change *c)
{
	return c->state == WARD_CS_APPLIED && c->unkept != WARD_UNKEPT_NONE &&
		(c->kind == WARD_CHANGE_REPLACE || c->kind == WARD_CHANGE_DELETE);
}

static struct counts count(const struct ward__changes_run *run)
{
	struct counts n = {0};

	for (size_t i = 0; i < run->n; i++) {
		const struct ward__change *c = &run->v[i];
		const char *w = ward__change_word(run, c);

		if (c->kind == WARD_CHANGE_MEMBER)
			continue;
		if (c->state == WARD_CS_REFUSED)
			n.refused++;
		if (c->state == WARD_CS_CONFLICT)
			n.conflicts++;
		if (cannot_undo(c))
			n.unkept++;
		if (c->kind == WARD_CHANGE_DELETE && is_rename_source(run, i))
			continue;
		if (strcmp(w, "added") == 0)
			n.added++;
		else if (strcmp(w, "deleted") == 0)
			n.deleted++;
		else if (strcmp(w, "renamed") == 0)
			n.renamed++;
		else if (strcmp(w, "mode") == 0)
			n.mode++;
		else if (strcmp(w, "touched") == 0 || strcmp(w, "linked") == 0)
			n.touched++;
		else
			n.modified++;
	}
	return n;
}

static void human(uint64_t b, char *out, size_t size)
{
	static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	size_t i = 0;

	while (v >= 1024 && i + 1 < ELEMENTSOF(u)) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(out, size, "%" PRIu64 " B", b);
	else
		snprintf(out, size, "%.1f %s", v, u[i]);
}

/* The path as a person reads it: relative to the run's directory when beneath it. */
static void shown_path(const struct ward__changes_run *run, const struct ward__change *c, char *out,
		       size_t size)
{
	const char *root = run->roots[c->root].path;

	if (run->cwd && strcmp(root, run->cwd) == 0)
		snprintf(out, size, "%s", c->path);
	else
		snprintf(out, size, "%s%s%s", root, strcmp(root, "/") == 0 ? "" : "/", c->path);
}

static const char *type_word(char t)
{
	switch (t) {
	case WARD_FT_REG:
		return "file";
	case WARD_FT_DIR:
		return "directory";
	case WARD_FT_LNK:
		return "symlink";
	case WARD_FT_FIFO:
		return "fifo";
	case WARD_FT_SOCK:
		return "socket";
	case WARD_FT_NONE:
		return "none";
	default:
		return "other";
	}
}

static void detail(const struct ward__changes_run *run, const struct ward__change *c, char *out,
		   size_t size)
{
	char a[32], b[32];
	const char *w = ward__change_word(run, c);
	bool del = c->kind == WARD_CHANGE_DELETE ||
		(c->kind == WARD_CHANGE_MEMBER && (c->flags & WARD_CF_MEMBER_OF_DEL));
	char t = del ? c->old_type : c->new_type;
	uint64_t size_v = del ? c->old_size : c->new_size;

	human(size_v, a, sizeof(a));
	if (c->flags & WARD_CF_TREE) {
		snprintf(out, size, "directory, %" PRIu64 " entries, %s",
			 del ? c->old_files : c->new_files, a);
	} else if (strcmp(w, "mode") == 0) {
		snprintf(out, size, "%04o -> %04o", c->old_mode, c->new_mode);
	} else if (strcmp(w, "type") == 0) {
		snprintf(out, size, "%s -> %s", type_word(c->old_type), type_word(c->new_type));
	} else if (t == WARD_FT_REG && c->kind == WARD_CHANGE_REPLACE &&
		   (c->flags & WARD_CF_CONTENT)) {
		human(c->old_size, b, sizeof(b));
		snprintf(out, size, "%s -> %s, %s%s", b, a,
			 (c->flags & WARD_CF_BINARY) ? "binary" : "text",
			 (c->flags & WARD_CF_MODE) ? ", mode changed" : "");
	} else if (t == WARD_FT_REG) {
		snprintf(out, size, "%s, %s", a, (c->flags & WARD_CF_BINARY) ? "binary" : "text");
	} else {
		snprintf(out, size, "%s", type_word(t));
	}
}

void ward__changes_print(const struct ward__changes_run *run, FILE *f, size_t max_lines)
{
	struct counts n = count(run);
	size_t lines = 0, more = 0, ignored = 0;
	uint64_t ignored_bytes = 0;

	fprintf(f, "ward: run %" PRIu64 " (%s): %zu added, %zu modified, %zu deleted", run->id,
		ward__run_state_name(run->state), n.added, n.modified, n.deleted);
	if (n.renamed)
		fprintf(f, ", %zu renamed", n.renamed);
	if (n.mode)
		fprintf(f, ", %zu mode", n.mode);
	if (n.touched)
		fprintf(f, ", %zu touched", n.touched);
	fputc('\n', f);
	for (size_t i = 0; i < run->n; i++) {
		const struct ward__change *c = &run->v[i];
		char path[PATH_MAX + 256], d[128], from[PATH_MAX + 256];
		const char *w = ward__change_word(run, c);
		const char *mark = "";

		if (c->kind == WARD_CHANGE_DELETE && is_rename_source(run, i))
			continue;
		if (c->flags & WARD_CF_IGNORED) {
			if (c->kind != WARD_CHANGE_MEMBER) {
				ignored++;
				ignored_bytes +=
					c->kind == WARD_CHANGE_DELETE ? c->old_size : c->new_size;
			}
			continue;
		}
		if (lines >= max_lines) {
			more += c->kind != WARD_CHANGE_MEMBER;
			continue;
		}
		shown_path(run, c, path, sizeof(path));
		detail(run, c, d, sizeof(d));
		if (c->state == WARD_CS_REFUSED)
			mark = "  [refused]";
		else if (c->state == WARD_CS_CONFLICT)
			mark = "  [conflict: not applied]";
		else if (cannot_undo(c))
			mark = "  [cannot be undone]";
		lines++;
		if (c->kind == WARD_CHANGE_MEMBER) {
			fprintf(f, "             %s  (%s)\n", path, d);
			continue;
		}
		if (c->renamed_from >= 0) {
			shown_path(run, &run->v[c->renamed_from], from, sizeof(from));
			fprintf(f, "  %-9s  %s -> %s  (%s)%s\n", w, from, path, d, mark);
		} else {
			fprintf(f, "  %-9s  %s%s  (%s)%s\n", w, path,
				(c->flags & WARD_CF_TREE) ? "/" : "", d, mark);
		}
		if (c->state == WARD_CS_REFUSED && c->refused)
			fprintf(f, "             refused: %s\n", c->refused);
		else if (cannot_undo(c))
			fprintf(f, "             cannot be undone: %s\n",
				ward__unkept_reason(c->unkept));
	}
	if (more)
		fprintf(f, "  ... and %zu more\n", more);
	if (run->members_dropped)
		fprintf(f, "  (%zu files inside new or deleted directories not listed)\n",
			run->members_dropped);
	if (ignored) {
		char b[32];

		human(ignored_bytes, b, sizeof(b));
		fprintf(f,
			"  %zu change%s in ignored or generated trees (node_modules, build, ...), %s: by name and size only\n",
			ignored, ignored == 1 ? "" : "s", b);
	}
	if (n.refused)
		fprintf(f, "  %zu change%s to protected paths will never be applied\n", n.refused,
			n.refused == 1 ? "" : "s");
	if (n.unkept)
		fprintf(f, "  %zu change%s cannot be undone (the journal's bounds)\n", n.unkept,
			n.unkept == 1 ? "" : "s");
	for (size_t i = 0; i < run->n_notes; i++)
		fprintf(f, "  note: %s\n", run->notes[i]);
}

void ward__changes_print_line(const struct ward__changes_run *run, FILE *f)
{
	struct counts n = count(run);
	char when[32] = "?";
	time_t t = (time_t)(run->started_ns / 1000000000);
	struct tm tm;
	const char *state = ward__run_state_name(run->state);

	if (localtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	if (run->state == WARD_RS_RUNNING && run->lock_fd < 0)
		state = "running"; /* or stopped: the listing cannot lock it to know */
	fprintf(f, "%6" PRIu64 "  %-9s %-6s %s  +%zu ~%zu -%zu", run->id, state,
		run->mode == WARD_RUN_HOLD ? "hold" : "record", when, n.added + n.renamed,
		n.modified + n.mode + n.touched, n.deleted);
	if (n.unkept)
		fprintf(f, " (%zu cannot be undone)", n.unkept);
	if (n.conflicts)
		fprintf(f, " (%zu not applied)", n.conflicts);
	fprintf(f, "  %s\n", run->command ? run->command : "");
}

static json_t *change_json(const struct ward__changes_run *run, const struct ward__change *c)
{
	char path[PATH_MAX + 8], mode[8];
	const char *root = run->roots[c->root].path;
	bool del = c->kind == WARD_CHANGE_DELETE ||
		(c->kind == WARD_CHANGE_MEMBER && (c->flags & WARD_CF_MEMBER_OF_DEL));
	json_t *o;

	snprintf(path, sizeof(path), "%s%s%s", root, strcmp(root, "/") == 0 ? "" : "/", c->path);
	o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "path", lossy(path));
	json_object_set_new(o, "change", json_string(ward__change_word(run, c)));
	json_object_set_new(o, "state", json_string(ward__change_state_name(c->state)));
	json_object_set_new(o, "type", json_string(type_word(del ? c->old_type : c->new_type)));
	json_object_set_new(o, "size", json_integer((json_int_t)(del ? c->old_size : c->new_size)));
	if (c->renamed_from >= 0) {
		const struct ward__change *s = &run->v[c->renamed_from];
		const char *sr = run->roots[s->root].path;

		snprintf(path, sizeof(path), "%s%s%s", sr, strcmp(sr, "/") == 0 ? "" : "/",
			 s->path);
		json_object_set_new(o, "from", lossy(path));
	}
	if (c->kind == WARD_CHANGE_REPLACE && c->old_type != c->new_type)
		json_object_set_new(o, "old_type", json_string(type_word(c->old_type)));
	if (c->kind == WARD_CHANGE_REPLACE && c->old_type == WARD_FT_REG)
		json_object_set_new(o, "old_size", json_integer((json_int_t)c->old_size));
	if (!del && c->new_type != WARD_FT_LNK) {
		snprintf(mode, sizeof(mode), "%04o", c->new_mode);
		json_object_set_new(o, "mode", json_string(mode));
	}
	if ((c->kind == WARD_CHANGE_REPLACE || c->kind == WARD_CHANGE_DIRMODE) &&
	    c->old_mode != c->new_mode) {
		snprintf(mode, sizeof(mode), "%04o", c->old_mode);
		json_object_set_new(o, "old_mode", json_string(mode));
	}
	if ((del ? c->old_type : c->new_type) == WARD_FT_REG)
		json_object_set_new(o, "binary", json_boolean(c->flags & WARD_CF_BINARY));
	if (c->flags & WARD_CF_TREE)
		json_object_set_new(o, "entries",
				    json_integer((json_int_t)(del ? c->old_files : c->new_files)));
	if (c->flags & WARD_CF_IGNORED)
		json_object_set_new(o, "ignored", json_true());
	if (c->kind == WARD_CHANGE_MEMBER)
		json_object_set_new(o, "inside", json_true());
	if (c->refused)
		json_object_set_new(o, "refused", lossy(c->refused));
	if (cannot_undo(c))
		json_object_set_new(o, "cannot_undo", json_string(ward__unkept_reason(c->unkept)));
	return o;
}

json_t *ward__changes_to_json(const struct ward__changes_run *run, size_t max_entries)
{
	struct counts n = count(run);
	json_t *o, *a, *notes;
	size_t not_listed = 0;

	o = json_pack("{s:o, s:s, s:s, s:o, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}}",
		      "run", run->id ? json_integer((json_int_t)run->id) : json_null(), "mode",
		      run->mode == WARD_RUN_HOLD ? "hold" : "record", "state",
		      ward__run_state_name(run->state), "command", lossy(run->command), "cwd",
		      lossy(run->cwd), "counts", "added", (json_int_t)n.added, "modified",
		      (json_int_t)n.modified, "deleted", (json_int_t)n.deleted, "renamed",
		      (json_int_t)n.renamed, "mode", (json_int_t)n.mode, "touched",
		      (json_int_t)n.touched, "refused", (json_int_t)n.refused, "conflicts",
		      (json_int_t)n.conflicts, "cannot_undo", (json_int_t)n.unkept);
	if (!o)
		return NULL;
	json_object_set_new(o, "started_ms", json_integer((json_int_t)(run->started_ns / 1000000)));
	if (run->exit_code >= 0)
		json_object_set_new(o, "exit_code", json_integer(run->exit_code));
	notes = json_array();
	for (size_t i = 0; notes && i < run->n_notes; i++)
		json_array_append_new(notes, lossy(run->notes[i]));
	json_object_set_new(o, "notes", notes ? notes : json_null());
	if (max_entries == 0)
		return o;
	a = json_array();
	for (size_t i = 0; a && i < run->n; i++) {
		const struct ward__change *c = &run->v[i];

		if (c->kind == WARD_CHANGE_DELETE && is_rename_source(run, i))
			continue;
		if (json_array_size(a) >= max_entries) {
			not_listed++;
			continue;
		}
		json_array_append_new(a, change_json(run, c));
	}
	json_object_set_new(o, "changes", a ? a : json_null());
	json_object_set_new(o, "changes_not_listed",
			    json_integer((json_int_t)(not_listed + run->members_dropped)));
	return o;
}
