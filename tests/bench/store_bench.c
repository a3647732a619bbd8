/*
 * store_bench.c - store_enqueue() throughput on a file database
 * (WAL, synchronous=FULL), to see what group commit buys under concurrency.
 *
 *   make NODEPS=1 build/libalertbridge.a
 *   cc -std=c11 -D_GNU_SOURCE -O2 -I. -o build/store_bench tests/bench/store_bench.c \
 *      build/libalertbridge.a -lsqlite3 -lpthread
 *   build/store_bench [DB_PATH] [THREADS] [CALLS_PER_THREAD]   (defaults: a temporary file, 1, 2000)
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"
#include "store/store_events.h"
#include "core/banned.h"

struct worker {
	struct store *st;
	int idx;
	long calls;
	long ok;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *run(void *p)
{
	struct worker *w = p;
	char key[32];
	static const char payload[] =
		"{\"labels\":{\"alertname\":\"JanitorIdleGPUPod\",\"namespace\":\"ml\","
		"\"pod\":\"train-7f9c\"},\"annotations\":{\"summary\":\"GPU idle for 2h\"}}";

	for (long i = 0; i < w->calls; i++) {
		struct store_event ev;

		memset(&ev, 0, sizeof(ev));
		snprintf(key, sizeof(key), "%04x%012lx", w->idx, i);
		ev.kind = (char *)"bridge";
		ev.receiver = (char *)"default";
		ev.key = key;
		ev.status = (char *)"firing";
		ev.starts_at_ms = 1700000000000;
		ev.payload = (char *)payload;
		if (store_enqueue(w->st, &ev, 1, NULL) == ERR_OK)
			w->ok++;
	}
	return NULL;
}

static long parse_long(const char *s, long dflt)
{
	char *end = NULL;
	long v;

	if (!s)
		return dflt;
	v = strtol(s, &end, 10);
	return end && !*end && v > 0 ? v : dflt;
}

int main(int argc, char **argv)
{
	char path[256];
	int threads = (int)parse_long(argc > 2 ? argv[2] : NULL, 1);
	long calls = parse_long(argc > 3 ? argv[3] : NULL, 2000);
	struct worker *ws = NULL;
	pthread_t *th = NULL;
	struct store *st = NULL;
	struct store_stats stats;
	struct buf msg = BUF_INIT;
	long ok = 0;
	double t0, dt;

	if (threads > 256)
		threads = 256;
	if (argc > 1 && *argv[1])
		snprintf(path, sizeof(path), "%s", argv[1]);
	else
		snprintf(path, sizeof(path), "/tmp/store_bench.%ld.db", (long)getpid());
	if (store_open(path, &st, &msg) != ERR_OK) {
		fprintf(stderr, "store_bench: %s\n", buf_str(&msg));
		buf_release(&msg);
		return 1;
	}
	ws = calloc((size_t)threads, sizeof(*ws));
	th = calloc((size_t)threads, sizeof(*th));
	t0 = now_s();
	for (int i = 0; i < threads; i++) {
		ws[i] = (struct worker){ st, i, calls, 0 };
		pthread_create(&th[i], NULL, run, &ws[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		ok += ws[i].ok;
	}
	dt = now_s() - t0;
	store_stats(st, &stats);
	printf("threads=%d calls=%ld ok=%ld seconds=%.3f calls_per_s=%.0f commits=%llu "
	       "calls_per_commit=%.1f\n",
	       threads, (long)threads * calls, ok, dt, (double)ok / dt,
	       (unsigned long long)stats.commits,
	       stats.commits ? (double)stats.batches / (double)stats.commits : 0.0);
	store_close(st);
	if (argc <= 1 || !*argv[1]) {
		char p[300];
		const char *suffix[] = { "", "-wal", "-shm" };
		for (int i = 0; i < 3; i++) {
			snprintf(p, sizeof(p), "%s%s", path, suffix[i]);
			unlink(p);
		}
	}
	free(ws);
	free(th);
	buf_release(&msg);
	return ok == (long)threads * calls ? 0 : 1;
}
