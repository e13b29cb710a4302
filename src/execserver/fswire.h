/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/macro.h"

/*
 * The wire details of the filesystem methods, as Codex's exec-server
 * (0.169) shows them: its file: URIs, its strict base64, its error texts.
 * Pure functions (bytes in, bytes out, no I/O), fuzzed by fuzz/fuzz-fswire.c.
 *
 * Codex is a Rust program linked with musl: an io::Error reads
 * "<musl's strerror> (os error N)", and its kind decides the JSON-RPC code
 * (NotFound -32004, InvalidInput and PermissionDenied -32600, anything else
 * -32603). ward words its errors the same way, so that a client that matches
 * on them (Codex's own tests do) sees no difference.
 */

#define WARD_XFS_NOT_FOUND (-32004)
#define WARD_XFS_INVALID_REQUEST (-32600)
#define WARD_XFS_INVALID_PARAMS (-32602)
#define WARD_XFS_INTERNAL (-32603)

/* Longest message ward__xfs_uri_parse() writes (it quotes the URI, shortened). */
#define WARD_XFS_MSG_MAX 1024

/*
 * A file: URI to a native absolute path, as Codex's PathUri reads it: the
 * WHATWG URL parser (scheme case-insensitive, "file:/x", "file:x",
 * "file://localhost/x", backslashes as slashes, tabs and newlines dropped,
 * `.` and `..` segments resolved, also when percent-encoded), then each
 * segment percent-decoded and the path normalised by components (empty
 * and `.` components dropped, `..` resolved lexically, also those that
 * decoding produced). Never touches the filesystem.
 *
 * Returns 0 and *ret_path (malloc()ed, "/" at least), or -1 with the JSON-RPC
 * code Codex answers (-32602 for a malformed URI, a query, a fragment or a
 * NUL; -32600 for a host or a Windows drive letter) and its message in msg.
 */
WARD_INTERNAL int ward__xfs_uri_parse(const char *s, size_t len, char **ret_path, int *ret_code,
				      char *msg, size_t msg_size);

/*
 * A native absolute path as Codex writes it in results (Url::from_file_path):
 * "file://" and each component percent-encoded (controls, space,
 * "#%<>?`{}\ and every byte above 0x7E). malloc()ed; NULL on ENOMEM.
 */
WARD_INTERNAL char *ward__xfs_path_to_uri(const char *path);

/*
 * Strict base64 as Codex decodes it (the Rust base64 crate's STANDARD
 * engine: padding required and canonical, no whitespace, no trailing bits),
 * with its error texts ("Invalid symbol 33, offset 0.", "Invalid padding",
 * ...). out must hold len / 4 * 3 + 3 bytes. Returns 0 with *ret_len, or -1
 * with the text in msg.
 */
WARD_INTERNAL int ward__xfs_b64_decode(const char *s, size_t len, uint8_t *out, size_t *ret_len,
				       char *msg, size_t msg_size);
/* Standard padded base64 into out (4 * ((len + 2) / 3) + 1 bytes, NUL-terminated). */
WARD_INTERNAL size_t ward__xfs_b64_encode(const uint8_t *data, size_t len, char *out);

/* musl's text for an errno value (what Codex prints), "No error information" when unknown. */
WARD_INTERNAL const char *ward__xfs_strerror(int errnum);
/* The JSON-RPC code Codex answers an io error with (errnum > 0). */
WARD_INTERNAL int ward__xfs_errno_code(int errnum);
/* "<strerror> (os error N)" into buf. */
WARD_INTERNAL void ward__xfs_errno_message(int errnum, char *buf, size_t size);

/*
 * bytes as valid UTF-8, each invalid sequence replaced by U+FFFD as Rust's
 * String::from_utf8_lossy does (file names in listings, paths in messages).
 * malloc()ed, NUL-terminated; NULL on ENOMEM.
 */
WARD_INTERNAL char *ward__xfs_lossy_utf8(const char *bytes, size_t len, size_t *ret_len);
