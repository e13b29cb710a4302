/* SPDX-License-Identifier: MIT */
/*
 * The wire details of the filesystem methods (see fswire.h). Each function
 * reproduces what Codex's exec-server 0.169 answers, checked against its
 * binary (docs/protocol.md, "Filesystem methods"); none of them touches the
 * filesystem.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/cleanup.h"
#include "basic/util.h"
#include "execserver/fswire.h"

/* ------------------------------------------------------------ errors */

/*
 * musl's messages (its src/errno/__strerror.h, the table Codex's binary
 * carries): Codex prints these, not glibc's ("Symbolic link loop", not "Too
 * many levels of symbolic links").
 */
static const struct {
	int num;
	const char *text;
} musl_errors[] = {
	{EILSEQ, "Illegal byte sequence"},
	{EDOM, "Domain error"},
	{ERANGE, "Result not representable"},
	{ENOTTY, "Not a tty"},
	{EACCES, "Permission denied"},
	{EPERM, "Operation not permitted"},
	{ENOENT, "No such file or directory"},
	{ESRCH, "No such process"},
	{EEXIST, "File exists"},
	{EOVERFLOW, "Value too large for data type"},
	{ENOSPC, "No space left on device"},
	{ENOMEM, "Out of memory"},
	{EBUSY, "Resource busy"},
	{EINTR, "Interrupted system call"},
	{EAGAIN, "Resource temporarily unavailable"},
	{ESPIPE, "Invalid seek"},
	{EXDEV, "Cross-device link"},
	{EROFS, "Read-only file system"},
	{ENOTEMPTY, "Directory not empty"},
	{ECONNRESET, "Connection reset by peer"},
	{ETIMEDOUT, "Operation timed out"},
	{ECONNREFUSED, "Connection refused"},
	{EHOSTDOWN, "Host is down"},
	{EHOSTUNREACH, "Host is unreachable"},
	{EADDRINUSE, "Address in use"},
	{EPIPE, "Broken pipe"},
	{EIO, "I/O error"},
	{ENXIO, "No such device or address"},
	{ENOTBLK, "Block device required"},
	{ENODEV, "No such device"},
	{ENOTDIR, "Not a directory"},
	{EISDIR, "Is a directory"},
	{ETXTBSY, "Text file busy"},
	{ENOEXEC, "Exec format error"},
	{EINVAL, "Invalid argument"},
	{E2BIG, "Argument list too long"},
	{ELOOP, "Symbolic link loop"},
	{ENAMETOOLONG, "Filename too long"},
	{ENFILE, "Too many open files in system"},
	{EMFILE, "No file descriptors available"},
	{EBADF, "Bad file descriptor"},
	{ECHILD, "No child process"},
	{EFAULT, "Bad address"},
	{EFBIG, "File too large"},
	{EMLINK, "Too many links"},
	{ENOLCK, "No locks available"},
	{EDEADLK, "Resource deadlock would occur"},
	{ENOTRECOVERABLE, "State not recoverable"},
	{EOWNERDEAD, "Previous owner died"},
	{ECANCELED, "Operation canceled"},
	{ENOSYS, "Function not implemented"},
	{ENOMSG, "No message of desired type"},
	{EIDRM, "Identifier removed"},
	{ENOSTR, "Device not a stream"},
	{ENODATA, "No data available"},
	{ETIME, "Device timeout"},
	{ENOSR, "Out of streams resources"},
	{ENOLINK, "Link has been severed"},
	{EPROTO, "Protocol error"},
	{EBADMSG, "Bad message"},
	{EBADFD, "File descriptor in bad state"},
	{ENOTSOCK, "Not a socket"},
	{EDESTADDRREQ, "Destination address required"},
	{EMSGSIZE, "Message too large"},
	{EPROTOTYPE, "Protocol wrong type for socket"},
	{ENOPROTOOPT, "Protocol not available"},
	{EPROTONOSUPPORT, "Protocol not supported"},
	{ESOCKTNOSUPPORT, "Socket type not supported"},
	{ENOTSUP, "Not supported"},
	{EPFNOSUPPORT, "Protocol family not supported"},
	{EAFNOSUPPORT, "Address family not supported by protocol"},
	{EADDRNOTAVAIL, "Address not available"},
	{ENETDOWN, "Network is down"},
	{ENETUNREACH, "Network unreachable"},
	{ENETRESET, "Connection reset by network"},
	{ECONNABORTED, "Connection aborted"},
	{ENOBUFS, "No buffer space available"},
	{EISCONN, "Socket is connected"},
	{ENOTCONN, "Socket not connected"},
	{ESHUTDOWN, "Cannot send after socket shutdown"},
	{EALREADY, "Operation already in progress"},
	{EINPROGRESS, "Operation in progress"},
	{ESTALE, "Stale file handle"},
	{EREMOTEIO, "Remote I/O error"},
	{EDQUOT, "Quota exceeded"},
	{ENOMEDIUM, "No medium found"},
	{EMEDIUMTYPE, "Wrong medium type"},
	{EMULTIHOP, "Multihop attempted"},
	{ENOKEY, "Required key not available"},
	{EKEYEXPIRED, "Key has expired"},
	{EKEYREVOKED, "Key has been revoked"},
	{EKEYREJECTED, "Key was rejected by service"},
};

const char *ward__xfs_strerror(int errnum)
{
	for (size_t i = 0; i < ELEMENTSOF(musl_errors); i++)
		if (musl_errors[i].num == errnum)
			return musl_errors[i].text;
	return "No error information";
}

int ward__xfs_errno_code(int errnum)
{
	/* Rust's io::ErrorKind of the errno, then Codex's code for the kind. */
	switch (errnum) {
	case ENOENT:
		return WARD_XFS_NOT_FOUND;
	case EACCES:
	case EPERM:
	case EINVAL:
		return WARD_XFS_INVALID_REQUEST;
	default:
		return WARD_XFS_INTERNAL;
	}
}

void ward__xfs_errno_message(int errnum, char *buf, size_t size)
{
	snprintf(buf, size, "%s (os error %d)", ward__xfs_strerror(errnum), errnum);
}

/* ------------------------------------------------------------ UTF-8 */

/* Length of the valid UTF-8 sequence at p (1-4), or 0 with *bad the bytes of its maximal invalid part. */
static size_t utf8_seq(const uint8_t *p, size_t n, size_t *bad)
{
	uint8_t c = p[0];
	uint8_t lo = 0x80, hi = 0xBF;
	size_t w, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		w = 2;
	else if (c >= 0xE0 && c <= 0xEF)
		w = 3;
	else if (c >= 0xF0 && c <= 0xF4)
		w = 4;
	else {
		*bad = 1;
		return 0;
	}
	/* The second byte's range depends on the first (no overlongs, no surrogates, <= U+10FFFF). */
	if (c == 0xE0)
		lo = 0xA0;
	else if (c == 0xED)
		hi = 0x9F;
	else if (c == 0xF0)
		lo = 0x90;
	else if (c == 0xF4)
		hi = 0x8F;
	for (i = 1; i < w; i++) {
		uint8_t b = i < n ? p[i] : 0;

		if (i >= n || b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) {
			*bad = i;
			return 0;
		}
	}
	return w;
}

char *ward__xfs_lossy_utf8(const char *bytes, size_t len, size_t *ret_len)
{
	const uint8_t *p = (const uint8_t *)bytes;
	char *out = malloc(len * 3 + 1);
	size_t o = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t bad = 0, w = utf8_seq(p + i, len - i, &bad);

		if (w) {
			memcpy(out + o, p + i, w);
			o += w;
			i += w;
		} else {
			/* U+FFFD for each maximal invalid subpart, as Rust's from_utf8_lossy. */
			memcpy(out + o, "\xEF\xBF\xBD", 3);
			o += 3;
			i += bad;
		}
	}
	out[o] = '\0';
	if (ret_len)
		*ret_len = o;
	return out;
}

/* ------------------------------------------------------------ base64 */

static const char b64_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64_value(uint8_t c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

size_t ward__xfs_b64_encode(const uint8_t *data, size_t len, char *out)
{
	size_t o = 0, i = 0;

	for (; i + 3 <= len; i += 3) {
		uint32_t v = (uint32_t)data[i] << 16 | (uint32_t)data[i + 1] << 8 | data[i + 2];

		out[o++] = b64_alphabet[v >> 18];
		out[o++] = b64_alphabet[(v >> 12) & 63];
		out[o++] = b64_alphabet[(v >> 6) & 63];
		out[o++] = b64_alphabet[v & 63];
	}
	if (len - i == 1) {
		uint32_t v = (uint32_t)data[i] << 16;

		out[o++] = b64_alphabet[v >> 18];
		out[o++] = b64_alphabet[(v >> 12) & 63];
		out[o++] = '=';
		out[o++] = '=';
	} else if (len - i == 2) {
		uint32_t v = (uint32_t)data[i] << 16 | (uint32_t)data[i + 1] << 8;

		out[o++] = b64_alphabet[v >> 18];
		out[o++] = b64_alphabet[(v >> 12) & 63];
		out[o++] = b64_alphabet[(v >> 6) & 63];
		out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

/*
 * The order of the checks decides which error a bad input gets, so it
 * follows the crate's decoder step by step: a stray last byte of an input
 * whose length is 1 mod 4 first, then every quad but the last, then the last
 * (partial) quad with its padding rules.
 */
int ward__xfs_b64_decode(const char *s, size_t len, uint8_t *out, size_t *ret_len, char *msg,
			 size_t msg_size)
{
	const uint8_t *in = (const uint8_t *)s;
	size_t rem = len % 4, body, o = 0;
	int morsels[4] = {0};
	size_t n_morsels = 0, n_pad = 0, first_pad = 0;
	uint8_t last = 0;
	uint32_t acc;
	size_t bytes;

	if (rem == 1 && in[len - 1] != '=' && b64_value(in[len - 1]) < 0) {
		snprintf(msg, msg_size, "Invalid symbol %u, offset %zu.", in[len - 1], len - 1);
		return -1;
	}
	/* Every complete quad but the last: the last may hold padding. */
	body = len - rem;
	if (rem == 0 && body >= 4)
		body -= 4;
	for (size_t i = 0; i < body; i += 4) {
		int v[4];

		for (int k = 0; k < 4; k++) {
			v[k] = b64_value(in[i + k]);
			if (v[k] < 0) {
				snprintf(msg, msg_size, "Invalid symbol %u, offset %zu.", in[i + k],
					 i + k);
				return -1;
			}
		}
		acc = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 |
			(uint32_t)v[3];
		out[o++] = (uint8_t)(acc >> 16);
		out[o++] = (uint8_t)(acc >> 8);
		out[o++] = (uint8_t)acc;
	}
	for (size_t i = body; i < len; i++) {
		size_t k = i - body;
		int v;

		if (in[i] == '=') {
			/* Padding after fewer than two symbols of the quad is a bad symbol. */
			if (k < 2) {
				snprintf(msg, msg_size, "Invalid symbol %u, offset %zu.", '=', i);
				return -1;
			}
			if (n_pad == 0)
				first_pad = k;
			n_pad++;
			continue;
		}
		/* A symbol after padding: the first padding byte is reported. */
		if (n_pad > 0) {
			snprintf(msg, msg_size, "Invalid symbol %u, offset %zu.", '=',
				 body + first_pad);
			return -1;
		}
		last = in[i];
		v = b64_value(in[i]);
		if (v < 0) {
			snprintf(msg, msg_size, "Invalid symbol %u, offset %zu.", in[i], i);
			return -1;
		}
		morsels[n_morsels++] = v;
	}
	if (len > 0 && n_morsels < 2) {
		snprintf(msg, msg_size, "Invalid input length: %zu", body + n_morsels);
		return -1;
	}
	if ((n_pad + n_morsels) % 4 != 0) {
		snprintf(msg, msg_size, "Invalid padding");
		return -1;
	}
	bytes = n_morsels * 6 / 8;
	acc = (uint32_t)morsels[0] << 26 | (uint32_t)morsels[1] << 20 | (uint32_t)morsels[2] << 14 |
		(uint32_t)morsels[3] << 8;
	/* Bits the output does not use must be zero (one canonical encoding per input). */
	if (n_morsels > 0 && (acc & (~UINT32_C(0) >> (bytes * 8))) != 0) {
		snprintf(msg, msg_size, "Invalid last symbol %u, offset %zu.", last,
			 body + n_morsels - 1);
		return -1;
	}
	for (size_t k = 0; k < bytes; k++)
		out[o++] = (uint8_t)(acc >> (24 - 8 * k));
	*ret_len = o;
	return 0;
}

/* ------------------------------------------------------------ file: URIs */

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* WHATWG's path percent-encode set (what the URL parser escapes while it parses a path). */
static bool path_escape(uint8_t c)
{
	return c < 0x20 || c > 0x7E || c == ' ' || c == '"' || c == '<' || c == '>' || c == '`' ||
		c == '{' || c == '}' || c == '#' || c == '?';
}

static bool seg_eq_ci(const char *s, size_t n, const char *lit)
{
	if (strlen(lit) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (lower(s[i]) != lit[i])
			return false;
	return true;
}

static bool single_dot(const char *s, size_t n)
{
	return seg_eq_ci(s, n, ".") || seg_eq_ci(s, n, "%2e");
}

static bool double_dot(const char *s, size_t n)
{
	return seg_eq_ci(s, n, "..") || seg_eq_ci(s, n, ".%2e") || seg_eq_ci(s, n, "%2e.") ||
		seg_eq_ci(s, n, "%2e%2e");
}

static bool drive_letter(const char *s, size_t n)
{
	return n == 2 && is_alpha(s[0]) && (s[1] == ':' || s[1] == '|');
}

/* A code point a host may not hold (WHATWG's forbidden domain code points). */
static bool forbidden_host_byte(uint8_t c)
{
	return c <= 0x20 || c == 0x7F || c >= 0x80 || strchr("#%/:<>?@[\\]^|", c) != NULL;
}

/* Quotes the URI for a message, shortened so the message stays bounded. */
static void uri_message(char *msg, size_t size, const char *uri)
{
	if (strlen(uri) > 512)
		snprintf(msg, size, "'%.512s...' is invalid on 'linux'", uri);
	else
		snprintf(msg, size, "'%s' is invalid on 'linux'", uri);
}

struct seg {
	size_t off, len; /* in the parsed (escaped) path text */
};

int ward__xfs_uri_parse(const char *s, size_t len, char **ret_path, int *ret_code, char *msg,
			size_t msg_size)
{
	_cleanup_free_ char *in = NULL, *host = NULL;
	_cleanup_free_ struct seg *segs = NULL;
	struct ward__buf ser = {0}, path = {0};
	size_t n = 0, i, start = 0, end = len, n_segs = 0, host_len = 0;
	const char *rest;
	size_t rest_len;
	int r = -1;

	*ret_code = WARD_XFS_INVALID_PARAMS;
	/* Leading and trailing C0 controls and spaces go, and tabs and newlines anywhere. */
	while (start < end && (uint8_t)s[start] <= 0x20)
		start++;
	while (end > start && (uint8_t)s[end - 1] <= 0x20)
		end--;
	in = malloc(end - start + 1);
	if (!in)
		goto oom;
	for (i = start; i < end; i++)
		if (s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
			in[n++] = s[i];
	in[n] = '\0';

	/* The scheme: a letter, then letters, digits, +, - or ., then ':'. */
	for (i = 0; i < n &&
	     (i == 0 ? is_alpha(in[i])
		     : (is_alpha(in[i]) || is_digit(in[i]) || in[i] == '+' || in[i] == '-' ||
			in[i] == '.'));
	     i++)
		;
	if (i == 0 || i == n || in[i] != ':') {
		snprintf(msg, msg_size, "invalid URI: relative URL without a base");
		return -1;
	}
	if (i != 4 || !seg_eq_ci(in, 4, "file")) {
		char scheme[64];
		size_t k;

		for (k = 0; k < i && k < sizeof(scheme) - 1; k++)
			scheme[k] = lower(in[k]);
		scheme[k] = '\0';
		snprintf(msg, msg_size, "unsupported path URI scheme `%s`", scheme);
		return -1;
	}
	rest = in + i + 1;
	rest_len = n - i - 1;

	/* "//" starts an authority (the host); backslashes count as slashes. */
	if (rest_len >= 2 && (rest[0] == '/' || rest[0] == '\\') &&
	    (rest[1] == '/' || rest[1] == '\\')) {
		size_t h = 2;

		while (h < rest_len && !strchr("/\\?#", rest[h]))
			h++;
		if (!drive_letter(rest + 2, h - 2)) {
			const char *raw = rest + 2;
			size_t raw_len = h - 2, k;

			host = malloc(raw_len + 1);
			if (!host)
				goto oom;
			if (raw_len > 0 && raw[0] == '[') {
				/* An IPv6 literal: hex digits, colons and dots between brackets. */
				bool ok = raw_len >= 4 && raw[raw_len - 1] == ']';

				for (k = 1; ok && k + 1 < raw_len; k++)
					ok = ward__hexval(raw[k]) >= 0 || raw[k] == ':' ||
						raw[k] == '.';
				if (!ok) {
					snprintf(msg, msg_size,
						 "invalid URI: invalid IPv6 address");
					return -1;
				}
				for (k = 0; k < raw_len; k++)
					host[k] = lower(raw[k]);
				host_len = raw_len;
			} else {
				for (k = 0; k < raw_len; k++) {
					int hi = raw[k] == '%' && k + 2 < raw_len
						? ward__hexval(raw[k + 1])
						: -1,
					    lo = hi >= 0 ? ward__hexval(raw[k + 2]) : -1;
					uint8_t c;

					if (hi >= 0 && lo >= 0) {
						c = (uint8_t)(hi * 16 + lo);
						k += 2;
					} else {
						c = (uint8_t)raw[k];
					}
					if (forbidden_host_byte(c)) {
						snprintf(msg, msg_size,
							 "invalid URI: invalid international "
							 "domain name");
						return -1;
					}
					host[host_len++] = lower((char)c);
				}
			}
			host[host_len] = '\0';
			if (strcmp(host, "localhost") == 0)
				host_len = 0;
			rest += h;
			rest_len -= h;
		} else {
			/* "file://C:/x": a drive letter, not a host. */
			rest += 2;
			rest_len -= 2;
		}
	}

	/* Codex refuses queries and fragments, even empty ones. */
	for (i = 0; i < rest_len; i++) {
		if (rest[i] == '?') {
			snprintf(msg, msg_size, "query parameters are not allowed in path URIs");
			return -1;
		}
		if (rest[i] == '#') {
			snprintf(msg, msg_size, "fragments are not allowed in path URIs");
			return -1;
		}
	}

	/* Path segments, `.` and `..` resolved as the URL parser does (never above the root). */
	/* Storage from the start: the segments below point into ser.data even when empty. */
	if (ward__buf_init(&ser, rest_len * 3 + host_len + 16) < 0 ||
	    ward__buf_init(&path, rest_len + 2) < 0 || ward__buf_reserve(&ser, 1) < 0 ||
	    ward__buf_reserve(&path, 1) < 0)
		goto oom;
	segs = calloc(rest_len + 2, sizeof(*segs));
	if (!segs)
		goto oom;
	{
		/* The escaped form of every segment, appended to ser as segments are accepted. */
		size_t p = (rest_len > 0 && (rest[0] == '/' || rest[0] == '\\')) ? 1 : 0;
		bool more = true;

		while (more) {
			size_t q = p;

			while (q < rest_len && rest[q] != '/' && rest[q] != '\\')
				q++;
			more = q < rest_len;
			if (double_dot(rest + p, q - p)) {
				bool keep_drive = n_segs == 1 &&
					drive_letter((const char *)ser.data + segs[0].off,
						     segs[0].len);

				if (n_segs > 0 && !keep_drive) {
					n_segs--;
					ser.len = segs[n_segs].off;
				}
				if (!more)
					segs[n_segs++] = (struct seg){ser.len, 0};
			} else if (single_dot(rest + p, q - p)) {
				if (!more)
					segs[n_segs++] = (struct seg){ser.len, 0};
			} else {
				size_t off = ser.len;

				for (size_t k = p; k < q; k++) {
					uint8_t c = (uint8_t)rest[k];

					if (path_escape(c))
						ward__buf_printf(&ser, "%%%02X", c);
					else
						ward__buf_append_byte(&ser, c);
				}
				if (n_segs == 0 &&
				    drive_letter((const char *)ser.data + off, ser.len - off))
					ser.data[off + 1] = ':';
				segs[n_segs++] = (struct seg){off, ser.len - off};
			}
			p = q + 1;
		}
	}

	/* Decode each segment; the native path is the segments joined, then normalised. */
	{
		struct ward__buf uri;
		bool nul = false;
		int rr;

		if (ward__buf_init(&uri, ser.len + host_len + n_segs + 16) < 0)
			goto oom;
		rr = ward__buf_append_str(&uri, "file://");
		if (rr >= 0 && host_len)
			rr = ward__buf_append(&uri, host, host_len);
		for (size_t k = 0; rr >= 0 && k < n_segs; k++) {
			rr = ward__buf_append_byte(&uri, '/');
			if (rr >= 0)
				rr = ward__buf_append(&uri, ser.data + segs[k].off, segs[k].len);
		}
		if (rr >= 0 && n_segs == 0)
			rr = ward__buf_append_byte(&uri, '/');
		if (rr < 0) {
			ward__buf_release(&uri);
			goto oom;
		}
		for (size_t k = 0; k < n_segs; k++) {
			const char *t = (const char *)ser.data + segs[k].off;

			ward__buf_append_byte(&path, '/');
			for (size_t j = 0; j < segs[k].len; j++) {
				int hi = t[j] == '%' && j + 2 < segs[k].len ? ward__hexval(t[j + 1])
									    : -1,
				    lo = hi >= 0 ? ward__hexval(t[j + 2]) : -1;

				if (hi >= 0 && lo >= 0) {
					uint8_t c = (uint8_t)(hi * 16 + lo);

					if (c == 0)
						nul = true;
					ward__buf_append_byte(&path, c);
					j += 2;
				} else {
					ward__buf_append_byte(&path, (uint8_t)t[j]);
				}
			}
		}
		if (nul) {
			uri_message(msg, msg_size, (const char *)uri.data);
			ward__buf_release(&uri);
			goto out;
		}
		if (host_len ||
		    (n_segs > 0 &&
		     drive_letter((const char *)ser.data + segs[0].off, segs[0].len))) {
			*ret_code = WARD_XFS_INVALID_REQUEST;
			uri_message(msg, msg_size, (const char *)uri.data);
			ward__buf_release(&uri);
			goto out;
		}
		ward__buf_release(&uri);
	}

	/* Components: empty and `.` dropped, `..` resolved lexically (Codex's AbsolutePathBuf). */
	{
		char *out = malloc(path.len + 2);
		size_t o = 0, p = 0;
		const char *t = path.data ? (const char *)path.data : "";

		if (!out)
			goto oom;
		while (p < path.len) {
			size_t q;

			while (p < path.len && t[p] == '/')
				p++;
			q = p;
			while (q < path.len && t[q] != '/')
				q++;
			if (q == p)
				break;
			if (q - p == 1 && t[p] == '.') {
				/* nothing */
			} else if (q - p == 2 && t[p] == '.' && t[p + 1] == '.') {
				while (o > 0 && out[o - 1] != '/')
					o--;
				if (o > 0)
					o--;
			} else {
				out[o++] = '/';
				memcpy(out + o, t + p, q - p);
				o += q - p;
			}
			p = q;
		}
		if (o == 0)
			out[o++] = '/';
		out[o] = '\0';
		*ret_path = out;
		r = 0;
	}
out:
	ward__buf_release(&ser);
	ward__buf_release(&path);
	return r;
oom:
	ward__buf_release(&ser);
	ward__buf_release(&path);
	*ret_code = WARD_XFS_INTERNAL;
	snprintf(msg, msg_size, "%s", ward__xfs_strerror(ENOMEM));
	return -1;
}

char *ward__xfs_path_to_uri(const char *path)
{
	struct ward__buf b;
	const uint8_t *p = (const uint8_t *)path;
	int r;

	if (ward__buf_init(&b, strlen(path) * 3 + 16) < 0)
		return NULL;
	r = ward__buf_append_str(&b, "file://");
	for (; r >= 0 && *p; p++) {
		/*
		 * Url::from_file_path escapes a segment with the path set, % and the
		 * backslash (a separator to a URL parser).
		 */
		if (*p == '/' || !(*p < 0x20 || *p > 0x7E || strchr(" \"#<>?`{}%\\", *p)))
			r = ward__buf_append_byte(&b, *p);
		else
			r = ward__buf_printf(&b, "%%%02X", *p);
	}
	if (r < 0) {
		ward__buf_release(&b);
		return NULL;
	}
	return (char *)ward__buf_steal(&b, NULL);
}
