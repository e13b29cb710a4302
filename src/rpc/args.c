/* SPDX-License-Identifier: MIT */
/* Checked JSON arguments of the servers' methods and tools (see args.h). */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "basic/util.h"
#include "rpc/args.h"

/*
 * An integer argument: a JSON integer, an integral number (a model may write
 * 1000.0) or a string of digits. 0 absent (ret untouched), 1 present, -1 bad.
 */
int ward__arg_int(const json_t *args, const char *name, int64_t lo, int64_t hi, int64_t *ret,
		  char *why, size_t size)
{
	json_t *v = json_object_get(args, name);
	int64_t n;

	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v)) {
		n = json_integer_value(v);
	} else if (json_is_real(v) && json_real_value(v) >= -9e15 && json_real_value(v) <= 9e15 &&
		   json_real_value(v) == (double)(int64_t)json_real_value(v)) {
		/* The range first: converting a double out of int64_t's range is undefined. */
		n = (int64_t)json_real_value(v);
	} else if (json_is_string(v)) {
		uint64_t u;

		if (ward__parse_u64(json_string_value(v), &u) < 0 || u > INT64_MAX) {
			snprintf(why, size, "'%s' must be an integer", name);
			return -1;
		}
		n = (int64_t)u;
	} else {
		snprintf(why, size, "'%s' must be an integer", name);
		return -1;
	}
	if (n < lo || n > hi) {
		snprintf(why, size, "'%s' must be between %lld and %lld", name, (long long)lo,
			 (long long)hi);
		return -1;
	}
	*ret = n;
	return 1;
}

int ward__arg_bool(const json_t *args, const char *name, bool *ret, char *why, size_t size)
{
	json_t *v = json_object_get(args, name);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v)) {
		snprintf(why, size, "'%s' must be true or false", name);
		return -1;
	}
	*ret = json_is_true(v);
	return 1;
}

int ward__arg_str(const json_t *args, const char *name, const char **ret, size_t *ret_len,
		  char *why, size_t size)
{
	json_t *v = json_object_get(args, name);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v)) {
		snprintf(why, size, "'%s' must be a string", name);
		return -1;
	}
	*ret = json_string_value(v);
	if (ret_len)
		*ret_len = json_string_length(v);
	else if (strlen(*ret) != json_string_length(v)) {
		snprintf(why, size, "'%s' must not contain NUL characters", name);
		return -1;
	}
	return 1;
}

/*
 * What a JSON value holds in memory, roughly but never under: every value's
 * node, every string's and key's bytes. Stops counting past limit (the
 * answer is then above it): a queue only needs to know it does not fit.
 */
static size_t weight(const json_t *v, size_t limit, unsigned depth)
{
	size_t w = 64, i;
	const char *key;
	json_t *x;

	if (depth > 256)
		return limit + 1;
	switch (json_typeof(v)) {
	case JSON_STRING:
		w += json_string_length(v);
		break;
	case JSON_ARRAY:
		w += json_array_size(v) * sizeof(void *);
		json_array_foreach((json_t *)v, i, x)
		{
			w += weight(x, limit, depth + 1);
			if (w > limit)
				return w;
		}
		break;
	case JSON_OBJECT:
		json_object_foreach((json_t *)v, key, x)
		{
			w += 64 + strlen(key) + weight(x, limit, depth + 1);
			if (w > limit)
				return w;
		}
		break;
	case JSON_INTEGER:
	case JSON_REAL:
	case JSON_TRUE:
	case JSON_FALSE:
	case JSON_NULL:
		break;
	}
	return w;
}

size_t ward__json_weight(const json_t *v, size_t limit)
{
	return v ? weight(v, limit, 0) : 0;
}
