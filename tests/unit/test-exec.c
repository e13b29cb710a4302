/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"

#include "basic/buf.h"
#include "basic/cleanup.h"
#include "exec/exec.h"
#include "ward/ward.h"

/* ------------------------------------------------------------ capture */

/* Deterministic bytes in which any reordering or loss shows (an LCG, all 256 values). */
static uint8_t *pattern(size_t n)
{
	uint8_t *p = malloc(n ? n : 1);
	uint32_t x = 12345;

	if (!p)
		abort();
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
	return p;
}

/* What a capture of cap C must hold after data[0..total): the reference model. */
static void expected(const uint8_t *data, size_t total, size_t cap, struct ward__buf *out)
{
	size_t head = cap / 2, tail = cap - cap / 2;

	ward__buf_init(out, total + WARD_CAPTURE_MARKER_MAX);
	if (total <= cap) {
		ward__buf_append(out, data, total);
		return;
	}
	ward__buf_append(out, data, head);
	ward__buf_printf(out, "\n... %zu bytes omitted ...\n", total - cap);
	ward__buf_append(out, data + total - tail, tail);
}

static void check_capture(size_t cap, size_t total, size_t chunk)
{
	struct ward__capture c;
	struct ward__buf want;
	uint8_t *data = pattern(total), *got;
	size_t got_len;
	uint64_t omitted;

	ASSERT_OK(ward__capture_init(&c, cap));
	for (size_t off = 0; off < total; off += chunk) {
		/* Vary the chunk a little so that ring wraps land everywhere. */
		size_t n = MIN(total - off, chunk);

		ASSERT_OK(ward__capture_append(&c, data + off, n));
		/* Memory bounded: never more than the cap plus the marker room (and the NUL). */
		ASSERT_LE(c.buf.alloc, cap + WARD_CAPTURE_MARKER_MAX + 1);
	}
	ASSERT_EQ(ward__capture_omitted(&c), total > cap ? total - cap : 0);
	ASSERT_OK(ward__capture_finish(&c, &got, &got_len, &omitted));
	ASSERT_EQ(omitted, total > cap ? total - cap : 0);
	expected(data, total, cap, &want);
	if (got_len != want.len || memcmp(got, want.data, got_len) != 0)
		tap_fail(__FILE__, __LINE__,
			 "cap %zu total %zu chunk %zu: capture differs (len %zu, want %zu)", cap,
			 total, chunk, got_len, want.len);
	ASSERT_EQ(got[got_len], 0);
	free(got);
	free(data);
	ward__buf_release(&want);
	ward__capture_release(&c);
}

TEST(capture_marker_format)
{
	char m[WARD_CAPTURE_MARKER_MAX];
	size_t n = ward__capture_marker(123, m);

	ASSERT_STREQ(m, "\n... 123 bytes omitted ...\n");
	ASSERT_EQ(n, strlen("\n... 123 bytes omitted ...\n"));
	/* The largest count still fits the marker room. */
	n = ward__capture_marker(UINT64_MAX, m);
	ASSERT_STREQ(m, "\n... 18446744073709551615 bytes omitted ...\n");
	ASSERT_TRUE(n < WARD_CAPTURE_MARKER_MAX);
}

TEST(capture_cap_limits)
{
	struct ward__capture c;

	ASSERT_EQ(ward__capture_init(&c, 63), -EINVAL);
	ASSERT_EQ(ward__capture_init(&c, WARD_OUTPUT_CAP_MAX + 1), -EINVAL);
	ASSERT_OK(ward__capture_init(&c, 64));
	ASSERT_EQ(c.head_cap, 32);
	ASSERT_EQ(c.tail_cap, 32);
	ward__capture_release(&c);
	/* An odd cap: the tail gets the extra byte, head + tail == cap. */
	ASSERT_OK(ward__capture_init(&c, 65));
	ASSERT_EQ(c.head_cap, 32);
	ASSERT_EQ(c.tail_cap, 33);
	ward__capture_release(&c);
}

TEST(capture_exact_boundaries)
{
	static const size_t caps[] = {64, 65, 100, 4096};
	static const size_t chunks[] = {1, 3, 7, 31, 64, 65, 1000, 65536};

	for (size_t i = 0; i < ELEMENTSOF(caps); i++) {
		size_t cap = caps[i];
		size_t totals[] = {0,	    1,		 cap / 2 - 1, cap / 2, cap / 2 + 1,
				   cap - 1, cap,	 cap + 1,     cap + 2, 2 * cap - 1,
				   2 * cap, 3 * cap + 7, 10 * cap + 3};

		for (size_t t = 0; t < ELEMENTSOF(totals); t++)
			for (size_t k = 0; k < ELEMENTSOF(chunks); k++)
				check_capture(cap, totals[t], chunks[k]);
	}
}

TEST(capture_default_cap_boundaries)
{
	size_t cap = WARD_OUTPUT_CAP_DEFAULT;

	check_capture(cap, cap - 1, 65536);
	check_capture(cap, cap, 65536);
	check_capture(cap, cap + 1, 65536);
	check_capture(cap, cap + 1, 4093);
}

TEST(capture_10mb)
{
	struct ward__capture c;
	size_t cap = WARD_OUTPUT_CAP_DEFAULT, total = 10 * 1000 * 1000;
	uint8_t *got;
	size_t len;
	uint64_t omitted;

	check_capture(cap, total, 65536);
	check_capture(cap, total, 4099);
	/* One append larger than the whole cap. */
	check_capture(cap, total, total);

	/* Bounded memory with a much larger flood, fed from one reused 64 KiB buffer. */
	uint8_t *chunk = pattern(65536);

	ASSERT_OK(ward__capture_init(&c, cap));
	for (size_t i = 0; i < 4096; i++) /* 256 MiB */
		ASSERT_OK(ward__capture_append(&c, chunk, 65536));
	ASSERT_LE(c.buf.alloc, cap + WARD_CAPTURE_MARKER_MAX + 1);
	ASSERT_OK(ward__capture_finish(&c, &got, &len, &omitted));
	ASSERT_EQ(omitted, (uint64_t)4096 * 65536 - cap);
	ASSERT_EQ(len, cap + strlen("\n... 267386880 bytes omitted ...\n"));
	/* The tail is the last cap/2 bytes of the stream: eight copies of the chunk. */
	for (size_t off = len - cap / 2; off < len; off += 65536)
		ASSERT_EQ(memcmp(got + off, chunk, 65536), 0);
	ASSERT_EQ(memcmp(got, chunk, 65536), 0);
	free(got);
	free(chunk);
}

TEST(capture_interleaved_aggregate)
{
	/* What exec.c does per read: the stream capture and the aggregated one, in read order. */
	struct ward__capture out, err, all;
	uint8_t *p;
	size_t len;

	ASSERT_OK(ward__capture_init(&out, 64));
	ASSERT_OK(ward__capture_init(&err, 64));
	ASSERT_OK(ward__capture_init(&all, 64));
	static const char *const chunks[] = {"o1 ", "e1 ", "o2 ", "e2 ", "o3"};
	for (size_t i = 0; i < ELEMENTSOF(chunks); i++) {
		ASSERT_OK(ward__capture_append(chunks[i][0] == 'o' ? &out : &err, chunks[i],
					       strlen(chunks[i])));
		ASSERT_OK(ward__capture_append(&all, chunks[i], strlen(chunks[i])));
	}
	ASSERT_OK(ward__capture_finish(&all, &p, &len, NULL));
	ASSERT_STREQ((char *)p, "o1 e1 o2 e2 o3");
	free(p);
	ASSERT_OK(ward__capture_finish(&out, &p, &len, NULL));
	ASSERT_STREQ((char *)p, "o1 o2 o3");
	free(p);
	ASSERT_OK(ward__capture_finish(&err, &p, &len, NULL));
	ASSERT_STREQ((char *)p, "e1 e2 ");
	free(p);
}

/* ------------------------------------------------------------ environment */

static const char *env_get(char **envp, const char *name)
{
	size_t n = strlen(name);

	for (char **e = envp; *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

static size_t env_count(char **envp)
{
	size_t n = 0;

	while (envp[n])
		n++;
	return n;
}

static void test_env_setup(void)
{
	clearenv();
	setenv("PATH", "/usr/bin:/bin", 1);
	setenv("HOME", "/home/u", 1);
	setenv("LANG", "C.UTF-8", 1);
	setenv("USER", "u", 1);
	setenv("EDITOR", "vi", 1);
	setenv("OPENAI_API_KEY", "sk-1", 1);
	setenv("GITHUB_TOKEN", "ghp", 1);
	setenv("db_secret_file", "/s", 1);
	setenv("MONKEY", "banana", 1);
	setenv("CARGO_HOME", "/c", 1);
}

static struct ward_policy *policy_with_network(bool on)
{
	struct ward_policy *p;

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_network(p, on));
	return p;
}

TEST(env_defaults_inherit_all_with_markers)
{
	_cleanup_strv_free_ char **envp = NULL;

	test_env_setup();
	ASSERT_OK(ward__exec_env_build(NULL, NULL, &envp));
	ASSERT_STREQ(env_get(envp, "PATH"), "/usr/bin:/bin");
	ASSERT_STREQ(env_get(envp, "EDITOR"), "vi");
	/* Default excludes are off by default (as Codex's ignore_default_excludes=true). */
	ASSERT_STREQ(env_get(envp, "OPENAI_API_KEY"), "sk-1");
	ASSERT_STREQ(env_get(envp, "GITHUB_TOKEN"), "ghp");
	ASSERT_STREQ(env_get(envp, "WARD_SANDBOX"), "1");
	/* No policy: treated as network off. */
	ASSERT_STREQ(env_get(envp, "WARD_SANDBOX_NETWORK_DISABLED"), "1");
	ASSERT_STREQ(env_get(envp, "CODEX_SANDBOX_NETWORK_DISABLED"), "1");
	ASSERT_EQ(env_count(envp), 10 + 3);
}

TEST(env_network_markers_follow_the_policy)
{
	_cleanup_strv_free_ char **on = NULL, **off = NULL;
	struct ward_policy *pon = policy_with_network(true), *poff = policy_with_network(false);

	test_env_setup();
	ASSERT_OK(ward__exec_env_build(NULL, pon, &on));
	ASSERT_OK(ward__exec_env_build(NULL, poff, &off));
	ASSERT_STREQ(env_get(on, "WARD_SANDBOX"), "1");
	ASSERT_TRUE(env_get(on, "WARD_SANDBOX_NETWORK_DISABLED") == NULL);
	ASSERT_TRUE(env_get(on, "CODEX_SANDBOX_NETWORK_DISABLED") == NULL);
	ASSERT_STREQ(env_get(off, "WARD_SANDBOX_NETWORK_DISABLED"), "1");
	ASSERT_STREQ(env_get(off, "CODEX_SANDBOX_NETWORK_DISABLED"), "1");
	ward_policy_free(pon);
	ward_policy_free(poff);
}

TEST(env_inherit_core)
{
	_cleanup_strv_free_ char **envp = NULL;
	struct ward_run_options *o;

	test_env_setup();
	setenv("path", "lowercase-is-not-core", 1);
	ASSERT_OK(ward_run_options_new(&o));
	ASSERT_OK(ward_run_options_set_env_inherit(o, WARD_ENV_INHERIT_CORE));
	ASSERT_OK(ward__exec_env_build(o, NULL, &envp));
	ASSERT_STREQ(env_get(envp, "PATH"), "/usr/bin:/bin");
	ASSERT_STREQ(env_get(envp, "HOME"), "/home/u");
	ASSERT_STREQ(env_get(envp, "LANG"), "C.UTF-8");
	ASSERT_STREQ(env_get(envp, "USER"), "u");
	ASSERT_TRUE(env_get(envp, "EDITOR") == NULL);
	ASSERT_TRUE(env_get(envp, "OPENAI_API_KEY") == NULL);
	ASSERT_TRUE(env_get(envp, "path") == NULL);
	ASSERT_EQ(env_count(envp), 4 + 3);
	ward_run_options_free(o);
}

TEST(env_inherit_none_with_set)
{
	_cleanup_strv_free_ char **envp = NULL;
	struct ward_run_options *o;

	test_env_setup();
	ASSERT_OK(ward_run_options_new(&o));
	ASSERT_OK(ward_run_options_set_env_inherit(o, WARD_ENV_INHERIT_NONE));
	ASSERT_OK(ward_run_options_env_set(o, "A", "1"));
	ASSERT_OK(ward_run_options_env_set(o, "B", "x=y"));
	ASSERT_OK(ward_run_options_env_set(o, "A", "2")); /* replaces */
	ASSERT_OK(ward_run_options_env_set(o, "EMPTY", ""));
	ASSERT_EQ(ward_run_options_env_set(o, "BAD=NAME", "v"), -EINVAL);
	ASSERT_EQ(ward_run_options_env_set(o, "", "v"), -EINVAL);
	ASSERT_OK(ward__exec_env_build(o, NULL, &envp));
	ASSERT_STREQ(env_get(envp, "A"), "2");
	ASSERT_STREQ(env_get(envp, "B"), "x=y");
	ASSERT_STREQ(env_get(envp, "EMPTY"), "");
	ASSERT_TRUE(env_get(envp, "PATH") == NULL);
	ASSERT_EQ(env_count(envp), 3 + 3);
	ward_run_options_free(o);
}

TEST(env_default_excludes_when_enabled)
{
	_cleanup_strv_free_ char **envp = NULL;
	struct ward_run_options *o;

	test_env_setup();
	ASSERT_OK(ward_run_options_new(&o));
	ASSERT_OK(ward_run_options_set_env_default_excludes(o, true));
	ASSERT_OK(ward__exec_env_build(o, NULL, &envp));
	ASSERT_TRUE(env_get(envp, "OPENAI_API_KEY") == NULL);
	ASSERT_TRUE(env_get(envp, "GITHUB_TOKEN") == NULL);
	/* Case-insensitive. */
	ASSERT_TRUE(env_get(envp, "db_secret_file") == NULL);
	/* *KEY* is a substring match: MONKEY goes too, as in Codex. */
	ASSERT_TRUE(env_get(envp, "MONKEY") == NULL);
	ASSERT_STREQ(env_get(envp, "EDITOR"), "vi");
	ASSERT_STREQ(env_get(envp, "PATH"), "/usr/bin:/bin");
	ward_run_options_free(o);
}

TEST(env_exclude_include_only_set_order)
{
	_cleanup_strv_free_ char **envp = NULL;
	struct ward_run_options *o;

	test_env_setup();
	ASSERT_OK(ward_run_options_new(&o));
	ASSERT_OK(ward_run_options_env_exclude(o, "cargo_*")); /* case-insensitive */
	ASSERT_OK(ward_run_options_env_include_only(o, "PATH"));
	ASSERT_OK(ward_run_options_env_include_only(o, "*_HOME"));
	ASSERT_OK(ward_run_options_env_include_only(o, "H?ME"));
	/* set comes after include_only: a variable named explicitly always passes. */
	ASSERT_OK(ward_run_options_env_set(o, "EXTRA", "e"));
	/* The markers come last: set cannot hide the sandbox. */
	ASSERT_OK(ward_run_options_env_set(o, "WARD_SANDBOX", "0"));
	ASSERT_OK(ward__exec_env_build(o, NULL, &envp));
	ASSERT_STREQ(env_get(envp, "PATH"), "/usr/bin:/bin");
	ASSERT_STREQ(env_get(envp, "HOME"), "/home/u");
	ASSERT_TRUE(env_get(envp, "CARGO_HOME") == NULL);
	ASSERT_TRUE(env_get(envp, "EDITOR") == NULL);
	ASSERT_TRUE(env_get(envp, "LANG") == NULL);
	ASSERT_STREQ(env_get(envp, "EXTRA"), "e");
	ASSERT_STREQ(env_get(envp, "WARD_SANDBOX"), "1");
	ASSERT_EQ(env_count(envp), 4 + 2);
	ward_run_options_free(o);
}

TEST(env_first_duplicate_wins_and_malformed_dropped)
{
	static char e1[] = "A=first", e2[] = "A=second", e3[] = "NOEQUALS", e4[] = "=empty",
		    e5[] = "B=b";
	static char *fake[] = {e1, e2, e3, e4, e5, NULL};
	_cleanup_strv_free_ char **envp = NULL;
	extern char **environ;

	environ = fake;
	ASSERT_OK(ward__exec_env_build(NULL, NULL, &envp));
	ASSERT_STREQ(env_get(envp, "A"), "first");
	ASSERT_STREQ(env_get(envp, "B"), "b");
	ASSERT_EQ(env_count(envp), 2 + 3);
}

TEST(env_caps)
{
	_cleanup_strv_free_ char **envp = NULL;
	struct ward_run_options *o;
	_cleanup_free_ char *big = malloc(WARD_ENV_MAX_BYTES);
	char name[32];

	ASSERT_TRUE(big != NULL);
	clearenv();
	/* Too many variables: 4096 inherited plus the markers. */
	for (int i = 0; i < WARD_ENV_MAX_VARS; i++) {
		snprintf(name, sizeof(name), "V%d", i);
		setenv(name, "x", 1);
	}
	ASSERT_EQ(ward__exec_env_build(NULL, NULL, &envp), -E2BIG);
	/* 4096 - 3 leaves room for the three markers exactly. */
	unsetenv("V0");
	unsetenv("V1");
	unsetenv("V2");
	ASSERT_OK(ward__exec_env_build(NULL, NULL, &envp));
	ASSERT_EQ(env_count(envp), WARD_ENV_MAX_VARS);
	strv_freep(&envp);
	envp = NULL;

	/* Too many bytes: one value of almost 1 MiB plus the markers. */
	clearenv();
	memset(big, 'v', WARD_ENV_MAX_BYTES - 1);
	big[WARD_ENV_MAX_BYTES - 1] = '\0';
	ASSERT_OK(ward_run_options_new(&o));
	ASSERT_EQ(ward_run_options_env_set(o, "BIG", big), -E2BIG);
	big[WARD_ENV_MAX_BYTES - 64] = '\0';
	ASSERT_OK(ward_run_options_env_set(o, "BIG", big));
	ASSERT_EQ(ward__exec_env_build(o, NULL, &envp), -E2BIG);
	ward_run_options_free(o);
}

/* ------------------------------------------------------------ options */

TEST(options_validation)
{
	struct ward_run_options *o;
	static const char *const argv[] = {"echo", "hi", NULL};
	static const char *const empty[] = {NULL};

	ASSERT_OK(ward_run_options_new(&o));
	ASSERT_EQ(o->max_output, WARD_OUTPUT_CAP_DEFAULT);
	ASSERT_EQ(o->stdin_fd, -1);
	ASSERT_EQ(ward_run_options_set_max_output(o, 63), -ERANGE);
	ASSERT_OK(ward_run_options_set_max_output(o, 64));
	ASSERT_EQ(ward_run_options_set_max_output(o, WARD_OUTPUT_CAP_MAX + 1), -ERANGE);
	ASSERT_EQ(ward_run_options_set_argv(o, empty), -EINVAL);
	ASSERT_OK(ward_run_options_set_argv(o, argv));
	ASSERT_STREQ(o->argv[1], "hi");
	ASSERT_TRUE(o->argv[2] == NULL);
	ASSERT_EQ(ward_run_options_set_stdin(o, NULL, 1), -EINVAL);
	ASSERT_OK(ward_run_options_set_stdin(o, "abc", 3));
	ASSERT_TRUE(o->have_stdin_data);
	ASSERT_OK(ward_run_options_set_stdin_fd(o, 0));
	ASSERT_FALSE(o->have_stdin_data);
	ASSERT_EQ(o->stdin_fd, 0);
	ASSERT_EQ(ward_run_options_set_stdin(o, "x", WARD_STDIN_MAX + 1), -E2BIG);
	ASSERT_EQ(ward_run_options_set_env_inherit(o, (enum ward_env_inherit)7), -EINVAL);
	ASSERT_EQ(ward_run_options_env_exclude(o, ""), -EINVAL);
	for (int i = 0; i < WARD_ENV_MAX_PATTERNS; i++)
		ASSERT_OK(ward_run_options_env_exclude(o, "X*"));
	ASSERT_EQ(ward_run_options_env_exclude(o, "X*"), -E2BIG);
	ward_run_options_free(o);
	ward_run_options_free(NULL);
}

/* ------------------------------------------------------------ JSON */

static char *json_quote(const void *s, size_t len)
{
	struct ward__buf b;

	ward__buf_init(&b, 1 << 20);
	ASSERT_OK(ward__json_append_string(&b, s, len));
	return (char *)ward__buf_steal(&b, NULL);
}

#define ASSERT_JSON_STRING(in, want)                                      \
	do {                                                              \
		_cleanup_free_ char *_g = json_quote(in, sizeof(in) - 1); \
		ASSERT_STREQ(_g, want);                                   \
	} while (0)

TEST(json_string_escapes)
{
	ASSERT_JSON_STRING("plain", "\"plain\"");
	ASSERT_JSON_STRING("", "\"\"");
	ASSERT_JSON_STRING("a\"b\\c", "\"a\\\"b\\\\c\"");
	ASSERT_JSON_STRING("\n\r\t\b\f", "\"\\n\\r\\t\\b\\f\"");
	ASSERT_JSON_STRING("\x01\x1f\x7f", "\"\\u0001\\u001f\x7f\"");
	ASSERT_JSON_STRING("a\0b", "\"a\\u0000b\"");
	ASSERT_JSON_STRING("/", "\"/\"");
}

TEST(json_string_utf8)
{
	/* Valid sequences of every length are kept as they are. */
	ASSERT_JSON_STRING("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
			   "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
	ASSERT_JSON_STRING("\xef\xbf\xbf\xf4\x8f\xbf\xbf", "\"\xef\xbf\xbf\xf4\x8f\xbf\xbf\"");
	/* A stray byte: one U+FFFD. */
	ASSERT_JSON_STRING("a\xff"
			   "b",
			   "\"a\xef\xbf\xbd"
			   "b\"");
	ASSERT_JSON_STRING("\x80", "\"\xef\xbf\xbd\"");
	/* A truncated sequence is one maximal subpart: one U+FFFD. */
	ASSERT_JSON_STRING("\xe2\x82", "\"\xef\xbf\xbd\"");
	ASSERT_JSON_STRING("\xe2\x82"
			   "x",
			   "\"\xef\xbf\xbd"
			   "x\"");
	ASSERT_JSON_STRING("\xf0\x9f\x98", "\"\xef\xbf\xbd\"");
	/* Overlongs, surrogates, beyond U+10FFFF: each byte is its own subpart. */
	ASSERT_JSON_STRING("\xc0\xaf", "\"\xef\xbf\xbd\xef\xbf\xbd\"");
	ASSERT_JSON_STRING("\xe0\x80\xaf", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
	ASSERT_JSON_STRING("\xed\xa0\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
	ASSERT_JSON_STRING("\xf4\x90\x80\x80",
			   "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
	ASSERT_JSON_STRING("\xf5\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\"");
}

TEST(json_string_random_bytes_parse)
{
	/* Whatever the bytes, the result is a JSON string that a strict parser accepts. */
	uint8_t buf[257];
	uint32_t x = 99;

	for (int round = 0; round < 20000; round++) {
		size_t n = (size_t)(round % (int)sizeof(buf));
		_cleanup_free_ char *s = NULL;
		json_error_t jerr;
		json_t *j;

		for (size_t i = 0; i < n; i++) {
			x = x * 1103515245u + 12345u;
			buf[i] = (uint8_t)(x >> 16);
			/* Bias towards UTF-8 lead and continuation bytes. */
			if ((x >> 8) % 3 == 0)
				buf[i] |= 0x80;
		}
		s = json_quote(buf, n);
		j = json_loads(s, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
		if (!j)
			tap_fail(__FILE__, __LINE__, "round %d: not JSON: %s", round, jerr.text);
		ASSERT_TRUE(json_is_string(j));
		/* Valid input round-trips exactly. */
		json_decref(j);
	}
}

static char *b64(const char *s)
{
	struct ward__buf b;

	ward__buf_init(&b, 1 << 20);
	ASSERT_OK(ward__json_append_base64(&b, s, strlen(s)));
	return (char *)ward__buf_steal(&b, NULL);
}

TEST(json_base64_rfc4648_vectors)
{
	static const char *const v[][2] = {
		{"", "\"\""},
		{"f", "\"Zg==\""},
		{"fo", "\"Zm8=\""},
		{"foo", "\"Zm9v\""},
		{"foob", "\"Zm9vYg==\""},
		{"fooba", "\"Zm9vYmE=\""},
		{"foobar", "\"Zm9vYmFy\""},
	};

	for (size_t i = 0; i < ELEMENTSOF(v); i++) {
		_cleanup_free_ char *g = b64(v[i][0]);

		ASSERT_STREQ(g, v[i][1]);
	}
	/* All byte values, including the '+' and '/' digits. */
	struct ward__buf b;
	uint8_t all[3] = {0xfb, 0xff, 0xbf};

	ward__buf_init(&b, 64);
	ASSERT_OK(ward__json_append_base64(&b, all, 3));
	ASSERT_STREQ((char *)b.data, "\"+/+/\"");
	ward__buf_release(&b);
}

static struct ward_result *fake_result(void)
{
	struct ward_result *r = calloc(1, sizeof(*r));
	static const char out[] = "hello \xff\n";
	static const char err[] = "oops\n";

	ASSERT_TRUE(r != NULL);
	r->exit_code = 137;
	r->signal = SIGKILL;
	r->duration_ms = 42;
	r->out[WARD__OUT_STDOUT].data = (uint8_t *)strdup(out);
	r->out[WARD__OUT_STDOUT].len = sizeof(out) - 1;
	r->out[WARD__OUT_STDERR].data = (uint8_t *)strdup(err);
	r->out[WARD__OUT_STDERR].len = sizeof(err) - 1;
	r->out[WARD__OUT_AGGREGATED].data = (uint8_t *)strdup("hello \xff\noops\n");
	r->out[WARD__OUT_AGGREGATED].len = sizeof(out) - 1 + sizeof(err) - 1;
	r->out[WARD__OUT_AGGREGATED].omitted = 7;
	r->isolated = true;
	r->landlock_abi = 7;
	r->seccomp = true;
	return r;
}

TEST(result_json_shape)
{
	struct ward_result *r = fake_result();
	_cleanup_free_ char *s = NULL;
	json_error_t jerr;
	json_t *j, *d;
	bool denied;

	r->denials_exact = true;
	r->n_denials = 1;
	r->denials = calloc(1, sizeof(*r->denials));
	snprintf(r->denials[0].access, sizeof(r->denials[0].access), "write");
	snprintf(r->denials[0].syscall, sizeof(r->denials[0].syscall), "openat");
	r->denials[0].error = EROFS;
	r->denials[0].target = strdup("/etc/x\xfe");
	ASSERT_OK(ward_result_sandbox_denied(r, &denied));
	ASSERT_TRUE(denied);
	ASSERT_OK(ward_result_to_json(r, &s));
	j = json_loads(s, 0, &jerr);
	if (!j)
		tap_fail(__FILE__, __LINE__, "not JSON: %s: %s", jerr.text, s);
	ASSERT_EQ(json_integer_value(json_object_get(j, "exit_code")), 137);
	ASSERT_EQ(json_integer_value(json_object_get(j, "signal")), 9);
	ASSERT_STREQ(json_string_value(json_object_get(j, "signal_name")), "SIGKILL");
	ASSERT_TRUE(json_is_false(json_object_get(j, "timed_out")));
	ASSERT_TRUE(json_is_false(json_object_get(j, "cancelled")));
	ASSERT_EQ(json_integer_value(json_object_get(j, "duration_ms")), 42);
	ASSERT_STREQ(json_string_value(json_object_get(j, "stdout")), "hello \xef\xbf\xbd\n");
	ASSERT_STREQ(json_string_value(json_object_get(j, "stderr")), "oops\n");
	ASSERT_STREQ(json_string_value(json_object_get(j, "output")), "hello \xef\xbf\xbd\noops\n");
	ASSERT_EQ(json_integer_value(json_object_get(j, "output_omitted_bytes")), 7);
	ASSERT_EQ(json_integer_value(json_object_get(j, "stdout_omitted_bytes")), 0);
	ASSERT_TRUE(json_object_get(j, "stdout_base64") == NULL);
	ASSERT_TRUE(json_is_true(json_object_get(j, "sandbox_denied")));
	d = json_object_get(j, "denials");
	ASSERT_TRUE(json_is_array(d));
	ASSERT_EQ(json_array_size(d), 1);
	ASSERT_STREQ(json_string_value(json_object_get(json_array_get(d, 0), "access")), "write");
	ASSERT_STREQ(json_string_value(json_object_get(json_array_get(d, 0), "syscall")), "openat");
	ASSERT_STREQ(json_string_value(json_object_get(json_array_get(d, 0), "error")), "EROFS");
	ASSERT_STREQ(json_string_value(json_object_get(json_array_get(d, 0), "target")),
		     "/etc/x\xef\xbf\xbd");
	ASSERT_TRUE(json_is_null(json_object_get(j, "error")));
	d = json_object_get(j, "sandbox");
	ASSERT_STREQ(json_string_value(json_object_get(d, "isolation")), "namespaces");
	ASSERT_EQ(json_integer_value(json_object_get(d, "landlock_abi")), 7);
	ASSERT_TRUE(json_is_true(json_object_get(d, "seccomp")));
	ASSERT_STREQ(json_string_value(json_object_get(d, "network")), "off");
	ASSERT_TRUE(json_is_null(json_object_get(d, "fallback_missing")));
	json_decref(j);
	ward_result_free(r);
}

TEST(result_json_denials_unavailable_and_base64)
{
	struct ward_result *r = fake_result();
	_cleanup_free_ char *s = NULL;
	json_t *j;
	bool denied = true;

	r->signal = 0;
	r->exit_code = 0;
	r->json_base64 = true;
	r->denials_exact = false;
	r->isolated = false;
	snprintf(r->fallback_missing, sizeof(r->fallback_missing), "pid namespace");
	ASSERT_EQ(ward_result_sandbox_denied(r, &denied), -ENODATA);
	ASSERT_OK(ward_result_to_json(r, &s));
	j = json_loads(s, 0, NULL);
	ASSERT_TRUE(j != NULL);
	ASSERT_TRUE(json_is_null(json_object_get(j, "signal")));
	ASSERT_TRUE(json_is_null(json_object_get(j, "signal_name")));
	ASSERT_TRUE(json_is_null(json_object_get(j, "sandbox_denied")));
	ASSERT_STREQ(json_string_value(json_object_get(j, "denials")), "unavailable");
	/* The exact bytes, invalid UTF-8 included. */
	ASSERT_STREQ(json_string_value(json_object_get(j, "stdout_base64")), "aGVsbG8g/wo=");
	ASSERT_STREQ(json_string_value(json_object_get(j, "stderr_base64")), "b29wcwo=");
	ASSERT_TRUE(json_is_string(json_object_get(j, "output_base64")));
	ASSERT_STREQ(json_string_value(json_object_get(json_object_get(j, "sandbox"), "isolation")),
		     "landlock+seccomp");
	ASSERT_STREQ(json_string_value(
			     json_object_get(json_object_get(j, "sandbox"), "fallback_missing")),
		     "pid namespace");
	json_decref(j);

	/* Exact and nothing denied: false, and an empty list. */
	r->denials_exact = true;
	ASSERT_OK(ward_result_sandbox_denied(r, &denied));
	ASSERT_FALSE(denied);
	/* A tripped guard is a denial even where denials are otherwise unavailable. */
	r->denials_exact = false;
	r->guard_tripped = true;
	ASSERT_OK(ward_result_sandbox_denied(r, &denied));
	ASSERT_TRUE(denied);
	ward_result_free(r);
}

TEST(result_accessors)
{
	struct ward_result *r = fake_result();
	size_t len;
	const char *p;

	ASSERT_EQ(ward_result_exit_code(r), 137);
	ASSERT_EQ(ward_result_signal(r), 9);
	p = ward_result_output(r, WARD_STREAM_STDERR, &len);
	ASSERT_EQ(len, 5);
	ASSERT_STREQ(p, "oops\n");
	p = ward_result_output(r, 0, &len);
	ASSERT_EQ(len, 13);
	ASSERT_EQ(ward_result_omitted(r, 0), 7);
	ASSERT_TRUE(ward_result_output(r, 5, &len) == NULL);
	ASSERT_EQ(len, 0);
	ward_result_free(r);
	ward_result_free(NULL);
}

TEST(cancel_trigger_is_sticky_until_consumed)
{
	struct ward_cancel *c;
	uint64_t v = 0;

	ASSERT_OK(ward_cancel_new(&c));
	ward_cancel_trigger(c);
	ward_cancel_trigger(c);
	ASSERT_EQ(read(c->fd, &v, sizeof(v)), 8);
	ASSERT_EQ(v, 2);
	ASSERT_EQ(read(c->fd, &v, sizeof(v)), -1);
	ASSERT_EQ(errno, EAGAIN);
	ward_cancel_free(c);
	ward_cancel_free(NULL);
}

/* ------------------------------------------------------------ runs through the sandbox */

/*
 * The commands' workspace: a directory of this test's own, not /tmp. The
 * guard of a workspace watches it for autorun names (two levels down), and
 * cannot tell who made one: another test making a .codex beneath /tmp
 * would stop the command here as if it had.
 */
static char scratch[] = "/tmp/ward-test-exec.XXXXXX";

static struct ward_result *run_sh(const char *script, struct ward_run_options *o,
				  struct ward_cancel *c)
{
	const char *argv[] = {"/bin/sh", "-c", script, NULL};
	struct ward_error err = {0};
	struct ward_result *res = NULL;
	struct ward_policy *p;
	bool own = !o;
	int r;

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, scratch));
	r = ward_policy_resolve(p, &err);
	if (r < 0)
		tap_fail(__FILE__, __LINE__, "resolve: %s", err.message);
	if (own)
		ASSERT_OK(ward_run_options_new(&o));
	ASSERT_OK(ward_run_options_set_argv(o, argv));
	r = ward_run(p, o, c, &res, &err);
	if (r < 0)
		tap_fail(__FILE__, __LINE__, "ward_run: %s: %s", strerror(-r), err.message);
	if (own)
		ward_run_options_free(o);
	ward_policy_free(p);
	return res;
}

static const char *out_of(struct ward_result *r, int which)
{
	return ward_result_output(r, which, NULL);
}

TEST(run_exit_code_and_streams)
{
	struct ward_result *r = run_sh("printf out; printf err >&2; exit 3", NULL, NULL);

	ASSERT_EQ(ward_result_exit_code(r), 3);
	ASSERT_EQ(ward_result_signal(r), 0);
	ASSERT_FALSE(ward_result_timed_out(r));
	ASSERT_STREQ(out_of(r, WARD_STREAM_STDOUT), "out");
	ASSERT_STREQ(out_of(r, WARD_STREAM_STDERR), "err");
	ASSERT_EQ(strlen(out_of(r, 0)), 6);
	ward_result_free(r);
}

TEST(run_interleaving_order)
{
	struct ward_result *r =
		run_sh("echo 1; sleep 0.1; echo 2 >&2; sleep 0.1; echo 3; sleep 0.1; echo 4 >&2",
		       NULL, NULL);

	ASSERT_STREQ(out_of(r, 0), "1\n2\n3\n4\n");
	ASSERT_STREQ(out_of(r, WARD_STREAM_STDOUT), "1\n3\n");
	ASSERT_STREQ(out_of(r, WARD_STREAM_STDERR), "2\n4\n");
	ward_result_free(r);
}

TEST(run_signal_exit)
{
	struct ward_result *r = run_sh("kill -TERM $$", NULL, NULL);

	ASSERT_EQ(ward_result_signal(r), SIGTERM);
	ASSERT_EQ(ward_result_exit_code(r), 128 + SIGTERM);
	ward_result_free(r);
}

TEST(run_not_found_is_a_result)
{
	const char *argv[] = {"/nonexistent/ward-test-command", NULL};
	struct ward_error err = {0};
	struct ward_result *res = NULL;
	struct ward_run_options *o;
	struct ward_policy *p;

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_resolve(p, &err));
	ASSERT_OK(ward_run_options_new(&o));
	ASSERT_OK(ward_run_options_set_argv(o, argv));
	ASSERT_OK(ward_run(p, o, NULL, &res, &err));
	ASSERT_EQ(ward_result_exit_code(res), 127);
	ward_result_free(res);
	ward_run_options_free(o);
	ward_policy_free(p);
}

TEST(run_stdin_default_is_dev_null)
{
	struct ward_result *r = run_sh("cat; echo done", NULL, NULL);

	ASSERT_STREQ(out_of(r, WARD_STREAM_STDOUT), "done\n");
	ward_result_free(r);
}

TEST(run_stdin_bytes_larger_than_a_pipe)
{
	struct ward_run_options *o;
	struct ward_result *r;
	size_t n = 3 << 20, len;
	uint8_t *data = pattern(n);
	const void *got;

	ASSERT_OK(ward_run_options_new(&o));
	ASSERT_OK(ward_run_options_set_stdin(o, data, n));
	ASSERT_OK(ward_run_options_set_max_output(o, 4 << 20));
	r = run_sh("cat", o, NULL);
	got = ward_result_output(r, WARD_STREAM_STDOUT, &len);
	ASSERT_EQ(len, n);
	ASSERT_EQ(memcmp(got, data, n), 0);
	ASSERT_EQ(ward_result_exit_code(r), 0);
	ward_result_free(r);

	/* A command that reads one byte and exits: no SIGPIPE for us, a normal result. */
	r = run_sh("head -c 1 >/dev/null; echo ok", o, NULL);
	ASSERT_STREQ(out_of(r, WARD_STREAM_STDOUT), "ok\n");
	ASSERT_EQ(ward_result_exit_code(r), 0);
	ward_result_free(r);
	ward_run_options_free(o);
	free(data);
}

TEST(run_stdin_fd)
{
	struct ward_run_options *o;
	struct ward_result *r;
	int p[2];

	ASSERT_OK(pipe(p));
	ASSERT_EQ(write(p[1], "from-fd", 7), 7);
	close(p[1]);
	ASSERT_OK(ward_run_options_new(&o));
	ASSERT_OK(ward_run_options_set_stdin_fd(o, p[0]));
	r = run_sh("cat", o, NULL);
	ASSERT_STREQ(out_of(r, WARD_STREAM_STDOUT), "from-fd");
	/* The caller's fd is still the caller's. */
	ASSERT_TRUE(fcntl(p[0], F_GETFD) >= 0);
	ward_result_free(r);
	ward_run_options_free(o);
}

TEST(run_timeout_keeps_output)
{
	struct ward_run_options *o;
	struct ward_result *r;

	ASSERT_OK(ward_run_options_new(&o));
	ASSERT_OK(ward_run_options_set_timeout_ms(o, 300));
	r = run_sh("echo before; setsid sleep 100 & sleep 100", o, NULL);
	ASSERT_TRUE(ward_result_timed_out(r));
	ASSERT_EQ(ward_result_exit_code(r), 124);
	ASSERT_STREQ(out_of(r, WARD_STREAM_STDOUT), "before\n");
	ASSERT_GE(ward_result_duration_ms(r), 300);
	ASSERT_LE(ward_result_duration_ms(r), 5000);
	ward_result_free(r);
	ward_run_options_free(o);
}

TEST(run_background_holder_does_not_hang)
{
	struct ward_result *r = run_sh("sleep 100 & echo hi", NULL, NULL);

	ASSERT_STREQ(out_of(r, WARD_STREAM_STDOUT), "hi\n");
	ASSERT_EQ(ward_result_exit_code(r), 0);
	ASSERT_LE(ward_result_duration_ms(r), 3000);
	ward_result_free(r);
}

struct stream_count {
	size_t bytes[3];
	size_t calls;
	size_t cancel_after;
};

static int count_chunks(void *userdata, enum ward_stream stream, const void *data, size_t len)
{
	struct stream_count *c = userdata;

	(void)data;
	c->bytes[stream] += len;
	c->calls++;
	return c->cancel_after && c->bytes[1] + c->bytes[2] >= c->cancel_after;
}

TEST(run_output_callback_streams_and_cancels)
{
	struct stream_count c = {0};
	struct ward_run_options *o;
	struct ward_result *r;

	ASSERT_OK(ward_run_options_new(&o));
	ASSERT_OK(ward_run_options_set_output_callback(o, count_chunks, &c));
	r = run_sh("echo abc; echo de >&2", o, NULL);
	ASSERT_EQ(c.bytes[WARD_STREAM_STDOUT], 4);
	ASSERT_EQ(c.bytes[WARD_STREAM_STDERR], 3);
	ASSERT_FALSE(ward_result_cancelled(r));
	ward_result_free(r);

	/* Returning non-zero cancels: an endless writer stops. */
	c = (struct stream_count){.cancel_after = 1 << 20};
	r = run_sh("yes", o, NULL);
	ASSERT_TRUE(ward_result_cancelled(r));
	ASSERT_GE(c.bytes[WARD_STREAM_STDOUT], 1 << 20);
	ASSERT_EQ(ward_result_omitted(r, WARD_STREAM_STDOUT) + WARD_OUTPUT_CAP_DEFAULT,
		  c.bytes[WARD_STREAM_STDOUT]);
	ward_result_free(r);
	ward_run_options_free(o);
}

static struct ward_cancel *signal_cancel;

static void cancel_on_signal(int sig)
{
	(void)sig;
	ward_cancel_trigger(signal_cancel);
}

TEST(run_cancel_from_a_signal_handler)
{
	struct sigaction sa = {.sa_handler = cancel_on_signal};
	struct ward_result *r;
	pid_t killer;

	ASSERT_OK(ward_cancel_new(&signal_cancel));
	sigemptyset(&sa.sa_mask);
	ASSERT_OK(sigaction(SIGUSR1, &sa, NULL));
	killer = fork();
	if (killer == 0) {
		/* Late enough for "started" on a busy machine, long before the sleep ends. */
		usleep(1500 * 1000);
		kill(getppid(), SIGUSR1);
		_exit(0);
	}
	r = run_sh("echo started; sleep 100", NULL, signal_cancel);
	ASSERT_TRUE(ward_result_cancelled(r));
	ASSERT_FALSE(ward_result_timed_out(r));
	ASSERT_STREQ(out_of(r, WARD_STREAM_STDOUT), "started\n");
	ASSERT_LE(ward_result_duration_ms(r), 5000);
	ward_result_free(r);

	/* A trigger before the run cancels it at once. */
	ward_cancel_trigger(signal_cancel);
	r = run_sh("sleep 100", NULL, signal_cancel);
	ASSERT_TRUE(ward_result_cancelled(r));
	ward_result_free(r);
	ward_cancel_free(signal_cancel);
}

TEST(run_environment_markers)
{
	struct ward_result *r =
		run_sh("echo \"$WARD_SANDBOX:$CODEX_SANDBOX_NETWORK_DISABLED\"", NULL, NULL);

	ASSERT_STREQ(out_of(r, WARD_STREAM_STDOUT), "1:1\n");
	ward_result_free(r);
}

TEST(run_result_json_parses)
{
	struct ward_run_options *o;
	struct ward_result *r;
	_cleanup_free_ char *s = NULL;
	json_t *j;

	ASSERT_OK(ward_run_options_new(&o));
	ASSERT_OK(ward_run_options_set_json_base64(o, true));
	ASSERT_OK(ward_run_options_set_max_output(o, 64));
	r = run_sh("printf '\\377'; seq 1 100", o, NULL);
	ASSERT_OK(ward_result_to_json(r, &s));
	j = json_loads(s, 0, NULL);
	ASSERT_TRUE(j != NULL);
	ASSERT_EQ(json_integer_value(json_object_get(j, "exit_code")), 0);
	ASSERT_EQ(json_integer_value(json_object_get(j, "stdout_omitted_bytes")), 1 + 292 - 64);
	ASSERT_CONTAINS(json_string_value(json_object_get(j, "stdout")),
			"\n... 229 bytes omitted ...\n");
	ASSERT_TRUE(json_is_string(json_object_get(j, "stdout_base64")));
	json_decref(j);
	ward_result_free(r);
	ward_run_options_free(o);
}

/* ward_run() from several threads at once, quick commands: every run ends, exactly. */
struct thread_runs {
	const struct ward_policy *policy;
	int bad;
};

static void *thread_runs(void *arg)
{
	struct thread_runs *t = arg;
	struct ward_run_options *o = NULL;
	const char *const argv[] = {"sh", "-c", "echo x; exit 3", NULL};

	if (ward_run_options_new(&o) < 0 || ward_run_options_set_argv(o, argv) < 0) {
		t->bad++;
		return NULL;
	}
	for (int i = 0; i < 15; i++) {
		struct ward_result *r = NULL;
		struct ward_error e = {0};
		size_t len = 0;

		if (ward_run(t->policy, o, NULL, &r, &e) < 0) {
			t->bad++;
			continue;
		}
		ward_result_output(r, WARD_STREAM_STDOUT, &len);
		if (ward_result_exit_code(r) != 3 || len != 2)
			t->bad++;
		ward_result_free(r);
	}
	ward_run_options_free(o);
	return NULL;
}

TEST_TIMEOUT(concurrent_runs_from_threads, 60)
{
	struct ward_policy *p;
	struct ward_error err = {0};
	struct thread_runs t[3];
	pthread_t th[3];

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_resolve(p, &err));
	for (int i = 0; i < 3; i++) {
		t[i] = (struct thread_runs){.policy = p};
		ASSERT_EQ(pthread_create(&th[i], NULL, thread_runs, &t[i]), 0);
	}
	for (int i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		ASSERT_EQ(t[i].bad, 0);
	}
	ward_policy_free(p);
}

int main(void)
{
	return tap_main_in_scratch(scratch);
}
