/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the wire codecs of the filesystem methods (src/execserver/fswire.c):
 * file: URIs, strict base64, lossy UTF-8, the URIs of results. The first
 * byte picks the codec; the rest is its input. Invariants checked:
 *
 *   - a URI is either refused with one of Codex's codes (-32602, -32600) and
 *     a bounded, NUL-free message, or gives an absolute path that is already
 *     normalised: no NUL, no empty, `.` or `..` component, no trailing slash;
 *   - a path turned into a URI (as results carry it) parses back to itself;
 *   - base64 accepted re-encodes to exactly the input (one encoding per
 *     bytes, as the strict decoder demands), and whatever bytes are encoded
 *     decode back; a refusal says which rule was broken;
 *   - lossy UTF-8 is always valid UTF-8, and valid input comes back as it
 *     was.
 *
 * Built with -fsanitize=fuzzer it is a libFuzzer target; linked with replay.c
 * it replays the corpus (in every test run).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "execserver/fswire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                 \
	do {                     \
		if (!(x))        \
			abort(); \
	} while (0)

static bool valid_utf8(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint8_t c = p[i];
		size_t w;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF) {
			w = 2;
			cp = c & 0x1F;
		} else if (c >= 0xE0 && c <= 0xEF) {
			w = 3;
			cp = c & 0x0F;
		} else if (c >= 0xF0 && c <= 0xF4) {
			w = 4;
			cp = c & 0x07;
		} else {
			return false;
		}
		if (i + w > n)
			return false;
		for (size_t k = 1; k < w; k++) {
			if ((p[i + k] & 0xC0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + k] & 0x3F);
		}
		if ((w == 3 && cp < 0x800) || (w == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
		    (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		i += w;
	}
	return true;
}

/* "/C:" or "/C|" first: a Windows drive letter, which a URI of it is refused for (as Codex). */
static bool drive_first(const char *p)
{
	return ((p[1] >= 'a' && p[1] <= 'z') || (p[1] >= 'A' && p[1] <= 'Z')) &&
		(p[2] == ':' || p[2] == '|') && (p[3] == '/' || p[3] == '\0');
}

static void check_normalised(const char *p)
{
	size_t n = strlen(p);

	CHECK(p[0] == '/');
	CHECK(n == 1 || p[n - 1] != '/');
	CHECK(!strstr(p, "//"));
	CHECK(!strstr(p, "/./") && !strstr(p, "/../"));
	CHECK(!(n >= 2 && strcmp(p + n - 2, "/.") == 0));
	CHECK(!(n >= 3 && strcmp(p + n - 3, "/..") == 0));
}

static void fuzz_uri(const uint8_t *d, size_t n)
{
	char msg[WARD_XFS_MSG_MAX];
	char *path = NULL;
	int code = 0;

	memset(msg, 'x', sizeof(msg));
	if (ward__xfs_uri_parse((const char *)d, n, &path, &code, msg, sizeof(msg)) < 0) {
		CHECK(!path);
		CHECK(code == WARD_XFS_INVALID_PARAMS || code == WARD_XFS_INVALID_REQUEST ||
		      code == WARD_XFS_INTERNAL);
		CHECK(memchr(msg, '\0', sizeof(msg)) && msg[0]);
		return;
	}
	CHECK(path);
	check_normalised(path);
	/* What a result would carry for it parses back to the same path. */
	if (!drive_first(path)) {
		char *uri = ward__xfs_path_to_uri(path), *back = NULL;

		CHECK(uri);
		CHECK(ward__xfs_uri_parse(uri, strlen(uri), &back, &code, msg, sizeof(msg)) == 0);
		CHECK(strcmp(back, path) == 0);
		free(back);
		free(uri);
	}
	free(path);
}

/* Any bytes as a path (made absolute and normalised) survive the trip through a URI. */
static void fuzz_path(const uint8_t *d, size_t n)
{
	char *p = malloc(n + 2), *uri, *back = NULL, msg[WARD_XFS_MSG_MAX];
	size_t o = 0;
	int code;

	CHECK(p);
	p[o++] = '/';
	for (size_t i = 0; i < n; i++) {
		char c = d[i] ? (char)d[i] : '/';

		/* Components "." and ".." and empty ones cannot be in a normalised path. */
		if (c == '/' && p[o - 1] == '/')
			continue;
		p[o++] = c;
	}
	while (o > 1 && p[o - 1] == '/')
		o--;
	p[o] = '\0';
	if (strstr(p, "/./") || strstr(p, "/../") || (o >= 2 && strcmp(p + o - 2, "/.") == 0) ||
	    (o >= 3 && strcmp(p + o - 3, "/..") == 0) || drive_first(p)) {
		free(p);
		return;
	}
	uri = ward__xfs_path_to_uri(p);
	CHECK(uri);
	CHECK(ward__xfs_uri_parse(uri, strlen(uri), &back, &code, msg, sizeof(msg)) == 0);
	CHECK(strcmp(back, p) == 0);
	free(back);
	free(uri);
	free(p);
}

static void fuzz_b64(const uint8_t *d, size_t n)
{
	uint8_t *out = malloc(n / 4 * 3 + 3);
	char *again = malloc(n / 3 * 4 + 8), msg[160];
	size_t len = 0;

	CHECK(out && again);
	if (ward__xfs_b64_decode((const char *)d, n, out, &len, msg, sizeof(msg)) == 0) {
		/* Strict: the only encoding of these bytes. */
		CHECK(ward__xfs_b64_encode(out, len, again) == n);
		CHECK(memcmp(again, d, n) == 0);
	} else {
		CHECK(strncmp(msg, "Invalid symbol ", 15) == 0 ||
		      strncmp(msg, "Invalid last symbol ", 20) == 0 ||
		      strncmp(msg, "Invalid input length: ", 22) == 0 ||
		      strcmp(msg, "Invalid padding") == 0);
	}
	free(out);
	free(again);
	/* And the other way: any bytes encode to something that decodes back. */
	{
		char *enc = malloc(4 * ((n + 2) / 3) + 1);
		uint8_t *dec = malloc(n + 3);
		size_t e, dl = 0;

		CHECK(enc && dec);
		e = ward__xfs_b64_encode(d, n, enc);
		CHECK(ward__xfs_b64_decode(enc, e, dec, &dl, msg, sizeof(msg)) == 0);
		CHECK(dl == n && memcmp(dec, d, n) == 0);
		free(enc);
		free(dec);
	}
}

static void fuzz_lossy(const uint8_t *d, size_t n)
{
	size_t len = 0;
	char *s = ward__xfs_lossy_utf8((const char *)d, n, &len);

	CHECK(s);
	CHECK(len == strlen(s) || memchr(d, '\0', n));
	CHECK(valid_utf8((const uint8_t *)s, len));
	if (valid_utf8(d, n))
		CHECK(len == n && memcmp(s, d, n) == 0);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 4) {
	case 0:
		fuzz_uri(data + 1, size - 1);
		break;
	case 1:
		fuzz_path(data + 1, size - 1);
		break;
	case 2:
		fuzz_b64(data + 1, size - 1);
		break;
	default:
		fuzz_lossy(data + 1, size - 1);
		break;
	}
	return 0;
}
