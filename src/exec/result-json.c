/* SPDX-License-Identifier: MIT */
/*
 * A result as the JSON object of `ward run --json` (docs/json.md).
 *
 * Written by hand into one bounded buffer rather than through a jansson
 * tree: the outputs are the bulk of the object (up to three times the cap),
 * and a tree would hold a second and a third copy of them (the converted
 * string, then the dump) at the moment ward's memory must stay near the caps.
 * The object has a fixed shape, so the writer stays short.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "exec/exec.h"

/* ------------------------------------------------------------ strings */

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when s starts an invalid one; *bad gets
 * the length of the maximal invalid subpart to replace by one U+FFFD. */
static size_t utf8_seq(const uint8_t *s, size_t n, size_t *bad)
{
	uint8_t c = s[0], lo = 0x80, hi = 0xBF;
	size_t len;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		if (c == 0xE0)
			lo = 0xA0; /* overlong */
		else if (c == 0xED)
			hi = 0x9F; /* UTF-16 surrogates */
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		if (c == 0xF0)
			lo = 0x90; /* overlong */
		else if (c == 0xF4)
			hi = 0x8F; /* beyond U+10FFFF */
	} else {
		*bad = 1; /* a continuation byte, C0/C1 (overlong) or F5..FF */
		return 0;
	}
	for (size_t i = 1; i < len; i++) {
		if (i >= n || s[i] < lo || s[i] > hi) {
			*bad = i;
			return 0;
		}
		lo = 0x80;
		hi = 0xBF;
	}
	return len;
}

/*
 * How each ASCII byte is written: 0 as itself, else the character after the
 * backslash ('u' for "\u00XX"). RFC 8259 requires escaping '"', '\\' and
 * U+0000..U+001F; DEL and '/' may stay as they are.
 */
static const char json_ascii[128] = {
	['\0'] = 'u', [0x01] = 'u', [0x02] = 'u', [0x03] = 'u',	 [0x04] = 'u', [0x05] = 'u',
	[0x06] = 'u', [0x07] = 'u', ['\b'] = 'b', ['\t'] = 't',	 ['\n'] = 'n', [0x0b] = 'u',
	['\f'] = 'f', ['\r'] = 'r', [0x0e] = 'u', [0x0f] = 'u',	 [0x10] = 'u', [0x11] = 'u',
	[0x12] = 'u', [0x13] = 'u', [0x14] = 'u', [0x15] = 'u',	 [0x16] = 'u', [0x17] = 'u',
	[0x18] = 'u', [0x19] = 'u', [0x1a] = 'u', [0x1b] = 'u',	 [0x1c] = 'u', [0x1d] = 'u',
	[0x1e] = 'u', [0x1f] = 'u', ['"'] = '"',  ['\\'] = '\\',
};

/* Input bytes converted per step: the output of a step (at most 6 bytes per input byte, plus a
 * UTF-8 sequence running past the step's end) is reserved at once and written directly. */
#define JSON_STEP 4096

int ward__json_append_string(struct ward__buf *b, const void *data, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *s = data;
	size_t i = 0;
	int r;

	r = ward__buf_append_byte(b, '"');
	while (r >= 0 && i < len) {
		size_t end = MIN(len, i + JSON_STEP);
		uint8_t *o, *start;

		r = ward__buf_reserve(b, 6 * (end - i) + 8);
		if (r < 0)
			break;
		o = start = b->data + b->len;
		while (i < end) {
			uint8_t c = s[i];
			size_t seq, bad = 0;

			if (c < 0x80) {
				char e = json_ascii[c];

				i++;
				if (!e) {
					*o++ = c;
					continue;
				}
				*o++ = '\\';
				*o++ = (uint8_t)e;
				if (e == 'u') {
					*o++ = '0';
					*o++ = '0';
					*o++ = (uint8_t)hex[c >> 4];
					*o++ = (uint8_t)hex[c & 0xF];
				}
				continue;
			}
			seq = utf8_seq(s + i, len - i, &bad);
			if (seq > 0) {
				memcpy(o, s + i, seq);
				o += seq;
				i += seq;
			} else {
				/* Lossy: one U+FFFD per maximal invalid subpart; the base64 form keeps the bytes. */
				memcpy(o, "\xEF\xBF\xBD", 3);
				o += 3;
				i += bad;
			}
		}
		b->len += (size_t)(o - start);
		b->data[b->len] = '\0';
	}
	if (r >= 0)
		r = ward__buf_append_byte(b, '"');
	return r;
}

/*
 * Base64 by hand (RFC 4648 §4, padded): twenty lines, against a dependency on
 * libcrypto for one call, and EVP_EncodeBlock takes an int length.
 */
int ward__json_append_base64(struct ward__buf *b, const void *data, size_t len)
{
	static const char alphabet[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const uint8_t *s = data;
	size_t out_len = (len + 2) / 3 * 4;
	uint8_t *o;
	int r;

	r = ward__buf_reserve(b, out_len + 2);
	if (r < 0)
		return r;
	o = b->data + b->len;
	*o++ = '"';
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16;
		size_t left = len - i;

		if (left > 1)
			v |= (uint32_t)s[i + 1] << 8;
		if (left > 2)
			v |= s[i + 2];
		*o++ = (uint8_t)alphabet[(v >> 18) & 63];
		*o++ = (uint8_t)alphabet[(v >> 12) & 63];
		*o++ = left > 1 ? (uint8_t)alphabet[(v >> 6) & 63] : '=';
		*o++ = left > 2 ? (uint8_t)alphabet[v & 63] : '=';
	}
	*o++ = '"';
	b->len += out_len + 2;
	b->data[b->len] = '\0';
	return 0;
}

/* ------------------------------------------------------------ names */

static void signal_name(int sig, char *out, size_t size)
{
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev)
		snprintf(out, size, "SIG%s", abbrev);
	else if (sig >= SIGRTMIN && sig <= SIGRTMAX)
		snprintf(out, size, "SIGRTMIN+%d", sig - SIGRTMIN);
	else
		snprintf(out, size, "SIG%d", sig);
}

static const char *isolation(const struct ward_result *res)
{
	if (res->isolated)
		return "namespaces";
	/* danger-full-access: no layer at all, and the JSON must not suggest otherwise. */
	if (res->landlock_abi == 0 && !res->seccomp)
		return "none";
	return "landlock+seccomp";
}

/* ------------------------------------------------------------ the object */

static int key(struct ward__buf *b, const char *k)
{
	/* Keys are ASCII literals of this file: no escaping needed. */
	return ward__buf_printf(b, ",\"%s\":", k);
}

static int kv_bool(struct ward__buf *b, const char *k, bool v)
{
	int r = key(b, k);

	return r < 0 ? r : ward__buf_append_str(b, v ? "true" : "false");
}

static int kv_u64(struct ward__buf *b, const char *k, uint64_t v)
{
	int r = key(b, k);

	return r < 0 ? r : ward__buf_printf(b, "%" PRIu64, v);
}

static int kv_str(struct ward__buf *b, const char *k, const char *s)
{
	int r = key(b, k);

	if (r < 0)
		return r;
	if (!s)
		return ward__buf_append_str(b, "null");
	return ward__json_append_string(b, s, strlen(s));
}

static int kv_bytes(struct ward__buf *b, const char *k, const struct ward__output *o)
{
	int r = key(b, k);

	return r < 0 ? r
		     : ward__json_append_string(b, o->data ? o->data : (const uint8_t *)"", o->len);
}

static int kv_base64(struct ward__buf *b, const char *k, const struct ward__output *o)
{
	int r = key(b, k);

	return r < 0 ? r
		     : ward__json_append_base64(b, o->data ? o->data : (const uint8_t *)"", o->len);
}

static int denials_json(struct ward__buf *b, const struct ward_result *res)
{
	int r = key(b, "denials");

	if (r < 0)
		return r;
	/* Without an exact signal from the host, say so; never invent or guess (see ward.h). */
	if (!res->denials_exact)
		return ward__json_append_string(b, "unavailable", strlen("unavailable"));
	r = ward__buf_append_byte(b, '[');
	for (size_t i = 0; r >= 0 && i < res->n_denials; i++) {
		const struct ward__denial *d = &res->denials[i];
		const char *ename = d->error > 0 ? strerrorname_np(d->error) : NULL;
		char enumber[32];

		if (!ename) {
			snprintf(enumber, sizeof(enumber), "errno %d", d->error);
			ename = enumber;
		}
		r = ward__buf_append_str(b, i > 0 ? ",{\"access\":" : "{\"access\":");
		if (r >= 0)
			r = ward__json_append_string(b, d->access,
						     strnlen(d->access, sizeof(d->access)));
		if (r >= 0)
			r = key(b, "syscall");
		/* A tripped guard saw an entry appear, not a syscall fail: both are null then. */
		if (r >= 0 && !d->syscall[0])
			r = ward__buf_append_str(b, "null");
		else if (r >= 0)
			r = ward__json_append_string(b, d->syscall,
						     strnlen(d->syscall, sizeof(d->syscall)));
		if (r >= 0 && d->error == 0)
			r = ward__buf_append_str(b, ",\"error\":null");
		else if (r >= 0)
			r = kv_str(b, "error", ename);
		if (r >= 0)
			r = kv_str(b, "target", d->target ? d->target : "");
		/* Which protection refused it and why; absent when there is none to give. */
		if (r >= 0 && d->reason)
			r = kv_str(b, "reason", d->reason);
		if (r >= 0)
			r = ward__buf_append_byte(b, '}');
	}
	if (r >= 0)
		r = ward__buf_append_byte(b, ']');
	return r;
}

/* An upper bound of the object's size: every byte of a string may become "\u00XX" (6 bytes). */
static size_t json_bound(const struct ward_result *res)
{
	size_t n = 8192 +
		6 *
			(sizeof(res->error.message) + sizeof(res->error.hint) +
			 sizeof(res->error.stage) + sizeof(res->fallback_missing));

	for (size_t i = 0; i < WARD__OUT_N; i++) {
		n += 6 * res->out[i].len + 64;
		if (res->json_base64)
			n += (res->out[i].len + 2) / 3 * 4 + 64;
	}
	n += 4096; /* limits, usage, limit */
	for (size_t i = 0; i < res->n_denials; i++)
		n += 6 *
				(sizeof(res->denials[i].access) + sizeof(res->denials[i].syscall) +
				 (res->denials[i].reason ? strlen(res->denials[i].reason) : 0) +
				 (res->denials[i].target ? strlen(res->denials[i].target) : 0)) +
			128;
	return n;
}

WARD_PUBLIC int ward_result_to_json(const struct ward_result *result, char **ret_json)
{
	const struct ward_result *res = result;
	struct ward__buf b;
	bool denied = false;
	int r, d;

	if (!res || !ret_json)
		return -EINVAL;
	r = ward__buf_init(&b, MIN(json_bound(res), WARD_BUF_MAX_CAPACITY));
	if (r < 0)
		return r;

	r = ward__buf_printf(&b, "{\"exit_code\":%d", res->exit_code);
	if (r >= 0)
		r = key(&b, "signal");
	if (r >= 0) {
		char name[32];

		if (res->signal > 0) {
			signal_name(res->signal, name, sizeof(name));
			r = ward__buf_printf(&b, "%d,\"signal_name\":\"%s\"", res->signal, name);
		} else {
			r = ward__buf_append_str(&b, "null,\"signal_name\":null");
		}
	}
	if (r >= 0)
		r = kv_bool(&b, "timed_out", res->timed_out);
	if (r >= 0)
		r = kv_bool(&b, "cancelled", res->cancelled);
	if (r >= 0)
		r = kv_u64(&b, "duration_ms", res->duration_ms);
	if (r >= 0)
		r = kv_bytes(&b, "stdout", &res->out[WARD__OUT_STDOUT]);
	if (r >= 0)
		r = kv_bytes(&b, "stderr", &res->out[WARD__OUT_STDERR]);
	if (r >= 0)
		r = kv_bytes(&b, "output", &res->out[WARD__OUT_AGGREGATED]);
	if (r >= 0)
		r = kv_u64(&b, "stdout_omitted_bytes", res->out[WARD__OUT_STDOUT].omitted);
	if (r >= 0)
		r = kv_u64(&b, "stderr_omitted_bytes", res->out[WARD__OUT_STDERR].omitted);
	if (r >= 0)
		r = kv_u64(&b, "output_omitted_bytes", res->out[WARD__OUT_AGGREGATED].omitted);
	if (r >= 0 && res->json_base64) {
		r = kv_base64(&b, "stdout_base64", &res->out[WARD__OUT_STDOUT]);
		if (r >= 0)
			r = kv_base64(&b, "stderr_base64", &res->out[WARD__OUT_STDERR]);
		if (r >= 0)
			r = kv_base64(&b, "output_base64", &res->out[WARD__OUT_AGGREGATED]);
	}
	if (r >= 0) {
		r = key(&b, "sandbox_denied");
		d = ward_result_sandbox_denied(res, &denied);
		if (r >= 0)
			r = ward__buf_append_str(&b, d < 0 ? "null" : denied ? "true" : "false");
	}
	if (r >= 0)
		r = denials_json(&b, res);
	if (r >= 0)
		r = kv_u64(&b, "denials_dropped", res->denials_dropped);
	if (r >= 0)
		r = kv_bool(&b, "guard_tripped", res->guard_tripped);
	if (r >= 0 && res->guard_left[0])
		r = kv_str(&b, "guard_left", res->guard_left);
	if (r >= 0) {
		r = key(&b, "error");
		if (r >= 0 && !res->have_error) {
			r = ward__buf_append_str(&b, "null");
		} else if (r >= 0) {
			r = ward__buf_append_str(&b, "{\"stage\":");
			if (r >= 0)
				r = ward__json_append_string(
					&b, res->error.stage,
					strnlen(res->error.stage, sizeof(res->error.stage)));
			if (r >= 0)
				r = key(&b, "message");
			if (r >= 0)
				r = ward__json_append_string(
					&b, res->error.message,
					strnlen(res->error.message, sizeof(res->error.message)));
			if (r >= 0)
				r = kv_str(&b, "hint", res->error.hint[0] ? res->error.hint : NULL);
			if (r >= 0)
				r = ward__buf_append_byte(&b, '}');
		}
	}
	if (r >= 0)
		r = ward__buf_printf(
			&b,
			",\"sandbox\":{\"isolation\":\"%s\",\"landlock_abi\":%d,\"seccomp\":%s,\"network\":\"%s\"",
			isolation(res), res->landlock_abi, res->seccomp ? "true" : "false",
			res->network			 ? "on"
				: res->network_by_domain ? "by-domain"
							 : "off");
	if (r >= 0)
		r = kv_str(&b, "fallback_missing",
			   res->fallback_missing[0] ? res->fallback_missing : NULL);
	if (r >= 0)
		r = ward__buf_append_byte(&b, '}');
	if (r >= 0) {
		/* A few small members, through jansson like the servers' (the same words). */
		json_t *o = json_object();
		char *s = NULL;

		if (o)
			ward__limits_json_add(o, &res->limits);
		if (o)
			s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
		json_decref(o);
		if (!s)
			r = -ENOMEM;
		else if (strlen(s) > 2)
			r = ward__buf_printf(&b, ",%.*s", (int)(strlen(s) - 2), s + 1);
		free(s);
	}
	if (r >= 0)
		r = ward__buf_append_byte(&b, '}');
	if (r < 0) {
		ward__buf_release(&b);
		return r;
	}
	*ret_json = (char *)ward__buf_steal(&b, NULL);
	if (!*ret_json) {
		ward__buf_release(&b);
		return -ENOMEM;
	}
	return 0;
}

json_t *ward__json_string_lossy(const void *s, size_t len)
{
	struct ward__buf b;
	json_t *j = json_stringn(s, len);

	if (j)
		return j;
	/* Not valid UTF-8: each invalid sequence becomes U+FFFD, as in ward run --json. */
	if (len > (SIZE_MAX - 64) / 6 || ward__buf_init(&b, len * 6 + 64) < 0)
		return NULL;
	if (ward__json_append_string(&b, s, len) >= 0)
		j = json_loadb((const char *)b.data, b.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	ward__buf_release(&b);
	return j;
}

/* ------------------------------------------------------------ limits and usage */

static json_t *ms(uint64_t us)
{
	return json_integer((json_int_t)(us / 1000));
}

json_t *ward__limits_enforcement_json(const struct ward__limits_report *rep)
{
	json_t *o = json_object();

	for (int r = 0; o && rep->any && r < WARD_RES_N; r++) {
		const struct ward__limits *l = &rep->asked;
		bool asked = r == WARD_RES_MEMORY ? l->memory != 0
			: r == WARD_RES_PIDS	  ? l->pids != 0
			: r == WARD_RES_CPU	  ? l->cpu_milli != 0
						  : l->rlimit_set[r - WARD_RES_RLIMIT0];

		if (asked)
			json_object_set_new(o, ward__resource_name((enum ward__resource)r),
					    json_string(ward__enforce_name(rep->how[r])));
	}
	return o;
}

json_t *ward__usage_json(const struct ward__limits_report *rep)
{
	json_t *o;

	if (!rep->have_usage && !rep->have_memory_peak && !rep->have_pids_peak)
		return json_null();
	o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "cpu_user_ms", ms(rep->cpu_user_us));
	json_object_set_new(o, "cpu_system_ms", ms(rep->cpu_system_us));
	json_object_set_new(o, "memory_peak",
			    rep->have_memory_peak ? json_integer((json_int_t)rep->memory_peak)
						  : json_null());
	json_object_set_new(o, "max_rss", json_integer((json_int_t)rep->max_rss));
	json_object_set_new(o, "pids_peak",
			    rep->have_pids_peak ? json_integer((json_int_t)rep->pids_peak)
						: json_null());
	if (rep->asked.cpu_milli && rep->how[WARD_RES_CPU] != WARD_ENFORCE_NONE)
		json_object_set_new(o, "cpu_throttled_ms", ms(rep->cpu_throttled_us));
	return o;
}

json_t *ward__limit_hit_json(const struct ward__limits_report *rep)
{
	json_t *o;

	if (!rep->hit)
		return json_null();
	if (rep->hit_resource == WARD_RES_MEMORY)
		o = json_pack("{s:s, s:I, s:I, s:I}", "resource", "memory", "max",
			      (json_int_t)rep->hit_max, "peak", (json_int_t)rep->hit_peak, "killed",
			      (json_int_t)rep->hit_count);
	else
		o = json_pack("{s:s, s:I, s:I, s:I}", "resource", "pids", "max",
			      (json_int_t)rep->hit_max, "peak", (json_int_t)rep->hit_peak,
			      "refused", (json_int_t)rep->hit_count);
	/* The server's or the connection's total, not the process's own limit. */
	if (o && rep->hit_budget)
		json_object_set_new(o, "budget", json_true());
	return o;
}

void ward__limits_json_add(json_t *o, const struct ward__limits_report *rep)
{
	json_t *v;

	v = ward__limits_enforcement_json(rep);
	if (v)
		json_object_set_new(o, "limits", v);
	v = ward__usage_json(rep);
	if (v)
		json_object_set_new(o, "usage", v);
	v = ward__limit_hit_json(rep);
	if (v)
		json_object_set_new(o, "limit", v);
}
