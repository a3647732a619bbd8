/*
 * test_http_server_conns.c - connections at the routing server: concurrent
 * clients, stopping with a handler or an upload in flight, read and header
 * timeouts, and the connection caps (with the idle connections of a
 * hoarder that make room at them).
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "core/http_server.h"
#include "core/log.h"
#include "core/xalloc.h"
#include "tests/unit/helpers/clock.h"
#include "tests/unit/helpers/http_server_fixture.h"
#include "tests/unit/helpers/log_capture.h"

#define CLIENTS 4
#define PER_CLIENT 25

struct client {
	const struct srv *s;
	int ok;
};

static void *client_run(void *arg)
{
	struct client *cl = arg;
	CURL *c = curl_easy_init();
	struct reply r;
	char url[128];
	int i;

	hfx_url_for(url, sizeof(url), cl->s, "/hello");
	for (i = 0; i < PER_CLIENT; i++) {
		if (hfx_fetch_with(c, "POST", url, "x", NULL, &r) == CURLE_OK && r.status == 200 &&
		    !strcmp(buf_str(&r.body), "hello POST"))
			cl->ok++;
		hfx_reply_release(&r);
	}
	curl_easy_cleanup(c);
	return NULL;
}

static void concurrent_requests(void **state)
{
	struct seen sn;
	struct srv *s = hfx_start_server(&sn, 0, 4);
	struct client cl[CLIENTS];
	pthread_t t[CLIENTS];
	int i, ok = 0;

	(void)state;
	for (i = 0; i < CLIENTS; i++) {
		cl[i].s = s;
		cl[i].ok = 0;
		assert_int_equal(pthread_create(&t[i], NULL, client_run, &cl[i]), 0);
	}
	for (i = 0; i < CLIENTS; i++) {
		pthread_join(t[i], NULL);
		ok += cl[i].ok;
	}
	assert_int_equal(ok, CLIENTS * PER_CLIENT);
	assert_int_equal(hfx_calls(&sn), CLIENTS * PER_CLIENT);
	srv_free(s);
	assert_int_equal(sn.obs_calls, CLIENTS * PER_CLIENT);
}

struct slow_client {
	const struct srv *s;
	struct reply r;
	CURLcode cc;
};

static void *slow_run(void *arg)
{
	struct slow_client *sc = arg;
	char url[128];

	hfx_url_for(url, sizeof(url), sc->s, "/slow");
	sc->cc = hfx_fetch("GET", url, NULL, NULL, &sc->r);
	return NULL;
}

static void stop_waits_for_handler_in_flight(void **state)
{
	struct seen sn;
	struct srv *s = hfx_start_server(&sn, 0, 2);
	struct slow_client sc = {s, {0}, CURLE_OK};
	struct timespec tick = {0, 10 * 1000 * 1000};
	pthread_t t;
	int i, started = 0;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, slow_run, &sc), 0);
	for (i = 0; i < 300 && !started; i++) {
		nanosleep(&tick, NULL);
		pthread_mutex_lock(&sn.lock);
		started = sn.started;
		pthread_mutex_unlock(&sn.lock);
	}
	assert_true(started);
	srv_stop(s);
	/* The handler finished and its answer reached the client. */
	assert_int_equal(sn.finished, 1);
	pthread_join(t, NULL);
	assert_int_equal(sc.cc, CURLE_OK);
	assert_int_equal(sc.r.status, 200);
	assert_string_equal(buf_str(&sc.r.body), "done");
	hfx_reply_release(&sc.r);
	/* No longer accepting. */
	assert_true(hfx_raw_connect(s) < 0);
	srv_stop(s); /* idempotent */
	srv_free(s);
}

/* A client stalled mid-body holds srv_stop() for at most SRV_DRAIN_MAX_S, not timeout_s. */
static void stop_does_not_wait_out_a_stalled_upload(void **state)
{
	struct srv_options o = {0};
	struct buf err = BUF_INIT;
	struct srv *s = NULL;
	struct seen sn;
	struct timespec t0, t1, settle = {0, 200 * 1000 * 1000};
	const char *req = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nhalf";
	double took_s;
	int fd;

	(void)state;
	memset(&sn, 0, sizeof(sn));
	pthread_mutex_init(&sn.lock, NULL);
	o.listen_address = "127.0.0.1:0";
	o.threads = 1;
	o.timeout_s = 30;
	assert_int_equal(srv_new(&o, &s, &err), ERR_OK);
	assert_int_equal(srv_route(s, "POST", "/echo", hfx_echo, &sn), ERR_OK);
	assert_int_equal(srv_start(s, &err), ERR_OK);
	fd = hfx_raw_connect(s);
	assert_true(fd >= 0);
	assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	nanosleep(&settle, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	srv_stop(s);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	took_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (took_s > SRV_DRAIN_MAX_S + 2.0)
		fail_msg("srv_stop took %.1f s with a stalled upload", took_s);
	assert_int_equal(hfx_calls(&sn), 0);  /* the half-sent request was never handled */
	assert_true(hfx_raw_connect(s) < 0);
	close(fd);
	srv_free(s);
	buf_release(&err);
}

/* A server on 127.0.0.1:0 with /hello and the given limits, started. */
static struct srv *start_limited(struct seen *sn, unsigned timeout_s, unsigned header_timeout_ms,
				 unsigned max_conn, unsigned max_per_ip)
{
	struct srv_options o = {0};
	const struct hfx_route routes[] = {
		{ "GET", "/hello", hfx_hello, sn },
		{ "POST", "/hello", hfx_hello, sn },
		{ NULL, NULL, NULL, NULL },
	};

	o.threads = 2;
	o.timeout_s = timeout_s;
	o.header_timeout_ms = header_timeout_ms;
	o.max_connections = max_conn;
	o.max_connections_per_ip = max_per_ip;
	return hfx_serve(sn, &o, routes, NULL);
}

/* Connect from source address src ("127.0.0.2") to the server; asserts success. */
static int connect_from(const struct srv *s, const char *src)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, src, &a.sin_addr), 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	a.sin_port = htons((uint16_t)srv_port(s));
	assert_int_equal(inet_pton(AF_INET, "127.0.0.1", &a.sin_addr), 1);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/*
 * Send drip (may be NULL) one byte every 200 ms and wait for the server to
 * close fd, for at most limit_ms.  Returns the ms until the close, or -1 if
 * the connection is still open at limit_ms; what the server sent goes to got.
 */
static int64_t wait_closed(int fd, const char *drip, int64_t limit_ms, struct buf *got)
{
	int64_t t0 = tclock_mono_ms(), next_drip = t0;
	char chunk[512];
	ssize_t n;

	while (tclock_mono_ms() - t0 < limit_ms) {
		struct pollfd p = {fd, POLLIN, 0};
		if (drip && *drip && tclock_mono_ms() >= next_drip) {
			if (send(fd, drip, 1, MSG_NOSIGNAL) != 1)
				return tclock_mono_ms() - t0;
			drip++;
			next_drip += 200;
		}
		if (poll(&p, 1, 50) == 0)
			continue;
		n = recv(fd, chunk, sizeof(chunk), 0);
		if (n <= 0)
			return tclock_mono_ms() - t0;
		assert_int_equal(buf_add(got, chunk, (size_t)n), ERR_OK);
	}
	return -1;
}

/* GET /hello over a new connection from src; the status (0: no answer). */
static int get_hello_from(const struct srv *s, const char *src)
{
	static const char req[] = "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	struct buf got = BUF_INIT;
	int fd = connect_from(s, src), status = 0;

	assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	(void)wait_closed(fd, NULL, 3000, &got);
	if (!strncmp(buf_str(&got), "HTTP/1.1 ", 9))
		status = (int)strtol(buf_str(&got) + 9, NULL, 10);
	close(fd);
	buf_release(&got);
	return status;
}

/* A connection the server must cut: what the client sends, when and how it is cut. */
struct cut_case {
	const char *name;
	unsigned timeout_s, header_timeout_ms;  /* the server's (start_limited()) */
	int debug;             /* the log at debug (else info) while it runs */
	const char *head;      /* sent at once; NULL: nothing */
	const char *drip;      /* then one byte every 200 ms (wait_closed()); NULL: nothing */
	int64_t min_ms, max_ms;  /* when the server closed, after head */
	const char *got;       /* what the server sent: "" exactly, else a string it holds */
	int calls;             /* hfx_calls() at the end; -1: not asserted */
	const char *logged;    /* NULL: the log is not read; else a string it holds */
	const char *unlogged;  /* a string the log does not hold; NULL: none */
};

static const struct cut_case cut_cases[] = {
	{ "silent_client_closed_after_read_timeout", 1, 10000, 0, NULL, NULL, 900, 5000, "", -1,
	  NULL, NULL },
	/* Headers one byte every 200 ms (slowloris): cut off at the header timeout, not the
	 * 10 s idle timeout: bytes kept coming. */
	{ "slow_headers_cut_off", 10, 1000, 0, NULL,
	  "GET /hello HTTP/1.1\r\nHost: x\r\nX-Pad: aaaaaaaaaaaaaaaaaaaaaaa"
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 900, 5000, "", 0,
	  "msg=\"closed a slow connection\" remote_addr=127.0.0.1 waiting_for=headers after_ms=",
	  NULL },
	/* A body one byte every 200 ms: cut off at the read timeout, 2 s from the start
	 * (headers in at once), the handler never runs. */
	{ "slow_body_cut_off", 2, 500, 0,
	  "POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n",
	  "0123456789012345678901234567890123456789", 1700, 6000, "", 0, NULL, NULL },
	/*
	 * After a response, a kept-alive connection waits header_timeout for the next
	 * request.  With none (Alertmanager's Go client keeps its connections idle for 90 s)
	 * it is closed at the header timeout like a new one, but that is routine, not a slow
	 * client: it is logged at debug as idle, never at info as "closed a slow connection"
	 * (one such line per webhook).
	 */
	{ "kept_alive_connection_waits_header_timeout", 10, 1000, 1,
	  "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n", NULL, 900, 5000, "HTTP/1.1 200 OK\r\n", 1,
	  "level=debug msg=\"closed an idle connection\" remote_addr=127.0.0.1 "
	  "waiting_for=next_request after_ms=", "slow connection" },
};

static void run_cut_case(void **state)
{
	const struct cut_case *c = *state;
	struct seen sn;
	struct srv *s;
	struct buf got = BUF_INIT;
	char logged[1024] = "";
	struct log_capture lc;
	int fd;
	int64_t ms;

	if (c->logged)
		lcap_start(&lc);
	if (c->debug)
		log_setup(LOG_DEBUG, LOG_LOGFMT);
	s = start_limited(&sn, c->timeout_s, c->header_timeout_ms, 0, 0);
	fd = connect_from(s, "127.0.0.1");
	if (c->head)
		assert_int_equal(send(fd, c->head, strlen(c->head), MSG_NOSIGNAL),
				 (ssize_t)strlen(c->head));
	ms = wait_closed(fd, c->drip, 8000, &got);
	if (ms < c->min_ms || ms > c->max_ms)
		fail_msg("%s: closed after %lld ms", c->name, (long long)ms);
	if (*c->got ? !strstr(buf_str(&got), c->got) : strcmp(buf_str(&got), ""))
		fail_msg("%s: got \"%s\", want \"%s\"", c->name, buf_str(&got), c->got);
	if (c->calls >= 0 && hfx_calls(&sn) != c->calls)
		fail_msg("%s: %d calls", c->name, hfx_calls(&sn));
	close(fd);
	srv_free(s);
	if (c->debug)
		log_setup(LOG_INFO, LOG_LOGFMT);
	if (c->logged) {
		lcap_end(&lc, logged, sizeof(logged));
		if (!strstr(logged, c->logged) || (c->unlogged && strstr(logged, c->unlogged)))
			fail_msg("%s: logged %s", c->name, logged);
	}
	buf_release(&got);
}

/* max_connections held open: the next one is closed at once; a freed slot serves again. */
/* 1 when the peer closed fd (EOF, or reset) without sending anything; 0 while it is open. */
static int closed_by_peer(int fd)
{
	char ch;
	ssize_t n = recv(fd, &ch, 1, MSG_PEEK | MSG_DONTWAIT);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
		return 1;
	assert_true(n < 0);  /* an over-cap connection gets no bytes */
	return 0;
}

/*
 * Four connections to a server capped at three: one of them is closed at
 * once, whichever of the pool threads counted it last (under load it need
 * not be the fourth opened), the others stay; when one closes, a request is
 * served again.
 */
static void connection_over_cap_is_closed(void **state)
{
	struct seen sn;
	struct srv *s;
	char logged[1024] = "";
	struct log_capture lc;
	int conns[4], i, status = 0, n_closed = 0, refused = -1;
	int64_t t0;

	(void)state;
	lcap_start(&lc);
	s = start_limited(&sn, 10, 10000, 3, 0);
	for (i = 0; i < 4; i++)
		conns[i] = connect_from(s, "127.0.0.1");  /* TCP accepts all; the server closes one */
	t0 = tclock_mono_ms();
	while (n_closed == 0 && tclock_mono_ms() - t0 < 5000) {
		for (i = 0; i < 4; i++)
			if (closed_by_peer(conns[i])) {
				n_closed++;
				refused = i;
			}
		if (n_closed == 0)
			(void)poll(NULL, 0, 10);
	}
	assert_int_equal(n_closed, 1);
	(void)poll(NULL, 0, 200);  /* the others stay open */
	for (i = 0; i < 4; i++)
		if (i != refused)
			assert_false(closed_by_peer(conns[i]));
	close(conns[refused]);
	close(conns[refused == 0 ? 1 : 0]);  /* room for one more */
	t0 = tclock_mono_ms();
	while (status != 200 && tclock_mono_ms() - t0 < 3000)
		status = get_hello_from(s, "127.0.0.1");
	assert_int_equal(status, 200);
	for (i = 0; i < 4; i++)
		if (i != refused && i != (refused == 0 ? 1 : 0))
			close(conns[i]);
	srv_free(s);
	lcap_end(&lc, logged, sizeof(logged));
	assert_non_null(strstr(logged, "msg=\"connection limit reached: closing new connections\" "
				       "max_connections=3 refused_total=1"));
}

/*
 * Stopping while the pool's workers are at their connection limit: on epoll,
 * MHD_quiesce_daemon() and a full worker both took the listen socket out of
 * the worker's epoll set and libmicrohttpd aborted the process ("Failed to
 * remove listen FD from epoll set", CI).  Rounds of clients over every
 * limit, each ended by a stop; the test passes when the process survives
 * them all and each stop returns.
 */
static void stop_with_workers_at_their_limit(void **state)
{
	int round, i, fds[24], devnull = open("/dev/null", O_WRONLY);

	(void)state;
	log_set_fd(devnull);  /* a "connection limit reached" line per round */
	for (round = 0; round < 20; round++) {
		struct seen sn;
		struct srv *s = start_limited(&sn, 10, 10000, 1, 0);

		for (i = 0; i < 24; i++)
			fds[i] = hfx_raw_connect(s);
		if (round % 2)
			(void)poll(NULL, 0, 2);
		srv_free(s);
		for (i = 0; i < 24; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		pthread_mutex_destroy(&sn.lock);
	}
	log_set_fd(2);
	close(devnull);
}

/* Per-IP cap: 127.0.0.1 holds its share, 127.0.0.2 is still served at once. */
static void per_ip_cap_leaves_room_for_others(void **state)
{
	struct seen sn;
	struct srv *s = start_limited(&sn, 10, 10000, 16, 2);
	struct buf got = BUF_INIT;
	int held[2], fd, i;
	int64_t ms, t0;

	(void)state;
	for (i = 0; i < 2; i++)
		held[i] = connect_from(s, "127.0.0.1");
	fd = connect_from(s, "127.0.0.1");
	ms = wait_closed(fd, NULL, 8000, &got);
	assert_true(ms >= 0 && ms < 5000);
	assert_string_equal(buf_str(&got), "");
	close(fd);
	t0 = tclock_mono_ms();
	assert_int_equal(get_hello_from(s, "127.0.0.2"), 200);
	assert_true(tclock_mono_ms() - t0 < 1000);
	for (i = 0; i < 2; i++)
		close(held[i]);
	srv_free(s);
	buf_release(&got);
}

/* 1 when fd was closed by the server within limit_ms; 0 when it is still open then. */
static int closed_within(int fd, int64_t limit_ms)
{
	int64_t t0 = tclock_mono_ms();

	while (!closed_by_peer(fd)) {
		if (tclock_mono_ms() - t0 >= limit_ms)
			return 0;
		(void)poll(NULL, 0, 10);
	}
	return 1;
}

/*
 * Wait (at most 5 s) until the server counts n connections: one its client saw closed may
 * still count for a moment (srv_connections()).
 */
static void wait_connections(struct srv *s, unsigned n)
{
	int64_t t0 = tclock_mono_ms();

	while (srv_connections(s) != n) {
		if (tclock_mono_ms() - t0 >= 5000)
			fail_msg("the server counts %u connections, not %u", srv_connections(s), n);
		(void)poll(NULL, 0, 5);
	}
}

/*
 * Right after a start no client is known, so the reserve keeps no room for
 * the Alertmanager: idle connections from a few addresses (issue 19's
 * campaign: 300 from 8) held every unreserved connection and it was closed
 * at once until they timed out.  At the cap a newcomer takes the place of an
 * idle connection of the address holding the most; a request in progress is
 * never cut (127.0.0.2 holds more, but every one mid-body), and hoarders do
 * not trade places among themselves.
 */
static void idle_hoarders_make_room_at_the_cap(void **state)
{
	static const char head[] = "POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nhalf";
	struct seen sn;
	struct srv *s;
	char logged[2048] = "";
	struct log_capture lc;
	int busy[7], idle[5], extra[2], i, cut = 0;

	(void)state;
	lcap_start(&lc);
	s = start_limited(&sn, 10, 10000, 16, 0);  /* 12 unreserved, header timeout 10 s */
	for (i = 0; i < 7; i++) {
		busy[i] = connect_from(s, "127.0.0.2");
		assert_int_equal(send(busy[i], head, strlen(head), MSG_NOSIGNAL),
				 (ssize_t)strlen(head));
	}
	for (i = 0; i < 5; i++)
		idle[i] = connect_from(s, "127.0.0.3");
	(void)poll(NULL, 0, 300);  /* all admitted, the bodies begun */
	assert_int_equal(get_hello_from(s, "127.0.0.1"), 200);
	for (i = 0; i < 5; i++)
		cut += closed_within(idle[i], i ? 0 : 500);
	assert_int_equal(cut, 1);
	for (i = 0; i < 7; i++)
		assert_false(closed_by_peer(busy[i]));
	/* 127.0.0.3 (4 now, and 2 more) cannot take 127.0.0.2's places, nor its own back. */
	wait_connections(s, 11);  /* the hello's connection is out of the count */
	extra[0] = connect_from(s, "127.0.0.3");  /* the free place */
	(void)poll(NULL, 0, 100);
	extra[1] = connect_from(s, "127.0.0.3");
	assert_true(closed_within(extra[1], 2000));
	assert_false(closed_by_peer(extra[0]));
	for (i = 0; i < 7; i++)
		assert_false(closed_by_peer(busy[i]));
	for (i = 0; i < 7; i++)
		close(busy[i]);
	for (i = 0; i < 5; i++)
		close(idle[i]);
	close(extra[0]);
	close(extra[1]);
	srv_free(s);
	lcap_end(&lc, logged, sizeof(logged));
	assert_non_null(strstr(logged, "msg=\"connection limit reached: closed an idle connection "
				       "of the address holding the most\" remote_addr=127.0.0.3 "
				       "held=5 max_connections=16 evicted_total=1"));
}

/* An address holding a client's usual few connections is not cut for another. */
static void a_few_connections_are_not_cut_for_another(void **state)
{
	struct seen sn;
	struct srv *s;
	int held[6], fd, i, devnull = open("/dev/null", O_WRONLY);

	(void)state;
	log_set_fd(devnull);
	s = start_limited(&sn, 10, 10000, 8, 0);  /* 6 unreserved */
	for (i = 0; i < 6; i++)
		held[i] = connect_from(s, i < 3 ? "127.0.0.2" : "127.0.0.3");
	(void)poll(NULL, 0, 300);
	fd = connect_from(s, "127.0.0.1");
	assert_true(closed_within(fd, 2000));
	for (i = 0; i < 6; i++)
		assert_false(closed_by_peer(held[i]));
	close(fd);
	for (i = 0; i < 6; i++)
		close(held[i]);
	srv_free(s);
	log_set_fd(2);
	close(devnull);
}

UNIT_MAIN_WITH(curl_global_init(CURL_GLOBAL_ALL), curl_global_cleanup(),
	cmocka_unit_test(concurrent_requests),
	cmocka_unit_test(stop_waits_for_handler_in_flight),
	cmocka_unit_test(stop_does_not_wait_out_a_stalled_upload),
	UNIT_CASE(run_cut_case, cut_cases[0]),
	UNIT_CASE(run_cut_case, cut_cases[1]),
	UNIT_CASE(run_cut_case, cut_cases[2]),
	UNIT_CASE(run_cut_case, cut_cases[3]),
	cmocka_unit_test(connection_over_cap_is_closed),
	cmocka_unit_test(per_ip_cap_leaves_room_for_others),
	cmocka_unit_test(idle_hoarders_make_room_at_the_cap),
	cmocka_unit_test(a_few_connections_are_not_cut_for_another),
	cmocka_unit_test(stop_with_workers_at_their_limit))
