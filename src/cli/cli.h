/* SPDX-License-Identifier: MIT */
#pragma once

#include "basic/macro.h"
#include "ward/ward.h"

#define WARD_EXIT_TIMEOUT 124
#define WARD_EXIT_FAILURE 125
#define WARD_EXIT_CANNOT_EXEC 126
#define WARD_EXIT_NOT_FOUND 127

/* What `ward run` was asked to do, after option parsing (options.c). */
struct cli_run_args {
	struct ward_policy *policy; /* not yet resolved */
	struct ward_run_options *opts; /* argv, timeout, caps, stdin, environment policy */
	char **argv; /* the command, points into main()'s argv */
	bool json; /* --json: captured run, one JSON object on stdout */
	bool json_base64; /* --json-base64: add base64 forms of the outputs */
	bool max_output_set; /* --max-output was given (needs --json) */
	bool have_timeout;
	uint64_t timeout_ms;
	bool stdin_inherit; /* --stdin - : the command reads ward's own stdin */
	const char *stdin_path; /* --stdin FILE */
	bool help;
	bool version;
	int keep_fds[64];
	size_t n_keep_fds;
};

/* Prints "ward: <message>" and, when set, "hint: <hint>" to stderr. */
void cli_report_error(const struct ward_error *err);
/* Prints "ward: <formatted>" to stderr. */
void cli_errorf(const char *fmt, ...) _printf_(1, 2);

/*
 * Parses the options shared by `ward run` and `ward policy show` into a policy.
 * Returns the index of the first non-option argument, or -1 after printing an
 * error (exit 125). allow_run_options accepts the run-only options.
 */
int cli_parse_run_args(int argc, char **argv, bool allow_run_options, struct cli_run_args *a);
void cli_run_args_release(struct cli_run_args *a);

int cli_run(int argc, char **argv);
int cli_policy(int argc, char **argv);
/* `ward policy check` and `ward policy allow` (policy-rules.c). */
int cli_policy_check(int argc, char **argv);
int cli_policy_allow(int argc, char **argv);
int cli_doctor(int argc, char **argv);
/* The --json branch of `ward run` (run-json.c): returns ward's exit status. */
int cli_run_json(struct cli_run_args *a);
