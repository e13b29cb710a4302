/* SPDX-License-Identifier: MIT */
/*
 * sandboxed-run: libward in a few lines. Runs a command in the sandbox
 * (workspace-write in the current directory, network off), waits at most
 * ten seconds, and prints its output, its exit code and whether the sandbox
 * refused anything.
 *
 *   cc sandboxed-run.c $(pkg-config --cflags --libs ward) -o sandboxed-run
 *   ./sandboxed-run sh -c 'echo hello; touch /etc/x'
 *
 * The test suite builds and runs it (tests/meson.build, 'example').
 */
#include <stdio.h>
#include <string.h>

#include <ward/ward.h>

int main(int argc, char **argv)
{
	struct ward_policy *policy = NULL;
	struct ward_run_options *opts = NULL;
	struct ward_result *result = NULL;
	struct ward_error err = {0};
	const char *out;
	size_t len;
	bool denied = false;
	int r, code = 125;

	if (argc < 2) {
		fprintf(stderr, "usage: %s COMMAND [ARG...]\n", argv[0]);
		return 2;
	}
	/* The default policy: workspace-write in the working directory, network off. */
	r = ward_policy_new(&policy);
	if (r >= 0)
		r = ward_policy_resolve(policy, &err);
	if (r >= 0)
		r = ward_run_options_new(&opts);
	if (r >= 0)
		r = ward_run_options_set_argv(opts, (const char *const *)argv + 1);
	if (r >= 0)
		r = ward_run_options_set_timeout_ms(opts, 10000);
	if (r >= 0)
		r = ward_run(policy, opts, NULL, &result, &err);
	if (r < 0) {
		/* err names the stage and says why; r is -errno. */
		fprintf(stderr, "sandboxed-run: %s: %s%s%s\n", err.stage[0] ? err.stage : "setup",
			err.message[0] ? err.message : strerror(-r), err.hint[0] ? "; hint: " : "",
			err.hint);
		goto out;
	}
	out = ward_result_output(result, 0, &len);
	fwrite(out, 1, len, stdout);
	code = ward_result_exit_code(result);
	if (ward_result_sandbox_denied(result, &denied) < 0)
		printf("exit code %d, denials unknown on this host\n", code);
	else
		printf("exit code %d, %s\n", code,
		       denied ? "the sandbox refused something" : "nothing refused");
out:
	ward_result_free(result);
	ward_run_options_free(opts);
	ward_policy_free(policy);
	return code;
}
