/* SPDX-License-Identifier: MIT */
/*
 * Resource limits as a policy states them: --memory, --pids, --cpu, --rlimit
 * and the policy JSON's "limits". Only the values live here; how a host
 * enforces them (cgroup v2, cgroup v1, rlimits, or not at all) is
 * src/sandbox's business (limits.h there).
 *
 * DESIGN: a value that makes no sense is refused with the option's name and
 * the value, never clamped to something that does: `--memory 0` is not "no
 * limit", `--cpu 64` on a 2-CPU host is not "2", `12XB` is not 12 bytes. A
 * limit quietly different from the one asked for is a limit nobody asked for.
 */
#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "basic/error.h"
#include "basic/util.h"
#include "policy/policy.h"

static const struct {
	const char *name;
	int resource;
	bool size; /* a byte count (takes K/M/G/T) */
	bool zero_ok; /* 0 is a meaningful value (no core dumps) */
} rlimits[WARD_RLIMIT_N] = {
	[WARD_RLIMIT_AS] = {"as", RLIMIT_AS, true, false},
	[WARD_RLIMIT_CORE] = {"core", RLIMIT_CORE, true, true},
	[WARD_RLIMIT_CPU] = {"cpu", RLIMIT_CPU, false, false},
	[WARD_RLIMIT_FSIZE] = {"fsize", RLIMIT_FSIZE, true, false},
	[WARD_RLIMIT_NOFILE] = {"nofile", RLIMIT_NOFILE, false, false},
};

const char *ward__rlimit_name(enum ward__rlimit r)
{
	return (unsigned)r < WARD_RLIMIT_N ? rlimits[r].name : "?";
}

int ward__rlimit_resource(enum ward__rlimit r)
{
	return (unsigned)r < WARD_RLIMIT_N ? rlimits[r].resource : -1;
}

unsigned ward__limits_host_cpus(void)
{
	cpu_set_t set;
	int n;

	/* The CPUs this process may use (a cpuset or taskset narrows them), not the machine's. */
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && (n = CPU_COUNT(&set)) > 0)
		return (unsigned)n;
	n = (int)sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

/*
 * A decimal number with at most three decimals, as thousandths: "1.5" is
 * 1500. -EINVAL for anything else (a sign, an exponent, a second dot).
 */
static int parse_milli(const char *s, size_t len, uint64_t *ret)
{
	uint64_t v = 0;
	size_t i = 0, decimals = 0;
	bool dot = false, digits = false;

	for (; i < len; i++) {
		if (s[i] == '.' && !dot) {
			dot = true;
			continue;
		}
		if (!isdigit((unsigned char)s[i]))
			return -EINVAL;
		if (dot && ++decimals > 3)
			return -EINVAL;
		if (v > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(s[i] - '0');
		digits = true;
	}
	if (!digits)
		return -EINVAL;
	for (; decimals < 3; decimals++) {
		if (v > UINT64_MAX / 10)
			return -ERANGE;
		v *= 10;
	}
	*ret = v;
	return 0;
}

/*
 * A byte count: a number (with up to three decimals) and an optional binary
 * unit K, M, G or T (1024-based; "KiB", "KB" and "k" are the same), or the
 * plain "B". Nothing else: "12XB" is refused.
 */
static int parse_bytes(const char *s, uint64_t *ret)
{
	size_t n = strlen(s), num;
	uint64_t milli, mult = 1;
	int shift = 0;
	int r;

	if (n == 0 || n > 40)
		return -EINVAL;
	num = n;
	/* The unit: [KMGT] followed by nothing, "B" or "iB"; or a lone "B". */
	if (num > 0 && (s[num - 1] == 'B' || s[num - 1] == 'b')) {
		num--;
		if (num > 0 && s[num - 1] == 'i')
			num--;
	}
	if (num > 0 && !isdigit((unsigned char)s[num - 1]) && s[num - 1] != '.') {
		switch (toupper((unsigned char)s[num - 1])) {
		case 'K':
			shift = 10;
			break;
		case 'M':
			shift = 20;
			break;
		case 'G':
			shift = 30;
			break;
		case 'T':
			shift = 40;
			break;
		default:
			return -EINVAL;
		}
		num--;
	} else if (num != n && s[num] == 'i') {
		return -EINVAL; /* "12iB" */
	}
	r = parse_milli(s, num, &milli);
	if (r < 0)
		return r;
	mult = (uint64_t)1 << shift;
	if (milli > UINT64_MAX / mult)
		return -ERANGE;
	milli *= mult;
	if (milli % 1000 != 0 && shift == 0)
		return -EINVAL; /* a fraction of a byte */
	*ret = milli / 1000;
	return 0;
}

int ward__limits_parse_memory(const char *s, const char *label, uint64_t *ret,
			      struct ward_error *err)
{
	uint64_t v;
	int r = parse_bytes(s, &v);

	if (r < 0)
		return ward__error(
			err, -EINVAL, "limits",
			"invalid %s '%.64s': expected a size such as 512M, 2G or 1.5G (binary units K, M, G, T)",
			label, s);
	if (v < WARD_LIMIT_MEMORY_MIN)
		return ward__error(err, -ERANGE, "limits",
				   "invalid %s '%.64s': below 1M no sandbox can start", label, s);
	if (v > WARD_LIMIT_MEMORY_MAX)
		return ward__error(err, -ERANGE, "limits", "invalid %s '%.64s': too large", label,
				   s);
	*ret = v;
	return 0;
}

int ward__limits_parse_pids(const char *s, const char *label, uint64_t *ret, struct ward_error *err)
{
	uint64_t v;

	if (ward__parse_u64(s, &v) < 0)
		return ward__error(err, -EINVAL, "limits",
				   "invalid %s '%.64s': expected a number of processes", label, s);
	if (v == 0)
		return ward__error(err, -ERANGE, "limits",
				   "invalid %s '0': the command itself is a process", label);
	if (v > WARD_LIMIT_PIDS_MAX)
		return ward__error(err, -ERANGE, "limits",
				   "invalid %s '%.64s': more than the kernel's %llu processes",
				   label, s, (unsigned long long)WARD_LIMIT_PIDS_MAX);
	*ret = v;
	return 0;
}

int ward__limits_parse_cpu(const char *s, const char *label, uint32_t *ret_milli,
			   struct ward_error *err)
{
	unsigned cpus = ward__limits_host_cpus();
	uint64_t v;

	if (parse_milli(s, strlen(s), &v) < 0)
		return ward__error(
			err, -EINVAL, "limits",
			"invalid %s '%.64s': expected a number of CPUs such as 0.5, 1 or 1.5",
			label, s);
	if (v == 0)
		return ward__error(err, -ERANGE, "limits",
				   "invalid %s '%.64s': a command with no CPU never runs", label,
				   s);
	if (v < WARD_LIMIT_CPU_MIN_MILLI)
		return ward__error(err, -ERANGE, "limits",
				   "invalid %s '%.64s': the smallest share is 0.01 CPU", label, s);
	if (v > (uint64_t)cpus * 1000)
		return ward__error(err, -ERANGE, "limits",
				   "invalid %s '%.64s': this host has %u CPU%s", label, s, cpus,
				   cpus == 1 ? "" : "s");
	*ret_milli = (uint32_t)v;
	return 0;
}

static int rlimit_value(enum ward__rlimit i, const char *v, const char *label,
			struct ward__limits *l, struct ward_error *err)
{
	uint64_t n;
	int r;

	if (rlimits[i].size)
		r = parse_bytes(v, &n);
	else
		r = ward__parse_u64(v, &n);
	if (r < 0)
		return ward__error(err, -EINVAL, "limits", "invalid %s '%s=%.64s': expected %s",
				   label, rlimits[i].name, v,
				   rlimits[i].size		  ? "a size such as 64M or 1G"
					   : i == WARD_RLIMIT_CPU ? "a number of seconds"
								  : "a number of descriptors");
	if (n == 0 && !rlimits[i].zero_ok)
		return ward__error(
			err, -ERANGE, "limits", "invalid %s '%s=0': %s", label, rlimits[i].name,
			i == WARD_RLIMIT_NOFILE ? "a command needs its stdin, stdout and stderr"
				: i == WARD_RLIMIT_CPU ? "a command with no CPU time never runs"
						       : "nothing could run in it");
	if (n > (uint64_t)RLIM_INFINITY - 1 || (i == WARD_RLIMIT_NOFILE && n < 3))
		return ward__error(err, -ERANGE, "limits", "invalid %s '%s=%.64s': out of range",
				   label, rlimits[i].name, v);
	l->rlimit_set[i] = true;
	l->rlimit[i] = n;
	return 0;
}

int ward__limits_parse_rlimit(const char *s, const char *label, struct ward__limits *l,
			      struct ward_error *err)
{
	const char *eq = strchr(s, '=');

	if (eq) {
		for (int i = 0; i < WARD_RLIMIT_N; i++)
			if (strlen(rlimits[i].name) == (size_t)(eq - s) &&
			    strncmp(s, rlimits[i].name, (size_t)(eq - s)) == 0)
				return rlimit_value((enum ward__rlimit)i, eq + 1, label, l, err);
	}
	return ward__error(err, -EINVAL, "limits",
			   "invalid %s '%.64s': expected NAME=VALUE with NAME one of as, core, "
			   "cpu, fsize, nofile",
			   label, s);
}

bool ward__limits_any(const struct ward__limits *l)
{
	for (int i = 0; i < WARD_RLIMIT_N; i++)
		if (l->rlimit_set[i])
			return true;
	return l->memory || l->pids || l->cpu_milli;
}

bool ward__limits_equal(const struct ward__limits *a, const struct ward__limits *b)
{
	if (a->memory != b->memory || a->pids != b->pids || a->cpu_milli != b->cpu_milli ||
	    a->require != b->require)
		return false;
	for (int i = 0; i < WARD_RLIMIT_N; i++)
		if (a->rlimit_set[i] != b->rlimit_set[i] ||
		    (a->rlimit_set[i] && a->rlimit[i] != b->rlimit[i]))
			return false;
	return true;
}

const char *ward__limits_format_size(uint64_t v, char *buf, size_t size)
{
	static const char units[] = "TGMK";

	for (int i = 0; i < 4; i++) {
		uint64_t m = (uint64_t)1 << (10 * (4 - i));

		if (v >= m && v % m == 0) {
			snprintf(buf, size, "%llu%c", (unsigned long long)(v / m), units[i]);
			return buf;
		}
	}
	snprintf(buf, size, "%llu", (unsigned long long)v);
	return buf;
}

/* ------------------------------------------------------------ JSON */

/* A JSON value as the option's text: a string as it is, a number in decimal. */
static int json_text(json_t *v, char *buf, size_t size)
{
	if (json_is_string(v)) {
		if (json_string_length(v) >= size ||
		    strlen(json_string_value(v)) != json_string_length(v))
			return -EINVAL;
		memcpy(buf, json_string_value(v), json_string_length(v) + 1);
		return 0;
	}
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		snprintf(buf, size, "%lld", (long long)json_integer_value(v));
		return 0;
	}
	if (json_is_real(v) && json_real_value(v) >= 0 && json_real_value(v) < 1e12) {
		/* Three decimals are all a limit takes; more would be refused as text anyway. */
		snprintf(buf, size, "%.3f", json_real_value(v));
		return 0;
	}
	return -EINVAL;
}

#define FIELD_FAIL(field, what)                                                                 \
	ward__error(err, -EINVAL, "policy", "policy '%s': field \"limits\".\"%s\": %s", origin, \
		    field, what)

/* "policy 'ORIGIN': " before a value's error, as the other fields' errors begin. */
static int with_origin(struct ward_error *err, const char *origin, int r)
{
	char msg[sizeof(err->message)];

	if (err) {
		snprintf(msg, sizeof(msg), "%s", err->message);
		ward__error(err, r, "policy", "policy '%s': %s", origin, msg);
	}
	return r;
}

int ward__limits_from_json(json_t *v, struct ward__limits *l, const char *origin,
			   struct ward_error *err)
{
	struct ward__limits x = *l;
	const char *key;
	json_t *e;
	char text[64], label[96];
	int r = 0;

	if (!json_is_object(v))
		return ward__error(err, -EINVAL, "policy",
				   "policy '%s': field \"limits\": expected an object", origin);
	json_object_foreach(v, key, e)
	{
		snprintf(label, sizeof(label), "\"limits\".\"%.32s\"", key);
		if (strcmp(key, "rlimits") == 0) {
			const char *name;
			json_t *rv;

			if (!json_is_object(e))
				return FIELD_FAIL(key, "expected an object of NAME: VALUE");
			json_object_foreach(e, name, rv)
			{
				char kv[96];

				if (json_text(rv, text, sizeof(text)) < 0 || strlen(name) > 16)
					return FIELD_FAIL(key, "expected sizes and counts");
				snprintf(kv, sizeof(kv), "%s=%s", name, text);
				r = ward__limits_parse_rlimit(kv, label, &x, err);
				if (r < 0)
					return with_origin(err, origin, r);
			}
			continue;
		}
		if (json_text(e, text, sizeof(text)) < 0)
			return FIELD_FAIL(key, "expected a number or a string");
		if (strcmp(key, "memory") == 0)
			r = ward__limits_parse_memory(text, label, &x.memory, err);
		else if (strcmp(key, "pids") == 0)
			r = ward__limits_parse_pids(text, label, &x.pids, err);
		else if (strcmp(key, "cpu") == 0)
			r = ward__limits_parse_cpu(text, label, &x.cpu_milli, err);
		else
			return FIELD_FAIL(key, "unknown field");
		if (r < 0)
			return with_origin(err, origin, r);
	}
	*l = x;
	return 0;
}

json_t *ward__limits_to_json(const struct ward__limits *l)
{
	json_t *o = json_object(), *rl = json_object();
	char buf[32];

	if (!o || !rl) {
		json_decref(o);
		json_decref(rl);
		return NULL;
	}
	if (l->memory)
		json_object_set_new(
			o, "memory",
			json_string(ward__limits_format_size(l->memory, buf, sizeof(buf))));
	if (l->pids)
		json_object_set_new(o, "pids", json_integer((json_int_t)l->pids));
	if (l->cpu_milli)
		json_object_set_new(o, "cpu", json_real(l->cpu_milli / 1000.0));
	for (int i = 0; i < WARD_RLIMIT_N; i++) {
		if (!l->rlimit_set[i])
			continue;
		if (rlimits[i].size)
			json_object_set_new(rl, rlimits[i].name,
					    json_string(ward__limits_format_size(l->rlimit[i], buf,
										 sizeof(buf))));
		else
			json_object_set_new(rl, rlimits[i].name,
					    json_integer((json_int_t)l->rlimit[i]));
	}
	if (json_object_size(rl) > 0)
		json_object_set_new(o, "rlimits", rl);
	else
		json_decref(rl);
	return o;
}

/* ------------------------------------------------------------ the public setters */

WARD_PUBLIC int ward_policy_set_limit(struct ward_policy *p, const char *name, const char *value,
				      struct ward_error *err)
{
	struct ward__limits x;
	char kv[96];
	int r;

	if (!p || !name)
		return -EINVAL;
	x = p->limits;
	if (!value) {
		/* Removes the limit. */
		if (strcmp(name, "memory") == 0)
			x.memory = 0;
		else if (strcmp(name, "pids") == 0)
			x.pids = 0;
		else if (strcmp(name, "cpu") == 0)
			x.cpu_milli = 0;
		else if (strncmp(name, "rlimit-", 7) == 0) {
			for (int i = 0; i < WARD_RLIMIT_N; i++)
				if (strcmp(name + 7, rlimits[i].name) == 0)
					x.rlimit_set[i] = false;
		} else
			return ward__error(err, -EINVAL, "limits", "unknown limit '%.32s'", name);
		p->limits = x;
		return 0;
	}
	if (strcmp(name, "memory") == 0)
		r = ward__limits_parse_memory(value, "memory limit", &x.memory, err);
	else if (strcmp(name, "pids") == 0)
		r = ward__limits_parse_pids(value, "pids limit", &x.pids, err);
	else if (strcmp(name, "cpu") == 0)
		r = ward__limits_parse_cpu(value, "cpu limit", &x.cpu_milli, err);
	else if (strncmp(name, "rlimit-", 7) == 0 && strlen(name) < 32) {
		snprintf(kv, sizeof(kv), "%s=%.64s", name + 7, value);
		r = ward__limits_parse_rlimit(kv, "rlimit", &x, err);
	} else
		return ward__error(err, -EINVAL, "limits", "unknown limit '%.32s'", name);
	if (r < 0)
		return r;
	p->limits = x;
	return 0;
}

WARD_PUBLIC int ward_policy_set_require_limits(struct ward_policy *p, bool require)
{
	if (!p)
		return -EINVAL;
	p->limits.require = require;
	return 0;
}
