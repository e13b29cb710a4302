/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <getopt.h>
#include <sys/resource.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "approval/approval.h"
#include "basic/cleanup.h"
#include "basic/util.h"
#include "cli/cli.h"
#include "policy/policy.h"
#include "policy/scan-cache.h"
#include "ward-commit.h"

#define STDIN_FILE_MAX (64ULL << 20)

void cli_errorf(const char *fmt, ...)
{
	va_list ap;

	fputs("ward: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void cli_report_error(const struct ward_error *err)
{
	/* One line, whatever went wrong: the hint rides along after the reason. */
	if (err->hint[0])
		fprintf(stderr, "ward: %s (hint: %s)\n",
			err->message[0] ? err->message : "unknown error", err->hint);
	else
		fprintf(stderr, "ward: %s\n", err->message[0] ? err->message : "unknown error");
}

void cli_warn_policy(const struct ward_policy *policy)
{
	static bool warned;

	if (warned || !policy || !policy->resolved || !policy->scan_cut)
		return;
	warned = true;
	cli_errorf(
		"warning: the scan for autorun names stopped at a bound (%d directories, %d entries, %d ms): %zu directories deeper than %u levels were not read; they are watched, but autorun names already in them are not read-only (see 'ward policy show')",
		WARD_AUTORUN_MAX_DIRS, WARD_AUTORUN_MAX_ENTRIES, WARD_AUTORUN_SCAN_MS,
		policy->scan_unread, policy->scan_depth);
}

enum {
	OPT_PROTECT = 0x100,
	OPT_UNPROTECT,
	OPT_DENY_READ,
	OPT_NETWORK,
	OPT_ALLOW_UNIX_SOCKET,
	OPT_ALLOW_DOMAIN,
	OPT_DENY_DOMAIN,
	OPT_ALLOW_ADDRESS,
	OPT_DNS_SERVER,
	OPT_POLICY,
	OPT_EXCLUDE_SLASH_TMP,
	OPT_EXCLUDE_TMPDIR,
	OPT_REQUIRE_ISOLATION,
	OPT_MEMORY,
	OPT_PIDS,
	OPT_CPU,
	OPT_RLIMIT,
	OPT_REQUIRE_LIMITS,
	OPT_KEEP_FD,
	OPT_VERSION,
	OPT_TIMEOUT,
	OPT_JSON,
	OPT_JSON_BASE64,
	OPT_MAX_OUTPUT,
	OPT_STDIN,
	OPT_ENV_INHERIT,
	OPT_ENV_SET,
	OPT_ENV_EXCLUDE,
	OPT_ENV_INCLUDE_ONLY,
	OPT_ENV_DEFAULT_EXCLUDES,
	/* Approvals (approve.c). */
	OPT_GRANULAR,
	OPT_RULES,
	OPT_CODEX_RULES,
	OPT_SANDBOX_PERMISSIONS,
	OPT_JUSTIFICATION,
	OPT_PREFIX_RULE,
	OPT_ADDITIONAL_WRITABLE,
	OPT_ADDITIONAL_NETWORK,
	/* Review and undo (run-changes.c). */
	OPT_HOLD,
	OPT_RECORD,
	OPT_KEEP_IGNORED,
};

static const struct option run_options[] = {
	{"sandbox", required_argument, NULL, 's'},
	{"cd", required_argument, NULL, 'C'},
	{"writable", required_argument, NULL, 'w'},
	{"protect", required_argument, NULL, OPT_PROTECT},
	{"unprotect", required_argument, NULL, OPT_UNPROTECT},
	{"deny-read", required_argument, NULL, OPT_DENY_READ},
	{"network", required_argument, NULL, OPT_NETWORK},
	{"allow-unix-socket", required_argument, NULL, OPT_ALLOW_UNIX_SOCKET},
	{"allow-domain", required_argument, NULL, OPT_ALLOW_DOMAIN},
	{"deny-domain", required_argument, NULL, OPT_DENY_DOMAIN},
	{"allow-address", required_argument, NULL, OPT_ALLOW_ADDRESS},
	{"dns-server", required_argument, NULL, OPT_DNS_SERVER},
	{"policy", required_argument, NULL, OPT_POLICY},
	{"exclude-slash-tmp", no_argument, NULL, OPT_EXCLUDE_SLASH_TMP},
	{"exclude-tmpdir-env-var", no_argument, NULL, OPT_EXCLUDE_TMPDIR},
	{"require-isolation", no_argument, NULL, OPT_REQUIRE_ISOLATION},
	{"memory", required_argument, NULL, OPT_MEMORY},
	{"pids", required_argument, NULL, OPT_PIDS},
	{"cpu", required_argument, NULL, OPT_CPU},
	{"rlimit", required_argument, NULL, OPT_RLIMIT},
	{"require-limits", no_argument, NULL, OPT_REQUIRE_LIMITS},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, OPT_VERSION},
	/* Run-only options from here on. */
	{"keep-fd", required_argument, NULL, OPT_KEEP_FD},
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{"json", no_argument, NULL, OPT_JSON},
	{"json-base64", no_argument, NULL, OPT_JSON_BASE64},
	{"max-output", required_argument, NULL, OPT_MAX_OUTPUT},
	{"stdin", required_argument, NULL, OPT_STDIN},
	{"env-inherit", required_argument, NULL, OPT_ENV_INHERIT},
	{"env-set", required_argument, NULL, OPT_ENV_SET},
	{"env-exclude", required_argument, NULL, OPT_ENV_EXCLUDE},
	{"env-unset", required_argument, NULL, OPT_ENV_EXCLUDE},
	{"env-include-only", required_argument, NULL, OPT_ENV_INCLUDE_ONLY},
	{"env-default-excludes", no_argument, NULL, OPT_ENV_DEFAULT_EXCLUDES},
	{"ask-for-approval", required_argument, NULL, 'a'},
	{"granular", required_argument, NULL, OPT_GRANULAR},
	{"rules", required_argument, NULL, OPT_RULES},
	{"codex-rules", no_argument, NULL, OPT_CODEX_RULES},
	{"sandbox-permissions", required_argument, NULL, OPT_SANDBOX_PERMISSIONS},
	{"justification", required_argument, NULL, OPT_JUSTIFICATION},
	{"prefix-rule", required_argument, NULL, OPT_PREFIX_RULE},
	{"additional-writable", required_argument, NULL, OPT_ADDITIONAL_WRITABLE},
	{"additional-network", no_argument, NULL, OPT_ADDITIONAL_NETWORK},
	{"hold", optional_argument, NULL, OPT_HOLD},
	{"record", no_argument, NULL, OPT_RECORD},
	{"keep-ignored", no_argument, NULL, OPT_KEEP_IGNORED},
	{0},
};

static bool is_run_only(int c)
{
	return (c >= OPT_KEEP_FD && c != OPT_VERSION) || c == 'a';
}

/* The environment options: the run's, and the servers' for every command they start. */
static bool is_env_option(int c)
{
	return c >= OPT_ENV_INHERIT && c <= OPT_ENV_DEFAULT_EXCLUDES;
}

/* The run options a server verb (`ward mcp`, `ward serve`) takes. */
static bool allowed_for_server(int c, const struct cli_extra_options *extra)
{
	if (extra->approvals &&
	    (c == 'a' || c == OPT_GRANULAR || c == OPT_RULES || c == OPT_CODEX_RULES))
		return true;
	return !is_run_only(c) || is_env_option(c);
}

void cli_run_args_release(struct cli_run_args *a)
{
	ward_policy_free(a->policy);
	ward_run_options_free(a->opts);
	ward_approval_request_free(a->approval_req);
	a->policy = NULL;
	a->opts = NULL;
	a->approval_req = NULL;
}

static int fail_path(const char *verb, const char *opt, const char *arg, int r)
{
	cli_errorf("%s: %s '%s': %s", verb, opt, arg, strerror(-r));
	return -1;
}

static int load_stdin_file(struct cli_run_args *a, const char *path)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r;

	r = ward__read_file(path, STDIN_FILE_MAX, &buf, &len);
	if (r == -EFBIG) {
		cli_errorf("run: --stdin '%s': larger than %llu bytes", path, STDIN_FILE_MAX);
		return -1;
	}
	if (r < 0)
		return fail_path("run", "--stdin", path, r);
	r = ward_run_options_set_stdin(a->opts, buf, len);
	if (r < 0)
		return fail_path("run", "--stdin", path, r);
	return 0;
}

static int split_env_set(struct cli_run_args *a, const char *verb, const char *arg)
{
	_cleanup_free_ char *name = NULL;
	const char *eq = strchr(arg, '=');
	int r;

	if (!eq || eq == arg) {
		cli_errorf("%s: --env-set '%s': expected NAME=VALUE", verb, arg);
		return -1;
	}
	name = strndup(arg, (size_t)(eq - arg));
	if (!name)
		return fail_path(verb, "--env-set", arg, -ENOMEM);
	r = ward_run_options_env_set(a->opts, name, eq + 1);
	if (r < 0)
		return fail_path(verb, "--env-set", arg, r);
	return 0;
}

static int parse_args(int argc, char **argv, const char *verb, bool allow_run_options,
		      const struct cli_extra_options *extra, struct cli_run_args *a)
{
	struct option options[ELEMENTSOF(run_options) + 32];
	size_t n_opts = 0;
	int longindex;
	struct ward_error err = {0};
	int r, c;

	*a = (struct cli_run_args){0};
	if (ward_policy_new(&a->policy) < 0 || ward_run_options_new(&a->opts) < 0) {
		cli_errorf("out of memory");
		return -1;
	}
	/* The verb's own options go first, so that they win over a run option of the same name. */
	for (size_t i = 0; extra && extra->options[i].name && n_opts < 31; i++)
		options[n_opts++] = extra->options[i];
	for (size_t i = 0; run_options[i].name; i++)
		options[n_opts++] = run_options[i];
	options[n_opts] = (struct option){0};

	opterr = 0;
	optind = 1;
	/* "+": stop at the first non-option, so the command's own options stay the command's. */
	while ((longindex = -1, c = getopt_long(argc, argv, "+:s:C:w:a:h", options, &longindex)) !=
	       -1) {
		if (extra && c >= CLI_EXTRA_OPTION_BASE) {
			if (extra->handle(c, optarg, extra->userdata) < 0)
				return -1;
			continue;
		}
		if ((!allow_run_options && !extra && is_run_only(c)) ||
		    (extra && is_run_only(c) && !allowed_for_server(c, extra))) {
			if (longindex >= 0)
				cli_errorf("%s: option '--%s' only applies to 'ward run'", verb,
					   options[longindex].name);
			else
				cli_errorf("%s: option '%s' only applies to 'ward run'", verb,
					   argv[optind - 1]);
			return -1;
		}
		switch (c) {
		case 's': {
			enum ward_sandbox_mode m;

			if (ward_policy_mode_from_string(optarg, &m) < 0) {
				cli_errorf(
					"%s: --sandbox '%s': expected read-only, workspace-write or danger-full-access",
					verb, optarg);
				return -1;
			}
			ward_policy_set_mode(a->policy, m);
			break;
		}
		case 'C':
			r = ward_policy_set_cwd(a->policy, optarg);
			if (r < 0)
				return fail_path(verb, "--cd", optarg, r);
			break;
		case 'w':
			r = ward_policy_add_writable(a->policy, optarg);
			if (r < 0)
				return fail_path(verb, "--writable", optarg, r);
			break;
		case OPT_PROTECT:
			r = ward_policy_add_protect(a->policy, optarg);
			if (r < 0)
				return fail_path(verb, "--protect", optarg, r);
			break;
		case OPT_UNPROTECT:
			r = ward_policy_add_unprotect(a->policy, optarg);
			if (r < 0)
				return fail_path(verb, "--unprotect", optarg, r);
			break;
		case OPT_DENY_READ:
			r = ward_policy_add_deny_read(a->policy, optarg);
			if (r < 0)
				return fail_path(verb, "--deny-read", optarg, r);
			break;
		case OPT_NETWORK:
			if (strcmp(optarg, "off") == 0)
				ward_policy_set_network(a->policy, false);
			else if (strcmp(optarg, "on") == 0)
				ward_policy_set_network(a->policy, true);
			else {
				cli_errorf("%s: --network '%s': expected off or on", verb, optarg);
				return -1;
			}
			break;
		case OPT_ALLOW_UNIX_SOCKET:
			r = ward_policy_add_unix_socket(a->policy, optarg);
			if (r < 0)
				return fail_path(verb, "--allow-unix-socket", optarg, r);
			break;
		case OPT_ALLOW_DOMAIN:
		case OPT_DENY_DOMAIN:
		case OPT_ALLOW_ADDRESS:
		case OPT_DNS_SERVER:
			r = c == OPT_ALLOW_DOMAIN
				? ward_policy_add_allow_domain(a->policy, optarg, &err)
				: c == OPT_DENY_DOMAIN
				? ward_policy_add_deny_domain(a->policy, optarg, &err)
				: c == OPT_ALLOW_ADDRESS
				? ward_policy_add_allow_address(a->policy, optarg, &err)
				: ward_policy_set_dns_server(a->policy, optarg, &err);
			if (r < 0) {
				cli_errorf("%s: --%s: %s", verb,
					   c == OPT_ALLOW_DOMAIN	    ? "allow-domain"
						   : c == OPT_DENY_DOMAIN   ? "deny-domain"
						   : c == OPT_ALLOW_ADDRESS ? "allow-address"
									    : "dns-server",
					   err.message);
				return -1;
			}
			break;
		case OPT_POLICY:
			r = ward_policy_load_file(a->policy, optarg, &err);
			if (r < 0) {
				cli_report_error(&err);
				return -1;
			}
			break;
		case OPT_EXCLUDE_SLASH_TMP:
			ward_policy_set_exclude_slash_tmp(a->policy, true);
			break;
		case OPT_EXCLUDE_TMPDIR:
			ward_policy_set_exclude_tmpdir_env_var(a->policy, true);
			break;
		case OPT_REQUIRE_ISOLATION:
			ward_policy_set_require_isolation(a->policy, true);
			break;
		case OPT_MEMORY:
		case OPT_PIDS:
		case OPT_CPU: {
			static const char *const names[] = {"memory", "pids", "cpu"};
			int i = c - OPT_MEMORY;
			char label[16];

			/* "none": no limit of ward's own (a server's default), stated as such. */
			if (strcmp(optarg, "none") == 0) {
				a->limit_none[i] = true;
				ward_policy_set_limit(a->policy, names[i], NULL, NULL);
				break;
			}
			snprintf(label, sizeof(label), "--%s", names[i]);
			r = c == OPT_MEMORY
				? ward__limits_parse_memory(optarg, label,
							    &a->policy->limits.memory, &err)
				: c == OPT_PIDS
				? ward__limits_parse_pids(optarg, label, &a->policy->limits.pids,
							  &err)
				: ward__limits_parse_cpu(optarg, label,
							 &a->policy->limits.cpu_milli, &err);
			if (r < 0) {
				cli_errorf("%s: %s", verb, err.message);
				return -1;
			}
			a->limit_none[i] = false;
			break;
		}
		case OPT_RLIMIT:
			r = ward__limits_parse_rlimit(optarg, "--rlimit", &a->policy->limits, &err);
			if (r < 0) {
				cli_errorf("%s: %s", verb, err.message);
				return -1;
			}
			break;
		case OPT_REQUIRE_LIMITS:
			ward_policy_set_require_limits(a->policy, true);
			break;
		case OPT_KEEP_FD: {
			uint64_t fd;

			if (ward__parse_u64(optarg, &fd) < 0 || fd > 65535) {
				cli_errorf("run: --keep-fd '%s': expected a file descriptor number",
					   optarg);
				return -1;
			}
			if (fcntl((int)fd, F_GETFD) < 0) {
				cli_errorf("run: --keep-fd %s: not an open file descriptor",
					   optarg);
				return -1;
			}
			if (a->n_keep_fds >= ELEMENTSOF(a->keep_fds)) {
				cli_errorf("run: --keep-fd: at most %zu descriptors",
					   ELEMENTSOF(a->keep_fds));
				return -1;
			}
			a->keep_fds[a->n_keep_fds++] = (int)fd;
			break;
		}
		case OPT_TIMEOUT:
			if (ward__parse_seconds_ms(optarg, &a->timeout_ms) < 0 ||
			    a->timeout_ms == 0) {
				cli_errorf(
					"run: --timeout '%s': expected a positive number of seconds",
					optarg);
				return -1;
			}
			a->have_timeout = true;
			ward_run_options_set_timeout_ms(a->opts, a->timeout_ms);
			break;
		case OPT_JSON:
			a->json = true;
			break;
		case OPT_JSON_BASE64:
			a->json = true;
			a->json_base64 = true;
			ward_run_options_set_json_base64(a->opts, true);
			break;
		case OPT_MAX_OUTPUT: {
			uint64_t n;

			if (ward__parse_size(optarg, &n) < 0 || n > (256ULL << 20) ||
			    ward_run_options_set_max_output(a->opts, (size_t)n) < 0) {
				cli_errorf(
					"run: --max-output '%s': expected a byte count from 64 to 256M",
					optarg);
				return -1;
			}
			a->max_output_set = true;
			break;
		}
		case OPT_STDIN:
			if (strcmp(optarg, "-") == 0) {
				a->stdin_inherit = true;
				ward_run_options_set_stdin_fd(a->opts, STDIN_FILENO);
			} else {
				a->stdin_path = optarg;
			}
			break;
		case OPT_ENV_INHERIT: {
			enum ward_env_inherit in;

			if (strcmp(optarg, "all") == 0)
				in = WARD_ENV_INHERIT_ALL;
			else if (strcmp(optarg, "core") == 0)
				in = WARD_ENV_INHERIT_CORE;
			else if (strcmp(optarg, "none") == 0)
				in = WARD_ENV_INHERIT_NONE;
			else {
				cli_errorf("%s: --env-inherit '%s': expected all, core or none",
					   verb, optarg);
				return -1;
			}
			ward_run_options_set_env_inherit(a->opts, in);
			break;
		}
		case OPT_ENV_SET:
			if (split_env_set(a, verb, optarg) < 0)
				return -1;
			break;
		case OPT_ENV_EXCLUDE:
			r = ward_run_options_env_exclude(a->opts, optarg);
			if (r < 0)
				return fail_path(verb, "--env-exclude", optarg, r);
			break;
		case OPT_ENV_INCLUDE_ONLY:
			r = ward_run_options_env_include_only(a->opts, optarg);
			if (r < 0)
				return fail_path(verb, "--env-include-only", optarg, r);
			break;
		case OPT_ENV_DEFAULT_EXCLUDES:
			ward_run_options_set_env_default_excludes(a->opts, true);
			break;
		case 'a':
		case OPT_GRANULAR:
		case OPT_RULES:
		case OPT_CODEX_RULES:
		case OPT_SANDBOX_PERMISSIONS:
		case OPT_JUSTIFICATION:
		case OPT_PREFIX_RULE:
		case OPT_ADDITIONAL_WRITABLE:
		case OPT_ADDITIONAL_NETWORK:
			if (cli_approval_option(a, verb,
						longindex >= 0 ? options[longindex].name
							       : "ask-for-approval",
						optarg) < 0)
				return -1;
			break;
		case OPT_HOLD:
			if (!optarg || strcmp(optarg, "ask") == 0)
				a->hold = CLI_HOLD_ASK;
			else if (strcmp(optarg, "apply") == 0)
				a->hold = CLI_HOLD_APPLY;
			else if (strcmp(optarg, "discard") == 0)
				a->hold = CLI_HOLD_DISCARD;
			else if (strcmp(optarg, "keep") == 0)
				a->hold = CLI_HOLD_KEEP;
			else {
				cli_errorf("run: --hold='%s': expected ask, apply, discard or keep",
					   optarg);
				return -1;
			}
			break;
		case OPT_RECORD:
			a->record = true;
			break;
		case OPT_KEEP_IGNORED:
			a->keep_ignored = true;
			break;
		case 'h':
			a->help = true;
			return optind;
		case OPT_VERSION:
			a->version = true;
			return optind;
		case ':':
			cli_errorf("%s: option '%s' needs a value (see 'ward %s --help')", verb,
				   argv[optind - 1], verb);
			return -1;
		case '?':
		default:
			if (optopt && optopt < 0x100)
				cli_errorf("%s: unknown option '-%c' (see 'ward %s --help')", verb,
					   optopt, verb);
			else
				cli_errorf("%s: unknown option '%s' (see 'ward %s --help')", verb,
					   argv[optind - 1], verb);
			return -1;
		}
	}
	if (extra && optind < argc && !a->help && !a->version) {
		cli_errorf("%s: unexpected argument '%s' (see 'ward %s --help')", verb,
			   argv[optind], verb);
		return -1;
	}
	if (a->max_output_set && !a->json) {
		cli_errorf("run: --max-output applies to captured runs: add --json");
		return -1;
	}
	if (a->stdin_path && a->json && load_stdin_file(a, a->stdin_path) < 0)
		return -1;
	if (optind < argc)
		a->argv = argv + optind;
	return optind;
}

int cli_parse_run_args(int argc, char **argv, bool allow_run_options, struct cli_run_args *a)
{
	return parse_args(argc, argv, allow_run_options ? "run" : "policy show", allow_run_options,
			  NULL, a);
}

int cli_parse_server_args(int argc, char **argv, const char *verb,
			  const struct cli_extra_options *extra, struct cli_run_args *a)
{
	return parse_args(argc, argv, verb, false, extra, a);
}

int cli_help_or_version(const struct cli_run_args *a, const char *help)
{
	if (a->help) {
		fputs(help, stdout);
		return 0;
	}
	if (a->version) {
		printf("ward %s (commit %s)\n", ward_version(), WARD_COMMIT);
		return 0;
	}
	return -1;
}

void cli_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* ------------------------------------------------------------ the approval options */

static int need_request(struct cli_run_args *a)
{
	if (a->approval_req)
		return 0;
	if (ward_approval_request_new(&a->approval_req) < 0) {
		cli_errorf("out of memory");
		return -1;
	}
	return 0;
}

static int parse_granular(struct cli_run_args *a, const char *verb, const char *arg)
{
	_cleanup_free_ char *copy = strdup(arg);
	char *save = NULL;

	if (!copy) {
		cli_errorf("out of memory");
		return -1;
	}
	a->have_granular = true;
	a->granular = (struct ward_approval_granular){0};
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (strcmp(t, "sandbox_approval") == 0 || strcmp(t, "sandbox") == 0)
			a->granular.sandbox_approval = true;
		else if (strcmp(t, "rules") == 0)
			a->granular.rules = true;
		else if (strcmp(t, "skill_approval") == 0)
			a->granular.skill_approval = true;
		else if (strcmp(t, "request_permissions") == 0)
			a->granular.request_permissions = true;
		else if (strcmp(t, "mcp_elicitations") == 0)
			a->granular.mcp_elicitations = true;
		else if (strcmp(t, "none") != 0) {
			cli_errorf(
				"%s: --granular '%s': expected a comma-separated list of sandbox_approval, rules, skill_approval, request_permissions, mcp_elicitations, or none",
				verb, arg);
			return -1;
		}
	}
	return 0;
}

int cli_approval_option(struct cli_run_args *a, const char *verb, const char *name, const char *arg)
{
	enum ward_sandbox_permissions sp;
	int r;

	a->approvals = true;
	if (strcmp(name, "ask-for-approval") == 0) {
		if (ward_approval_mode_from_string(arg, &a->approval_mode) < 0) {
			cli_errorf(
				"%s: --ask-for-approval '%s': expected untrusted, on-request, never or granular",
				verb, arg);
			return -1;
		}
		return 0;
	}
	if (strcmp(name, "granular") == 0)
		return parse_granular(a, verb, arg);
	if (strcmp(name, "rules") == 0) {
		if (a->n_rules_files >= ELEMENTSOF(a->rules_files)) {
			cli_errorf("%s: --rules: at most %zu files", verb,
				   ELEMENTSOF(a->rules_files));
			return -1;
		}
		a->rules_files[a->n_rules_files++] = arg;
		return 0;
	}
	if (strcmp(name, "codex-rules") == 0) {
		a->codex_rules = true;
		return 0;
	}
	if (strcmp(name, "prefix-rule") == 0) {
		if (a->n_prefix_rule + 1 >= ELEMENTSOF(a->prefix_rule)) {
			cli_errorf("%s: --prefix-rule: at most %zu words", verb,
				   ELEMENTSOF(a->prefix_rule) - 1);
			return -1;
		}
		a->prefix_rule[a->n_prefix_rule++] = arg;
		a->prefix_rule[a->n_prefix_rule] = NULL;
		return need_request(a);
	}
	if (need_request(a) < 0)
		return -1;
	if (strcmp(name, "sandbox-permissions") == 0) {
		if (ward_sandbox_permissions_from_string(arg, &sp) < 0) {
			cli_errorf(
				"%s: --sandbox-permissions '%s': expected use-default, require-escalated or with-additional-permissions",
				verb, arg);
			return -1;
		}
		r = ward_approval_request_set_sandbox_permissions(a->approval_req, sp);
	} else if (strcmp(name, "justification") == 0) {
		r = ward_approval_request_set_justification(a->approval_req, arg);
	} else if (strcmp(name, "additional-writable") == 0) {
		r = ward_approval_request_add_writable(a->approval_req, arg);
	} else {
		r = ward_approval_request_set_network(a->approval_req, true);
	}
	if (r < 0) {
		cli_errorf("%s: --%s '%s': %s", verb, name, arg ? arg : "", strerror(-r));
		return -1;
	}
	return 0;
}

int cli_audit_log_option(const char *verb, const char *arg)
{
	if (strcmp(arg, "none") != 0 && arg[0] != '/') {
		cli_errorf("%s: --audit-log '%s': expected an absolute path or 'none'", verb, arg);
		return -1;
	}
	return 0;
}

/* The directory of path, made (0700) when missing; malloc()ed in *ret_dir. -errno. */
static int make_parent_dir(const char *path, char **ret_dir)
{
	_cleanup_free_ char *dir = NULL;
	const char *slash = strrchr(path, '/');
	int r;

	if (!slash || slash == path)
		return -EINVAL;
	dir = strndup(path, (size_t)(slash - path));
	if (!dir)
		return -ENOMEM;
	r = ward__mkdir_parents(dir, 0700);
	if (r < 0)
		return r;
	*ret_dir = TAKE_PTR(dir);
	return 0;
}

void cli_scan_cache_setup(void)
{
	_cleanup_free_ char *dir = NULL;

	if (ward__scan_cache_default_dir(&dir) >= 0)
		(void)ward__scan_cache_set_dir(dir);
}

int cli_audit_log_setup(const char *verb, const char *opt, char **ret_path, char **ret_dir)
{
	_cleanup_free_ char *path = NULL, *dir = NULL;
	int r;

	*ret_path = *ret_dir = NULL;
	if (opt && strcmp(opt, "none") == 0)
		return 0;
	if (opt) {
		path = strdup(opt);
		r = path ? make_parent_dir(path, &dir) : -ENOMEM;
		if (r < 0) {
			cli_errorf("%s: --audit-log '%s': cannot make its directory: %s", verb, opt,
				   strerror(-r));
			return -1;
		}
	} else {
		/*
		 * The default log: where there is none to be had (no HOME nor
		 * XDG_STATE_HOME, a home that cannot be written) the server still
		 * serves, and says once that it keeps no log.
		 */
		r = ward__audit_default_path(&path);
		if (r >= 0)
			r = make_parent_dir(path, &dir);
		if (r < 0) {
			fprintf(stderr,
				"ward %s: no audit log (%s%s%s); give --audit-log FILE to keep "
				"one\n",
				verb, path ? path : "no HOME or XDG_STATE_HOME", path ? ": " : "",
				path ? strerror(-r) : "");
			return 0;
		}
	}
	*ret_path = TAKE_PTR(path);
	*ret_dir = TAKE_PTR(dir);
	return 0;
}
