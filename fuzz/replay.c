/* SPDX-License-Identifier: MIT */
/*
 * The corpus replay driver linked with every fuzz target outside libFuzzer:
 * feeds each file named on the command line (or each file in a directory
 * named there) to LLVMFuzzerTestOneInput once. A target reports a broken
 * invariant with abort(), so a failure is the process dying; an unreadable
 * input is exit status 1.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#define REPLAY_MAX_INPUT (1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rbe");
	uint8_t *buf;
	size_t n;

	if (!f) {
		perror(path);
		return 1;
	}
	buf = malloc(REPLAY_MAX_INPUT);
	if (!buf)
		abort();
	n = fread(buf, 1, REPLAY_MAX_INPUT, f);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int failed = 0, count = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) < 0) {
			perror(argv[i]);
			return 1;
		}
		if (S_ISDIR(st.st_mode)) {
			DIR *d = opendir(argv[i]);
			struct dirent *e;

			if (!d) {
				perror(argv[i]);
				return 1;
			}
			while ((e = readdir(d))) {
				char p[4096];

				if (e->d_name[0] == '.')
					continue;
				snprintf(p, sizeof(p), "%s/%s", argv[i], e->d_name);
				failed |= replay_file(p);
				count++;
			}
			closedir(d);
		} else {
			failed |= replay_file(argv[i]);
			count++;
		}
	}
	printf("replayed %d inputs\n", count);
	return failed;
}
