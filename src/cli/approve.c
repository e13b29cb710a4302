/* SPDX-License-Identifier: MIT */
/*
 * `ward run --ask-for-approval MODE` (and --rules, --codex-rules,
 * --sandbox-permissions, --justification, --prefix-rule, --additional-*):
 * the command goes through libward's approval runner (src/approval), driven
 * here step by step so that both run forms work: the plain run (stdio
 * straight through, its denials observed) and the captured run (--json).
 * The person is asked on the controlling terminal (ask.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "approval/approval.h"
#include "basic/buf.h"
#include "basic/cleanup.h"
#include "basic/error.h"
#include "cli/cli.h"
#include "cli/ask.h"
#include "exec/exec.h"
#include "sandbox/sandbox.h"

/* ------------------------------------------------------------ the runner */

/* The "approval" member of the JSON output. */
static char *approval_json(enum ward_approval_mode mode, enum ward_approval_status status,
			   unsigned runs, const char *reason)
{
	struct ward__buf b;
	char *out = NULL;
	int r;

	if (ward__buf_init(&b, 1 << 20) < 0)
		return NULL;
	r = ward__buf_printf(&b, "\"approval\":{\"mode\":\"%s\",\"status\":\"%s\",\"runs\":%u",
			     ward_approval_mode_to_string(mode),
			     ward_approval_status_to_string(status), runs);
	if (r >= 0 && reason) {
		r = ward__buf_append_str(&b, ",\"reason\":");
		if (r >= 0)
			r = ward__json_append_string(&b, reason, strlen(reason));
	}
	if (r >= 0)
		r = ward__buf_append_byte(&b, '}');
	if (r >= 0)
		out = (char *)ward__buf_steal(&b, NULL);
	ward__buf_release(&b);
	return out;
}

int cli_approver_prepare(struct cli_run_args *a, struct ward_approver *ap, const char *verb)
{
	struct ward_error err = {0};
	int r;

	if (a->have_granular && a->approval_mode != WARD_APPROVAL_GRANULAR) {
		cli_errorf("%s: --granular applies to --ask-for-approval granular", verb);
		return -1;
	}
	r = ward_approver_set_mode(ap, a->approval_mode);
	if (r >= 0 && a->have_granular)
		r = ward_approver_set_granular(ap, &a->granular);
	if (r < 0) {
		cli_errorf("%s: cannot set the approval mode: %s", verb, strerror(-r));
		return -1;
	}
	if (a->codex_rules && ward_approver_load_codex_rules(ap, &err) < 0)
		goto fail;
	/* Before resolving: the rules that decide what runs outside must not be writable inside. */
	r = ward_approver_protect(ap, a->policy);
	if (r < 0) {
		cli_errorf("%s: cannot protect the rules directories: %s", verb, strerror(-r));
		return -1;
	}
	if (ward_policy_resolve(a->policy, &err) < 0)
		goto fail;
	if (ward_approver_load_default_rules(ap, a->policy->resolved_cwd, &err) < 0)
		goto fail;
	for (size_t i = 0; i < a->n_rules_files; i++)
		if (ward_approver_load_rules_file(ap, a->rules_files[i], &err) < 0)
			goto fail;
	return 0;
fail:
	cli_report_error(&err);
	return -1;
}

/* What ward run adds: the call's own fields, and whether the command has a terminal. */
static int prepare(struct cli_run_args *a, struct ward_approver *ap)
{
	if (cli_approver_prepare(a, ap, "run") < 0)
		return -1;
	if (a->n_prefix_rule &&
	    ward_approval_request_set_prefix_rule(a->approval_req, a->prefix_rule) < 0) {
		cli_errorf("out of memory");
		return -1;
	}
	if (!a->json && a->approval_req == NULL &&
	    ward_approval_request_new(&a->approval_req) < 0) {
		cli_errorf("out of memory");
		return -1;
	}
	/* The command gets a pty when ward runs on a terminal (part of the cache key, as in Codex). */
	if (a->approval_req)
		ward_approval_request_set_tty(a->approval_req,
					      !a->json &&
						      (isatty(STDIN_FILENO) ||
						       isatty(STDOUT_FILENO) ||
						       isatty(STDERR_FILENO)));
	return 0;
}

static void notice(const struct ward__approval_action *act, const char **last)
{
	if (act->notice && act->notice != *last) {
		_cleanup_free_ char *safe = cli_sanitize(act->notice, 1000);

		cli_errorf("%s", safe ? safe : act->notice);
		*last = act->notice;
	}
}

int cli_run_approved(struct cli_run_args *a)
{
	struct ward_approver *ap = NULL;
	struct ward__approval_step *s = NULL;
	struct ward__approval_action act;
	struct ward_result *res = NULL;
	struct cli_asker asker = {0};
	struct ward_error err = {0};
	const char *last_notice = NULL;
	unsigned runs = 0;
	int code = WARD_EXIT_FAILURE, r;

	if (ward_approver_new(&ap) < 0) {
		cli_errorf("out of memory");
		return WARD_EXIT_FAILURE;
	}
	if (prepare(a, ap) < 0)
		goto out;
	r = ward__approval_begin(ap, a->policy, (const char *const *)a->argv, a->approval_req, &s,
				 &act, &err);
	a->approver = ap;
	while (r >= 0) {
		notice(&act, &last_notice);
		if (act.kind == WARD__APPROVAL_ASK) {
			enum ward_review_decision d = WARD_REVIEW_DENIED;

			cli_ask_tty(&asker, act.question, &d);
			if (asker.why[0])
				r = ward__approval_no_answer(s, asker.why, &act, &err);
			else
				r = ward__approval_answer(s, d, &act, &err);
		} else if (act.kind == WARD__APPROVAL_RUN) {
			struct ward_policy *p = (struct ward_policy *)act.policy;

			runs++;
			if (a->json) {
				ward_result_free(res);
				res = NULL;
				code = cli_run_capture(a, p, &res);
				if (code != 0)
					goto out;
				r = ward__approval_ran_result(s, res, &act, &err);
			} else {
				struct cli_run_report rep = {0};
				struct ward__approval_outcome o;

				code = cli_run_plain(a, p, &rep);
				o = (struct ward__approval_outcome){
					.exit_code = code,
					.timed_out = rep.timed_out,
					.denied = rep.denied,
					.denials = rep.denials,
					.n_denials = rep.n_denials,
					.denials_dropped = rep.denials_dropped,
				};
				r = ward__approval_ran(s, &o, &act, &err);
				cli_run_report_release(&rep);
			}
		} else {
			break;
		}
	}
	if (r < 0) {
		cli_report_error(&err);
		code = WARD_EXIT_FAILURE;
		goto out;
	}
	notice(&act, &last_notice);
	if (act.kind == WARD__APPROVAL_REJECT) {
		_cleanup_free_ char *extra = NULL, *safe = cli_sanitize(act.reason, 2000);

		cli_errorf("run: not run: %s", safe ? safe : act.reason);
		code = WARD_EXIT_REJECTED;
		if (a->json) {
			extra = approval_json(a->approval_mode, act.status, runs, act.reason);
			printf("{\"ran\":false,\"exit_code\":%d,%s}\n", code, extra ? extra : "");
			fflush(stdout);
		}
		goto out;
	}
	/* DONE: the last run's status is ward's. */
	if (a->json) {
		_cleanup_free_ char *extra =
			approval_json(a->approval_mode, act.status, runs, NULL);

		code = cli_print_result(res, extra);
	}
out:
	a->approver = NULL;
	ward_result_free(res);
	ward__approval_step_free(s);
	ward_approver_free(ap);
	return code;
}
