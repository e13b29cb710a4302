/* SPDX-License-Identifier: MIT */
/*
 * ward-serve: the program `ward serve` runs (see meson.build for why it is a
 * program of its own). Its arguments are those of `ward serve`.
 */
#include "cli/cli.h"

int main(int argc, char **argv)
{
	return cli_serve(argc, argv);
}
