/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "basic/error.h"
#include "ward-config.h"

WARD_PUBLIC const char *ward_version(void)
{
	return WARD_VERSION;
}

void ward__error_clear(struct ward_error *err)
{
	if (!err)
		return;
	err->code = 0;
	err->stage[0] = '\0';
	err->message[0] = '\0';
	err->hint[0] = '\0';
}

/*
 * A message is one line whatever it quotes (a field name or a path from a
 * policy file may hold a newline or an escape sequence): control characters
 * become \xNN, as far as the buffer allows.
 */
static void one_line(char *s, size_t size)
{
	char tmp[WARD_ERROR_MESSAGE_MAX];
	size_t o = 0;

	for (const char *p = s; *p && o + 1 < sizeof(tmp); p++) {
		unsigned char c = (unsigned char)*p;

		if (c < 0x20 || c == 0x7f) {
			if (o + 5 >= sizeof(tmp))
				break;
			o += (size_t)snprintf(tmp + o, sizeof(tmp) - o, "\\x%02x", c);
		} else {
			tmp[o++] = (char)c;
		}
	}
	tmp[o] = '\0';
	snprintf(s, size, "%s", tmp);
}

int ward__error(struct ward_error *err, int code, const char *stage, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	/* "%m" must describe code, not whatever errno happens to hold now. */
	errno = code < 0 ? -code : code;
	err->code = code;
	snprintf(err->stage, sizeof(err->stage), "%s", stage ? stage : "");
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	one_line(err->message, sizeof(err->message));
	err->hint[0] = '\0';
	return code;
}

void ward__error_hint(struct ward_error *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(err->hint, sizeof(err->hint), fmt, ap);
	va_end(ap);
	one_line(err->hint, sizeof(err->hint));
}
