/* SPDX-License-Identifier: MIT */
/*
 * The parameters of the filesystem methods, read as Codex's exec-server reads
 * them (serde): members in the order they come, each of the wrong type
 * answered with serde's own words ("invalid type: number, expected a
 * string"), then the missing ones ("missing field `path`"), unknown members
 * ignored. See fsargs.h.
 */
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "execserver/fsargs.h"
#include "execserver/fswire.h"

static int fail(struct ward__xfs_args *a, int code, const char *fmt, ...) _printf_(3, 4);
static int fail(struct ward__xfs_args *a, int code, const char *fmt, ...)
{
	va_list ap;

	a->code = code;
	va_start(ap, fmt);
	vsnprintf(a->message, sizeof(a->message), fmt, ap);
	va_end(ap);
	return -1;
}

/* A string as Rust's Debug shows it: quoted, with \", \\, \n, \r, \t and \u{..} escapes. */
static void debug_string(const char *s, size_t len, char *out, size_t size)
{
	struct ward__buf b;

	ward__buf_init(&b, size > 8 ? size - 8 : 0);
	ward__buf_append_byte(&b, '"');
	for (size_t i = 0; i < len; i++) {
		uint8_t c = (uint8_t)s[i];
		int r;

		if (c == '"' || c == '\\')
			r = ward__buf_printf(&b, "\\%c", c);
		else if (c == '\n')
			r = ward__buf_append_str(&b, "\\n");
		else if (c == '\r')
			r = ward__buf_append_str(&b, "\\r");
		else if (c == '\t')
			r = ward__buf_append_str(&b, "\\t");
		else if (c < 0x20 || c == 0x7F)
			r = ward__buf_printf(&b, "\\u{%x}", c);
		else
			r = ward__buf_append_byte(&b, c);
		if (r < 0)
			break;
	}
	ward__buf_append_byte(&b, '"');
	snprintf(out, size, "%s", b.data ? (const char *)b.data : "\"\"");
	ward__buf_release(&b);
}

/* serde's words for the JSON value it did not expect. */
static void unexpected(const json_t *v, char *out, size_t size)
{
	switch (json_typeof(v)) {
	case JSON_NULL:
		snprintf(out, size, "null");
		break;
	case JSON_TRUE:
		snprintf(out, size, "boolean `true`");
		break;
	case JSON_FALSE:
		snprintf(out, size, "boolean `false`");
		break;
	case JSON_INTEGER:
	case JSON_REAL:
		snprintf(out, size, "number");
		break;
	case JSON_STRING: {
		char q[256];

		debug_string(json_string_value(v), MIN(json_string_length(v), (size_t)120), q,
			     sizeof(q));
		snprintf(out, size, "string %s", q);
		break;
	}
	case JSON_ARRAY:
		snprintf(out, size, "sequence");
		break;
	case JSON_OBJECT:
	default:
		snprintf(out, size, "map");
		break;
	}
}

static int type_error(struct ward__xfs_args *a, const json_t *v, const char *expected)
{
	char u[300];

	unexpected(v, u, sizeof(u));
	return fail(a, WARD_XFS_INVALID_PARAMS, "invalid type: %s, expected %s", u, expected);
}

/* A struct given as something else; serde also reads a struct from an array. */
static int struct_error(struct ward__xfs_args *a, const json_t *v, const char *name,
			unsigned n_fields)
{
	if (json_is_array(v) && json_array_size(v) == 0)
		return fail(a, WARD_XFS_INVALID_PARAMS,
			    "invalid length 0, expected struct %s with %u element%s", name,
			    n_fields, n_fields == 1 ? "" : "s");
	{
		char exp[128];

		snprintf(exp, sizeof(exp), "struct %s", name);
		return type_error(a, v, exp);
	}
}

static int get_string(struct ward__xfs_args *a, const json_t *v, const char **ret, size_t *ret_len)
{
	if (!json_is_string(v))
		return type_error(a, v, "a string");
	*ret = json_string_value(v);
	*ret_len = json_string_length(v);
	return 0;
}

/* Option<bool>: null is the default. */
static int get_opt_bool(struct ward__xfs_args *a, const json_t *v, bool *ret)
{
	if (json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return type_error(a, v, "a boolean");
	*ret = json_is_true(v);
	return 0;
}

static int get_bool(struct ward__xfs_args *a, const json_t *v, bool *ret)
{
	if (!json_is_boolean(v))
		return type_error(a, v, "a boolean");
	*ret = json_is_true(v);
	return 0;
}

/* u64 / usize: a negative or fractional number is "invalid number", as Codex's reader says. */
static int get_u64(struct ward__xfs_args *a, const json_t *v, const char *tname, uint64_t *ret)
{
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*ret = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (json_is_number(v))
		return fail(a, WARD_XFS_INVALID_PARAMS, "invalid number");
	return type_error(a, v, tname);
}

/* A path URI: its syntax is checked now, a host or drive letter when the operation runs. */
static int get_path(struct ward__xfs_args *a, const json_t *v, char **ret, bool *ret_bad_host,
		    char *bad_msg, size_t bad_size)
{
	const char *s = NULL;
	size_t len = 0;
	int code;
	char msg[WARD_XFS_MSG_MAX];

	if (get_string(a, v, &s, &len) < 0)
		return -1;
	free(*ret);
	*ret = NULL;
	if (ward__xfs_uri_parse(s, len, ret, &code, msg, sizeof(msg)) == 0)
		return 0;
	if (code == WARD_XFS_INVALID_REQUEST) {
		/* Codex reads such a URI fine and refuses it only when it makes a path of it. */
		if (!*ret_bad_host) {
			*ret_bad_host = true;
			snprintf(bad_msg, bad_size, "%s", msg);
		}
		*ret = strdup("/");
		return *ret ? 0 : fail(a, WARD_XFS_INTERNAL, "%s", ward__xfs_strerror(ENOMEM));
	}
	return fail(a, code, "%s", msg);
}

/* fs/writeBlock's chunk: base64 decoded as it is read, its error text bare (-32602). */
static int get_chunk(struct ward__xfs_args *a, const json_t *v)
{
	char msg[160];

	if (get_string(a, v, &a->data, &a->data_len) < 0)
		return -1;
	free(a->bytes);
	a->bytes = malloc(a->data_len / 4 * 3 + 3);
	if (!a->bytes)
		return fail(a, WARD_XFS_INTERNAL, "%s", ward__xfs_strerror(ENOMEM));
	if (ward__xfs_b64_decode(a->data, a->data_len, a->bytes, &a->bytes_len, msg, sizeof(msg)) <
	    0)
		return fail(a, WARD_XFS_INVALID_PARAMS, "%s", msg);
	return 0;
}

static int get_mode(struct ward__xfs_args *a, const json_t *v)
{
	const char *name;

	if (json_is_object(v)) {
		/* serde's externally tagged form: {"replace": null}. */
		const char *k;
		json_t *val;

		if (json_object_size(v) != 1)
			return fail(a, WARD_XFS_INVALID_PARAMS,
				    "invalid value: map, expected map with a single key");
		json_object_foreach((json_t *)v, k, val)
		{
			if (strcmp(k, "read") && strcmp(k, "replace"))
				return fail(a, WARD_XFS_INVALID_PARAMS,
					    "unknown variant `%.64s`, expected `read` or `replace`",
					    k);
			if (!json_is_null(val))
				return type_error(a, val, "unit");
			a->replace = strcmp(k, "replace") == 0;
		}
		return 0;
	}
	if (!json_is_string(v))
		return type_error(a, v, "string or map");
	name = json_string_value(v);
	if (strcmp(name, "read") == 0 || strcmp(name, "replace") == 0) {
		a->replace = strcmp(name, "replace") == 0;
		return 0;
	}
	return fail(a, WARD_XFS_INVALID_PARAMS,
		    "unknown variant `%.64s`, expected `read` or `replace`", name);
}

static int get_sandbox(struct ward__xfs_args *a, json_t *v)
{
	if (json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return struct_error(a, v, "WireFileSystemSandboxContext", 10);
	if (!json_object_get(v, "permissions"))
		return fail(a, WARD_XFS_INVALID_PARAMS, "missing field `permissions`");
	a->sandbox = v;
	return 0;
}

static int get_walk_options(struct ward__xfs_args *a, const json_t *v)
{
	bool seen[4] = {false};
	static const char *const names[] = {"maxDepth", "maxDirectories", "maxEntries",
					    "followDirectorySymlinks"};
	const char *k;
	json_t *val;
	int r = 0;

	if (!json_is_object(v)) {
		if (json_is_array(v) && json_array_size(v) == 0)
			return fail(
				a, WARD_XFS_INVALID_PARAMS,
				"invalid length 0, expected struct WalkOptions with 5 elements");
		return type_error(a, v, "struct WalkOptions");
	}
	json_object_foreach((json_t *)v, k, val)
	{
		if (strcmp(k, "maxDepth") == 0) {
			r = get_u64(a, val, "usize", &a->max_depth);
			seen[0] = true;
		} else if (strcmp(k, "maxDirectories") == 0) {
			r = get_u64(a, val, "usize", &a->max_dirs);
			seen[1] = true;
		} else if (strcmp(k, "maxEntries") == 0) {
			r = get_u64(a, val, "usize", &a->max_entries);
			seen[2] = true;
		} else if (strcmp(k, "followDirectorySymlinks") == 0) {
			r = get_bool(a, val, &a->follow_dirs);
			seen[3] = true;
		} else if (strcmp(k, "pruneHiddenDirectories") == 0) {
			r = get_opt_bool(a, val, &a->prune_hidden);
		}
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (!seen[i])
			return fail(a, WARD_XFS_INVALID_PARAMS, "missing field `%s`", names[i]);
	return 0;
}

/* The members of each method's params, in the order serde checks missing ones. */
struct method {
	const char *name;
	enum ward__xfs_method m;
	const char *struct_name;
	unsigned n_fields; /* serde's count, for the "invalid length" message */
	const char *required[4];
};

static const struct method methods[] = {
	{"fs/readFile", WARD_XFS_M_READ_FILE, "WireFsReadFileParams", 3, {"path"}},
	{"fs/writeFile", WARD_XFS_M_WRITE_FILE, "WireFsWriteFileParams", 4, {"path", "dataBase64"}},
	{"fs/createDirectory",
	 WARD_XFS_M_CREATE_DIRECTORY,
	 "WireFsCreateDirectoryParams",
	 4,
	 {"path"}},
	{"fs/getMetadata", WARD_XFS_M_GET_METADATA, "WireFsGetMetadataParams", 3, {"path"}},
	{"fs/canonicalize", WARD_XFS_M_CANONICALIZE, "WireFsCanonicalizeParams", 2, {"path"}},
	{"fs/readDirectory", WARD_XFS_M_READ_DIRECTORY, "WireFsReadDirectoryParams", 2, {"path"}},
	{"fs/remove", WARD_XFS_M_REMOVE, "WireFsRemoveParams", 5, {"path"}},
	{"fs/copy",
	 WARD_XFS_M_COPY,
	 "WireFsCopyParams",
	 4,
	 {"sourcePath", "destinationPath", "recursive"}},
	{"fs/open", WARD_XFS_M_OPEN, "WireFsOpenParams", 4, {"handleId", "path"}},
	{"fs/readBlock",
	 WARD_XFS_M_READ_BLOCK,
	 "FsReadBlockParams",
	 3,
	 {"handleId", "offset", "len"}},
	{"fs/writeBlock",
	 WARD_XFS_M_WRITE_BLOCK,
	 "FsWriteBlockParams",
	 3,
	 {"handleId", "offset", "chunk"}},
	{"fs/close", WARD_XFS_M_CLOSE, "FsCloseParams", 1, {"handleId"}},
	{"fs/walk", WARD_XFS_M_WALK, "WireFsWalkParams", 3, {"path", "options"}},
};

enum ward__xfs_method ward__xfs_method_from_name(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(methods); i++)
		if (strcmp(methods[i].name, name) == 0)
			return methods[i].m;
	return WARD_XFS_M_NONE;
}

const char *ward__xfs_method_name(enum ward__xfs_method m)
{
	for (size_t i = 0; i < ELEMENTSOF(methods); i++)
		if (methods[i].m == m)
			return methods[i].name;
	return "fs/?";
}

void ward__xfs_args_release(struct ward__xfs_args *a)
{
	free(a->path);
	free(a->path2);
	free(a->bytes);
	*a = (struct ward__xfs_args){0};
}

int ward__xfs_args_parse(enum ward__xfs_method m, json_t *params, struct ward__xfs_args *a)
{
	const struct method *md = NULL;
	const char *k;
	json_t *v;
	int r = 0;

	*a = (struct ward__xfs_args){.follow = true, .recursive = true, .force = true};
	for (size_t i = 0; i < ELEMENTSOF(methods); i++)
		if (methods[i].m == m)
			md = &methods[i];
	if (!md)
		return fail(a, WARD_XFS_INTERNAL, "unknown filesystem method");
	/* createDirectory and remove default to recursive (and remove to force); copy has no default. */
	if (m != WARD_XFS_M_CREATE_DIRECTORY && m != WARD_XFS_M_REMOVE)
		a->recursive = false;
	if (!params)
		return struct_error(a, json_null(), md->struct_name, md->n_fields);
	if (!json_is_object(params))
		return struct_error(a, params, md->struct_name, md->n_fields);
	json_object_foreach(params, k, v)
	{
		bool path_member = strcmp(k, "path") == 0 && m != WARD_XFS_M_READ_BLOCK &&
			m != WARD_XFS_M_WRITE_BLOCK && m != WARD_XFS_M_CLOSE &&
			m != WARD_XFS_M_COPY;

		if (path_member) {
			r = get_path(a, v, &a->path, &a->bad_host, a->bad_host_message,
				     sizeof(a->bad_host_message));
			a->have |= WARD_XFS_HAVE_PATH;
		} else if (m == WARD_XFS_M_COPY && strcmp(k, "sourcePath") == 0) {
			r = get_path(a, v, &a->path, &a->bad_host, a->bad_host_message,
				     sizeof(a->bad_host_message));
			a->have |= WARD_XFS_HAVE_PATH;
		} else if (m == WARD_XFS_M_COPY && strcmp(k, "destinationPath") == 0) {
			r = get_path(a, v, &a->path2, &a->bad_host, a->bad_host_message,
				     sizeof(a->bad_host_message));
			a->have |= WARD_XFS_HAVE_PATH2;
		} else if (strcmp(k, "followSymlinks") == 0 &&
			   (m == WARD_XFS_M_READ_FILE || m == WARD_XFS_M_WRITE_FILE ||
			    m == WARD_XFS_M_CREATE_DIRECTORY || m == WARD_XFS_M_GET_METADATA ||
			    m == WARD_XFS_M_REMOVE)) {
			r = get_opt_bool(a, v, &a->follow);
		} else if (strcmp(k, "recursive") == 0 && m == WARD_XFS_M_COPY) {
			r = get_bool(a, v, &a->recursive);
			a->have |= WARD_XFS_HAVE_RECURSIVE;
		} else if (strcmp(k, "recursive") == 0 &&
			   (m == WARD_XFS_M_CREATE_DIRECTORY || m == WARD_XFS_M_REMOVE)) {
			r = get_opt_bool(a, v, &a->recursive);
		} else if (strcmp(k, "force") == 0 && m == WARD_XFS_M_REMOVE) {
			r = get_opt_bool(a, v, &a->force);
		} else if (strcmp(k, "dataBase64") == 0 && m == WARD_XFS_M_WRITE_FILE) {
			r = get_string(a, v, &a->data, &a->data_len);
			a->have |= WARD_XFS_HAVE_DATA;
		} else if (strcmp(k, "chunk") == 0 && m == WARD_XFS_M_WRITE_BLOCK) {
			r = get_chunk(a, v);
			a->have |= WARD_XFS_HAVE_DATA;
		} else if (strcmp(k, "handleId") == 0 &&
			   (m == WARD_XFS_M_OPEN || m == WARD_XFS_M_READ_BLOCK ||
			    m == WARD_XFS_M_WRITE_BLOCK || m == WARD_XFS_M_CLOSE)) {
			r = get_string(a, v, &a->handle, &a->handle_len);
			a->have |= WARD_XFS_HAVE_HANDLE;
		} else if (strcmp(k, "offset") == 0 &&
			   (m == WARD_XFS_M_READ_BLOCK || m == WARD_XFS_M_WRITE_BLOCK)) {
			r = get_u64(a, v, "u64", &a->offset);
			a->have |= WARD_XFS_HAVE_OFFSET;
		} else if (strcmp(k, "len") == 0 && m == WARD_XFS_M_READ_BLOCK) {
			r = get_u64(a, v, "usize", &a->len);
			a->have |= WARD_XFS_HAVE_LEN;
		} else if (strcmp(k, "mode") == 0 && m == WARD_XFS_M_OPEN) {
			r = get_mode(a, v);
		} else if (strcmp(k, "options") == 0 && m == WARD_XFS_M_WALK) {
			r = get_walk_options(a, v);
			a->have |= WARD_XFS_HAVE_OPTIONS;
		} else if (strcmp(k, "sandbox") == 0 && m != WARD_XFS_M_READ_BLOCK &&
			   m != WARD_XFS_M_WRITE_BLOCK && m != WARD_XFS_M_CLOSE) {
			r = get_sandbox(a, v);
		}
		if (r < 0)
			return r;
	}
	for (size_t i = 0; i < ELEMENTSOF(md->required) && md->required[i]; i++) {
		const char *f = md->required[i];
		unsigned bit = strcmp(f, "path") == 0 || strcmp(f, "sourcePath") == 0
			? WARD_XFS_HAVE_PATH
			: strcmp(f, "destinationPath") == 0 ? WARD_XFS_HAVE_PATH2
			: strcmp(f, "recursive") == 0	    ? WARD_XFS_HAVE_RECURSIVE
			: strcmp(f, "dataBase64") == 0 || strcmp(f, "chunk") == 0
			? WARD_XFS_HAVE_DATA
			: strcmp(f, "handleId") == 0 ? WARD_XFS_HAVE_HANDLE
			: strcmp(f, "offset") == 0   ? WARD_XFS_HAVE_OFFSET
			: strcmp(f, "len") == 0	     ? WARD_XFS_HAVE_LEN
						     : WARD_XFS_HAVE_OPTIONS;

		if (!(a->have & bit))
			return fail(a, WARD_XFS_INVALID_PARAMS, "missing field `%s`", f);
	}
	return 0;
}
