/* SPDX-License-Identifier: MIT */
/* file: URIs as Codex's exec-server protocol carries paths (RFC 8089, local files only). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/uri.h"
#include "basic/util.h"

int ward__file_uri_to_path(const char *uri, char **ret)
{
	const char *p;
	char *out, *o;

	if (!uri)
		return -EINVAL;
	if (strncmp(uri, "file://", 7) == 0) {
		p = uri + 7;
		/* Only this machine: an empty authority or "localhost". */
		if (strncmp(p, "localhost/", 10) == 0)
			p += 9;
		if (*p != '/')
			return -EINVAL;
	} else if (strncmp(uri, "file:/", 6) == 0) {
		p = uri + 5;
	} else {
		return -EPROTONOSUPPORT;
	}
	if (strchr(p, '?') || strchr(p, '#'))
		return -EINVAL;
	out = malloc(strlen(p) + 1);
	if (!out)
		return -ENOMEM;
	for (o = out; *p; p++) {
		if (*p == '%') {
			int hi = ward__hexval(p[1]), lo = hi < 0 ? -1 : ward__hexval(p[2]);

			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
				/* Bad escapes and NUL bytes are refused, never passed on. */
				free(out);
				return -EINVAL;
			}
			*o++ = (char)(hi * 16 + lo);
			p += 2;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	if ((size_t)(o - out) >= PATH_MAX) {
		free(out);
		return -ENAMETOOLONG;
	}
	*ret = out;
	return 0;
}

int ward__path_or_file_uri(const char *s, char **ret)
{
	int r;

	if (!s || !s[0])
		return -EINVAL;
	if (s[0] == '/') {
		if (strlen(s) >= PATH_MAX)
			return -ENAMETOOLONG;
		*ret = strdup(s);
		return *ret ? 0 : -ENOMEM;
	}
	r = ward__file_uri_to_path(s, ret);
	return r == -EPROTONOSUPPORT ? -EINVAL : r;
}

char *ward__path_to_file_uri(const char *path)
{
	static const char keep[] = "-._~/!$&'()*+,;=:@";
	struct ward__buf b;

	if (ward__buf_init(&b, strlen(path) * 3 + 16) < 0)
		return NULL;
	ward__buf_append_str(&b, "file://");
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr(keep, *p))
			ward__buf_append_byte(&b, *p);
		else
			ward__buf_printf(&b, "%%%02X", *p);
	}
	return (char *)ward__buf_steal(&b, NULL);
}
