/* SPDX-License-Identifier: MIT */
/*
 * `ward changes` and `ward undo`: the journal of held and recorded runs
 * (src/changes) from the command line. List the runs, show one (its changes,
 * its diff in a pager), apply or discard held changes, drop a run from the
 * journal, and take an applied run back.
 *
 * Exit status: 0 done; 1 nothing was done because a decision is needed
 * (conflicts with the host, changes that cannot be undone); 125 anything
 * else (an unknown run, a damaged journal, a full disk), with one line
 * saying what.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"
#include "changes/changes.h"
#include "cli/cli.h"

static const char changes_help[] =
	"Usage: ward changes [--json] [--all]            list the recent runs\n"
	"       ward changes show [RUN] [--json]          one run's changes\n"
	"       ward changes --diff [RUN]                 one run's diff (git diff, paged)\n"
	"       ward changes apply [RUN] [--run-wins | --host-wins]\n"
	"       ward changes discard [RUN]\n"
	"       ward changes drop RUN                     remove a run from the journal\n"
	"\n"
	"The journal of runs made with 'ward run --hold' or '--record', 'ward mcp' and\n"
	"'ward serve' ($WARD_CHANGES_DIR, default $XDG_STATE_HOME/ward/changes). RUN is a\n"
	"number from the list; without it: the latest run (apply and discard: the latest\n"
	"held one). apply refuses when the host changed a file the run also changed,\n"
	"unless --run-wins (the run's version replaces the host's, which undo brings\n"
	"back) or --host-wins (the host's stays).\n"
	"\n"
	"Exit status: 0 done; 1 nothing done, a decision is needed (conflicts); 125 error.\n";

static const char undo_help[] =
	"Usage: ward undo [RUN] [--force | --partial] [--json]\n"
	"\n"
	"Take back what a run changed (the latest applied run by default): every file back\n"
	"to its bytes and mode before the run, created files removed, deleted ones\n"
	"restored. Nothing is undone when a file was changed again since (--force: the\n"
	"before-image wins; --partial: such files are left as they are) or when a change\n"
	"cannot be undone because the journal did not keep what it replaced (--partial:\n"
	"undo the rest).\n"
	"\n"
	"Exit status: 0 done; 1 nothing done, a decision is needed; 125 error.\n";

enum {
	OPT_JSON = 0x100,
	OPT_ALL,
	OPT_DIFF,
	OPT_RUN_WINS,
	OPT_HOST_WINS,
	OPT_FORCE,
	OPT_PARTIAL,
};

struct args {
	bool json, all, diff, run_wins, host_wins, force, partial, help;
	const char *verb; /* show, apply, discard, drop, or NULL */
	const char *run;
};

static int parse(int argc, char **argv, const char *self, struct args *a)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, OPT_JSON},
		{"all", no_argument, NULL, OPT_ALL},
		{"diff", no_argument, NULL, OPT_DIFF},
		{"run-wins", no_argument, NULL, OPT_RUN_WINS},
		{"host-wins", no_argument, NULL, OPT_HOST_WINS},
		{"force", no_argument, NULL, OPT_FORCE},
		{"partial", no_argument, NULL, OPT_PARTIAL},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int c;

	*a = (struct args){0};
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_JSON:
			a->json = true;
			break;
		case OPT_ALL:
			a->all = true;
			break;
		case OPT_DIFF:
			a->diff = true;
			break;
		case OPT_RUN_WINS:
			a->run_wins = true;
			break;
		case OPT_HOST_WINS:
			a->host_wins = true;
			break;
		case OPT_FORCE:
			a->force = true;
			break;
		case OPT_PARTIAL:
			a->partial = true;
			break;
		case 'h':
			a->help = true;
			return 0;
		default:
			cli_errorf("%s: unknown option '%s' (see 'ward %s --help')", self,
				   argv[optind - 1], self);
			return -1;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (!a->verb && strcmp(self, "changes") == 0 &&
		    (strcmp(argv[i], "show") == 0 || strcmp(argv[i], "apply") == 0 ||
		     strcmp(argv[i], "discard") == 0 || strcmp(argv[i], "drop") == 0) &&
		    !a->run) {
			a->verb = argv[i];
		} else if (!a->run) {
			a->run = argv[i];
		} else {
			cli_errorf("%s: unexpected argument '%s' (see 'ward %s --help')", self,
				   argv[i], self);
			return -1;
		}
	}
	if (a->run_wins && a->host_wins) {
		cli_errorf("changes: --run-wins and --host-wins cannot go together");
		return -1;
	}
	if (a->force && a->partial) {
		cli_errorf("undo: --force and --partial cannot go together");
		return -1;
	}
	return 0;
}

static int fail(const struct ward_error *err, int r)
{
	cli_report_error(err);
	return r == -EBUSY || r == -ENODATA ? 1 : WARD_EXIT_FAILURE;
}

/* The latest run in one of the wanted states (a mask of 1 << state), locked. */
static int open_latest(struct ward__changes_cfg *cfg, unsigned want, const char *what,
		       struct ward__changes_run **ret, struct ward_error *err)
{
	_cleanup_free_ uint64_t *ids = NULL;
	size_t n = 0;
	int r;

	r = ward__journal_list(cfg, &ids, &n, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		struct ward__changes_run *run = NULL;
		char id[24];

		snprintf(id, sizeof(id), "%" PRIu64, ids[i]);
		r = ward__journal_open(cfg, id, false, &run, err);
		/* A damaged latest run is said, never skipped for an older one. */
		if (r == -EBADMSG)
			return r;
		if (r < 0) {
			*err = (struct ward_error){0};
			continue;
		}
		if (!(want & (1u << run->state))) {
			ward__changes_run_free(run);
			continue;
		}
		ward__changes_run_free(run);
		return ward__journal_open(cfg, id, true, ret, err);
	}
	return ward__error(err, -ENOENT, "changes", "the journal has no %s run", what);
}

static int open_run(struct ward__changes_cfg *cfg, const char *id, unsigned want, const char *what,
		    bool lock, struct ward__changes_run **ret, struct ward_error *err)
{
	if (id)
		return ward__journal_open(cfg, id, lock, ret, err);
	if (!want)
		return ward__journal_open(cfg, NULL, lock, ret, err);
	return open_latest(cfg, want, what, ret, err);
}

static int list(struct ward__changes_cfg *cfg, const struct args *a)
{
	_cleanup_free_ uint64_t *ids = NULL;
	struct ward_error err = {0};
	json_t *arr = a->json ? json_array() : NULL;
	size_t n = 0, shown = 0;
	int r;

	r = ward__journal_list(cfg, &ids, &n, &err);
	if (r < 0)
		return fail(&err, r);
	if (!a->json && n == 0)
		printf("no runs in the journal (%s)\n", cfg->dir);
	for (size_t i = 0; i < n && (a->all || shown < 20); i++) {
		struct ward__changes_run *run = NULL;
		char id[24];

		snprintf(id, sizeof(id), "%" PRIu64, ids[i]);
		err = (struct ward_error){0};
		if (ward__journal_open(cfg, id, false, &run, &err) < 0) {
			if (a->json)
				json_array_append_new(arr,
						      json_pack("{s:I, s:s}", "run",
								(json_int_t)ids[i], "error",
								err.message));
			else
				printf("%6" PRIu64 "  damaged   %s\n", ids[i], err.message);
			shown++;
			continue;
		}
		if (a->json)
			json_array_append_new(arr, ward__changes_to_json(run, 0));
		else
			ward__changes_print_line(run, stdout);
		ward__changes_run_free(run);
		shown++;
	}
	if (a->json) {
		char *s = json_dumps(arr, JSON_COMPACT);

		json_decref(arr);
		if (!s)
			return WARD_EXIT_FAILURE;
		printf("%s\n", s);
		free(s);
	} else if (!a->all && n > shown) {
		printf("(%zu older runs: --all)\n", n - shown);
	}
	return 0;
}

static int print_json(struct ward__changes_run *run)
{
	json_t *j = ward__changes_to_json(run, SIZE_MAX);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	if (!s)
		return WARD_EXIT_FAILURE;
	printf("%s\n", s);
	free(s);
	return 0;
}

int cli_changes(int argc, char **argv)
{
	struct ward__changes_cfg cfg;
	struct ward__changes_run *run = NULL;
	struct ward_error err = {0};
	struct args a;
	int code = 0, r;

	if (parse(argc, argv, "changes", &a) < 0)
		return WARD_EXIT_FAILURE;
	if (a.help) {
		fputs(changes_help, stdout);
		return 0;
	}
	if (ward__changes_cfg_init(&cfg, &err) < 0)
		return fail(&err, -ENOENT);
	if (!a.verb && !a.run && !a.diff) {
		code = list(&cfg, &a);
		goto out;
	}
	if (a.verb && strcmp(a.verb, "apply") == 0) {
		struct ward__apply_report rep;

		r = open_run(&cfg, a.run, 1u << WARD_RS_HELD | 1u << WARD_RS_APPLYING, "held", true,
			     &run, &err);
		if (r >= 0)
			r = ward__changes_apply(run,
						a.run_wins	      ? WARD_SIDE_RUN
							: a.host_wins ? WARD_SIDE_HOST
								      : WARD_SIDE_NONE,
						&rep, &err);
		if (r < 0) {
			code = fail(&err, r);
			if (r == -EBUSY)
				cli_errorf(
					"changes: --run-wins or --host-wins says which side wins");
			goto out;
		}
		if (a.json)
			code = print_json(run);
		else
			fprintf(stderr,
				"ward: applied %zu change%s of run %" PRIu64
				"%s ('ward undo %" PRIu64 "' takes them back)\n",
				rep.applied, rep.applied == 1 ? "" : "s", run->id,
				rep.unkept ? "; some cannot be undone (the journal's bounds)" : "",
				run->id);
		goto out;
	}
	if (a.verb && strcmp(a.verb, "discard") == 0) {
		r = open_run(&cfg, a.run,
			     1u << WARD_RS_HELD | 1u << WARD_RS_RUNNING | 1u << WARD_RS_APPLYING,
			     "held", true, &run, &err);
		if (r >= 0)
			r = ward__changes_discard(run, &err);
		if (r < 0)
			code = fail(&err, r);
		else if (a.json)
			code = print_json(run);
		else
			fprintf(stderr, "ward: discarded the changes of run %" PRIu64 "\n",
				run->id);
		goto out;
	}
	if (a.verb && strcmp(a.verb, "drop") == 0) {
		struct ward__changes_run tmp = {.cfg = &cfg, .lock_fd = -1};
		uint64_t id;

		if (!a.run || ward__parse_u64(a.run, &id) < 0 || id == 0) {
			cli_errorf("changes: drop needs a run number");
			code = WARD_EXIT_FAILURE;
			goto out;
		}
		/* A damaged record cannot be opened: the run's directory goes by its number. */
		r = ward__journal_open(&cfg, a.run, true, &run, &err);
		if (r == -EBUSY || r == -ENOENT) {
			code = fail(&err, r);
			goto out;
		}
		if (asprintf(&tmp.dir, "%s/runs/%" PRIu64, cfg.dir, id) < 0) {
			code = WARD_EXIT_FAILURE;
			goto out;
		}
		r = ward__journal_remove(&tmp);
		free(tmp.dir);
		if (r < 0) {
			cli_errorf("changes: cannot drop run %s: %s", a.run, strerror(-r));
			code = WARD_EXIT_FAILURE;
		}
		goto out;
	}
	/* show, --diff: no lock (a run being worked on shows as it is recorded). */
	r = open_run(&cfg, a.run, 0, NULL, false, &run, &err);
	if (r < 0) {
		code = fail(&err, r);
		goto out;
	}
	if (a.diff) {
		r = ward__changes_diff(run, STDOUT_FILENO, isatty(STDOUT_FILENO),
				       isatty(STDOUT_FILENO), &err);
		if (r < 0)
			code = fail(&err, r);
	} else if (a.json) {
		code = print_json(run);
	} else {
		ward__changes_print(run, stdout, a.all ? SIZE_MAX : 200);
	}
out:
	ward__changes_run_free(run);
	ward__changes_cfg_release(&cfg);
	return code;
}

int cli_undo(int argc, char **argv)
{
	struct ward__changes_cfg cfg;
	struct ward__changes_run *run = NULL;
	struct ward__undo_report rep;
	struct ward_error err = {0};
	struct args a;
	int code = 0, r;

	if (parse(argc, argv, "undo", &a) < 0)
		return WARD_EXIT_FAILURE;
	if (a.help) {
		fputs(undo_help, stdout);
		return 0;
	}
	if (ward__changes_cfg_init(&cfg, &err) < 0)
		return fail(&err, -ENOENT);
	r = open_run(&cfg, a.run, 1u << WARD_RS_APPLIED | 1u << WARD_RS_UNDOING, "applied", true,
		     &run, &err);
	if (r >= 0)
		r = ward__changes_undo(run, a.force, a.partial, &rep, &err);
	if (r < 0) {
		code = fail(&err, r);
		if (r == -EBUSY)
			cli_errorf("undo: --force brings the before-images back anyway; --partial "
				   "leaves those files as they are");
		else if (r == -ENODATA)
			cli_errorf("undo: --partial undoes the rest");
		goto out;
	}
	if (a.json) {
		code = print_json(run);
	} else {
		fprintf(stderr, "ward: undid %zu change%s of run %" PRIu64, rep.undone,
			rep.undone == 1 ? "" : "s", run->id);
		if (rep.conflicts)
			fprintf(stderr, "; %zu changed again since were %s", rep.conflicts,
				a.force ? "overwritten" : "left as they are");
		if (rep.unkept)
			fprintf(stderr, "; %zu could not be undone (first: %s)", rep.unkept,
				rep.first_unkept);
		fputc('\n', stderr);
	}
out:
	ward__changes_run_free(run);
	ward__changes_cfg_release(&cfg);
	return code;
}
