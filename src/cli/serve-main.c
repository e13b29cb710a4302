/* SPDX-License-Identifier: MIT */
/*
 * ward-serve: the program `ward serve` runs (see meson.build for why it is a
 * program of its own). Its arguments are those of `ward serve`, except
 * "__fs-op": the server starts itself that way as the command of a sandbox,
 * to run one filesystem operation inside it (src/execserver/fshelper.c).
 */
#include <string.h>

#include "cli/cli.h"
#include "execserver/fshelper.h"

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "__fs-op") == 0)
		return ward__xfs_helper_main(argc, argv);
	cli_scan_cache_setup();
	return cli_serve(argc, argv);
}
