/* SPDX-License-Identifier: MIT */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "ward-commit.h"

static const char main_help[] =
	"Usage: ward COMMAND [OPTIONS]\n"
	"\n"
	"Run the commands of AI coding agents inside an operating-system sandbox.\n"
	"\n"
	"Commands:\n"
	"  run [OPTIONS] [--] CMD [ARG...]   run CMD in the sandbox (see 'ward run --help')\n"
	"  policy show [OPTIONS]             print the resolved policy and this host's enforcement\n"
	"  policy check [OPTIONS] -- CMD...  match CMD against command rules (as codex execpolicy check)\n"
	"  policy allow -- PREFIX...         always allow commands starting with PREFIX\n"
	"  changes [RUN]                     list held and recorded runs, show, apply, discard\n"
	"  undo [RUN]                        take back what a run changed (see 'ward undo --help')\n"
	"  audit [--json] [-n N]             show the approval audit log\n"
	"  doctor [--json]                   report the kernel features and the guarantees given here\n"
	"  mcp [OPTIONS]                     serve MCP tools on stdio (see 'ward mcp --help')\n"
	"  serve [OPTIONS]                   serve Codex's exec-server protocol (see 'ward serve --help')\n"
	"  help                              show this help\n"
	"\n"
	"Options:\n"
	"  -h, --help                        show this help\n"
	"      --version                     show the version and the commit it was built from\n";

/*
 * `ward serve` is the program ward-serve: installed in WARD_LIBEXECDIR, or
 * beside this ward (the build tree).
 */
static int cli_exec_serve(int argc, char **argv)
{
	char self[PATH_MAX], path[PATH_MAX + 16];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(path, sizeof(path), "%s/ward-serve", self);
			if (access(path, X_OK) == 0)
				execv(path, argv);
		}
	}
	snprintf(path, sizeof(path), "%s/ward-serve", WARD_LIBEXECDIR);
	execv(path, argv);
	cli_errorf("serve: cannot run '%s': %s", path, strerror(errno));
	return WARD_EXIT_FAILURE;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(main_help, stderr);
		return WARD_EXIT_FAILURE;
	}
	/* The verbs that resolve policies keep the autorun scan's cache on disk. */
	if (strcmp(argv[1], "run") == 0 || strcmp(argv[1], "policy") == 0 ||
	    strcmp(argv[1], "mcp") == 0)
		cli_scan_cache_setup();
	if (strcmp(argv[1], "run") == 0)
		return cli_run(argc - 1, argv + 1);
	if (strcmp(argv[1], "policy") == 0)
		return cli_policy(argc - 1, argv + 1);
	if (strcmp(argv[1], "doctor") == 0)
		return cli_doctor(argc - 1, argv + 1);
	if (strcmp(argv[1], "mcp") == 0)
		return cli_mcp(argc - 1, argv + 1);
	if (strcmp(argv[1], "serve") == 0)
		return cli_exec_serve(argc - 1, argv + 1);
	if (strcmp(argv[1], "audit") == 0)
		return cli_audit(argc - 1, argv + 1);
	if (strcmp(argv[1], "changes") == 0)
		return cli_changes(argc - 1, argv + 1);
	if (strcmp(argv[1], "undo") == 0)
		return cli_undo(argc - 1, argv + 1);
	if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0) {
		fputs(main_help, stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("ward %s (commit %s)\n", ward_version(), WARD_COMMIT);
		return 0;
	}
	cli_errorf("unknown command '%s' (see 'ward --help')", argv[1]);
	return WARD_EXIT_FAILURE;
}
