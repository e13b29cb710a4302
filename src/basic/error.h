/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/macro.h"
#include "ward/ward.h"

/*
 * Fills err (when not NULL) and returns code, so a caller can write
 * `return ward__error(err, -errno, "mount", "cannot bind '%s': %m", path);`.
 * code is -errno; "%m" in fmt expands to strerror(-code). Never allocates.
 */
WARD_INTERNAL int ward__error(struct ward_error *err, int code, const char *stage, const char *fmt,
			      ...) _printf_(4, 5);
/* Sets the hint line of an already filled error. */
WARD_INTERNAL void ward__error_hint(struct ward_error *err, const char *fmt, ...) _printf_(2, 3);
WARD_INTERNAL void ward__error_clear(struct ward_error *err);
