/* SPDX-License-Identifier: MIT */
/*
 * The approval step machine (see approval.h): Codex's ToolOrchestrator order.
 *
 *   1. The request's own fields are checked (justification and prefix_rule
 *      only with an escalation, escalation only in on-request mode, a banned
 *      prefix refused).
 *   2. The rules and the mode decide (rules/evaluate.c): forbidden never
 *      runs; prompt asks unless the mode cannot ask; allow runs.
 *   3. A question is skipped when "approved for this session" covers it.
 *   4. The first run is outside the sandbox only when every part of the
 *      command is allowed by a rule or the caller asked to escalate, and
 *      never when the policy denies reads: a denied read exists only inside
 *      the sandbox.
 *   5. When the sandbox refused a change to a protected path (an autorun
 *      name, a PATH directory, git's hooks) and the command failed, every
 *      mode that can ask (not never; granular with sandbox_approval) asks
 *      whether to run it again in the sandbox with those paths writable,
 *      this once (unprotect.c).
 *   6. When the sandbox denied something (its exact report, never a guess
 *      from the output) and the command failed, the modes that allow it
 *      (untrusted, granular with sandbox_approval) ask whether to run again
 *      without the sandbox.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "approval/approval.h"
#include "basic/buf.h"
#include "basic/cleanup.h"
#include "basic/error.h"
#include "basic/util.h"

enum state {
	S_ASK_FIRST,
	S_RUN_FIRST,
	S_ASK_LIFT,
	S_RUN_LIFT,
	S_ASK_RETRY,
	S_RUN_RETRY,
	S_DONE,
};

struct ward__approval_step {
	struct ward_approver *a;
	const struct ward_policy *policy; /* the caller's */
	struct ward_policy *widened; /* with_additional_permissions */
	struct ward_policy *unsandboxed; /* danger-full-access, for a run outside the sandbox */
	char **argv;
	size_t argc;
	struct ward_approval_request req; /* a copy */
	const char *cwd; /* the policy's resolved cwd */
	const char *mode;
	struct ward__evaluation eval;
	char *key;
	size_t key_len; /* key == NULL: not cacheable (too long) */
	enum state state;
	bool escalate; /* require_escalated or with_additional_permissions */
	bool unsandboxed_allowed; /* no deny-read paths */
	bool first_unsandboxed; /* the first run goes outside the sandbox */
	bool running_sandboxed; /* the current RUN */
	char *reason; /* of the current question or rejection */
	char **proposed; /* NULL-terminated, or NULL */
	char *notice;
	struct ward_approval_question q;
	struct ward_denial_info *denials;
	char **denial_strings;
	size_t n_denials, n_denial_strings;
	/* Protected paths the person let the command change (and the question being asked). */
	struct ward__lift lifts[WARD_APPROVAL_MAX_LIFT_ROUNDS];
	size_t n_lifts;
	const char *lift_paths[WARD_APPROVAL_MAX_LIFT + 1];
	struct ward_policy *lifted; /* the policy of the run with them unprotected */
};

/* ------------------------------------------------------------ names */

WARD_PUBLIC const char *ward_review_decision_to_string(enum ward_review_decision d)
{
	switch (d) {
	case WARD_REVIEW_APPROVED:
		return "approved";
	case WARD_REVIEW_APPROVED_FOR_SESSION:
		return "approved_for_session";
	case WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT:
		return "approved_execpolicy_amendment";
	case WARD_REVIEW_DENIED:
		return "denied";
	case WARD_REVIEW_ABORT:
		return "abort";
	}
	return "denied";
}

WARD_PUBLIC int ward_review_decision_from_string(const char *s, enum ward_review_decision *ret)
{
	if (!s || !ret)
		return -EINVAL;
	for (int d = WARD_REVIEW_APPROVED; d <= WARD_REVIEW_ABORT; d++)
		if (strcmp(s, ward_review_decision_to_string((enum ward_review_decision)d)) == 0) {
			*ret = (enum ward_review_decision)d;
			return 0;
		}
	return -EINVAL;
}

WARD_PUBLIC const char *ward_approval_status_to_string(enum ward_approval_status status)
{
	switch (status) {
	case WARD_APPROVAL_RAN_SANDBOXED:
		return "ran_sandboxed";
	case WARD_APPROVAL_RAN_UNSANDBOXED:
		return "ran_unsandboxed";
	case WARD_APPROVAL_REJECTED:
		return "rejected";
	case WARD_APPROVAL_DENIED:
		return "denied";
	case WARD_APPROVAL_ABORTED:
		return "aborted";
	}
	return "rejected";
}

WARD_PUBLIC int ward_sandbox_permissions_from_string(const char *s,
						     enum ward_sandbox_permissions *ret)
{
	static const char *const names[] = {"use_default", "require_escalated",
					    "with_additional_permissions"};
	char norm[64];

	if (!s || !ret || strlen(s) >= sizeof(norm))
		return -EINVAL;
	for (size_t i = 0; i <= strlen(s); i++)
		norm[i] = s[i] == '-' ? '_' : s[i];
	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (strcmp(norm, names[i]) == 0) {
			*ret = (enum ward_sandbox_permissions)i;
			return 0;
		}
	return -EINVAL;
}

/* ------------------------------------------------------------ policies */

int ward__policy_copy(const struct ward_policy *src, struct ward_policy **ret)
{
	struct ward_policy *p;
	int r;

	r = ward_policy_new(&p);
	if (r < 0)
		return r;
	r = ward_policy_set_mode(p, src->mode);
	if (r >= 0 && src->cwd)
		r = ward_policy_set_cwd(p, src->cwd);
	for (size_t i = 0; r >= 0 && i < src->writable.n; i++)
		r = ward_policy_add_writable(p, src->writable.v[i]);
	for (size_t i = 0; r >= 0 && i < src->protect.n; i++)
		r = ward_policy_add_protect(p, src->protect.v[i]);
	for (size_t i = 0; r >= 0 && i < src->unprotect.n; i++)
		r = ward_policy_add_unprotect(p, src->unprotect.v[i]);
	for (size_t i = 0; r >= 0 && i < src->deny_read.n; i++)
		r = ward_policy_add_deny_read(p, src->deny_read.v[i]);
	for (size_t i = 0; r >= 0 && i < src->unix_sockets.n; i++)
		r = ward_policy_add_unix_socket(p, src->unix_sockets.v[i]);
	if (r >= 0 && src->network_set)
		r = ward_policy_set_network(p, src->network);
	if (r >= 0)
		r = ward_policy_set_exclude_slash_tmp(p, src->exclude_slash_tmp);
	if (r >= 0)
		r = ward_policy_set_exclude_tmpdir_env_var(p, src->exclude_tmpdir_env_var);
	if (r >= 0)
		r = ward_policy_set_require_isolation(p, src->require_isolation);
	if (r < 0) {
		ward_policy_free(p);
		return r;
	}
	/* An approval widens what a command may touch, never how much of the host it may use. */
	p->limits = src->limits;
	*ret = p;
	return 0;
}

/* No sandbox at all, in the same directory: what "run outside the sandbox" means. */
static int unsandboxed_policy(struct ward__approval_step *s, struct ward_error *err)
{
	struct ward_policy *p;
	int r;

	if (s->unsandboxed)
		return 0;
	r = ward_policy_new(&p);
	if (r >= 0)
		r = ward_policy_set_mode(p, WARD_MODE_DANGER_FULL_ACCESS);
	if (r >= 0)
		r = ward_policy_set_cwd(p, s->cwd);
	if (r < 0) {
		ward_policy_free(p);
		return ward__error(err, r, "approval", "cannot prepare the unsandboxed run: %m");
	}
	/* Outside the sandbox's walls, still within its limits. */
	p->limits = s->policy->limits;
	r = ward_policy_resolve(p, err);
	if (r < 0) {
		ward_policy_free(p);
		return r;
	}
	s->unsandboxed = p;
	return 0;
}

/* ------------------------------------------------------------ texts */

static char *joined(const char *const *argv, size_t argc)
{
	return ward__shell_join(argv, argc);
}

static int set_text(char **dst, const char *fmt, ...) _printf_(2, 3);

static int set_text(char **dst, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	free(*dst);
	*dst = s;
	return 0;
}

static const struct ward__eval_node *entry_command(const struct ward__approval_step *s,
						   const struct ward__eval_entry *e)
{
	return &s->eval.nodes[e->command];
}

/* " (run through sudo, env)" for a command a wrapper runs, else "". malloc()ed, NULL on ENOMEM. */
static char *via_text(const struct ward__approval_step *s, size_t node)
{
	static const char head[] = " (run through ";
	const char *names[WARD_WRAP_MAX_DEPTH + 1];
	size_t n = 0, len = sizeof(head) + 1;
	char *t, *o;

	for (size_t k = node; s->eval.nodes[k].parent != SIZE_MAX && n < ELEMENTSOF(names);
	     k = s->eval.nodes[k].parent) {
		names[n] = s->eval.nodes[k].via;
		len += strlen(names[n++]) + 2;
	}
	if (n == 0)
		return strdup("");
	t = malloc(len);
	if (!t)
		return NULL;
	o = mempcpy(t, head, sizeof(head) - 1);
	while (n-- > 0) {
		o = mempcpy(o, names[n], strlen(names[n]));
		o = mempcpy(o, n ? ", " : ")", n ? 2 : 1);
	}
	*o = '\0';
	return t;
}

/* Why part of the command could not be read exactly, for a question ("" when all was). */
static int unread_text(const struct ward__approval_step *s, char **ret)
{
	const struct ward__eval_node *n;
	const char *base;

	*ret = NULL;
	if (s->eval.understood)
		return set_text(ret, "%s", "");
	n = &s->eval.nodes[s->eval.unread];
	if (s->eval.overflow)
		return set_text(ret, " (it nests too many commands to read exactly)");
	if (n->why && strcmp(n->why, "its shell script cannot be read exactly") == 0)
		return set_text(ret, " (its shell script cannot be read exactly)");
	base = strrchr(n->argv[0], '/');
	return set_text(ret, " (what `%s` runs cannot be read exactly: %s)",
			base ? base + 1 : n->argv[0], n->why ? n->why : "unknown");
}

/* The rule entry with decision d and the longest matched prefix (Codex: the most specific). */
static const struct ward__eval_entry *most_specific(const struct ward__approval_step *s,
						    enum ward__decision d)
{
	const struct ward__eval_entry *best = NULL;

	for (size_t i = 0; i < s->eval.n_entries; i++) {
		const struct ward__eval_entry *e = &s->eval.entries[i];

		if (!e->heuristic && e->decision == d &&
		    (!best || e->match.n_prefix > best->match.n_prefix))
			best = e;
	}
	return best;
}

static char *entry_prefix(const struct ward__approval_step *s, const struct ward__eval_entry *e)
{
	const struct ward__eval_node *c = entry_command(s, e);
	const char *words[WARD_RULES_MAX_TOKENS + 1];
	size_t n = MIN(e->match.n_prefix, (size_t)WARD_RULES_MAX_TOKENS);

	words[0] = e->match.rule->first;
	for (size_t i = 1; i < n && i < c->argc; i++)
		words[i] = c->argv[i];
	return joined(words, MIN(n, c->argc));
}

static int forbidden_reason(struct ward__approval_step *s)
{
	_cleanup_free_ char *cmd = joined((const char *const *)s->argv, s->argc);
	const struct ward__eval_entry *e = most_specific(s, WARD__DECISION_FORBIDDEN);

	if (!cmd)
		return -ENOMEM;
	if (e && e->match.group->justification) {
		_cleanup_free_ char *via = via_text(s, e->command);

		if (!via)
			return -ENOMEM;
		return set_text(&s->reason, "`%s` rejected: %s%s", cmd,
				e->match.group->justification, via);
	}
	if (e) {
		_cleanup_free_ char *prefix = entry_prefix(s, e), *via = via_text(s, e->command);

		if (!prefix || !via)
			return -ENOMEM;
		return set_text(&s->reason,
				"`%s` rejected: policy forbids commands starting with `%s`%s", cmd,
				prefix, via);
	}
	return set_text(
		&s->reason,
		"`%s` rejected: blocked by policy (it may delete files by force, and approval mode never cannot ask)",
		cmd);
}

static int prompt_reason(struct ward__approval_step *s)
{
	_cleanup_free_ char *cmd = joined((const char *const *)s->argv, s->argc);
	const struct ward__eval_entry *e = most_specific(s, WARD__DECISION_PROMPT);
	_cleanup_free_ char *unread = NULL;

	if (!cmd || unread_text(s, &unread) < 0)
		return -ENOMEM;
	if (e && e->match.group->justification)
		return set_text(&s->reason, "`%s` requires approval: %s", cmd,
				e->match.group->justification);
	if (e)
		return set_text(&s->reason, "`%s` requires approval by policy", cmd);
	for (size_t i = 0; i < s->eval.n_entries; i++) {
		const struct ward__eval_entry *h = &s->eval.entries[i];
		const struct ward__eval_node *c = entry_command(s, h);

		if (h->heuristic && h->decision == WARD__DECISION_PROMPT &&
		    ward__command_dangerous(c->argv, c->argc))
			return set_text(&s->reason, "`%s` may delete files by force%s", cmd,
					unread);
	}
	if (s->req.sandbox_permissions == WARD_SANDBOX_PERMISSIONS_REQUIRE_ESCALATED)
		return set_text(&s->reason, "`%s` asks to run outside the sandbox", cmd);
	if (s->req.sandbox_permissions == WARD_SANDBOX_PERMISSIONS_WITH_ADDITIONAL_PERMISSIONS)
		return set_text(&s->reason, "`%s` asks for %s%s%s", cmd,
				s->req.n_writable ? "write access to more paths" : "",
				s->req.n_writable && s->req.network ? " and " : "",
				s->req.network ? "the network" : "");
	return set_text(&s->reason, "approval mode %s: `%s` is not known to be safe%s", s->mode,
			cmd, unread);
}

/* ------------------------------------------------------------ amendments */

static char **strv_copy(const char *const *v, size_t n)
{
	char **c = calloc(n + 1, sizeof(char *));

	if (!c)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		c[i] = strdup(v[i]);
		if (!c[i]) {
			strv_freep(&c);
			return NULL;
		}
	}
	return c;
}

static bool any_rule_match(const struct ward__approval_step *s)
{
	for (size_t i = 0; i < s->eval.n_entries; i++)
		if (!s->eval.entries[i].heuristic)
			return true;
	return false;
}

static bool prefix_matches(const char *const *prefix, size_t n, const struct ward__eval_node *c)
{
	if (c->argc < n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (strcmp(prefix[i], c->argv[i]) != 0)
			return false;
	return true;
}

/*
 * The prefix a person may approve for good (Codex's proposed execpolicy
 * amendment): the caller's prefix_rule when it would allow every part of the
 * command, else the first part the fallback asked about (a prompt) or let run
 * in the sandbox (an allow, offered when the retry question comes). None when
 * a rule already decided, when the script cannot be read exactly, or when the
 * prefix is one ward never turns into a rule.
 */
static int derive_proposal(struct ward__approval_step *s)
{
	const char *why;
	const char *const *found = NULL;
	size_t n = 0;

	if (!s->eval.understood || any_rule_match(s))
		return 0;
	if (s->req.prefix_rule) {
		bool all = true;

		for (size_t i = 0; i < s->eval.n_nodes && all; i++) {
			const struct ward__eval_node *c = &s->eval.nodes[i];
			bool allowed;

			if (!c->decides)
				continue;
			allowed = prefix_matches((const char *const *)s->req.prefix_rule,
						 s->req.n_prefix_rule, c);

			for (size_t k = 0; !allowed && k < s->eval.n_entries; k++)
				allowed = s->eval.entries[k].command == i &&
					s->eval.entries[k].decision == WARD__DECISION_ALLOW;
			all = allowed;
		}
		if (all) {
			found = (const char *const *)s->req.prefix_rule;
			n = s->req.n_prefix_rule;
		}
	}
	for (int want = WARD__DECISION_PROMPT; !found && want >= WARD__DECISION_ALLOW; want--) {
		if (want != (int)s->eval.decision)
			continue;
		for (size_t i = 0; i < s->eval.n_entries && !found; i++)
			if (s->eval.entries[i].heuristic &&
			    (int)s->eval.entries[i].decision == want) {
				const struct ward__eval_node *c =
					entry_command(s, &s->eval.entries[i]);

				found = c->argv;
				n = c->argc;
			}
	}
	if (!found || n > WARD_APPROVAL_MAX_PREFIX || ward__prefix_banned(found, n, &why) != 0)
		return 0;
	s->proposed = strv_copy(found, n);
	return s->proposed ? 0 : -ENOMEM;
}

/* Persists an approved prefix (append to the rules file) and applies it at once. */
static void apply_amendment(struct ward__approval_step *s)
{
	struct ward_approver *a = s->a;
	struct ward_error err = {0};
	size_t n = 0;
	struct ward__buf b;
	int r;

	while (s->proposed[n])
		n++;
	if (!a->amend_path)
		set_text(
			&s->notice,
			"the approved rule applies to this session only: there is no rules file to save it to");
	else if (ward__rules_append_allow(a->amend_path, (const char *const *)s->proposed, n,
					  &err) < 0)
		set_text(&s->notice, "the approved rule was not saved: %s", err.message);
	/* In memory, for the rest of the session, whatever happened to the file. */
	r = ward__buf_init(&b, WARD_RULES_MAX_FILE);
	if (r >= 0)
		r = ward__buf_append_str(&b, "prefix_rule(pattern=[");
	for (size_t i = 0; r >= 0 && i < n; i++) {
		if (i)
			r = ward__buf_append_str(&b, ", ");
		if (r >= 0)
			r = ward__rules_json_string(&b, s->proposed[i]);
	}
	if (r >= 0)
		r = ward__buf_append_str(&b, "], decision=\"allow\")\n");
	if (r >= 0)
		r = ward__rules_parse(&a->rules, "<approved rule>", (const char *)b.data, b.len,
				      false, NULL, &err);
	if (r < 0 && !s->notice)
		set_text(&s->notice, "the approved rule cannot be applied: %s",
			 err.message[0] ? err.message : strerror(-r));
	ward__buf_release(&b);
}

/* ------------------------------------------------------------ audit */

static void audit(struct ward__approval_step *s, const char *event, const char *decision,
		  const char *source, bool sandboxed, const int *exit_code, const char *reason)
{
	struct ward_approver *a = s->a;
	struct ward__audit_record rec = {
		.event = event,
		.argv = (const char *const *)s->argv,
		.argc = s->argc,
		.cwd = s->cwd,
		.mode = s->mode,
		.decision = decision,
		.source = source,
		.sandboxed = sandboxed,
		.have_exit_code = exit_code != NULL,
		.exit_code = exit_code ? *exit_code : 0,
		.reason = reason,
	};
	int r;

	if (!a->audit_path)
		return;
	r = ward__audit_append(a->audit_path, &rec);
	/* Said once per approver: a log that cannot be written must not go unnoticed. */
	if (r < 0 && !a->audit_error[0]) {
		snprintf(a->audit_error, sizeof(a->audit_error),
			 "cannot write the audit log '%s': %s", a->audit_path, strerror(-r));
		if (!s->notice)
			s->notice = strdup(a->audit_error);
	}
}

/* Where the decision came from: a rule, or the mode's fallback. */
static const char *decision_source(const struct ward__approval_step *s)
{
	for (size_t i = 0; i < s->eval.n_entries; i++)
		if (!s->eval.entries[i].heuristic &&
		    s->eval.entries[i].decision == s->eval.decision)
			return "rules";
	return "mode";
}

/* ------------------------------------------------------------ actions */

static int reject(struct ward__approval_step *s, enum ward_approval_status status,
		  struct ward__approval_action *act)
{
	s->state = S_DONE;
	*act = (struct ward__approval_action){.kind = WARD__APPROVAL_REJECT,
					      .status = status,
					      .reason = s->reason,
					      .notice = s->notice};
	return 0;
}

/* Rejects before any evaluation (a bad request), logged as the request's. */
static int reject_request(struct ward__approval_step *s, struct ward__approval_action *act,
			  const char *fmt, ...) _printf_(3, 4);

static int reject_request(struct ward__approval_step *s, struct ward__approval_action *act,
			  const char *fmt, ...)
{
	va_list ap;
	char *msg;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	free(s->reason);
	s->reason = msg;
	audit(s, "decision", "forbidden", "request", true, NULL, s->reason);
	return reject(s, WARD_APPROVAL_REJECTED, act);
}

static unsigned decisions_offered(const struct ward__approval_step *s)
{
	unsigned d = 1u << WARD_REVIEW_APPROVED | 1u << WARD_REVIEW_APPROVED_FOR_SESSION |
		1u << WARD_REVIEW_DENIED | 1u << WARD_REVIEW_ABORT;

	if (s->proposed)
		d |= 1u << WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT;
	return d;
}

static int ask(struct ward__approval_step *s, bool retry, struct ward__approval_action *act)
{
	s->state = retry ? S_ASK_RETRY : S_ASK_FIRST;
	s->q = (struct ward_approval_question){
		.argv = (const char *const *)s->argv,
		.cwd = s->cwd,
		.reason = s->reason,
		.justification = s->req.justification,
		.unsandboxed = retry || s->first_unsandboxed,
		.retry = retry,
		.denials = retry ? s->denials : NULL,
		.n_denials = retry ? s->n_denials : 0,
		.proposed_prefix_rule = (const char *const *)s->proposed,
		.decisions = decisions_offered(s),
	};
	*act = (struct ward__approval_action){
		.kind = WARD__APPROVAL_ASK, .question = &s->q, .notice = s->notice};
	return 0;
}

/* Whether a protected path may be lifted, and that question asked: whenever a person can be asked. */
static bool lift_allowed(const struct ward__approval_step *s)
{
	return s->a->mode == WARD_APPROVAL_ON_REQUEST || s->a->mode == WARD_APPROVAL_UNTRUSTED ||
		(s->a->mode == WARD_APPROVAL_GRANULAR && s->a->granular.sandbox_approval);
}

/* "Run it again with these paths writable?": yes this once, no, abort. */
static int ask_lift(struct ward__approval_step *s, struct ward__approval_action *act)
{
	const struct ward__lift *l = &s->lifts[s->n_lifts - 1];

	for (size_t i = 0; i < l->n; i++)
		s->lift_paths[i] = l->paths[i];
	s->lift_paths[l->n] = NULL;
	s->state = S_ASK_LIFT;
	s->q = (struct ward_approval_question){
		.argv = (const char *const *)s->argv,
		.cwd = s->cwd,
		.reason = l->text,
		.justification = s->req.justification,
		.denials = s->denials,
		.n_denials = s->n_denials,
		.denials_dropped = s->q.denials_dropped,
		.decisions = 1u << WARD_REVIEW_APPROVED | 1u << WARD_REVIEW_DENIED |
			1u << WARD_REVIEW_ABORT,
		.unprotect = s->lift_paths,
	};
	*act = (struct ward__approval_action){
		.kind = WARD__APPROVAL_ASK, .question = &s->q, .notice = s->notice};
	return 0;
}

/* The same command, in the sandbox, with every path the person let it change unprotected. */
static int run_lifted(struct ward__approval_step *s, struct ward__approval_action *act,
		      struct ward_error *err)
{
	struct ward_policy *p;
	int r;

	r = ward__lift_policy(s->widened ? s->widened : s->policy, s->lifts, s->n_lifts, &p, err);
	if (r < 0)
		return r;
	ward_policy_free(s->lifted);
	s->lifted = p;
	s->running_sandboxed = true;
	s->state = S_RUN_LIFT;
	*act = (struct ward__approval_action){
		.kind = WARD__APPROVAL_RUN, .policy = p, .sandboxed = true, .notice = s->notice};
	return 0;
}

static int run_first(struct ward__approval_step *s, struct ward__approval_action *act,
		     struct ward_error *err)
{
	const struct ward_policy *p = s->widened ? s->widened : s->policy;
	int r;

	if (s->first_unsandboxed) {
		r = unsandboxed_policy(s, err);
		if (r < 0)
			return r;
		p = s->unsandboxed;
	}
	s->running_sandboxed = p->mode != WARD_MODE_DANGER_FULL_ACCESS;
	s->state = S_RUN_FIRST;
	*act = (struct ward__approval_action){.kind = WARD__APPROVAL_RUN,
					      .policy = p,
					      .sandboxed = s->running_sandboxed,
					      .notice = s->notice};
	return 0;
}

static int run_retry(struct ward__approval_step *s, struct ward__approval_action *act,
		     struct ward_error *err)
{
	int r = unsandboxed_policy(s, err);

	if (r < 0)
		return r;
	s->running_sandboxed = false;
	s->state = S_RUN_RETRY;
	*act = (struct ward__approval_action){
		.kind = WARD__APPROVAL_RUN, .policy = s->unsandboxed, .notice = s->notice};
	return 0;
}

/* ------------------------------------------------------------ begin */

static int copy_request(struct ward__approval_step *s, const struct ward_approval_request *req)
{
	if (!req)
		return 0;
	s->req.sandbox_permissions = req->sandbox_permissions;
	s->req.network = req->network;
	s->req.tty = req->tty;
	if (req->cwd) {
		s->req.cwd = strdup(req->cwd);
		if (!s->req.cwd)
			return -ENOMEM;
	}
	if (req->justification) {
		s->req.justification = strdup(req->justification);
		if (!s->req.justification)
			return -ENOMEM;
	}
	if (req->prefix_rule) {
		s->req.prefix_rule =
			strv_copy((const char *const *)req->prefix_rule, req->n_prefix_rule);
		if (!s->req.prefix_rule)
			return -ENOMEM;
		s->req.n_prefix_rule = req->n_prefix_rule;
	}
	if (req->n_writable) {
		s->req.writable = strv_copy((const char *const *)req->writable, req->n_writable);
		if (!s->req.writable)
			return -ENOMEM;
		s->req.n_writable = req->n_writable;
	}
	return 0;
}

/* The caller's checks on its own fields, as Codex's exec handlers make them. */
static int check_request(struct ward__approval_step *s, struct ward__approval_action *act,
			 bool *ret_rejected)
{
	const struct ward_approval_request *q = &s->req;
	const char *why;

	*ret_rejected = true;
	if (q->justification && !s->escalate)
		return reject_request(
			s, act,
			"justification is only valid with sandbox_permissions require_escalated or with_additional_permissions");
	if (q->prefix_rule && q->sandbox_permissions != WARD_SANDBOX_PERMISSIONS_REQUIRE_ESCALATED)
		return reject_request(
			s, act,
			"prefix_rule is only valid with sandbox_permissions require_escalated");
	if (q->prefix_rule && q->n_prefix_rule == 0)
		return reject_request(s, act, "prefix_rule cannot be empty");
	if (q->sandbox_permissions == WARD_SANDBOX_PERMISSIONS_WITH_ADDITIONAL_PERMISSIONS &&
	    !q->n_writable && !q->network)
		return reject_request(
			s, act,
			"with_additional_permissions needs additional permissions (writable paths or the network)");
	if (q->sandbox_permissions != WARD_SANDBOX_PERMISSIONS_WITH_ADDITIONAL_PERMISSIONS &&
	    (q->n_writable || q->network))
		return reject_request(
			s, act,
			"additional permissions are only valid with sandbox_permissions with_additional_permissions");
	if (s->escalate && s->a->mode != WARD_APPROVAL_ON_REQUEST)
		return reject_request(
			s, act,
			"approval policy is %s; reject command — you should not ask for escalated permissions if the approval policy is %s",
			s->mode, s->mode);
	if (q->prefix_rule &&
	    ward__prefix_banned((const char *const *)q->prefix_rule, q->n_prefix_rule, &why) < 0) {
		_cleanup_free_ char *p =
			joined((const char *const *)q->prefix_rule, q->n_prefix_rule);

		return reject_request(
			s, act, "prefix_rule `%s` cannot be offered: %s; propose a narrower prefix",
			p ? p : "?", why);
	}
	*ret_rejected = false;
	return 0;
}

/* with_additional_permissions: the caller's policy with the extra roots and the network. */
static int widen(struct ward__approval_step *s, struct ward__approval_action *act,
		 bool *ret_rejected, struct ward_error *err)
{
	struct ward_error werr = {0};
	struct ward_policy *p;
	int r;

	*ret_rejected = false;
	if (s->req.sandbox_permissions != WARD_SANDBOX_PERMISSIONS_WITH_ADDITIONAL_PERMISSIONS ||
	    s->policy->mode == WARD_MODE_DANGER_FULL_ACCESS)
		return 0;
	*ret_rejected = true;
	if (s->req.n_writable && s->policy->mode == WARD_MODE_READ_ONLY)
		return reject_request(
			s, act,
			"additional writable paths need a workspace-write sandbox (the policy is read-only)");
	r = ward__policy_copy(s->policy, &p);
	if (r < 0)
		return ward__error(err, r, "approval", "cannot widen the policy: %m");
	for (size_t i = 0; r >= 0 && i < s->req.n_writable; i++)
		r = ward_policy_add_writable(p, s->req.writable[i]);
	if (r >= 0 && s->req.network)
		r = ward_policy_set_network(p, true);
	if (r >= 0)
		r = ward_policy_resolve(p, &werr);
	if (r < 0) {
		ward_policy_free(p);
		if (r == -ENOMEM)
			return ward__error(err, r, "approval", "cannot widen the policy: %m");
		return reject_request(s, act, "the additional permissions cannot be granted: %s",
				      werr.message[0] ? werr.message : strerror(-r));
	}
	s->widened = p;
	*ret_rejected = false;
	return 0;
}

/* Whether the mode lets this prompt be asked at all (Codex's prompt_is_rejected_by_policy). */
static const char *prompt_refused(const struct ward__approval_step *s)
{
	switch (s->a->mode) {
	case WARD_APPROVAL_NEVER:
		return "approval required by policy, but the approval mode is never";
	case WARD_APPROVAL_GRANULAR:
		if (s->eval.prompt_is_rule && !s->a->granular.rules)
			return "approval required by policy rule, but granular rules approval is off";
		if (!s->eval.prompt_is_rule && !s->a->granular.sandbox_approval)
			return "approval required by policy, but granular sandbox approval is off";
		return NULL;
	case WARD_APPROVAL_ON_REQUEST:
	case WARD_APPROVAL_UNTRUSTED:
		return NULL;
	}
	return NULL;
}

static int decide(struct ward__approval_step *s, struct ward__approval_action *act,
		  struct ward_error *err)
{
	struct ward__unmatched_ctx c = {
		.mode = s->a->mode,
		.fs_restricted = s->policy->mode != WARD_MODE_DANGER_FULL_ACCESS,
		.requests_override = s->escalate,
	};
	const char *refused;
	int r;

	r = ward__rules_evaluate(&s->a->rules, (const char *const *)s->argv, s->argc, s->cwd,
				 s->a->home, &c, &s->eval);
	if (r < 0)
		return ward__error(err, r, "approval", "cannot evaluate the command: %m");
	/*
	 * An allow that does not take the command out of the sandbox (a
	 * project's rule, which whoever wrote the repository controls) cannot
	 * grant an escalation either: a call asking to leave the sandbox, or to
	 * widen it, asks the person, as an unmatched command would. Without
	 * this, require_escalated turned a project's allow into a run outside
	 * the sandbox that nobody approved.
	 */
	if (s->escalate && c.fs_restricted && s->eval.decision == WARD__DECISION_ALLOW &&
	    !s->eval.bypass_sandbox)
		s->eval.decision = WARD__DECISION_PROMPT;
	r = ward__approval_key((const char *const *)s->argv, s->argc, s->cwd, &s->req, &s->key,
			       &s->key_len);
	if (r < 0 && r != -E2BIG)
		return ward__error(err, r, "approval", "cannot evaluate the command: %m");
	r = derive_proposal(s);
	if (r < 0)
		return ward__error(err, r, "approval", "cannot evaluate the command: %m");
	/*
	 * Out of the sandbox on the first attempt: when every part is allowed by
	 * a rule, or the caller asks for it (after approval). Never when the
	 * policy denies reads (those exist only inside the sandbox).
	 */
	s->first_unsandboxed = s->unsandboxed_allowed &&
		s->policy->mode != WARD_MODE_DANGER_FULL_ACCESS &&
		((s->eval.decision == WARD__DECISION_ALLOW && s->eval.bypass_sandbox) ||
		 s->req.sandbox_permissions == WARD_SANDBOX_PERMISSIONS_REQUIRE_ESCALATED);

	switch (s->eval.decision) {
	case WARD__DECISION_FORBIDDEN:
		r = forbidden_reason(s);
		if (r < 0)
			return ward__error(err, r, "approval", "out of memory");
		audit(s, "decision", "forbidden", decision_source(s), true, NULL, s->reason);
		return reject(s, WARD_APPROVAL_REJECTED, act);
	case WARD__DECISION_PROMPT:
		refused = prompt_refused(s);
		if (refused) {
			r = set_text(&s->reason, "%s", refused);
			if (r < 0)
				return ward__error(err, r, "approval", "out of memory");
			audit(s, "decision", "forbidden", decision_source(s), true, NULL,
			      s->reason);
			return reject(s, WARD_APPROVAL_REJECTED, act);
		}
		r = prompt_reason(s);
		if (r < 0)
			return ward__error(err, r, "approval", "out of memory");
		audit(s, "decision", "prompt", decision_source(s), !s->first_unsandboxed, NULL,
		      s->reason);
		if (s->key && ward__cache_lookup(s->a, s->key, s->key_len, s->first_unsandboxed)) {
			audit(s, "answer", "approved_for_session", "cache", !s->first_unsandboxed,
			      NULL, NULL);
			return run_first(s, act, err);
		}
		return ask(s, false, act);
	case WARD__DECISION_ALLOW:
		audit(s, "decision", "allow", decision_source(s), !s->first_unsandboxed, NULL,
		      NULL);
		return run_first(s, act, err);
	}
	return -EINVAL;
}

int ward__approval_begin(struct ward_approver *a, const struct ward_policy *policy,
			 const char *const *argv, const struct ward_approval_request *req,
			 struct ward__approval_step **ret_step,
			 struct ward__approval_action *ret_action, struct ward_error *err)
{
	struct ward__approval_step *s;
	bool rejected;
	size_t argc = 0;
	int r;

	if (!a || !policy || !argv || !argv[0] || !ret_step || !ret_action)
		return ward__error(err, -EINVAL, "approval", "no command to approve");
	if (!policy->resolved || !policy->resolved_cwd)
		return ward__error(err, -EINVAL, "approval", "the policy is not resolved");
	while (argv[argc])
		argc++;
	s = calloc(1, sizeof(*s));
	if (!s)
		return ward__error(err, -ENOMEM, "approval", "out of memory");
	s->a = a;
	s->policy = policy;
	s->mode = ward_approval_mode_to_string(a->mode);
	s->argc = argc;
	s->argv = strv_copy(argv, argc);
	r = s->argv ? copy_request(s, req) : -ENOMEM;
	if (r < 0) {
		ward__approval_step_free(s);
		return ward__error(err, r, "approval", "out of memory");
	}
	s->cwd = s->req.cwd ? s->req.cwd : policy->resolved_cwd;
	s->escalate = s->req.sandbox_permissions != WARD_SANDBOX_PERMISSIONS_USE_DEFAULT;
	/* A denied read exists only inside the sandbox: with deny-read paths nothing runs outside. */
	s->unsandboxed_allowed = policy->deny_read.n == 0 && policy->n_deny == 0;

	r = check_request(s, ret_action, &rejected);
	if (r >= 0 && !rejected)
		r = widen(s, ret_action, &rejected, err);
	if (r >= 0 && !rejected)
		r = decide(s, ret_action, err);
	if (r < 0) {
		ward__approval_step_free(s);
		return r;
	}
	*ret_step = s;
	return 0;
}

/* ------------------------------------------------------------ answers and runs */

int ward__approval_answer(struct ward__approval_step *s, enum ward_review_decision decision,
			  struct ward__approval_action *ret_action, struct ward_error *err)
{
	bool retry, lift;

	if (!s || (s->state != S_ASK_FIRST && s->state != S_ASK_RETRY && s->state != S_ASK_LIFT))
		return ward__error(err, -EINVAL, "approval",
				   "no question is waiting for an answer");
	if ((unsigned)decision > WARD_REVIEW_ABORT || !(s->q.decisions & (1u << decision)))
		return ward__error(err, -EINVAL, "approval", "the answer '%s' was not offered",
				   ward_review_decision_to_string(decision));
	retry = s->state == S_ASK_RETRY;
	lift = s->state == S_ASK_LIFT;
	audit(s, "answer", ward_review_decision_to_string(decision), "person", !s->q.unsandboxed,
	      NULL,
	      retry	     ? WARD_APPROVAL_RETRY_REASON
		      : lift ? s->q.reason
			     : NULL);
	/*
	 * Not lifted: the sandboxed run already happened, and its result (the
	 * refusal) is the command's. A retry declined says "rejected" instead,
	 * as Codex's does.
	 */
	if (lift && decision == WARD_REVIEW_DENIED) {
		set_text(&s->notice, "not run again with the protected path writable: declined");
		s->state = S_DONE;
		*ret_action = (struct ward__approval_action){.kind = WARD__APPROVAL_DONE,
							     .status = WARD_APPROVAL_RAN_SANDBOXED,
							     .notice = s->notice};
		return 0;
	}
	switch (decision) {
	case WARD_REVIEW_DENIED:
		set_text(&s->reason, "rejected by user");
		return reject(s, WARD_APPROVAL_DENIED, ret_action);
	case WARD_REVIEW_ABORT:
		set_text(&s->reason, "aborted by user");
		return reject(s, WARD_APPROVAL_ABORTED, ret_action);
	case WARD_REVIEW_APPROVED_FOR_SESSION:
		/* Scoped as the question was: sandboxed only, or also outside the sandbox. */
		if (s->key && ward__cache_store(s->a, s->key, s->key_len, s->q.unsandboxed) < 0)
			return ward__error(err, -ENOMEM, "approval", "out of memory");
		break;
	case WARD_REVIEW_APPROVED_EXECPOLICY_AMENDMENT:
		apply_amendment(s);
		break;
	case WARD_REVIEW_APPROVED:
		break;
	}
	if (lift)
		return run_lifted(s, ret_action, err);
	return retry ? run_retry(s, ret_action, err) : run_first(s, ret_action, err);
}

int ward__approval_no_answer(struct ward__approval_step *s, const char *why,
			     struct ward__approval_action *ret_action, struct ward_error *err)
{
	if (!s || (s->state != S_ASK_FIRST && s->state != S_ASK_RETRY && s->state != S_ASK_LIFT))
		return ward__error(err, -EINVAL, "approval",
				   "no question is waiting for an answer");
	if (set_text(&s->reason, "not approved: %s",
		     why && why[0] ? why : "nobody could be asked") < 0)
		return ward__error(err, -ENOMEM, "approval", "out of memory");
	audit(s, "answer", "denied", "nobody", !s->q.unsandboxed, NULL, s->reason);
	return reject(s, WARD_APPROVAL_DENIED, ret_action);
}

static void free_denials(struct ward__approval_step *s)
{
	for (size_t i = 0; i < s->n_denial_strings; i++)
		free(s->denial_strings[i]);
	free(s->denial_strings);
	free(s->denials);
	s->denial_strings = NULL;
	s->denials = NULL;
	s->n_denial_strings = s->n_denials = 0;
}

static int copy_denials(struct ward__approval_step *s, const struct ward__approval_outcome *o)
{
	size_t n = MIN(o->n_denials, (size_t)WARD_MAX_DENIALS);

	free_denials(s);
	s->denials = calloc(n ? n : 1, sizeof(*s->denials));
	s->denial_strings = calloc(n * 3 + 1, sizeof(char *));
	if (!s->denials || !s->denial_strings)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct ward__denial *d = &o->denials[i];
		char *acc = strdup(d->access), *sys = strdup(d->syscall),
		     *tgt = strdup(d->target ? d->target : "");

		s->denial_strings[s->n_denial_strings++] = acc;
		s->denial_strings[s->n_denial_strings++] = sys;
		s->denial_strings[s->n_denial_strings++] = tgt;
		if (!acc || !sys || !tgt)
			return -ENOMEM;
		s->denials[i] = (struct ward_denial_info){.access = acc,
							  .syscall = sys,
							  .error = d->error,
							  .target = tgt,
							  .reason = d->reason};
	}
	s->n_denials = n;
	s->q.denials_dropped = o->denials_dropped + (o->n_denials - n);
	return 0;
}

int ward__approval_ran(struct ward__approval_step *s, const struct ward__approval_outcome *o,
		       struct ward__approval_action *ret_action, struct ward_error *err)
{
	bool denied, wants_retry, was_lift;
	size_t dropped;
	int r;

	if (!s || !o ||
	    (s->state != S_RUN_FIRST && s->state != S_RUN_RETRY && s->state != S_RUN_LIFT))
		return ward__error(err, -EINVAL, "approval", "no run is waiting for its outcome");
	if (!s->running_sandboxed)
		audit(s, "run", s->state == S_RUN_RETRY ? "retried" : "ran", "approval", false,
		      &o->exit_code, NULL);
	if (s->state == S_RUN_RETRY || !s->running_sandboxed) {
		s->state = S_DONE;
		*ret_action =
			(struct ward__approval_action){.kind = WARD__APPROVAL_DONE,
						       .status = WARD_APPROVAL_RAN_UNSANDBOXED,
						       .notice = s->notice};
		return 0;
	}
	/* A sandbox denial: the sandbox's own report, and a command that failed because of it. */
	denied = o->denied && o->exit_code != 0 && !o->timed_out && !o->cancelled;
	/*
	 * Refusals of the network by domain alone are the allowlist doing its
	 * work (and were asked about as network questions where people are
	 * asked): a retry outside the sandbox would give the whole network,
	 * the opposite of what the policy says. They are not offered one.
	 */
	if (denied && o->denials_dropped == 0) {
		bool other = o->n_denials == 0;

		for (size_t i = 0; i < o->n_denials && !other; i++)
			other = strcmp(o->denials[i].access, "network") != 0;
		denied = other;
	}
	was_lift = s->state == S_RUN_LIFT;
	/* Codex's wants_no_sandbox_approval: on-request and never return the denial as it is. */
	wants_retry = s->a->mode == WARD_APPROVAL_UNTRUSTED ||
		(s->a->mode == WARD_APPROVAL_GRANULAR && s->a->granular.sandbox_approval);
	s->state = S_DONE;
	*ret_action = (struct ward__approval_action){.kind = WARD__APPROVAL_DONE,
						     .status = WARD_APPROVAL_RAN_SANDBOXED,
						     .notice = s->notice};
	/* A protected path refused: may the person let this command change it? */
	if (denied && lift_allowed(s) && s->n_lifts < WARD_APPROVAL_MAX_LIFT_ROUNDS) {
		const struct ward_policy *ran = was_lift ? s->lifted
			: s->widened			 ? s->widened
							 : s->policy;

		r = ward__lift_find(ran, o->denials, o->n_denials, s->lifts, s->n_lifts,
				    &s->lifts[s->n_lifts]);
		if (r < 0)
			return ward__error(err, r, "approval", "out of memory");
		if (r > 0) {
			s->n_lifts++;
			r = copy_denials(s, o);
			if (r < 0)
				return ward__error(err, r, "approval", "out of memory");
			return ask_lift(s, ret_action);
		}
	}
	if (!denied || !wants_retry)
		return 0;
	if (!s->unsandboxed_allowed) {
		set_text(
			&s->notice,
			"not retried outside the sandbox: the policy denies reads, which only the sandbox can enforce");
		ret_action->notice = s->notice;
		return 0;
	}
	r = copy_denials(s, o);
	if (r < 0)
		return ward__error(err, r, "approval", "out of memory");
	dropped = s->q.denials_dropped;
	r = set_text(&s->reason, "%s", WARD_APPROVAL_RETRY_REASON);
	if (r < 0)
		return ward__error(err, r, "approval", "out of memory");
	if (s->key && ward__cache_lookup(s->a, s->key, s->key_len, true)) {
		audit(s, "answer", "approved_for_session", "cache", false, NULL,
		      WARD_APPROVAL_RETRY_REASON);
		return run_retry(s, ret_action, err);
	}
	r = ask(s, true, ret_action);
	s->q.denials_dropped = dropped;
	return r;
}

int ward__approval_ran_result(struct ward__approval_step *s, const struct ward_result *res,
			      struct ward__approval_action *ret_action, struct ward_error *err)
{
	struct ward__approval_outcome o = {0};
	bool denied = false;

	if (!res)
		return ward__error(err, -EINVAL, "approval", "no result");
	o.exit_code = ward_result_exit_code(res);
	o.timed_out = ward_result_timed_out(res);
	o.cancelled = ward_result_cancelled(res);
	/* -ENODATA (no exact signal on this host) is not a denial: ward never guesses. */
	o.denied = ward_result_sandbox_denied(res, &denied) == 0 && denied;
	o.denials = res->denials;
	o.n_denials = res->n_denials;
	o.denials_dropped = res->denials_dropped;
	return ward__approval_ran(s, &o, ret_action, err);
}

void ward__approval_step_free(struct ward__approval_step *s)
{
	if (!s)
		return;
	ward_policy_free(s->widened);
	ward_policy_free(s->unsandboxed);
	strv_freep(&s->argv);
	free(s->req.justification);
	free(s->req.cwd);
	strv_freep(&s->req.prefix_rule);
	strv_freep(&s->req.writable);
	ward__evaluation_release(&s->eval);
	free(s->key);
	free(s->reason);
	strv_freep(&s->proposed);
	free(s->notice);
	free_denials(s);
	for (size_t i = 0; i < s->n_lifts; i++)
		ward__lift_release(&s->lifts[i]);
	ward_policy_free(s->lifted);
	free(s);
}
