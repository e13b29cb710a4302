/* SPDX-License-Identifier: MIT */
/*
 * `ward audit`: the last entries of the approval audit log (src/approval/audit.c),
 * as a table for a person or as the JSON lines themselves. The rotated file
 * ("<log>.1") is read first, so the entries come oldest first.
 */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "approval/approval.h"
#include "basic/cleanup.h"
#include "basic/util.h"
#include "cli/ask.h"
#include "cli/cli.h"

static const char audit_help[] =
	"Usage: ward audit [--json] [-n N] [--file FILE]\n"
	"\n"
	"Show the audit log: every decision of the approval runner (the rules, the mode,\n"
	"the person's answers, the session cache), every run outside the sandbox, and\n"
	"every command a server started for a client (ward serve, ward mcp; with the\n"
	"client's thread and tool call when it names them), oldest first. The log is\n"
	"$XDG_STATE_HOME/ward/audit.jsonl (default ~/.local/state/ward/audit.jsonl), one\n"
	"JSON object per line, rotated at 1 MiB\n"
	"(the previous file is kept as audit.jsonl.1).\n"
	"\n"
	"Options:\n"
	"      --json       print the JSON lines as they are\n"
	"  -n N             the last N entries (default 20; 0: all)\n"
	"      --file FILE  read this log instead\n"
	"  -h, --help       show this help\n";

/* The last n lines of the two files (0: all), as one malloc()ed vector of pointers into bufs. */
struct lines {
	char *bufs[2];
	char **v;
	size_t n;
};

static int read_lines(const char *path, size_t want, struct lines *out)
{
	_cleanup_free_ char *old = NULL;
	size_t total = 0, alloc = 0;
	int r;

	if (asprintf(&old, "%s.1", path) < 0) {
		old = NULL;
		return -ENOMEM;
	}
	for (int k = 0; k < 2; k++) {
		size_t len = 0;

		/* A log passes its cap by at most a few records before it rotates. */
		r = ward__read_regular_file(k ? path : old, 4 * WARD_AUDIT_MAX, &out->bufs[k],
					    &len);
		if (r == -ENOENT)
			continue;
		if (r < 0)
			return r;
		for (char *l = out->bufs[k]; *l;) {
			char *nl = strchr(l, '\n');

			if (!nl)
				break; /* a line still being written */
			*nl = '\0';
			if (total == alloc) {
				char **v;

				alloc = alloc ? alloc * 2 : 256;
				v = reallocarray(out->v, alloc, sizeof(char *));
				if (!v)
					return -ENOMEM;
				out->v = v;
			}
			out->v[total++] = l;
			l = nl + 1;
		}
	}
	if (want && total > want) {
		memmove(out->v, out->v + (total - want), want * sizeof(char *));
		total = want;
	}
	out->n = total;
	return 0;
}

static const char *str(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

static void print_entry(const char *line)
{
	json_error_t jerr;
	json_t *j = json_loads(line, 0, &jerr), *cmd, *code;
	const char *argv[64];
	size_t n = 0;
	_cleanup_free_ char *joined = NULL, *safe_cmd = NULL, *safe_cwd = NULL, *safe_reason = NULL;
	char when[32] = "";

	if (!j || !json_is_object(j)) {
		_cleanup_free_ char *safe = cli_sanitize(line, 200);

		printf("(unreadable entry) %s\n", safe ? safe : "");
		json_decref(j);
		return;
	}
	cmd = json_object_get(j, "command");
	for (size_t i = 0; i < json_array_size(cmd) && n < ELEMENTSOF(argv); i++)
		if (json_is_string(json_array_get(cmd, i)))
			argv[n++] = json_string_value(json_array_get(cmd, i));
	joined = ward__shell_join(argv, n);
	safe_cmd = cli_sanitize(joined ? joined : "", 300);
	safe_cwd = cli_sanitize(str(j, "cwd"), 200);
	snprintf(when, sizeof(when), "%.19s", str(j, "time"));
	if (strlen(when) > 10)
		when[10] = ' ';
	printf("%-19s  %-8s  %-29s  %-7s  %-11s", when, str(j, "event"), str(j, "decision"),
	       str(j, "source"),
	       json_is_false(json_object_get(j, "sandboxed")) ? "unsandboxed" : "sandboxed");
	code = json_object_get(j, "exit_code");
	if (json_is_integer(code))
		printf("  exit %-3lld", (long long)json_integer_value(code));
	printf("  %s  $ %s\n", safe_cwd ? safe_cwd : "", safe_cmd ? safe_cmd : "");
	if (json_is_string(json_object_get(j, "reason"))) {
		safe_reason = cli_sanitize(str(j, "reason"), 300);
		printf("%21s%s\n", "", safe_reason ? safe_reason : "");
	}
	/* Who asked (a server's client), so that a person can tell which tool call ran what. */
	if (json_is_string(json_object_get(j, "client")) ||
	    json_is_string(json_object_get(j, "tool_call")) ||
	    json_is_string(json_object_get(j, "thread"))) {
		_cleanup_free_ char *client = cli_sanitize(str(j, "client"), 64);
		_cleanup_free_ char *process = cli_sanitize(str(j, "process"), 128);
		_cleanup_free_ char *thread = cli_sanitize(str(j, "thread"), 128);
		_cleanup_free_ char *call = cli_sanitize(str(j, "tool_call"), 128);

		printf("%21sclient %s%s%s%s%s%s%s\n", "", client && client[0] ? client : "?",
		       process && process[0] ? ", process " : "", process ? process : "",
		       thread && thread[0] ? ", thread " : "", thread ? thread : "",
		       call && call[0] ? ", tool call " : "", call ? call : "");
	}
	json_decref(j);
}

int cli_audit(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"file", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	_cleanup_free_ char *path = NULL;
	struct lines l = {0};
	const char *file = NULL;
	uint64_t n = 20;
	bool json = false;
	int c, r;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:n:h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'f':
			file = optarg;
			break;
		case 'n':
			if (ward__parse_u64(optarg, &n) < 0 || n > 10000000) {
				cli_errorf("audit: -n '%s': expected a number of entries", optarg);
				return WARD_EXIT_FAILURE;
			}
			break;
		case 'h':
			fputs(audit_help, stdout);
			return 0;
		case ':':
			cli_errorf("audit: option '%s' needs a value", argv[optind - 1]);
			return WARD_EXIT_FAILURE;
		default:
			cli_errorf("audit: unknown option '%s' (see 'ward audit --help')",
				   argv[optind - 1]);
			return WARD_EXIT_FAILURE;
		}
	}
	if (optind < argc) {
		cli_errorf("audit: unexpected argument '%s'", argv[optind]);
		return WARD_EXIT_FAILURE;
	}
	if (!file) {
		r = ward__audit_default_path(&path);
		if (r < 0) {
			cli_errorf(
				"audit: cannot find the state directory: %s (hint: set HOME or XDG_STATE_HOME, or use --file)",
				strerror(-r));
			return WARD_EXIT_FAILURE;
		}
		file = path;
	}
	r = read_lines(file, (size_t)n, &l);
	if (r < 0) {
		cli_errorf("audit: cannot read '%s': %s", file, strerror(-r));
	} else {
		for (size_t i = 0; i < l.n; i++) {
			if (json)
				puts(l.v[i]);
			else
				print_entry(l.v[i]);
		}
		if (l.n == 0)
			fprintf(stderr, "ward: audit: no entries in '%s'\n", file);
	}
	free(l.bufs[0]);
	free(l.bufs[1]);
	free(l.v);
	if (r >= 0 && fflush(stdout) == EOF) {
		cli_errorf("audit: cannot write: %m");
		return WARD_EXIT_FAILURE;
	}
	return r < 0 ? WARD_EXIT_FAILURE : 0;
}
