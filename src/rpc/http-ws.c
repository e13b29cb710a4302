/* SPDX-License-Identifier: MIT */
/*
 * The parts of the HTTP upgrade that need OpenSSL's libcrypto (the
 * handshake's SHA-1, the token comparison): apart from the parser
 * (http.c), which the egress proxy in libward uses too and which must not
 * bring libcrypto into it.
 */
#include <errno.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "rpc/http.h"

int ward__http_ws_accept(const char *key, char ret[WARD_WS_ACCEPT_LEN + 1])
{
	unsigned char in[24 + sizeof(WARD_WS_GUID) - 1], md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;

	if (!ward__http_ws_key_valid(key))
		return -EINVAL;
	memcpy(in, key, 24);
	memcpy(in + 24, WARD_WS_GUID, sizeof(WARD_WS_GUID) - 1);
	/* SHA-1 as RFC 6455 requires; here it is a fixed transform, not a security boundary. */
	if (EVP_Digest(in, sizeof(in), md, &md_len, EVP_sha1(), NULL) != 1 || md_len != 20)
		return -EIO;
	if (EVP_EncodeBlock((unsigned char *)ret, md, 20) != WARD_WS_ACCEPT_LEN)
		return -EIO;
	ret[WARD_WS_ACCEPT_LEN] = '\0';
	return 0;
}

bool ward__http_token_equal(const void *presented, size_t presented_len, const void *expected,
			    size_t expected_len)
{
	unsigned char a[EVP_MAX_MD_SIZE], b[EVP_MAX_MD_SIZE];
	unsigned int al = 0, bl = 0;

	if (!presented || presented_len == 0 || !expected || expected_len == 0)
		return false;
	/*
	 * Hashing first makes the comparison independent of both lengths, and
	 * CRYPTO_memcmp of its contents: a client timing the answers learns
	 * nothing about the token, not even how long it is.
	 */
	if (EVP_Digest(presented, presented_len, a, &al, EVP_sha256(), NULL) != 1 ||
	    EVP_Digest(expected, expected_len, b, &bl, EVP_sha256(), NULL) != 1 || al != 32 ||
	    bl != 32)
		return false;
	return CRYPTO_memcmp(a, b, 32) == 0;
}

/* ------------------------------------------------------------------ responses */

int ward__http_respond_upgrade(struct ward__buf *out, const char *ws_key)
{
	char accept[WARD_WS_ACCEPT_LEN + 1];
	int r = ward__http_ws_accept(ws_key, accept);

	if (r < 0)
		return r;
	return ward__buf_printf(out,
				"HTTP/1.1 101 Switching Protocols\r\n"
				"Upgrade: websocket\r\n"
				"Connection: Upgrade\r\n"
				"Sec-WebSocket-Accept: %s\r\n"
				"\r\n",
				accept);
}
