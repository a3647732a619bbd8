/*
 * test_http_server_defer.c - srv_defer() (core/http_server_defer.c) on a real
 * server on 127.0.0.1 with ONE worker thread: while deferred work runs (held
 * by the test), the worker still answers other requests; the handler then
 * runs again and sees its argument; the argument is released once; a full
 * queue is ERR_RETRY at once; srv_stop() waits for queued work.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "core/http_server.h"
#include "core/http_server_int.h"
#include "tests/unit/helpers/http_server_fixture.h"

/* The slow work's gate: work waits until open; counts what ran and was released. */
struct gate {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int open;
	int running, ran, released, retried, reruns;
};

static struct gate G = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, 0, 0 };

static void work(void *arg)
{
	pthread_mutex_lock(&G.lock);
	G.running++;
	pthread_cond_broadcast(&G.cond);
	while (!G.open)
		pthread_cond_wait(&G.cond, &G.lock);
	G.ran++;
	pthread_mutex_unlock(&G.lock);
	*(int *)arg = 42;
}

static void release(void *arg)
{
	pthread_mutex_lock(&G.lock);
	G.released++;
	pthread_mutex_unlock(&G.lock);
	free(arg);
}

/* GET /slow: defer work(); on the second run answer 200 with what it computed. */
static void slow_handler(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	int *got = srv_deferred(req);

	(void)ctx;
	if (got) {
		pthread_mutex_lock(&G.lock);
		G.reruns++;
		pthread_mutex_unlock(&G.lock);
		(void)buf_printf(&res->body, "computed %d", *got);
		return;
	}
	got = calloc(1, sizeof(*got));
	if (srv_defer(req, work, release, got) == ERR_OK)
		return;
	free(got);
	pthread_mutex_lock(&G.lock);
	G.retried++;
	pthread_mutex_unlock(&G.lock);
	res->status = 503;
}

static void hello(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	(void)ctx;
	(void)req;
	(void)buf_adds(&res->body, "hello");
}

static struct srv *start(void)
{
	struct srv_options so = { 0 };
	struct srv *s = NULL;

	so.listen_address = "127.0.0.1:0";
	so.threads = 1;
	so.timeout_s = 10;
	assert_int_equal(srv_new(&so, &s, NULL), ERR_OK);
	assert_int_equal(srv_route(s, "GET", "/slow", slow_handler, NULL), ERR_OK);
	assert_int_equal(srv_route(s, "GET", "/hello", hello, NULL), ERR_OK);
	assert_int_equal(srv_start(s, NULL), ERR_OK);
	return s;
}

struct client {
	pthread_t t;
	char url[128];
	struct reply r;
};

static void *fetch_main(void *arg)
{
	struct client *c = arg;

	memset(&c->r, 0, sizeof(c->r));
	(void)hfx_fetch("GET", c->url, NULL, NULL, &c->r);
	return NULL;
}

/* Wait (bounded: 10 s) until at least n works run. */
static void wait_running(int n)
{
	int i;

	for (i = 0; i < 1000; i++) {
		pthread_mutex_lock(&G.lock);
		if (G.running >= n) {
			pthread_mutex_unlock(&G.lock);
			return;
		}
		pthread_mutex_unlock(&G.lock);
		usleep(10000);
	}
	fail_msg("deferred work did not start");
}

static void open_gate(void)
{
	pthread_mutex_lock(&G.lock);
	G.open = 1;
	pthread_cond_broadcast(&G.cond);
	pthread_mutex_unlock(&G.lock);
}

static void the_worker_answers_while_work_is_deferred(void **state)
{
	struct srv *s = start();
	struct client c;
	struct reply r;
	char url[128];

	(void)state;
	memset(&G.open, 0, sizeof(G) - offsetof(struct gate, open));
	hfx_url_for(c.url, sizeof(c.url), s, "/slow");
	assert_int_equal(pthread_create(&c.t, NULL, fetch_main, &c), 0);
	wait_running(1);
	/* The only worker thread is free: another request is answered meanwhile. */
	hfx_url_for(url, sizeof(url), s, "/hello");
	memset(&r, 0, sizeof(r));
	assert_int_equal(hfx_fetch("GET", url, NULL, NULL, &r), CURLE_OK);
	assert_int_equal(r.status, 200);
	assert_string_equal(buf_str(&r.body), "hello");
	hfx_reply_release(&r);
	open_gate();
	pthread_join(c.t, NULL);
	assert_int_equal(c.r.status, 200);
	assert_string_equal(buf_str(&c.r.body), "computed 42");
	hfx_reply_release(&c.r);
	srv_free(s);
	assert_int_equal(G.ran, 1);
	assert_int_equal(G.reruns, 1);
	assert_int_equal(G.released, 1);
}

static void a_full_queue_is_refused_at_once_and_stop_waits(void **state)
{
	enum { N = SRV_DEFER_THREADS + SRV_DEFER_QUEUE + 3 };
	struct client c[N];
	struct srv *s = start();
	int i, answered503 = 0, answered200 = 0;

	(void)state;
	memset(&G.open, 0, sizeof(G) - offsetof(struct gate, open));
	for (i = 0; i < N; i++) {
		hfx_url_for(c[i].url, sizeof(c[i].url), s, "/slow");
		assert_int_equal(pthread_create(&c[i].t, NULL, fetch_main, &c[i]), 0);
		if (i == 0)
			wait_running(1);  /* taken off the queue: 16 more fit */
	}
	/* Bounded: until the queue is full and the 3 past it were refused (10 s). */
	for (i = 0; i < 1000; i++) {
		pthread_mutex_lock(&G.lock);
		if (G.retried >= 3 && G.running >= SRV_DEFER_THREADS) {
			pthread_mutex_unlock(&G.lock);
			break;
		}
		pthread_mutex_unlock(&G.lock);
		usleep(10000);
	}
	assert_int_equal(G.retried, 3);
	open_gate();
	for (i = 0; i < N; i++) {
		pthread_join(c[i].t, NULL);
		answered503 += c[i].r.status == 503;
		answered200 += c[i].r.status == 200;
		hfx_reply_release(&c[i].r);
	}
	assert_int_equal(answered503, 3);
	assert_int_equal(answered200, N - 3);
	srv_free(s);
	assert_int_equal(G.released, N - 3);
}

UNIT_MAIN(
	cmocka_unit_test(the_worker_answers_while_work_is_deferred),
	cmocka_unit_test(a_full_queue_is_refused_at_once_and_stop_waits))
