/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>

#include "basic/macro.h"

/*
 * Standard base64 (RFC 4648, padded), the encoding of every chunk of output
 * the exec server sends: at streaming rates it is most of the server's work,
 * so it is a table lookup per 12 bits rather than a call into libcrypto per
 * slice. Pure: bytes in, characters out.
 */

/* Characters for len bytes. */
static inline size_t ward__base64_encoded_len(size_t len)
{
	return 4 * ((len + 2) / 3);
}

/*
 * Writes the encoding of in[0..len) to out, which must hold
 * ward__base64_encoded_len(len) bytes (no NUL is written). Returns that length.
 */
WARD_INTERNAL size_t ward__base64_encode(const void *in, size_t len, char *out);
