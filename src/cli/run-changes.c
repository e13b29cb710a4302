/* SPDX-License-Identifier: MIT */
/*
 * `ward run --hold` and `ward run --record` (src/changes): the run gets a
 * copy-on-write layer over its writable roots; at its end ward reads what
 * it changed and, held, shows it and asks (apply, discard, the diff in a
 * pager) or does what --hold=apply|discard|keep says; recorded, applies it
 * and keeps the replaced files in the journal for `ward undo`.
 *
 * The exit status stays the command's. ward's own failures are 125: the
 * layer could not be made, or an apply asked for without a person
 * (--hold=apply) could not be made (conflicts: the changes stay held).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "changes/changes.h"
#include "cli/ask.h"
#include "cli/cli.h"
#include "exec/exec.h"

#define SUMMARY_LINES 40

static void how_to_decide(const struct ward__changes_run *run)
{
	fprintf(stderr,
		"ward: the changes are held as run %" PRIu64 ": 'ward changes --diff %" PRIu64
		"', 'ward changes apply %" PRIu64 "' or 'ward changes discard %" PRIu64 "'\n",
		run->id, run->id, run->id, run->id);
}

/* Applies, asking which side wins when the host changed something meanwhile. */
static int apply(struct ward__changes_run *run, bool ask)
{
	struct ward__apply_report rep;
	struct ward_error err = {0};
	enum ward__side side = WARD_SIDE_NONE;
	int r;

	for (;;) {
		char key;

		r = ward__changes_apply(run, side, &rep, &err);
		if (r >= 0)
			break;
		cli_report_error(&err);
		if (r != -EBUSY || !ask)
			return -1;
		r = cli_ask_key("  the host changed these files during the run: [r] the run's "
				"version wins, [h] the host's wins, [k] keep the changes held > ",
				"rhk", &key);
		if (r < 0 || key == 'k')
			return -1;
		side = key == 'r' ? WARD_SIDE_RUN : WARD_SIDE_HOST;
		err = (struct ward_error){0};
	}
	fprintf(stderr, "ward: applied %zu change%s of run %" PRIu64, rep.applied,
		rep.applied == 1 ? "" : "s", run->id);
	if (rep.conflicts && side == WARD_SIDE_HOST)
		fprintf(stderr, "; %zu left as the host has them", rep.conflicts);
	if (rep.refused)
		fprintf(stderr, "; %zu to protected paths refused", rep.refused);
	if (rep.unkept)
		fprintf(stderr, "; %zu cannot be undone (the journal's bounds)", rep.unkept);
	fprintf(stderr, " ('ward undo %" PRIu64 "' takes them back)\n", run->id);
	return 0;
}

static int discard(struct ward__changes_run *run)
{
	struct ward_error err = {0};

	if (ward__changes_discard(run, &err) < 0) {
		cli_report_error(&err);
		return -1;
	}
	fprintf(stderr, "ward: discarded the changes of run %" PRIu64 "\n", run->id);
	return 0;
}

/* The person decides on the terminal: apply, discard, the diff, or keep them held. */
static int decide(struct ward__changes_run *run)
{
	for (;;) {
		struct ward_error err = {0};
		char key;
		int r;

		r = cli_ask_key(
			"ward: [a] apply, [d] discard, [v] view the diff, [k] keep them held > ",
			"advk", &key);
		if (r == -ENOTTY) {
			how_to_decide(run);
			return 0;
		}
		if (r < 0 || key == 'k') {
			how_to_decide(run);
			return 0;
		}
		if (key == 'a')
			return apply(run, true);
		if (key == 'd')
			return discard(run);
		if (ward__changes_diff(run, STDOUT_FILENO, isatty(STDOUT_FILENO),
				       isatty(STDOUT_FILENO), &err) < 0)
			cli_report_error(&err);
	}
}

int cli_run_changes(struct cli_run_args *a)
{
	struct ward__changes_cfg cfg;
	struct ward__changes_run *run = NULL;
	struct ward_result *res = NULL;
	struct ward_error err = {0};
	_cleanup_free_ char *extra = NULL;
	int code, r;

	if (a->hold && a->record) {
		cli_errorf("run: --hold and --record cannot go together (a held run is "
			   "recorded once applied)");
		return WARD_EXIT_FAILURE;
	}
	if (a->approvals) {
		cli_errorf("run: --hold and --record do not go with approvals yet");
		return WARD_EXIT_FAILURE;
	}
	r = a->policy->resolved ? 0 : ward_policy_resolve(a->policy, &err);
	if (r < 0) {
		cli_report_error(&err);
		return WARD_EXIT_FAILURE;
	}
	if (ward__changes_cfg_init(&cfg, &err) < 0) {
		cli_report_error(&err);
		return WARD_EXIT_FAILURE;
	}
	cfg.keep_ignored = a->keep_ignored;
	r = ward__changes_begin(&cfg, a->policy, a->hold ? WARD_RUN_HOLD : WARD_RUN_RECORD, a->argv,
				&run, &err);
	if (r < 0) {
		cli_report_error(&err);
		ward__changes_cfg_release(&cfg);
		return WARD_EXIT_FAILURE;
	}
	a->layers = run->layers;
	a->n_layers = run->n_layers;
	if (a->json) {
		code = cli_run_capture(a, a->policy, &res);
		if (code == 0)
			code = ward_result_exit_code(res);
	} else {
		code = cli_run_plain(a, a->policy, NULL);
	}
	a->layers = NULL;
	a->n_layers = 0;
	r = ward__changes_end(run, a->policy, code, &err);
	if (r < 0) {
		cli_report_error(&err);
		if (!res)
			code = WARD_EXIT_FAILURE;
	} else if (run->id == 0 && code == WARD_EXIT_FAILURE && !res) {
		goto out; /* the sandbox was never made: nothing of the run to tell */
	}

	if (r >= 0 && run->id != 0 && run->mode == WARD_RUN_HOLD && run->state == WARD_RS_HELD) {
		int hold = a->hold;

		/* --json alone keeps the changes held: nobody is asked in a captured run. */
		if (a->json && hold == CLI_HOLD_ASK)
			hold = CLI_HOLD_KEEP;
		if (!a->json)
			ward__changes_print(run, stderr, SUMMARY_LINES);
		if (hold == CLI_HOLD_APPLY)
			r = apply(run, false);
		else if (hold == CLI_HOLD_DISCARD)
			r = discard(run);
		else if (hold == CLI_HOLD_ASK)
			r = decide(run);
		else {
			r = 0;
			if (!a->json)
				how_to_decide(run);
		}
		if (r < 0 && hold != CLI_HOLD_ASK)
			code = WARD_EXIT_FAILURE;
	} else if (r >= 0 && run->id != 0 && run->mode == WARD_RUN_RECORD && !a->json) {
		ward__changes_print(run, stderr, 0);
		fprintf(stderr,
			"ward: recorded as run %" PRIu64 " ('ward undo %" PRIu64
			"' takes it back)\n",
			run->id, run->id);
	}

	if (res) {
		json_t *j = ward__changes_to_json(run, SIZE_MAX);
		char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

		json_decref(j);
		if (s && asprintf(&extra, "\"changes\":%s", s) < 0)
			extra = NULL;
		free(s);
		r = cli_print_result(res, extra);
		if (code != WARD_EXIT_FAILURE)
			code = r;
	}
out:
	ward_result_free(res);
	ward__changes_run_free(run);
	ward__changes_cfg_release(&cfg);
	return code;
}
