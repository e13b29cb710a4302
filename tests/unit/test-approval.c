/* SPDX-License-Identifier: MIT */
/*
 * Approvals (src/approval): the step machine driven by a scripted approver,
 * for each mode and outcome (allowed, denied, forbidden, denied then retried
 * outside the sandbox, deny-read present so no retry, session cache hits in
 * the same and in another directory, abort), the per-call fields, the
 * session cache's bound, the audit log (records, concurrency, rotation), and
 * ward_run_with_approval() with real runs, asserting the effect on the host.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "approval/approval.h"
#include "basic/cleanup.h"
#include "basic/util.h"
#include "tap.h"

static char scratch[] = "/var/tmp/ward-approval-XXXXXX";

/* ------------------------------------------------------------------ helpers */

static int atoi_checked(const char *s)
{
	uint64_t v;

	ASSERT_OK(ward__parse_u64(s, &v));
	return (int)v;
}

struct fixture {
	char dir[PATH_MAX]; /* the test's own directory */
	char ws[PATH_MAX + 8]; /* the workspace: the policy's cwd */
	char other[PATH_MAX + 8]; /* another directory */
	char out[PATH_MAX + 8]; /* outside every writable root */
	char log[PATH_MAX + 64]; /* the audit log */
	char rules[PATH_MAX + 64]; /* the amendment file */
	struct ward_policy *policy;
	struct ward_approver *a;
};

static struct ward_policy *resolved(const char *cwd, const char *deny)
{
	struct ward_policy *p;
	struct ward_error err = {0};

	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, cwd));
	ASSERT_OK(ward_policy_set_exclude_slash_tmp(p, true));
	ASSERT_OK(ward_policy_set_exclude_tmpdir_env_var(p, true));
	if (deny)
		ASSERT_OK(ward_policy_add_deny_read(p, deny));
	if (ward_policy_resolve(p, &err) < 0)
		tap_fail(__FILE__, __LINE__, "resolve: %s", err.message);
	return p;
}

static void setup(struct fixture *f, enum ward_approval_mode mode, const char *rules)
{
	struct ward_error err = {0};

	snprintf(f->dir, sizeof(f->dir), "%s/%d", scratch, (int)getpid());
	ASSERT_EQ(mkdir(f->dir, 0755), 0);
	snprintf(f->ws, sizeof(f->ws), "%s/ws", f->dir);
	snprintf(f->other, sizeof(f->other), "%s/other", f->dir);
	snprintf(f->out, sizeof(f->out), "%s/out", f->dir);
	snprintf(f->log, sizeof(f->log), "%s/state/audit.jsonl", f->dir);
	snprintf(f->rules, sizeof(f->rules), "%s/cfg/default.rules", f->dir);
	ASSERT_EQ(mkdir(f->ws, 0755), 0);
	ASSERT_EQ(mkdir(f->other, 0755), 0);
	ASSERT_EQ(mkdir(f->out, 0755), 0);
	f->policy = resolved(f->ws, NULL);
	ASSERT_OK(ward_approver_new(&f->a));
	ASSERT_OK(ward_approver_set_mode(f->a, mode));
	ASSERT_OK(ward_approver_set_audit_log(f->a, f->log));
	ASSERT_OK(ward_approver_set_amendment_file(f->a, f->rules));
	if (rules &&
	    ward_approver_load_rules_string(f->a, rules, strlen(rules), "t.rules", &err) < 0)
		tap_fail(__FILE__, __LINE__, "rules: %s", err.message);
}

static void teardown(struct fixture *f)
{
	ward_approver_free(f->a);
	ward_policy_free(f->policy);
}

/* What the scripted person was asked. */
struct asked {
	unsigned n;
	bool unsandboxed[4], retry[4];
	size_t n_denials[4];
	char reason[4][512];
	char proposed[4][256]; /* the proposed prefix, words joined by ' ' */
	unsigned decisions[4];
	char unprotect[4][256]; /* the first path a lift question offers */
};

static void record(struct asked *k, const struct ward_approval_question *q)
{
	size_t o = 0;

	ASSERT_TRUE(k->n < 4);
	ASSERT_TRUE(q->reason != NULL && q->argv != NULL && q->cwd != NULL);
	k->unsandboxed[k->n] = q->unsandboxed;
	k->retry[k->n] = q->retry;
	k->n_denials[k->n] = q->n_denials;
	k->decisions[k->n] = q->decisions;
	snprintf(k->reason[k->n], sizeof(k->reason[0]), "%s", q->reason);
	k->proposed[k->n][0] = '\0';
	snprintf(k->unprotect[k->n], sizeof(k->unprotect[0]), "%s",
		 q->unprotect && q->unprotect[0] ? q->unprotect[0] : "");
	for (size_t i = 0; q->proposed_prefix_rule && q->proposed_prefix_rule[i]; i++)
		o += (size_t)snprintf(k->proposed[k->n] + o, sizeof(k->proposed[0]) - o, "%s%s",
				      i ? " " : "", q->proposed_prefix_rule[i]);
	k->n++;
}

/* An outcome of a sandboxed run the sandbox denied (a write to /etc). */
static const struct ward__denial denial = {.access = "write", .syscall = "openat", .error = EACCES};

static struct ward__approval_outcome outcome(int code, bool denied)
{
	static char target[] = "/etc/passwd";
	static struct ward__denial d;

	d = denial;
	d.target = target;
	return (struct ward__approval_outcome){
		.exit_code = code, .denied = denied, .denials = &d, .n_denials = denied ? 1 : 0};
}

/*
 * Drives one command through the step machine: answers[] are the person's
 * answers in order, outcomes[] what each run did. Returns the final status;
 * *ret_runs the number of runs, ran_unsandboxed[] which ran outside.
 */
struct drive {
	const enum ward_review_decision *answers;
	size_t n_answers;
	const struct ward__approval_outcome *outcomes;
	size_t n_outcomes;
	const struct ward_approval_request *req;
	/* results */
	struct asked asked;
	unsigned runs;
	bool run_sandboxed[4];
	size_t run_unprotected[4]; /* paths the run's policy lifted */
	char reason[512];
	char notice[512];
};

static enum ward_approval_status drive(struct fixture *f, const struct ward_policy *policy,
				       const char *const *argv, struct drive *d)
{
	struct ward__approval_step *s = NULL;
	struct ward__approval_action act;
	struct ward_error err = {0};
	size_t ai = 0, oi = 0;

	if (ward__approval_begin(f->a, policy, argv, d->req, &s, &act, &err) < 0)
		tap_fail(__FILE__, __LINE__, "begin: %s", err.message);
	for (unsigned step = 0; step < 16; step++) {
		if (act.notice)
			snprintf(d->notice, sizeof(d->notice), "%s", act.notice);
		switch (act.kind) {
		case WARD__APPROVAL_ASK:
			record(&d->asked, act.question);
			if (ai >= d->n_answers)
				tap_fail(__FILE__, __LINE__, "asked once more than scripted: %s",
					 act.question->reason);
			ASSERT_OK(ward__approval_answer(s, d->answers[ai++], &act, &err));
			break;
		case WARD__APPROVAL_RUN:
			ASSERT_TRUE(act.policy != NULL && act.policy->resolved);
			ASSERT_EQ(act.sandboxed, act.policy->mode != WARD_MODE_DANGER_FULL_ACCESS);
			d->run_unprotected[d->runs] = act.policy->unprotected.n;
			d->run_sandboxed[d->runs++] = act.sandboxed;
			if (oi >= d->n_outcomes)
				tap_fail(__FILE__, __LINE__, "ran once more than scripted");
			ASSERT_OK(ward__approval_ran(s, &d->outcomes[oi++], &act, &err));
			break;
		case WARD__APPROVAL_REJECT:
			ASSERT_TRUE(act.reason != NULL);
			snprintf(d->reason, sizeof(d->reason), "%s", act.reason);
			/* A finished step answers nothing more. */
			ASSERT_EQ(ward__approval_answer(s, WARD_REVIEW_APPROVED, &act, &err),
				  -EINVAL);
			ward__approval_step_free(s);
			return act.status;
		case WARD__APPROVAL_DONE: {
			enum ward_approval_status st = act.status;
			struct ward__approval_outcome o = outcome(0, false);

			ASSERT_EQ(ward__approval_ran(s, &o, &act, &err), -EINVAL);
			ward__approval_step_free(s);
			return st;
		}
		}
	}
	tap_fail(__FILE__, __LINE__, "no end after 16 steps");
}

#define ARGV(...) ((const char *const[]){__VA_ARGS__, NULL})
#define ANSWERS(...)                                                 \
	.answers = (const enum ward_review_decision[]){__VA_ARGS__}, \
	.n_answers = ELEMENTSOF(((const enum ward_review_decision[]){__VA_ARGS__}))
#define OUTCOMES(...)                                                     \
	.outcomes = (const struct ward__approval_outcome[]){__VA_ARGS__}, \
	.n_outcomes = ELEMENTSOF(((const struct ward__approval_outcome[]){__VA_ARGS__}))

static const char rules[] =
	"prefix_rule(pattern=[\"git\", \"reset\", \"--hard\"], decision=\"forbidden\",\n"
	"            justification=\"destructive\")\n"
	"prefix_rule(pattern=[\"git\", \"status\"])\n"
	"prefix_rule(pattern=[\"git\", \"push\"], decision=\"prompt\")\n";

/* Counts the audit log's lines holding needle. */
static unsigned audit_count(const struct fixture *f, const char *needle)
{
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	unsigned n = 0;

	if (ward__read_file(f->log, 1 << 24, &text, &len) < 0)
		return 0;
	for (char *l = text; l && *l;) {
		char *nl = strchr(l, '\n');

		if (nl)
			*nl = '\0';
		n += strstr(l, needle) != NULL;
		l = nl ? nl + 1 : NULL;
	}
	return n;
}

/* ------------------------------------------------------------------ on-request */

TEST(on_request_allowed_runs_sandboxed_without_asking)
{
	struct fixture f;
	struct drive d = {OUTCOMES(outcome(0, false))};

	setup(&f, WARD_APPROVAL_ON_REQUEST, rules);
	ASSERT_EQ(drive(&f, f.policy, ARGV("touch", "x"), &d), WARD_APPROVAL_RAN_SANDBOXED);
	ASSERT_EQ(d.asked.n, 0);
	ASSERT_EQ(d.runs, 1);
	ASSERT_TRUE(d.run_sandboxed[0]);
	ASSERT_EQ(audit_count(&f, "\"event\":\"decision\",\"command\":[\"touch\",\"x\"]"), 1);
	ASSERT_EQ(audit_count(&f, "\"decision\":\"allow\",\"source\":\"mode\""), 1);
	teardown(&f);
}

TEST(on_request_rule_allow_runs_outside_the_sandbox)
{
	struct fixture f;
	struct drive d = {OUTCOMES(outcome(0, false))};

	setup(&f, WARD_APPROVAL_ON_REQUEST, rules);
	ASSERT_EQ(drive(&f, f.policy, ARGV("bash", "-lc", "git status"), &d),
		  WARD_APPROVAL_RAN_UNSANDBOXED);
	ASSERT_EQ(d.asked.n, 0);
	ASSERT_FALSE(d.run_sandboxed[0]);
	ASSERT_EQ(audit_count(&f, "\"source\":\"rules\""), 1);
	ASSERT_EQ(audit_count(&f, "\"event\":\"run\""), 1);
	ASSERT_EQ(audit_count(&f, "\"sandboxed\":false,\"exit_code\":0"), 1);
	teardown(&f);
}

TEST(on_request_forbidden_never_runs)
{
	struct fixture f;
	struct drive d = {0};

	setup(&f, WARD_APPROVAL_ON_REQUEST, rules);
	ASSERT_EQ(drive(&f, f.policy, ARGV("git", "reset", "--hard", "HEAD"), &d),
		  WARD_APPROVAL_REJECTED);
	ASSERT_EQ(d.runs, 0);
	ASSERT_STREQ(d.reason, "`git reset --hard HEAD` rejected: destructive");
	ASSERT_EQ(audit_count(&f, "\"decision\":\"forbidden\",\"source\":\"rules\""), 1);
	/* Hidden in a script the reader refuses, still forbidden. */
	memset(&d, 0, sizeof(d));
	ASSERT_EQ(
		drive(&f, f.policy, ARGV("bash", "-lc", "cd x && git reset --hard $(echo y)"), &d),
		WARD_APPROVAL_REJECTED);
	teardown(&f);
}

TEST(on_request_prompt_rule_asks_then_runs_sandboxed)
{
	struct fixture f;
	struct drive d = {ANSWERS(WARD_REVIEW_APPROVED), OUTCOMES(outcome(0, false))};

	setup(&f, WARD_APPROVAL_ON_REQUEST, rules);
	ASSERT_EQ(drive(&f, f.policy, ARGV("git", "push", "origin"), &d),
		  WARD_APPROVAL_RAN_SANDBOXED);
	ASSERT_EQ(d.asked.n, 1);
	ASSERT_STREQ(d.asked.reason[0], "`git push origin` requires approval by policy");
	ASSERT_FALSE(d.asked.unsandboxed[0]);
	/* A rule decided: no amendment is proposed. */
	ASSERT_STREQ(d.asked.proposed[0], "");
	ASSERT_FALSE(d.asked.decisions[0] & (1u << WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT));
	ASSERT_TRUE(d.run_sandboxed[0]);
	ASSERT_EQ(audit_count(&f, "\"event\":\"answer\""), 1);
	ASSERT_EQ(audit_count(&f, "\"decision\":\"approved\",\"source\":\"person\""), 1);
	teardown(&f);
}

TEST(on_request_denied_by_person)
{
	struct fixture f;
	struct drive d = {ANSWERS(WARD_REVIEW_DENIED)};

	setup(&f, WARD_APPROVAL_ON_REQUEST, rules);
	ASSERT_EQ(drive(&f, f.policy, ARGV("git", "push"), &d), WARD_APPROVAL_DENIED);
	ASSERT_EQ(d.runs, 0);
	ASSERT_STREQ(d.reason, "rejected by user");
	teardown(&f);
}

TEST(on_request_abort)
{
	struct fixture f;
	struct drive d = {ANSWERS(WARD_REVIEW_ABORT)};

	setup(&f, WARD_APPROVAL_ON_REQUEST, rules);
	ASSERT_EQ(drive(&f, f.policy, ARGV("rm", "-rf", "build"), &d), WARD_APPROVAL_ABORTED);
	ASSERT_EQ(d.runs, 0);
	ASSERT_CONTAINS(d.asked.reason[0], "may delete files by force");
	ASSERT_EQ(audit_count(&f, "\"decision\":\"abort\""), 1);
	teardown(&f);
}

/* on-request returns a sandbox denial as it is: no retry question. */
TEST(on_request_denial_not_retried)
{
	struct fixture f;
	struct drive d = {OUTCOMES(outcome(1, true))};

	setup(&f, WARD_APPROVAL_ON_REQUEST, rules);
	ASSERT_EQ(drive(&f, f.policy, ARGV("touch", "/etc/x"), &d), WARD_APPROVAL_RAN_SANDBOXED);
	ASSERT_EQ(d.asked.n, 0);
	ASSERT_EQ(d.runs, 1);
	teardown(&f);
}

/* A run refused a change to protected paths: the lift question, then the run with them writable. */
static struct ward__approval_outcome protected_outcome(const struct fixture *f, const char *rel,
						       const char *access)
{
	static char target[PATH_MAX + 64];
	static struct ward__denial d;

	snprintf(target, sizeof(target), "%s/%s", f->ws, rel);
	d = (struct ward__denial){.error = EROFS, .target = target};
	snprintf(d.access, sizeof(d.access), "%s", access);
	return (struct ward__approval_outcome){
		.exit_code = 1, .denied = true, .denials = &d, .n_denials = 1};
}

TEST(a_protected_path_refused_is_offered_for_this_command)
{
	struct fixture f;
	char vscode[2 * PATH_MAX];
	struct drive d = {ANSWERS(WARD_REVIEW_APPROVED)};
	struct ward__approval_outcome o[2];

	setup(&f, WARD_APPROVAL_ON_REQUEST, NULL);
	snprintf(vscode, sizeof(vscode), "%s/.vscode", f.ws);
	ASSERT_EQ(mkdir(vscode, 0755), 0);
	ward_policy_free(f.policy);
	f.policy = resolved(f.ws, NULL);
	o[0] = protected_outcome(&f, ".vscode/tasks.json", "write");
	o[1] = outcome(0, false);
	d.outcomes = o;
	d.n_outcomes = 2;
	ASSERT_EQ(drive(&f, f.policy, ARGV("make", "setup"), &d), WARD_APPROVAL_RAN_SANDBOXED);
	ASSERT_EQ(d.asked.n, 1);
	ASSERT_STREQ(d.asked.unprotect[0], vscode);
	ASSERT_FALSE(d.asked.unsandboxed[0]);
	ASSERT_CONTAINS(d.asked.reason[0], "autorun: editor tasks");
	ASSERT_CONTAINS(d.asked.reason[0], "an editor opening this folder");
	ASSERT_EQ(d.asked.decisions[0],
		  1u << WARD_REVIEW_APPROVED | 1u << WARD_REVIEW_DENIED | 1u << WARD_REVIEW_ABORT);
	ASSERT_EQ(d.runs, 2);
	ASSERT_TRUE(d.run_sandboxed[1]);
	ASSERT_EQ(d.run_unprotected[0], 0);
	ASSERT_EQ(d.run_unprotected[1], 1);
	ASSERT_EQ(audit_count(&f, "autorun: editor tasks"), 1);
	teardown(&f);
}

TEST(a_lift_declined_is_the_first_result)
{
	struct fixture f;
	struct drive d = {ANSWERS(WARD_REVIEW_DENIED)};
	struct ward__approval_outcome o[1];
	char nested[2 * PATH_MAX];

	/* A name the guard refused two levels down (created: no entry covers it). */
	setup(&f, WARD_APPROVAL_ON_REQUEST, NULL);
	snprintf(nested, sizeof(nested), "%s/a", f.ws);
	ASSERT_EQ(mkdir(nested, 0755), 0);
	ward_policy_free(f.policy);
	f.policy = resolved(f.ws, NULL);
	o[0] = protected_outcome(&f, "a/.mcp.json", "create");
	d.outcomes = o;
	d.n_outcomes = 1;
	ASSERT_EQ(drive(&f, f.policy, ARGV("make"), &d), WARD_APPROVAL_RAN_SANDBOXED);
	ASSERT_CONTAINS(d.notice, "declined");
	snprintf(nested, sizeof(nested), "%s/a/.mcp.json", f.ws);
	ASSERT_STREQ(d.asked.unprotect[0], nested);
	ASSERT_EQ(d.runs, 1);
	teardown(&f);
}

/* never: nobody is asked; the refusal is returned as it is. */
TEST(a_lift_is_never_asked_in_never_mode)
{
	struct fixture f;
	struct drive d = {0};
	struct ward__approval_outcome o;

	setup(&f, WARD_APPROVAL_NEVER, NULL);
	o = protected_outcome(&f, ".codex/config.toml", "create");
	d.outcomes = &o;
	d.n_outcomes = 1;
	ASSERT_EQ(drive(&f, f.policy, ARGV("make"), &d), WARD_APPROVAL_RAN_SANDBOXED);
	ASSERT_EQ(d.asked.n, 0);
	teardown(&f);
}

/* untrusted: lifted once; refused the same path again, the retry question comes. */
TEST(a_path_is_lifted_once_then_the_retry_question)
{
	struct fixture f;
	struct drive d = {0};
	struct ward__approval_outcome o[2];

	setup(&f, WARD_APPROVAL_UNTRUSTED, NULL);
	o[0] = protected_outcome(&f, ".codex", "create");
	o[1] = protected_outcome(&f, ".codex", "create");
	d.outcomes = o;
	d.n_outcomes = 2;
	d.answers = (const enum ward_review_decision[]){WARD_REVIEW_APPROVED, WARD_REVIEW_APPROVED,
							WARD_REVIEW_DENIED};
	d.n_answers = 3;
	ASSERT_EQ(drive(&f, f.policy, ARGV("make"), &d), WARD_APPROVAL_DENIED);
	ASSERT_EQ(d.asked.n, 3);
	ASSERT_TRUE(d.asked.unprotect[1][0] != '\0');
	ASSERT_TRUE(d.asked.retry[2]);
	ASSERT_EQ(d.runs, 2);
	teardown(&f);
}

TEST(on_request_require_escalated)
{
	struct fixture f;
	struct ward_approval_request *req;
	struct drive d = {ANSWERS(WARD_REVIEW_APPROVED), OUTCOMES(outcome(0, false))};
	const char *prefix[] = {"make", "install", NULL};

	setup(&f, WARD_APPROVAL_ON_REQUEST, rules);
	ASSERT_OK(ward_approval_request_new(&req));
	ASSERT_OK(ward_approval_request_set_sandbox_permissions(
		req, WARD_SANDBOX_PERMISSIONS_REQUIRE_ESCALATED));
	ASSERT_OK(ward_approval_request_set_justification(req, "installs into /usr/local"));
	ASSERT_OK(ward_approval_request_set_prefix_rule(req, prefix));
	d.req = req;
	ASSERT_EQ(drive(&f, f.policy, ARGV("make", "install", "PREFIX=/usr/local"), &d),
		  WARD_APPROVAL_RAN_UNSANDBOXED);
	ASSERT_EQ(d.asked.n, 1);
	ASSERT_TRUE(d.asked.unsandboxed[0]);
	ASSERT_STREQ(d.asked.proposed[0], "make install");
	ASSERT_TRUE(d.asked.decisions[0] & (1u << WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT));
	ASSERT_FALSE(d.run_sandboxed[0]);
	/* An escalation a rule allows needs no question (it is allowed outside already). */
	memset(&d, 0, sizeof(d));
	d.req = req;
	d.outcomes = (const struct ward__approval_outcome[]){outcome(0, false)};
	d.n_outcomes = 1;
	ASSERT_EQ(drive(&f, f.policy, ARGV("git", "status"), &d), WARD_APPROVAL_RAN_UNSANDBOXED);
	ASSERT_EQ(d.asked.n, 0);
	ward_approval_request_free(req);
	teardown(&f);
}

/*
 * A project's allow rule (whoever wrote the repository wrote it) never takes
 * a command out of the sandbox: a call asking to escalate, or to widen the
 * sandbox, is asked about as if no rule matched.
 */
TEST(project_allow_does_not_grant_escalation)
{
	struct fixture f;
	struct ward_approval_request *req;
	struct ward_error err = {0};
	struct drive d = {ANSWERS(WARD_REVIEW_DENIED)};
	const char *text = "prefix_rule(pattern=[\"touch\"], decision=\"allow\")\n";
	char path[PATH_MAX + 16];

	setup(&f, WARD_APPROVAL_ON_REQUEST, NULL);
	ASSERT_OK(
		ward__rules_parse(&f.a->rules, "proj.rules", text, strlen(text), true, NULL, &err));
	ASSERT_OK(ward_approval_request_new(&req));
	ASSERT_OK(ward_approval_request_set_sandbox_permissions(
		req, WARD_SANDBOX_PERMISSIONS_REQUIRE_ESCALATED));
	d.req = req;
	ASSERT_EQ(drive(&f, f.policy, ARGV("touch", "/etc/x"), &d), WARD_APPROVAL_DENIED);
	ASSERT_EQ(d.asked.n, 1);
	ASSERT_TRUE(d.asked.unsandboxed[0]);
	ASSERT_EQ(d.runs, 0);
	/* Widening the sandbox is asked about too. */
	snprintf(path, sizeof(path), "%s", f.out);
	ASSERT_OK(ward_approval_request_set_sandbox_permissions(
		req, WARD_SANDBOX_PERMISSIONS_WITH_ADDITIONAL_PERMISSIONS));
	ASSERT_OK(ward_approval_request_add_writable(req, path));
	memset(&d, 0, sizeof(d));
	d.req = req;
	d.answers = (const enum ward_review_decision[]){WARD_REVIEW_DENIED};
	d.n_answers = 1;
	ASSERT_EQ(drive(&f, f.policy, ARGV("touch", path), &d), WARD_APPROVAL_DENIED);
	ASSERT_EQ(d.asked.n, 1);
	ASSERT_EQ(d.runs, 0);
	/* Without an escalation the project's allow still skips the question, in the sandbox. */
	memset(&d, 0, sizeof(d));
	d.outcomes = (const struct ward__approval_outcome[]){outcome(0, false)};
	d.n_outcomes = 1;
	ASSERT_EQ(drive(&f, f.policy, ARGV("touch", "x"), &d), WARD_APPROVAL_RAN_SANDBOXED);
	ASSERT_EQ(d.asked.n, 0);
	ASSERT_TRUE(d.run_sandboxed[0]);
	ward_approval_request_free(req);
	teardown(&f);
}

/* Codex's checks of the per-call fields. */
TEST(request_fields_checked)
{
	struct fixture f;
	struct ward_approval_request *req;
	struct drive d = {0};
	const char *py[] = {"python3", NULL};

	setup(&f, WARD_APPROVAL_ON_REQUEST, rules);
	ASSERT_OK(ward_approval_request_new(&req));
	d.req = req;
	ASSERT_OK(ward_approval_request_set_justification(req, "please"));
	ASSERT_EQ(drive(&f, f.policy, ARGV("ls"), &d), WARD_APPROVAL_REJECTED);
	ASSERT_CONTAINS(d.reason, "justification is only valid with");
	ASSERT_OK(ward_approval_request_set_justification(req, NULL));
	ASSERT_OK(ward_approval_request_set_prefix_rule(req, py));
	ASSERT_EQ(drive(&f, f.policy, ARGV("ls"), &d), WARD_APPROVAL_REJECTED);
	ASSERT_CONTAINS(d.reason, "prefix_rule is only valid with");
	ASSERT_OK(ward_approval_request_set_sandbox_permissions(
		req, WARD_SANDBOX_PERMISSIONS_REQUIRE_ESCALATED));
	ASSERT_EQ(drive(&f, f.policy, ARGV("python3", "x.py"), &d), WARD_APPROVAL_REJECTED);
	ASSERT_CONTAINS(d.reason, "prefix_rule `python3` cannot be offered");
	ASSERT_OK(ward_approval_request_set_prefix_rule(req, NULL));
	ASSERT_OK(ward_approval_request_set_sandbox_permissions(
		req, WARD_SANDBOX_PERMISSIONS_WITH_ADDITIONAL_PERMISSIONS));
	ASSERT_EQ(drive(&f, f.policy, ARGV("ls"), &d), WARD_APPROVAL_REJECTED);
	ASSERT_CONTAINS(d.reason, "needs additional permissions");
	ASSERT_OK(ward_approval_request_set_sandbox_permissions(
		req, WARD_SANDBOX_PERMISSIONS_USE_DEFAULT));
	ASSERT_OK(ward_approval_request_set_network(req, true));
	ASSERT_EQ(drive(&f, f.policy, ARGV("ls"), &d), WARD_APPROVAL_REJECTED);
	ASSERT_CONTAINS(d.reason,
			"only valid with sandbox_permissions with_additional_permissions");
	/* Escalation outside on-request: Codex's corrective rejection. */
	ASSERT_OK(ward_approval_request_set_network(req, false));
	ASSERT_OK(ward_approval_request_set_sandbox_permissions(
		req, WARD_SANDBOX_PERMISSIONS_REQUIRE_ESCALATED));
	ASSERT_OK(ward_approver_set_mode(f.a, WARD_APPROVAL_NEVER));
	ASSERT_EQ(drive(&f, f.policy, ARGV("ls"), &d), WARD_APPROVAL_REJECTED);
	ASSERT_STREQ(
		d.reason,
		"approval policy is never; reject command — you should not ask for escalated permissions if the approval policy is never");
	ASSERT_EQ(audit_count(&f, "\"source\":\"request\""), 6);
	ward_approval_request_free(req);
	teardown(&f);
}

/* with_additional_permissions: a sandboxed run under the widened policy, after a question. */
TEST(additional_permissions_widen_the_sandbox)
{
	struct fixture f;
	struct ward_approval_request *req;
	struct ward__approval_step *s = NULL;
	struct ward__approval_action act;
	struct ward_error err = {0};

	setup(&f, WARD_APPROVAL_ON_REQUEST, NULL);
	ASSERT_OK(ward_approval_request_new(&req));
	ASSERT_OK(ward_approval_request_set_sandbox_permissions(
		req, WARD_SANDBOX_PERMISSIONS_WITH_ADDITIONAL_PERMISSIONS));
	ASSERT_OK(ward_approval_request_add_writable(req, f.out));
	ASSERT_OK(ward_approval_request_set_network(req, true));
	ASSERT_OK(ward__approval_begin(f.a, f.policy, ARGV("touch", "x"), req, &s, &act, &err));
	ASSERT_EQ(act.kind, WARD__APPROVAL_ASK);
	ASSERT_FALSE(act.question->unsandboxed);
	ASSERT_CONTAINS(act.question->reason, "write access to more paths and the network");
	ASSERT_OK(ward__approval_answer(s, WARD_REVIEW_APPROVED, &act, &err));
	ASSERT_EQ(act.kind, WARD__APPROVAL_RUN);
	ASSERT_TRUE(act.sandboxed);
	ASSERT_TRUE(act.policy != f.policy);
	ASSERT_TRUE(act.policy->network);
	ASSERT_TRUE(ward__policy_path_writable(act.policy, f.out));
	ASSERT_FALSE(ward__policy_path_writable(f.policy, f.out));
	ward__approval_step_free(s);
	/* A path that does not exist cannot be granted. */
	ASSERT_OK(ward_approval_request_add_writable(req, "/nonexistent/ward-x"));
	ASSERT_OK(ward__approval_begin(f.a, f.policy, ARGV("touch", "x"), req, &s, &act, &err));
	ASSERT_EQ(act.kind, WARD__APPROVAL_REJECT);
	ASSERT_CONTAINS(act.reason, "cannot be granted");
	ward__approval_step_free(s);
	ward_approval_request_free(req);
	teardown(&f);
}

/* ------------------------------------------------------------------ untrusted */

TEST(untrusted_known_safe_runs_without_asking)
{
	struct fixture f;
	struct drive d = {OUTCOMES(outcome(0, false))};

	setup(&f, WARD_APPROVAL_UNTRUSTED, NULL);
	ASSERT_EQ(drive(&f, f.policy, ARGV("bash", "-lc", "ls -la && cat README | wc -l"), &d),
		  WARD_APPROVAL_RAN_SANDBOXED);
	ASSERT_EQ(d.asked.n, 0);
	/* Not understood: asked. */
	memset(&d, 0, sizeof(d));
	d.answers = (const enum ward_review_decision[]){WARD_REVIEW_DENIED};
	d.n_answers = 1;
	ASSERT_EQ(drive(&f, f.policy, ARGV("bash", "-lc", "ls > listing"), &d),
		  WARD_APPROVAL_DENIED);
	ASSERT_CONTAINS(d.asked.reason[0], "cannot be read exactly");
	teardown(&f);
}

/* The denied-then-retried path: two questions, the second about running outside. */
TEST(untrusted_denied_then_retried_outside)
{
	struct fixture f;
	struct drive d = {ANSWERS(WARD_REVIEW_APPROVED, WARD_REVIEW_APPROVED),
			  OUTCOMES(outcome(1, true), outcome(0, false))};

	setup(&f, WARD_APPROVAL_UNTRUSTED, NULL);
	ASSERT_EQ(drive(&f, f.policy, ARGV("touch", "/etc/x"), &d), WARD_APPROVAL_RAN_UNSANDBOXED);
	ASSERT_EQ(d.asked.n, 2);
	ASSERT_FALSE(d.asked.unsandboxed[0]);
	ASSERT_FALSE(d.asked.retry[0]);
	ASSERT_STREQ(d.asked.proposed[0], "touch /etc/x");
	ASSERT_TRUE(d.asked.unsandboxed[1]);
	ASSERT_TRUE(d.asked.retry[1]);
	ASSERT_STREQ(d.asked.reason[1], "command failed; retry without sandbox?");
	ASSERT_EQ(d.asked.n_denials[1], 1);
	ASSERT_EQ(d.runs, 2);
	ASSERT_TRUE(d.run_sandboxed[0]);
	ASSERT_FALSE(d.run_sandboxed[1]);
	ASSERT_EQ(audit_count(&f, "\"event\":\"run\""), 1);
	ASSERT_EQ(audit_count(&f, "retry without sandbox"), 1);
	teardown(&f);
}

TEST(untrusted_retry_denied)
{
	struct fixture f;
	struct drive d = {ANSWERS(WARD_REVIEW_APPROVED, WARD_REVIEW_DENIED),
			  OUTCOMES(outcome(1, true))};

	setup(&f, WARD_APPROVAL_UNTRUSTED, NULL);
	ASSERT_EQ(drive(&f, f.policy, ARGV("touch", "/etc/x"), &d), WARD_APPROVAL_DENIED);
	ASSERT_EQ(d.runs, 1);
	teardown(&f);
}

/*
 * Refusals of the network by domain alone are no reason to offer a run
 * outside the sandbox (it would give the whole network): no retry question.
 */
TEST(untrusted_network_refusals_not_retried)
{
	static char target[] = "evil.example:443";
	struct ward__denial net = {.access = "network", .target = target, .reason = "not-allowed"};
	struct ward__approval_outcome o = {
		.exit_code = 56, .denied = true, .denials = &net, .n_denials = 1};
	struct fixture f;
	struct drive d = {ANSWERS(WARD_REVIEW_APPROVED), .outcomes = &o, .n_outcomes = 1};

	setup(&f, WARD_APPROVAL_UNTRUSTED, NULL);
	ASSERT_EQ(drive(&f, f.policy, ARGV("curl", "https://evil.example/"), &d),
		  WARD_APPROVAL_RAN_SANDBOXED);
	ASSERT_EQ(d.asked.n, 1);
	ASSERT_EQ(d.runs, 1);
	teardown(&f);
}

/* Only the sandbox's own report counts: a failure without one, or a denial with success, is no retry. */
TEST(untrusted_no_retry_without_exact_denial)
{
	struct fixture f;
	struct drive d = {ANSWERS(WARD_REVIEW_APPROVED), OUTCOMES(outcome(1, false))};
	struct ward__approval_outcome timed = outcome(124, true);

	setup(&f, WARD_APPROVAL_UNTRUSTED, NULL);
	ASSERT_EQ(drive(&f, f.policy, ARGV("make"), &d), WARD_APPROVAL_RAN_SANDBOXED);
	ASSERT_EQ(d.asked.n, 1);
	memset(&d, 0, sizeof(d));
	d.answers = (const enum ward_review_decision[]){WARD_REVIEW_APPROVED};
	d.n_answers = 1;
	d.outcomes = (const struct ward__approval_outcome[]){outcome(0, true)};
	d.n_outcomes = 1;
	ASSERT_EQ(drive(&f, f.policy, ARGV("make"), &d), WARD_APPROVAL_RAN_SANDBOXED);
	memset(&d, 0, sizeof(d));
	timed.timed_out = true;
	d.answers = (const enum ward_review_decision[]){WARD_REVIEW_APPROVED};
	d.n_answers = 1;
	d.outcomes = &timed;
	d.n_outcomes = 1;
	ASSERT_EQ(drive(&f, f.policy, ARGV("make"), &d), WARD_APPROVAL_RAN_SANDBOXED);
	ASSERT_EQ(d.asked.n, 1);
	teardown(&f);
}

/* Deny-read paths: never outside the sandbox, neither on request nor as a retry. */
TEST(deny_read_present_so_no_unsandboxed_run)
{
	struct fixture f;
	struct ward_policy *deny;
	struct ward_approval_request *req;
	struct drive d = {ANSWERS(WARD_REVIEW_APPROVED), OUTCOMES(outcome(1, true))};
	char secret[PATH_MAX + 16];

	setup(&f, WARD_APPROVAL_UNTRUSTED, rules);
	snprintf(secret, sizeof(secret), "%s/secret", f.out);
	ASSERT_EQ(mkdir(secret, 0700), 0);
	deny = resolved(f.ws, secret);
	ASSERT_EQ(drive(&f, deny, ARGV("touch", "/etc/x"), &d), WARD_APPROVAL_RAN_SANDBOXED);
	ASSERT_EQ(d.asked.n, 1);
	ASSERT_EQ(d.runs, 1);
	ASSERT_CONTAINS(d.notice, "not retried outside the sandbox");
	/* A rule's allow runs in the sandbox too. */
	memset(&d, 0, sizeof(d));
	d.outcomes = (const struct ward__approval_outcome[]){outcome(0, false)};
	d.n_outcomes = 1;
	ASSERT_EQ(drive(&f, deny, ARGV("git", "status"), &d), WARD_APPROVAL_RAN_SANDBOXED);
	ASSERT_TRUE(d.run_sandboxed[0]);
	/* And so does require_escalated (on-request). */
	ASSERT_OK(ward_approver_set_mode(f.a, WARD_APPROVAL_ON_REQUEST));
	ASSERT_OK(ward_approval_request_new(&req));
	ASSERT_OK(ward_approval_request_set_sandbox_permissions(
		req, WARD_SANDBOX_PERMISSIONS_REQUIRE_ESCALATED));
	memset(&d, 0, sizeof(d));
	d.req = req;
	d.answers = (const enum ward_review_decision[]){WARD_REVIEW_APPROVED};
	d.n_answers = 1;
	d.outcomes = (const struct ward__approval_outcome[]){outcome(0, false)};
	d.n_outcomes = 1;
	ASSERT_EQ(drive(&f, deny, ARGV("make", "install"), &d), WARD_APPROVAL_RAN_SANDBOXED);
	ASSERT_FALSE(d.asked.unsandboxed[0]);
	ASSERT_TRUE(d.run_sandboxed[0]);
	ward_approval_request_free(req);
	ward_policy_free(deny);
	teardown(&f);
}

/* ------------------------------------------------------------------ the session cache */

TEST(session_cache_same_and_other_directory)
{
	struct fixture f;
	struct ward_policy *other;
	struct drive d = {ANSWERS(WARD_REVIEW_APPROVED_FOR_SESSION), OUTCOMES(outcome(0, false))};

	setup(&f, WARD_APPROVAL_UNTRUSTED, NULL);
	ASSERT_EQ(drive(&f, f.policy, ARGV("make", "test"), &d), WARD_APPROVAL_RAN_SANDBOXED);
	ASSERT_EQ(d.asked.n, 1);
	/* Same command, same directory: no question. Also through bash -lc (canonical form). */
	memset(&d, 0, sizeof(d));
	d.outcomes = (const struct ward__approval_outcome[]){outcome(0, false)};
	d.n_outcomes = 1;
	ASSERT_EQ(drive(&f, f.policy, ARGV("make", "test"), &d), WARD_APPROVAL_RAN_SANDBOXED);
	ASSERT_EQ(d.asked.n, 0);
	ASSERT_EQ(drive(&f, f.policy, ARGV("bash", "-lc", "make test"), &d),
		  WARD_APPROVAL_RAN_SANDBOXED);
	ASSERT_EQ(d.asked.n, 0);
	ASSERT_EQ(audit_count(&f, "\"decision\":\"approved_for_session\",\"source\":\"cache\""), 2);
	/* Another directory: asked again (the answer is scoped to its directory). */
	other = resolved(f.other, NULL);
	memset(&d, 0, sizeof(d));
	d.answers = (const enum ward_review_decision[]){WARD_REVIEW_DENIED};
	d.n_answers = 1;
	ASSERT_EQ(drive(&f, other, ARGV("make", "test"), &d), WARD_APPROVAL_DENIED);
	ASSERT_EQ(d.asked.n, 1);
	/* A sandboxed-run answer does not cover the retry outside: that is asked. */
	memset(&d, 0, sizeof(d));
	d.answers = (const enum ward_review_decision[]){WARD_REVIEW_DENIED};
	d.n_answers = 1;
	d.outcomes = (const struct ward__approval_outcome[]){outcome(2, true)};
	d.n_outcomes = 1;
	ASSERT_EQ(drive(&f, f.policy, ARGV("make", "test"), &d), WARD_APPROVAL_DENIED);
	ASSERT_EQ(d.asked.n, 1);
	ASSERT_TRUE(d.asked.retry[0]);
	ward_policy_free(other);
	teardown(&f);
}

/* "For this session" on the retry question covers later retries outside the sandbox. */
TEST(session_cache_covers_retry_when_given_for_it)
{
	struct fixture f;
	struct drive d = {ANSWERS(WARD_REVIEW_APPROVED, WARD_REVIEW_APPROVED_FOR_SESSION),
			  OUTCOMES(outcome(1, true), outcome(0, false))};

	setup(&f, WARD_APPROVAL_UNTRUSTED, NULL);
	ASSERT_EQ(drive(&f, f.policy, ARGV("npm", "install"), &d), WARD_APPROVAL_RAN_UNSANDBOXED);
	memset(&d, 0, sizeof(d));
	d.outcomes = (const struct ward__approval_outcome[]){outcome(1, true), outcome(0, false)};
	d.n_outcomes = 2;
	ASSERT_EQ(drive(&f, f.policy, ARGV("npm", "install"), &d), WARD_APPROVAL_RAN_UNSANDBOXED);
	ASSERT_EQ(d.asked.n, 0);
	ASSERT_EQ(d.runs, 2);
	teardown(&f);
}

TEST(session_cache_is_bounded)
{
	struct fixture f;

	setup(&f, WARD_APPROVAL_UNTRUSTED, NULL);
	for (unsigned i = 0; i < WARD_APPROVAL_CACHE_MAX + 10; i++) {
		char k[32];

		snprintf(k, sizeof(k), "key-%u", i);
		ASSERT_OK(ward__cache_store(f.a, k, strlen(k), false));
	}
	ASSERT_EQ(f.a->cache_n, WARD_APPROVAL_CACHE_MAX);
	/* The oldest were forgotten, the newest kept. */
	ASSERT_FALSE(ward__cache_lookup(f.a, "key-0", 5, false));
	ASSERT_FALSE(ward__cache_lookup(f.a, "key-9", 5, false));
	ASSERT_TRUE(ward__cache_lookup(f.a, "key-10", 6, false));
	ASSERT_TRUE(ward__cache_lookup(f.a, "key-1033", 8, false));
	ASSERT_FALSE(ward__cache_lookup(f.a, "key-1033", 8, true));
	/* Storing again upgrades the scope without a second entry. */
	ASSERT_OK(ward__cache_store(f.a, "key-1033", 8, true));
	ASSERT_TRUE(ward__cache_lookup(f.a, "key-1033", 8, true));
	ASSERT_EQ(f.a->cache_n, WARD_APPROVAL_CACHE_MAX);
	teardown(&f);
}

TEST(cache_keys)
{
	struct ward_approval_request req = {0};
	_cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL;
	size_t la, lb, lc, ld, le;

	ASSERT_OK(ward__approval_key(ARGV("make", "test"), 2, "/w", NULL, &a, &la));
	ASSERT_OK(ward__approval_key(ARGV("bash", "-lc", "make test"), 3, "/w", NULL, &b, &lb));
	ASSERT_TRUE(la == lb && memcmp(a, b, la) == 0);
	ASSERT_OK(ward__approval_key(ARGV("make", "test"), 2, "/x", NULL, &c, &lc));
	ASSERT_FALSE(la == lc && memcmp(a, c, la) == 0);
	req.tty = true;
	ASSERT_OK(ward__approval_key(ARGV("make", "test"), 2, "/w", &req, &d, &ld));
	ASSERT_FALSE(la == ld && memcmp(a, d, la) == 0);
	/* A two-command script is keyed by its text. */
	ASSERT_OK(ward__approval_key(ARGV("bash", "-lc", "make; test"), 3, "/w", NULL, &e, &le));
	ASSERT_FALSE(la == le && memcmp(a, e, la) == 0);
}

/* ------------------------------------------------------------------ never, granular */

TEST(never_mode)
{
	struct fixture f;
	struct drive d = {OUTCOMES(outcome(1, true))};

	setup(&f, WARD_APPROVAL_NEVER, rules);
	ASSERT_EQ(drive(&f, f.policy, ARGV("touch", "/etc/x"), &d), WARD_APPROVAL_RAN_SANDBOXED);
	ASSERT_EQ(d.asked.n, 0);
	memset(&d, 0, sizeof(d));
	ASSERT_EQ(drive(&f, f.policy, ARGV("git", "push"), &d), WARD_APPROVAL_REJECTED);
	ASSERT_STREQ(d.reason, "approval required by policy, but the approval mode is never");
	ASSERT_EQ(drive(&f, f.policy, ARGV("rm", "-rf", "x"), &d), WARD_APPROVAL_REJECTED);
	ASSERT_CONTAINS(d.reason, "`rm -rf x` rejected: blocked by policy");
	ASSERT_EQ(d.runs, 0);
	teardown(&f);
}

TEST(granular_mode)
{
	struct fixture f;
	struct ward_approval_granular g = {.sandbox_approval = true, .rules = false};
	struct drive d = {ANSWERS(WARD_REVIEW_APPROVED, WARD_REVIEW_APPROVED),
			  OUTCOMES(outcome(1, true), outcome(0, false))};

	setup(&f, WARD_APPROVAL_GRANULAR, rules);
	ASSERT_OK(ward_approver_set_granular(f.a, &g));
	/* Rule prompts are switched off: refused. */
	ASSERT_EQ(drive(&f, f.policy, ARGV("git", "push"), &d), WARD_APPROVAL_REJECTED);
	ASSERT_CONTAINS(d.reason, "granular rules approval is off");
	/* Sandbox approval on: a dangerous command is asked, a denial retried. */
	ASSERT_EQ(drive(&f, f.policy, ARGV("rm", "-f", "/etc/x"), &d),
		  WARD_APPROVAL_RAN_UNSANDBOXED);
	ASSERT_EQ(d.asked.n, 2);
	g.sandbox_approval = false;
	ASSERT_OK(ward_approver_set_granular(f.a, &g));
	memset(&d, 0, sizeof(d));
	ASSERT_EQ(drive(&f, f.policy, ARGV("rm", "-f", "x"), &d), WARD_APPROVAL_REJECTED);
	ASSERT_CONTAINS(d.reason, "granular sandbox approval is off");
	/* ...and a denial is not retried. */
	memset(&d, 0, sizeof(d));
	d.outcomes = (const struct ward__approval_outcome[]){outcome(1, true)};
	d.n_outcomes = 1;
	ASSERT_EQ(drive(&f, f.policy, ARGV("touch", "/etc/x"), &d), WARD_APPROVAL_RAN_SANDBOXED);
	ASSERT_EQ(d.asked.n, 0);
	teardown(&f);
}

/* ------------------------------------------------------------------ amendments */

TEST(amendment_persists_and_applies)
{
	struct fixture f;
	struct drive d = {ANSWERS(WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT),
			  OUTCOMES(outcome(0, false))};
	_cleanup_free_ char *text = NULL;
	size_t len;

	setup(&f, WARD_APPROVAL_UNTRUSTED, NULL);
	ASSERT_EQ(drive(&f, f.policy, ARGV("cargo", "build", "--release"), &d),
		  WARD_APPROVAL_RAN_SANDBOXED);
	ASSERT_STREQ(d.asked.proposed[0], "cargo build --release");
	ASSERT_OK(ward__read_file(f.rules, 1 << 20, &text, &len));
	ASSERT_STREQ(
		text,
		"prefix_rule(pattern=[\"cargo\", \"build\", \"--release\"], decision=\"allow\")\n");
	/* Applied at once: the same command is now allowed by a rule, and so runs outside. */
	memset(&d, 0, sizeof(d));
	d.outcomes = (const struct ward__approval_outcome[]){outcome(0, false)};
	d.n_outcomes = 1;
	ASSERT_EQ(drive(&f, f.policy, ARGV("cargo", "build", "--release", "-v"), &d),
		  WARD_APPROVAL_RAN_UNSANDBOXED);
	ASSERT_EQ(d.asked.n, 0);
	teardown(&f);
}

/* A banned proposal is never offered; a rule that cannot be saved still applies, with a notice. */
TEST(amendment_banned_and_unsaved)
{
	struct fixture f;
	struct drive d = {ANSWERS(WARD_REVIEW_DENIED)};

	setup(&f, WARD_APPROVAL_UNTRUSTED, NULL);
	ASSERT_EQ(drive(&f, f.policy, ARGV("python3"), &d), WARD_APPROVAL_DENIED);
	ASSERT_STREQ(d.asked.proposed[0], "");
	ASSERT_FALSE(d.asked.decisions[0] & (1u << WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT));
	ASSERT_OK(ward_approver_set_amendment_file(f.a, "/proc/ward-cannot-write/x.rules"));
	memset(&d, 0, sizeof(d));
	d.answers = (const enum ward_review_decision[]){WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT};
	d.n_answers = 1;
	d.outcomes = (const struct ward__approval_outcome[]){outcome(0, false)};
	d.n_outcomes = 1;
	ASSERT_EQ(drive(&f, f.policy, ARGV("make", "all"), &d), WARD_APPROVAL_RAN_SANDBOXED);
	ASSERT_CONTAINS(d.notice, "the approved rule was not saved");
	teardown(&f);
}

/* Answers must be among those offered. */
TEST(answers_checked)
{
	struct fixture f;
	struct ward__approval_step *s = NULL;
	struct ward__approval_action act;
	struct ward_error err = {0};

	setup(&f, WARD_APPROVAL_ON_REQUEST, rules);
	ASSERT_OK(ward__approval_begin(f.a, f.policy, ARGV("git", "push"), NULL, &s, &act, &err));
	ASSERT_EQ(act.kind, WARD__APPROVAL_ASK);
	ASSERT_EQ(ward__approval_answer(s, WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT, &act, &err),
		  -EINVAL);
	ASSERT_EQ(ward__approval_answer(s, (enum ward_review_decision)99, &act, &err), -EINVAL);
	ASSERT_OK(ward__approval_answer(s, WARD_REVIEW_APPROVED, &act, &err));
	ASSERT_EQ(act.kind, WARD__APPROVAL_RUN);
	ASSERT_EQ(ward__approval_answer(s, WARD_REVIEW_APPROVED, &act, &err), -EINVAL);
	ward__approval_step_free(s);
	ASSERT_EQ(ward__approval_begin(f.a, f.policy, ARGV(NULL), NULL, &s, &act, &err), -EINVAL);
	teardown(&f);
}

/* ------------------------------------------------------------------ the audit log */

TEST(audit_records_parse)
{
	struct ward__audit_record rec = {
		.event = "run",
		.argv = ARGV("echo", "a\"b", "\xff\n"),
		.argc = 3,
		.cwd = "/w",
		.mode = "untrusted",
		.decision = "ran",
		.source = "approval",
		.sandboxed = false,
		.have_exit_code = true,
		.exit_code = 3,
		.reason = "why",
	};
	_cleanup_free_ char *line = NULL;
	json_error_t jerr;
	json_t *j;

	ASSERT_OK(ward__audit_format(&rec, &line));
	j = json_loads(line, 0, &jerr);
	ASSERT_TRUE(j != NULL);
	ASSERT_STREQ(json_string_value(json_array_get(json_object_get(j, "command"), 1)), "a\"b");
	ASSERT_STREQ(json_string_value(json_array_get(json_object_get(j, "command"), 2)),
		     "\xef\xbf\xbd\n");
	ASSERT_EQ(json_integer_value(json_object_get(j, "exit_code")), 3);
	ASSERT_TRUE(json_is_false(json_object_get(j, "sandboxed")));
	ASSERT_TRUE(json_is_string(json_object_get(j, "time")));
	json_decref(j);
}

TEST(audit_long_records_are_cut)
{
	_cleanup_free_ char *big = malloc(200000);
	const char *argv[300];
	struct ward__audit_record rec = {.event = "decision",
					 .argv = argv,
					 .argc = 300,
					 .cwd = "/w",
					 .mode = "never",
					 .decision = "allow",
					 .source = "mode"};
	_cleanup_free_ char *line = NULL;
	json_error_t jerr;
	json_t *j;

	memset(big, '\x01', 199999);
	big[199999] = '\0';
	for (size_t i = 0; i < 300; i++)
		argv[i] = big;
	rec.reason = big;
	ASSERT_OK(ward__audit_format(&rec, &line));
	ASSERT_LE(strlen(line), WARD_AUDIT_RECORD_MAX - 1);
	j = json_loads(line, 0, &jerr);
	ASSERT_TRUE(j != NULL);
	ASSERT_TRUE(json_is_true(json_object_get(j, "truncated")));
	json_decref(j);
}

/*
 * Writers in parallel, the log rotating under them (once: the lines add up to
 * more than one log and less than two): every line whole, none lost, each
 * writer's lines in the order it wrote them.
 */
TEST_TIMEOUT(audit_concurrent_with_rotation, 120)
{
	char dir[PATH_MAX], path[PATH_MAX + 32], old[PATH_MAX + 64];
	enum { WRITERS = 6, EACH = 100 };
	char pad[2200];
	unsigned seen[WRITERS] = {0};
	int last[WRITERS];
	struct stat st;

	snprintf(dir, sizeof(dir), "%s/%d", scratch, (int)getpid());
	ASSERT_EQ(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/log/audit.jsonl", dir);
	snprintf(old, sizeof(old), "%s.1", path);
	memset(pad, 'x', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	for (int w = 0; w < WRITERS; w++) {
		pid_t pid = fork();

		last[w] = -1;
		ASSERT_GE(pid, 0);
		if (pid == 0) {
			for (int i = 0; i < EACH; i++) {
				char who[32], seq[32];
				struct ward__audit_record rec = {.event = "decision",
								 .argv = ARGV(who, seq, pad),
								 .argc = 3,
								 .cwd = "/",
								 .mode = "never",
								 .decision = "allow",
								 .source = "mode"};

				snprintf(who, sizeof(who), "writer-%d", w);
				snprintf(seq, sizeof(seq), "%d", i);
				if (ward__audit_append(path, &rec) < 0)
					_exit(1);
			}
			_exit(0);
		}
	}
	for (int w = 0; w < WRITERS; w++) {
		int status;

		ASSERT_GE(wait(&status), 0);
		ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	ASSERT_EQ(stat(old, &st), 0); /* it rotated */
	ASSERT_GE((size_t)st.st_size, WARD_AUDIT_MAX);
	for (int k = 0; k < 2; k++) {
		_cleanup_free_ char *text = NULL;
		size_t len = 0;

		ASSERT_OK(ward__read_file(k ? path : old, 1 << 24, &text, &len));
		for (char *l = text; *l;) {
			char *nl = strchr(l, '\n');
			json_error_t jerr;
			json_t *j, *cmd;
			int w, i;

			ASSERT_TRUE(nl != NULL);
			*nl = '\0';
			j = json_loads(l, 0, &jerr);
			if (!j)
				tap_fail(__FILE__, __LINE__, "broken line: %.80s", l);
			cmd = json_object_get(j, "command");
			ASSERT_EQ(
				sscanf(json_string_value(json_array_get(cmd, 0)), "writer-%d", &w),
				1);
			ASSERT_TRUE(w >= 0 && w < WRITERS);
			i = atoi_checked(json_string_value(json_array_get(cmd, 1)));
			ASSERT_EQ(i, last[w] + 1);
			last[w] = i;
			seen[w]++;
			json_decref(j);
			l = nl + 1;
		}
	}
	for (int w = 0; w < WRITERS; w++)
		ASSERT_EQ(seen[w], EACH);
}

TEST(audit_default_path)
{
	_cleanup_free_ char *a = NULL, *b = NULL;

	setenv("XDG_STATE_HOME", "/state", 1);
	ASSERT_OK(ward__audit_default_path(&a));
	ASSERT_STREQ(a, "/state/ward/audit.jsonl");
	unsetenv("XDG_STATE_HOME");
	setenv("HOME", "/home/u", 1);
	ASSERT_OK(ward__audit_default_path(&b));
	ASSERT_STREQ(b, "/home/u/.local/state/ward/audit.jsonl");
}

/* ------------------------------------------------------------------ real runs */

struct script {
	enum ward_review_decision answers[4];
	unsigned n, asked;
	bool retry_seen;
};

static int scripted(void *userdata, const struct ward_approval_question *q,
		    enum ward_review_decision *ret)
{
	struct script *s = userdata;

	if (s->asked >= s->n)
		return -ECANCELED;
	s->retry_seen = s->retry_seen || q->retry;
	*ret = s->answers[s->asked++];
	return 0;
}

static int run_approved(struct fixture *f, const struct ward_policy *p, const char *const *argv,
			struct script *sc, struct ward_result **ret_res,
			enum ward_approval_status *ret_status)
{
	struct ward_run_options *o;
	struct ward_error err = {0};
	int r;

	ASSERT_OK(ward_run_options_new(&o));
	ASSERT_OK(ward_run_options_set_argv(o, argv));
	ASSERT_OK(ward_run_options_set_timeout_ms(o, 20000));
	*ret_res = (struct ward_result *)(uintptr_t)1; /* must be overwritten */
	r = ward_run_with_approval(f->a, p, o, NULL, scripted, sc, NULL, ret_res, ret_status, &err);
	if (r < 0)
		tap_fail(__FILE__, __LINE__, "run: %s", err.message);
	ward_run_options_free(o);
	if (!*ret_res) {
		/* Not run: the reason is in err. */
		ASSERT_TRUE(*ret_status >= WARD_APPROVAL_REJECTED);
		ASSERT_STREQ(err.stage, "approval");
		ASSERT_EQ(err.code, -EPERM);
		return -EPERM;
	}
	ASSERT_TRUE(*ret_status <= WARD_APPROVAL_RAN_UNSANDBOXED);
	return 0;
}

/* The host's own effect: a file written outside the sandbox only after the retry was approved. */
TEST_TIMEOUT(real_denied_then_retried_writes_on_the_host, 90)
{
	struct fixture f;
	struct ward_result *res = NULL;
	enum ward_approval_status st;
	struct script sc = {{WARD_REVIEW_APPROVED, WARD_REVIEW_DENIED}, 2, 0, false};
	char target[PATH_MAX + 32], cmd[PATH_MAX + 64];
	struct stat sb;
	bool denied = false;

	setup(&f, WARD_APPROVAL_UNTRUSTED, NULL);
	snprintf(target, sizeof(target), "%s/written", f.out);
	snprintf(cmd, sizeof(cmd), "echo hi > '%s'", target);
	/* The retry denied: nothing on the host. */
	ASSERT_EQ(run_approved(&f, f.policy, ARGV("sh", "-c", cmd), &sc, &res, &st), -EPERM);
	if (!sc.retry_seen) {
		/* No exact denial report on this host: then no retry is ever offered. */
		SKIP("this host gives no exact sandbox denials (no seccomp user notification)");
	}
	ASSERT_EQ(st, WARD_APPROVAL_DENIED);
	ASSERT_EQ(stat(target, &sb), -1);
	/* The retry approved: the file is there, written outside the sandbox. */
	sc = (struct script){{WARD_REVIEW_APPROVED, WARD_REVIEW_APPROVED}, 2, 0, false};
	ASSERT_OK(run_approved(&f, f.policy, ARGV("sh", "-c", cmd), &sc, &res, &st));
	ASSERT_EQ(st, WARD_APPROVAL_RAN_UNSANDBOXED);
	ASSERT_EQ(sc.asked, 2);
	ASSERT_EQ(ward_result_exit_code(res), 0);
	/* Outside the sandbox nothing is denied (nor observed). */
	ASSERT_FALSE(ward_result_sandbox_denied(res, &denied) == 0 && denied);
	ASSERT_EQ(stat(target, &sb), 0);
	ward_result_free(res);
	ASSERT_EQ(audit_count(&f, "\"event\":\"run\""), 1);
	teardown(&f);
}

TEST_TIMEOUT(real_forbidden_and_deny_read, 90)
{
	struct fixture f;
	struct ward_result *res = NULL;
	enum ward_approval_status st;
	struct script sc = {{WARD_REVIEW_APPROVED}, 1, 0, false};
	char target[PATH_MAX + 32], cmd[PATH_MAX + 64], secret[PATH_MAX + 16];
	struct ward_policy *deny;
	struct stat sb;
	const char *forbid = "prefix_rule(pattern=[\"sh\"], decision=\"forbidden\")\n";
	struct ward_error err = {0};

	setup(&f, WARD_APPROVAL_UNTRUSTED, NULL);
	snprintf(target, sizeof(target), "%s/written", f.out);
	snprintf(cmd, sizeof(cmd), "echo hi > '%s'", target);
	snprintf(secret, sizeof(secret), "%s/secret", f.ws);
	ASSERT_EQ(mkdir(secret, 0700), 0);
	/* Deny-read: the denied write is not retried outside the sandbox. */
	deny = resolved(f.ws, secret);
	ASSERT_OK(run_approved(&f, deny, ARGV("sh", "-c", cmd), &sc, &res, &st));
	ASSERT_EQ(st, WARD_APPROVAL_RAN_SANDBOXED);
	ASSERT_NE(ward_result_exit_code(res), 0);
	ASSERT_EQ(sc.asked, 1);
	ASSERT_EQ(stat(target, &sb), -1);
	ward_result_free(res);
	/* Forbidden: never runs, whatever the answers would be. */
	ASSERT_OK(ward_approver_load_rules_string(f.a, forbid, strlen(forbid), "f.rules", &err));
	sc = (struct script){{WARD_REVIEW_APPROVED}, 1, 0, false};
	ASSERT_EQ(run_approved(&f, f.policy, ARGV("sh", "-c", cmd), &sc, &res, &st), -EPERM);
	ASSERT_EQ(st, WARD_APPROVAL_REJECTED);
	ASSERT_TRUE(res == NULL);
	ASSERT_EQ(sc.asked, 0);
	ASSERT_EQ(stat(target, &sb), -1);
	ward_policy_free(deny);
	teardown(&f);
}

/* The approver's files are protected from a sandbox whose writable roots hold them. */
TEST_TIMEOUT(real_rules_directory_protected, 90)
{
	struct fixture f;
	struct ward_policy *p;
	struct ward_result *res = NULL;
	struct ward_error err = {0};
	enum ward_approval_status st;
	struct script sc = {{WARD_REVIEW_APPROVED}, 1, 0, false};
	char cfg[PATH_MAX + 16], cmd[PATH_MAX * 3], planted[PATH_MAX + 32];
	struct stat sb;

	setup(&f, WARD_APPROVAL_ON_REQUEST, NULL);
	snprintf(cfg, sizeof(cfg), "%s/cfg", f.ws);
	ASSERT_EQ(mkdir(cfg, 0755), 0);
	ASSERT_OK(ward_approver_set_amendment_file(f.a, "/nonexistent/x.rules"));
	{
		char amend[PATH_MAX + 32];

		snprintf(amend, sizeof(amend), "%s/default.rules", cfg);
		ASSERT_OK(ward_approver_set_amendment_file(f.a, amend));
	}
	ASSERT_OK(ward_policy_new(&p));
	ASSERT_OK(ward_policy_set_cwd(p, f.ws));
	ASSERT_OK(ward_approver_protect(f.a, p));
	if (ward_policy_resolve(p, &err) < 0)
		tap_fail(__FILE__, __LINE__, "%s", err.message);
	snprintf(planted, sizeof(planted), "%s/default.rules", cfg);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && echo 'prefix_rule(pattern=[\"curl\"])' > '%s'",
		 cfg, planted);
	ASSERT_OK(run_approved(&f, p, ARGV("sh", "-c", cmd), &sc, &res, &st));
	ASSERT_NE(ward_result_exit_code(res), 0);
	ASSERT_EQ(stat(planted, &sb), -1);
	ward_result_free(res);
	ward_policy_free(p);
	teardown(&f);
}

int main(void)
{
	return tap_main_in_scratch(scratch);
}
