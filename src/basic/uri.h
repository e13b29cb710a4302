/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/macro.h"

/*
 * "file:///abs/path" (also "file://localhost/abs/path" and "file:/abs/path")
 * to a malloc()ed absolute path, percent-escapes decoded. -EPROTONOSUPPORT
 * for another scheme, -EINVAL for a remote host, a query or fragment, a bad
 * escape or an escaped NUL.
 */
WARD_INTERNAL int ward__file_uri_to_path(const char *uri, char **ret);
/* An absolute path as it is, or a file: URI decoded; -EINVAL for anything else. */
WARD_INTERNAL int ward__path_or_file_uri(const char *s, char **ret);
/* A path as a file: URI, escaping what a URI path may not hold. malloc()ed, NULL on ENOMEM. */
WARD_INTERNAL char *ward__path_to_file_uri(const char *path);
