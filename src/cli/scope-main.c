/* SPDX-License-Identifier: MIT */
/*
 * ward-scope: the helper ward runs to get a delegated cgroup scope from
 * systemd (src/sandbox/scope.c; meson.build says why it is a program of its
 * own).
 */
#include "sandbox/limits.h"

int main(int argc, char **argv)
{
	return ward__scope_main(argc, argv);
}
