/* SPDX-License-Identifier: MIT */
/*
 * `ward run --json`: a captured run through libward's ward_run(), printed as
 * one JSON object on stdout (docs/json.md). ward's exit status stays the
 * command's (124 on timeout), so scripts can use both.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "approval/approval.h"
#include "basic/cleanup.h"
#include "cli/cli.h"
#include "exec/exec.h"
#include "sandbox/sandbox.h"

/* The handle the signal handler triggers; set only while a run is in flight. */
static struct ward_cancel *volatile run_cancel;

static void on_signal(int sig)
{
	struct ward_cancel *c = run_cancel;

	/* ward_cancel_trigger() is async-signal-safe: one write(2) to an eventfd. */
	if (c)
		ward_cancel_trigger(c);
}

static void fallback_warning(const struct ward_result *res)
{
	const struct ward__features *f;

	/* Never silently weaker (DESIGN.md): the JSON says it too, but a person reads stderr. */
	if (res->isolated) {
		fprintf(stderr, "ward: warning: running in every namespace but without %s\n",
			res->fallback_missing);
		return;
	}
	f = ward__features_get();
	fprintf(stderr,
		"ward: warning: user namespaces are unavailable (%s); running with Landlock (ABI %d) and seccomp only, without: %s\n",
		f->userns_why[0] ? f->userns_why : "refused by this host", res->landlock_abi,
		res->fallback_missing);
}

int cli_run_capture(struct cli_run_args *a, struct ward_policy *policy,
		    struct ward_result **ret_result)
{
	struct cli_netask netask = {.approver = a->approver};
	struct ward_net_hooks net_hooks;
	struct ward_error err = {0};
	struct ward_result *res = NULL;
	struct ward_cancel *cancel = NULL;
	struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term, old_hup;
	int r;

	r = policy->resolved ? 0 : ward_policy_resolve(policy, &err);
	if (r < 0) {
		cli_report_error(&err);
		return WARD_EXIT_FAILURE;
	}
	cli_warn_policy(policy);
	if (a->argv) {
		r = ward_run_options_set_argv(a->opts, (const char *const *)a->argv);
		if (r < 0) {
			cli_errorf("run: cannot use the command line: %s", strerror(-r));
			return WARD_EXIT_FAILURE;
		}
	}
	if (a->json_base64)
		ward_run_options_set_json_base64(a->opts, true);
	/*
	 * ward exits right after printing: init need not be reaped (see exec.h).
	 * With approvals a retry may follow; the first run's init, told that its
	 * run is over, ends on its own meanwhile (a zombie until ward exits).
	 */
	ward__run_options_set_caller_exits(a->opts, a->n_layers == 0);
	a->opts->layers = a->layers;
	a->opts->n_layers = a->n_layers;
	/* Under approvals the network by domain asks the approver (netask.c). */
	if (a->approver) {
		cli_netask_hooks(&netask, &net_hooks);
		a->opts->net_hooks = &net_hooks;
		a->opts->net_ask = ward__approval_net_may_ask(a->approver);
	}
	if (a->have_timeout)
		ward_run_options_set_timeout_ms(a->opts, a->timeout_ms);
	if (a->stdin_inherit)
		ward_run_options_set_stdin_fd(a->opts, STDIN_FILENO);

	r = ward_cancel_new(&cancel);
	if (r < 0) {
		cli_errorf("run: cannot create a cancel handle: %s", strerror(-r));
		return WARD_EXIT_FAILURE;
	}
	/*
	 * SIGINT/SIGTERM/SIGHUP end the run with a partial result instead of
	 * killing ward before it prints: the agent still gets what ran. No
	 * SA_RESTART: ward_run() retries its epoll_wait() on EINTR itself.
	 */
	sigemptyset(&sa.sa_mask);
	run_cancel = cancel;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);

	r = ward_run(policy, a->opts, cancel, &res, &err);

	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	run_cancel = NULL;
	ward_cancel_free(cancel);
	/* The hooks lived on this function's stack. */
	a->opts->net_hooks = NULL;

	if (r < 0) {
		cli_report_error(&err);
		return WARD_EXIT_FAILURE;
	}
	if (res->fallback_missing[0] && policy->mode != WARD_MODE_DANGER_FULL_ACCESS)
		fallback_warning(res);
	if (res->limits.missing[0])
		fprintf(stderr, "ward: warning: %s\n", res->limits.missing);
	*ret_result = res;
	return 0;
}

int cli_print_result(struct ward_result *res, const char *extra_json)
{
	_cleanup_free_ char *json = NULL;
	size_t len;
	int r;

	r = ward_result_to_json(res, &json);
	if (r < 0) {
		cli_errorf("run: cannot format the result: %s", strerror(-r));
		return WARD_EXIT_FAILURE;
	}
	/* Extra members go inside the object, before its closing brace. */
	len = strlen(json);
	if (extra_json && len > 0 && json[len - 1] == '}')
		json[--len] = '\0';
	if (fputs(json, stdout) == EOF ||
	    (extra_json && len > 1 &&
	     (fputc(',', stdout) == EOF || fputs(extra_json, stdout) == EOF ||
	      fputc('}', stdout) == EOF)) ||
	    fputc('\n', stdout) == EOF || fflush(stdout) == EOF) {
		cli_errorf("run: cannot write the result: %s", strerror(errno));
		return WARD_EXIT_FAILURE;
	}
	return ward_result_exit_code(res);
}

int cli_run_json(struct cli_run_args *a)
{
	struct ward_result *res = NULL;
	int r, code;

	r = cli_run_capture(a, a->policy, &res);
	if (r != 0)
		return r;
	code = cli_print_result(res, NULL);
	ward_result_free(res);
	return code;
}
