/* wrload SECONDS: a tight write()/read() loop on a pipe, one byte each, for
 * SECONDS; prints the number of iterations. Pin it with taskset. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	int p[2]; char c = 0; unsigned long n = 0; struct timespec t0, t;
	double secs = argc > 1 ? atof(argv[1]) : 3;
	if (pipe(p)) return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		for (int i = 0; i < 1000; i++) {
			if (write(p[1], &c, 1) != 1 || read(p[0], &c, 1) != 1) return 1;
		}
		n += 1000;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= secs) break;
	}
	printf("iterations=%lu\n", n);
	return 0;
}
