/*
 * test_leader.c - leader election against fake_http as the API server, in virtual time: the
 * exact requests and Lease bodies for create, take-over, renew and release; followers that
 * judge expiry by their own clock; conflicts; stepping down at the renew deadline; the
 * leader's own thread; concurrent leader_is_leader() readers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include <jansson.h>

#include "core/log.h"
#include "core/rfc3339.h"
#include "janitor/kube.h"
#include "janitor/kubeconfig.h"
#include "ha/leader.h"
#include "tests/unit/helpers/fake_http.h"

#define T0 INT64_C(1714564800000) /* 2024-05-01T12:00:00Z */
#define S INT64_C(1000)
#define LEASE_PATH "/apis/coordination.k8s.io/v1/namespaces/alertbridge/leases/alertbridge"
#define LEASES_PATH "/apis/coordination.k8s.io/v1/namespaces/alertbridge/leases"
#define STATUS_404 "{\"kind\":\"Status\",\"reason\":\"NotFound\",\"code\":404}"
#define STATUS_500 "{\"kind\":\"Status\",\"reason\":\"InternalError\",\"message\":\"etcd down\"}"
#define STATUS_409 "{\"kind\":\"Status\",\"reason\":\"Conflict\",\"message\":\"the object " \
		   "has been modified\",\"code\":409}"

struct fixture {
	struct fake_http *fake;
	struct kube_client *kc;
	struct leader *l;
	_Atomic int64_t now;
	char events[64];      /* '+' per on_start_leading, '-' per on_stop_leading, in order */
	size_t nevents;
	int leading_in_stop;  /* leader_is_leader() as seen inside on_stop_leading */
	struct buf err;
	char logpath[64];
	int logfd;
};

static int64_t v_now(void *ctx)
{
	return atomic_load(&((struct fixture *)ctx)->now);
}

static void v_sleep(void *ctx, int64_t ms)
{
	struct fixture *fx = ctx;

	assert_true(ms > 0 && ms <= 60 * S);
	atomic_fetch_add(&fx->now, ms);
}

static void advance(struct fixture *fx, int64_t ms)
{
	atomic_fetch_add(&fx->now, ms);
}

static void add_event(struct fixture *fx, char c)
{
	assert_true(fx->nevents < sizeof(fx->events) - 1);
	fx->events[fx->nevents++] = c;
	fx->events[fx->nevents] = '\0';
}

static void on_start(void *ctx)
{
	add_event(ctx, '+');
}

static void on_stop(void *ctx)
{
	struct fixture *fx = ctx;

	fx->leading_in_stop = leader_is_leader(fx->l);
	add_event(fx, '-');
}

static struct kube_client *new_kube(struct fixture *fx, int virtual_time)
{
	struct kube_config cfg = KUBE_CONFIG_INIT;
	struct kube_options o = { 0 };

	cfg.server = strdup(fake_http_url(fx->fake));
	cfg.token = strdup("t0k3n");
	cfg.namespace = strdup("alertbridge");
	if (virtual_time) {
		o.now_ms = v_now;
		o.sleep_ms = v_sleep;
		o.clock_ctx = fx;
	}
	o.timeout_ms = 2000;
	return kube_client_new(&cfg, &o);
}

/* Options of pod-a's leader of alertbridge/alertbridge on fx's client (and virtual clock). */
static void leader_opts(struct fixture *fx, struct leader_options *o, int virtual_time)
{
	o->kube = fx->kc;
	o->namespace = "alertbridge";
	o->lease_name = "alertbridge";
	o->identity = "pod-a";
	if (virtual_time) {
		o->now_ms = v_now;
		o->sleep_ms = v_sleep;
		o->clock_ctx = fx;
	}
}

static struct leader *new_leader(struct fixture *fx, int64_t lease_ms, int virtual_time)
{
	struct leader_options o = { 0 };

	leader_opts(fx, &o, virtual_time);
	o.lease_duration_ms = lease_ms;
	o.on_start_leading = on_start;
	o.on_stop_leading = on_stop;
	o.ctx = fx;
	return leader_new(&o);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	log_setup(LOG_INFO, LOG_LOGFMT);
	snprintf(fx->logpath, sizeof(fx->logpath), "/tmp/test_leader_log.XXXXXX");
	fx->logfd = mkstemp(fx->logpath);
	assert_true(fx->logfd >= 0);
	log_set_fd(fx->logfd);
	fx->fake = fake_http_start();
	atomic_init(&fx->now, T0);
	buf_init(&fx->err, 0);
	fx->kc = new_kube(fx, 1);
	fx->l = new_leader(fx, 15 * S, 1);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	leader_free(fx->l);
	kube_client_free(fx->kc);
	fake_http_stop(fx->fake);
	buf_release(&fx->err);
	log_set_fd(2);
	close(fx->logfd);
	unlink(fx->logpath);
	free(fx);
	return 0;
}

/* Everything logged so far (at most 16 KiB); a static buffer, valid until the next call. */
static const char *logged(struct fixture *fx)
{
	static char text[16384];
	ssize_t n = pread(fx->logfd, text, sizeof(text) - 1, 0);

	assert_true(n >= 0);
	text[n] = '\0';
	return text;
}

/*
 * A Lease as JSON into out (n bytes), times as MicroTime: metadata.resourceVersion rv and
 * spec.holderIdentity holder, each left out when NULL.
 */
static const char *lease_json(char *out, size_t n, const char *rv, const char *holder,
			      int64_t duration_s, int64_t acquire_ms, int64_t renew_ms,
			      int64_t transitions)
{
	char a[48], r[48], h[128] = "", v[128] = "";

	rfc3339_format_us(acquire_ms, a);
	rfc3339_format_us(renew_ms, r);
	if (rv)
		snprintf(v, sizeof(v), ",\"resourceVersion\":\"%s\"", rv);
	if (holder)
		snprintf(h, sizeof(h), "\"holderIdentity\":\"%s\",", holder);
	snprintf(out, n,
		 "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":"
		 "{\"name\":\"alertbridge\",\"namespace\":\"alertbridge\"%s},\"spec\":{"
		 "%s\"leaseDurationSeconds\":%lld,\"acquireTime\":\"%s\","
		 "\"renewTime\":\"%s\",\"leaseTransitions\":%lld}}",
		 v, h, (long long)duration_s, a, r, (long long)transitions);
	return out;
}

/* A Lease as the API server answers it (a static buffer, valid until the next call). */
static const char *lease_answer(const char *rv, const char *holder, int64_t duration_s,
				int64_t acquire_ms, int64_t renew_ms, int64_t transitions)
{
	static char text[1024];

	return lease_json(text, sizeof(text), rv, holder, duration_s, acquire_ms, renew_ms,
			  transitions);
}

/*
 * The request body we expect: resourceVersion omitted when rv is NULL (a static buffer of
 * its own, valid until the next call).
 */
static const char *lease_body(const char *rv, const char *holder, int64_t duration_s,
			      int64_t acquire_ms, int64_t renew_ms, int64_t transitions)
{
	static char text[1024];

	return lease_json(text, sizeof(text), rv, holder, duration_s, acquire_ms, renew_ms,
			  transitions);
}

/* Request i was method uri, with the bearer token, and (when want_body) this JSON body. */
static void req_is(struct fixture *fx, size_t i, const char *method, const char *uri,
		   const char *want_body)
{
	const struct fake_request *r = fake_http_request(fx->fake, i);
	json_t *a, *b;

	assert_non_null(r);
	assert_string_equal(r->method, method);
	assert_string_equal(r->uri, uri);
	assert_string_equal(fake_request_header(r, "authorization"), "Bearer t0k3n");
	if (!want_body) {
		assert_int_equal(r->body_len, 0);
		return;
	}
	assert_string_equal(fake_request_header(r, "content-type"), "application/json");
	a = json_loads(r->body, 0, NULL);
	b = json_loads(want_body, 0, NULL);
	assert_non_null(b);
	if (!a || !json_equal(a, b))
		fail_msg("request %zu body %s\n  want %s", i, r->body, want_body);
	json_decref(a);
	json_decref(b);
}

static enum err step(struct fixture *fx)
{
	buf_reset(&fx->err);
	return leader_step(fx->l, &fx->err);
}

/* Queue the answers of a create of pod-a's Lease at t ms: GET 404, POST 201 with rv "1". */
static void push_create(struct fixture *fx, int64_t t)
{
	fake_http_push(fx->fake, 404, NULL, STATUS_404);
	fake_http_push(fx->fake, 201, NULL, lease_answer("1", "pod-a", 15, t, t, 0));
}

/* Make fx->l leader by creating the Lease at the current time; the answer has rv "1". */
static void lead_by_create(struct fixture *fx)
{
	push_create(fx, v_now(fx));
	assert_int_equal(step(fx), ERR_OK);
	assert_true(leader_is_leader(fx->l));
}

/* leader_stop(); then the API saw requests requests in all, and the events are events. */
static void stop_sends(struct fixture *fx, size_t requests, const char *events)
{
	leader_stop(fx->l);
	assert_int_equal(fake_http_count(fx->fake), requests);
	assert_string_equal(fx->events, events);
}

/* fx->l led once and stepped down, and was no longer leader inside on_stop_leading. */
static void stepped_down(struct fixture *fx)
{
	assert_string_equal(fx->events, "+-");
	assert_false(fx->leading_in_stop);
}

/* ---- tests ---- */

static void derived_intervals_follow_client_go(void **state)
{
	struct fixture *fx = *state;
	struct leader *l;

	assert_int_equal(leader_renew_deadline_ms(fx->l), 10 * S);
	assert_int_equal(leader_retry_period_ms(fx->l), 2 * S);
	l = new_leader(fx, 0, 1); /* default */
	assert_int_equal(leader_renew_deadline_ms(l), 10 * S);
	assert_int_equal(leader_retry_period_ms(l), 2 * S);
	leader_free(l);
	l = new_leader(fx, 30 * S + 999, 1); /* whole seconds */
	assert_int_equal(leader_renew_deadline_ms(l), 20 * S);
	assert_int_equal(leader_retry_period_ms(l), 4 * S);
	leader_free(l);
	l = new_leader(fx, 500, 1); /* at least a second */
	assert_int_equal(leader_renew_deadline_ms(l), 666);
	assert_int_equal(leader_retry_period_ms(l), 133);
	leader_free(l);
	assert_false(leader_is_leader(fx->l));
	assert_int_equal(fake_http_count(fx->fake), 0);
	leader_free(NULL);
	leader_stop(NULL);
}

static void creates_lease_when_absent(void **state)
{
	struct fixture *fx = *state;
	const char *log;

	lead_by_create(fx);
	assert_int_equal(fake_http_count(fx->fake), 2);
	req_is(fx, 0, "GET", LEASE_PATH, NULL);
	req_is(fx, 1, "POST", LEASES_PATH, lease_body(NULL, "pod-a", 15, T0, T0, 0));
	assert_string_equal(fx->events, "+");
	log = logged(fx);
	assert_non_null(strstr(log, "level=info msg=\"became leader\" identity=pod-a "
				    "lease=alertbridge/alertbridge transitions=0\n"));
}

static void create_lost_to_another_replica_is_conflict(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 404, NULL, STATUS_404);
	fake_http_push(fx->fake, 409, NULL, "{\"kind\":\"Status\",\"reason\":\"AlreadyExists\","
					    "\"message\":\"leases \\\"alertbridge\\\" already "
					    "exists\",\"code\":409}");
	assert_int_equal(step(fx), ERR_CONFLICT);
	assert_string_equal(buf_str(&fx->err), "POST " LEASES_PATH ": 409 AlreadyExists: leases "
						"\"alertbridge\" already exists");
	assert_false(leader_is_leader(fx->l));
	assert_string_equal(fx->events, "");
}

static void takes_expired_lease_of_another(void **state)
{
	struct fixture *fx = *state;
	/* pod-b's clock is an hour ahead: its renewTime is in our future, and must not matter. */
	const char *b = lease_answer("7", "pod-b", 15, T0 - 3600 * S, T0 + 3600 * S, 3);

	fake_http_push(fx->fake, 200, NULL, b);
	assert_int_equal(step(fx), ERR_CONFLICT);
	assert_string_equal(buf_str(&fx->err), "lease alertbridge/alertbridge is held by pod-b");
	assert_false(leader_is_leader(fx->l));
	assert_non_null(strstr(logged(fx), "msg=\"lease holder observed\" holder=pod-b "
					   "identity=pod-a lease=alertbridge/alertbridge\n"));

	/* Unchanged for 15 s by our clock: expired, whatever its timestamps say. */
	advance(fx, 15 * S);
	fake_http_push(fx->fake, 200, NULL, b);
	fake_http_push(fx->fake, 200, NULL, lease_answer("8", "pod-a", 15, T0 + 15 * S,
							 T0 + 15 * S, 4));
	assert_int_equal(step(fx), ERR_OK);
	assert_true(leader_is_leader(fx->l));
	assert_int_equal(fake_http_count(fx->fake), 3);
	req_is(fx, 0, "GET", LEASE_PATH, NULL);
	req_is(fx, 1, "GET", LEASE_PATH, NULL);
	req_is(fx, 2, "PUT", LEASE_PATH, lease_body("7", "pod-a", 15, T0 + 15 * S, T0 + 15 * S, 4));
	assert_string_equal(fx->events, "+");
	assert_non_null(strstr(logged(fx), "msg=\"became leader\" identity=pod-a "
					   "lease=alertbridge/alertbridge transitions=4\n"));
}

static void follower_while_lease_is_renewed(void **state)
{
	struct fixture *fx = *state;

	/* Seen first at T0. */
	fake_http_push(fx->fake, 200, NULL, lease_answer("7", "pod-b", 15, T0, T0, 0));
	assert_int_equal(step(fx), ERR_CONFLICT);
	/* Renewed by pod-b (new resourceVersion): seen changing at T0 + 10 s. */
	advance(fx, 10 * S);
	fake_http_push(fx->fake, 200, NULL, lease_answer("9", "pod-b", 15, T0, T0 + 10 * S, 0));
	assert_int_equal(step(fx), ERR_CONFLICT);
	/* T0 + 24.999 s: still valid, 15 s after the change have not passed. */
	advance(fx, 14999);
	fake_http_push(fx->fake, 200, NULL, lease_answer("9", "pod-b", 15, T0, T0 + 10 * S, 0));
	assert_int_equal(step(fx), ERR_CONFLICT);
	assert_string_equal(buf_str(&fx->err), "lease alertbridge/alertbridge is held by pod-b");
	assert_false(leader_is_leader(fx->l));
	assert_int_equal(fake_http_count(fx->fake), 3);
	/* T0 + 25 s: expired. */
	advance(fx, 1);
	fake_http_push(fx->fake, 200, NULL, lease_answer("9", "pod-b", 15, T0, T0 + 10 * S, 0));
	fake_http_push(fx->fake, 200, NULL, lease_answer("10", "pod-a", 15, T0 + 25 * S,
							 T0 + 25 * S, 1));
	assert_int_equal(step(fx), ERR_OK);
	req_is(fx, 4, "PUT", LEASE_PATH, lease_body("9", "pod-a", 15, T0 + 25 * S, T0 + 25 * S, 1));
	assert_string_equal(fx->events, "+");
}

static void free_lease_is_taken_at_once(void **state)
{
	struct fixture *fx = *state;

	/* Released by pod-b (client-go ReleaseOnCancel): holderIdentity "". */
	fake_http_push(fx->fake, 200, NULL, lease_answer("7", "", 1, T0, T0, 5));
	fake_http_push(fx->fake, 200, NULL, lease_answer("8", "pod-a", 15, T0, T0, 6));
	assert_int_equal(step(fx), ERR_OK);
	req_is(fx, 1, "PUT", LEASE_PATH, lease_body("7", "pod-a", 15, T0, T0, 6));
	assert_true(leader_is_leader(fx->l));
}

static void own_lease_after_restart_is_renewed(void **state)
{
	struct fixture *fx = *state;

	/* A restart with the same identity: acquireTime and transitions are kept. */
	fake_http_push(fx->fake, 200, NULL, lease_answer("7", "pod-a", 15, T0 - 60 * S,
							 T0 - 2 * S, 2));
	fake_http_push(fx->fake, 200, NULL, lease_answer("8", "pod-a", 15, T0 - 60 * S, T0, 2));
	assert_int_equal(step(fx), ERR_OK);
	req_is(fx, 1, "PUT", LEASE_PATH, lease_body("7", "pod-a", 15, T0 - 60 * S, T0, 2));
	assert_string_equal(fx->events, "+");
}

static void renew_keeps_leadership(void **state)
{
	struct fixture *fx = *state;

	lead_by_create(fx);
	for (int i = 1; i <= 3; i++) {
		advance(fx, 2 * S);
		fake_http_push(fx->fake, 200, NULL,
			       lease_answer(i == 1 ? "2" : i == 2 ? "3" : "4", "pod-a", 15, T0,
					    T0 + i * 2 * S, 0));
		assert_int_equal(step(fx), ERR_OK);
		assert_true(leader_is_leader(fx->l));
	}
	/* The fast path: a PUT on the last resourceVersion, no GET; acquireTime kept. */
	assert_int_equal(fake_http_count(fx->fake), 5);
	req_is(fx, 2, "PUT", LEASE_PATH, lease_body("1", "pod-a", 15, T0, T0 + 2 * S, 0));
	req_is(fx, 3, "PUT", LEASE_PATH, lease_body("2", "pod-a", 15, T0, T0 + 4 * S, 0));
	req_is(fx, 4, "PUT", LEASE_PATH, lease_body("3", "pod-a", 15, T0, T0 + 6 * S, 0));
	assert_string_equal(fx->events, "+");
	/* is_leader judges by the clock: 10 s after the last renewal it is false. */
	advance(fx, 9999);
	assert_true(leader_is_leader(fx->l));
	advance(fx, 1);
	assert_false(leader_is_leader(fx->l));
}

static void stale_resource_version_falls_back_to_get(void **state)
{
	struct fixture *fx = *state;

	lead_by_create(fx);
	/* Someone edited the Lease (a label): the fast PUT is refused, the read shows it ours. */
	advance(fx, 2 * S);
	fake_http_push(fx->fake, 409, NULL, STATUS_409);
	fake_http_push(fx->fake, 200, NULL, lease_answer("5", "pod-a", 15, T0, T0, 0));
	fake_http_push(fx->fake, 200, NULL, lease_answer("6", "pod-a", 15, T0, T0 + 2 * S, 0));
	assert_int_equal(step(fx), ERR_OK);
	req_is(fx, 2, "PUT", LEASE_PATH, lease_body("1", "pod-a", 15, T0, T0 + 2 * S, 0));
	req_is(fx, 3, "GET", LEASE_PATH, NULL);
	req_is(fx, 4, "PUT", LEASE_PATH, lease_body("5", "pod-a", 15, T0, T0 + 2 * S, 0));
	assert_true(leader_is_leader(fx->l));
	assert_string_equal(fx->events, "+");
}

static void conflict_on_take_over_stays_follower(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 200, NULL, lease_answer("7", "pod-b", 15, T0, T0, 0));
	assert_int_equal(step(fx), ERR_CONFLICT);
	advance(fx, 16 * S);
	fake_http_push(fx->fake, 200, NULL, lease_answer("7", "pod-b", 15, T0, T0, 0));
	fake_http_push(fx->fake, 409, NULL, STATUS_409);
	assert_int_equal(step(fx), ERR_CONFLICT);
	assert_string_equal(buf_str(&fx->err), "PUT " LEASE_PATH ": 409 Conflict: the object has "
						"been modified");
	req_is(fx, 2, "PUT", LEASE_PATH, lease_body("7", "pod-a", 15, T0 + 16 * S, T0 + 16 * S, 1));
	assert_false(leader_is_leader(fx->l));
	assert_string_equal(fx->events, "");
}

/*
 * A step of the leader that finds pod-b has taken the Lease (rv "9", since T0 + 1 s): the
 * fast PUT is refused, the GET shows pod-b; fails unless the step is ERR_CONFLICT.
 */
static void lose_to_pod_b(struct fixture *fx)
{
	fake_http_push(fx->fake, 409, NULL, STATUS_409);
	fake_http_push(fx->fake, 200, NULL, lease_answer("9", "pod-b", 15, T0 + S, T0 + S, 1));
	assert_int_equal(step(fx), ERR_CONFLICT);
}

/* Fail unless m exposes alertbridge_leader_election_is_leader as want. */
static void gauge_is(struct metrics *m, int want)
{
	struct buf text = BUF_INIT;
	char line[64];

	snprintf(line, sizeof(line), "\nalertbridge_leader_election_is_leader %d\n", want);
	metrics_render(m, &text);
	assert_non_null(strstr(buf_str(&text), line));
	buf_release(&text);
}

/* The gauge the AlertbridgeNoLeader alert sums over the replicas: 0, 1 leading, 0 again. */
static void is_leader_gauge_follows_leadership(void **state)
{
	struct fixture *fx = *state;
	struct leader_options o = { 0 };
	struct metrics *m = metrics_new();
	int64_t t = v_now(fx);

	leader_opts(fx, &o, 1);
	o.metrics = m;
	leader_free(fx->l);
	fx->l = leader_new(&o);
	gauge_is(m, 0);
	push_create(fx, t);
	assert_int_equal(step(fx), ERR_OK);
	gauge_is(m, 1);
	advance(fx, 2 * S);
	lose_to_pod_b(fx);
	gauge_is(m, 0);
	leader_free(fx->l);
	fx->l = NULL;
	metrics_free(m);
}

static void leader_steps_down_when_another_holds_it(void **state)
{
	struct fixture *fx = *state;

	lead_by_create(fx);
	advance(fx, 2 * S);
	lose_to_pod_b(fx);
	assert_string_equal(buf_str(&fx->err), "lease alertbridge/alertbridge is held by pod-b");
	assert_false(leader_is_leader(fx->l));
	stepped_down(fx);
	assert_non_null(strstr(logged(fx),
			       "level=info msg=\"lost leadership\" err=conflict identity=pod-a "
			       "lease=alertbridge/alertbridge reason=\"lease taken by another\" "
			       "detail=\"lease alertbridge/alertbridge is held by pod-b\"\n"));
	/* It is not ours: stopping releases nothing. */
	stop_sends(fx, 4, "+-");
}

static void renew_failures_past_deadline_step_down(void **state)
{
	struct fixture *fx = *state;

	lead_by_create(fx);
	/* T0 + 2, 4, 6, 8 s: the fast PUT and the GET fail; still leader. */
	for (int i = 1; i <= 4; i++) {
		advance(fx, 2 * S);
		fake_http_push(fx->fake, 500, NULL, STATUS_500);
		fake_http_push(fx->fake, 500, NULL, STATUS_500);
		assert_int_equal(step(fx), ERR_RETRY);
		assert_string_equal(buf_str(&fx->err),
				    "GET " LEASE_PATH ": 500 InternalError: etcd down");
		assert_true(leader_is_leader(fx->l));
		assert_string_equal(fx->events, "+");
	}
	/* T0 + 10 s: the deadline has passed before the step begins: down before any request. */
	advance(fx, 2 * S);
	assert_false(leader_is_leader(fx->l));
	fake_http_push(fx->fake, 500, NULL, STATUS_500);
	fake_http_push(fx->fake, 500, NULL, STATUS_500);
	assert_int_equal(step(fx), ERR_RETRY);
	stepped_down(fx);
	assert_false(leader_is_leader(fx->l));
	assert_int_equal(fake_http_count(fx->fake), 12);
	assert_non_null(strstr(logged(fx), "msg=\"lost leadership\" identity=pod-a "
					   "lease=alertbridge/alertbridge reason=\"renew deadline "
					   "passed\"\n"));
	/* Back as a candidate: the Lease still names us and is valid, so it is renewed. */
	advance(fx, 2 * S);
	fake_http_push(fx->fake, 200, NULL, lease_answer("2", "pod-a", 15, T0, T0 + 12 * S, 0));
	assert_int_equal(step(fx), ERR_OK);
	req_is(fx, 12, "PUT", LEASE_PATH, lease_body("1", "pod-a", 15, T0, T0 + 12 * S, 0));
	assert_string_equal(fx->events, "+-+");
}

static void slow_failed_renew_steps_down_when_it_ends(void **state)
{
	struct fixture *fx = *state;

	lead_by_create(fx);
	/* T0 + 8 s: a 503 with Retry-After: 3 is waited out (virtual time) and fails again. */
	advance(fx, 8 * S);
	fake_http_push(fx->fake, 503, "Retry-After: 3", STATUS_500);
	fake_http_push(fx->fake, 500, NULL, STATUS_500);
	fake_http_push(fx->fake, 500, NULL, STATUS_500);
	assert_int_equal(step(fx), ERR_RETRY);
	assert_int_equal(v_now(fx), T0 + 11 * S);
	assert_string_equal(fx->events, "+-");
	assert_false(leader_is_leader(fx->l));
	assert_non_null(strstr(logged(fx),
			       "msg=\"lost leadership\" err=retry identity=pod-a "
			       "lease=alertbridge/alertbridge reason=\"renew deadline passed\" "
			       "detail=\"GET " LEASE_PATH ": 500 InternalError: etcd down\"\n"));
}

static void other_errors_are_passed_through(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 403, NULL, "{\"kind\":\"Status\",\"reason\":\"Forbidden\","
					    "\"message\":\"leases is forbidden\",\"code\":403}");
	assert_int_equal(step(fx), ERR_AUTH);
	assert_string_equal(buf_str(&fx->err),
			    "GET " LEASE_PATH ": 403 Forbidden: leases is forbidden");
	fake_http_push(fx->fake, 200, NULL, "{\"metadata\":{\"name\":\"alertbridge\"}}");
	assert_int_equal(step(fx), ERR_INVALID);
	assert_non_null(strstr(buf_str(&fx->err), "invalid lease: no metadata.name or "
						  "resourceVersion"));
	/* errmsg may be NULL. */
	fake_http_push(fx->fake, 500, NULL, STATUS_500);
	assert_int_equal(leader_step(fx->l, NULL), ERR_RETRY);
	assert_false(leader_is_leader(fx->l));
	assert_string_equal(fx->events, "");
	assert_int_equal(fake_http_count(fx->fake), 3);
}

static void stop_releases_the_lease(void **state)
{
	struct fixture *fx = *state;

	lead_by_create(fx);
	advance(fx, 3 * S);
	fake_http_push(fx->fake, 200, NULL, lease_answer("2", "", 1, T0 + 3 * S, T0 + 3 * S, 0));
	leader_stop(fx->l);
	assert_false(leader_is_leader(fx->l));
	stepped_down(fx);
	assert_int_equal(fake_http_count(fx->fake), 3);
	req_is(fx, 2, "PUT", LEASE_PATH, lease_body("1", "", 1, T0 + 3 * S, T0 + 3 * S, 0));
	assert_non_null(strstr(logged(fx), "msg=\"lease released\" identity=pod-a "
					   "lease=alertbridge/alertbridge\n"));
	/* A second stop (and free) does nothing more. */
	stop_sends(fx, 3, "+-");
}

static void failed_release_is_logged(void **state)
{
	struct fixture *fx = *state;

	lead_by_create(fx);
	fake_http_push(fx->fake, 500, NULL, STATUS_500);
	leader_stop(fx->l);
	assert_string_equal(fx->events, "+-");
	assert_non_null(strstr(logged(fx),
			       "level=warn msg=\"lease release failed\" err=retry identity=pod-a "
			       "lease=alertbridge/alertbridge detail=\"PUT " LEASE_PATH
			       ": 500 InternalError: etcd down\"\n"));
	leader_stop(fx->l);
	assert_int_equal(fake_http_count(fx->fake), 3);
}

static void follower_stop_sends_nothing(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 200, NULL, lease_answer("7", "pod-b", 15, T0, T0, 0));
	assert_int_equal(step(fx), ERR_CONFLICT);
	stop_sends(fx, 1, "");
}

/* The leader's own thread, real clock: it steps at once, then waits 2 s; stop interrupts. */
static void thread_leads_and_releases_on_stop(void **state)
{
	struct fixture *fx = *state;
	struct leader *l;
	const struct fake_request *r;
	struct timespec t0, t1;
	json_t *body;
	int i;

	leader_free(fx->l);
	kube_client_free(fx->kc);
	fx->kc = new_kube(fx, 0);
	fx->l = l = new_leader(fx, 15 * S, 0);
	push_create(fx, T0);
	assert_int_equal(leader_start(l), ERR_OK);
	for (i = 0; i < 300 && !leader_is_leader(l); i++)
		usleep(10000);
	assert_true(leader_is_leader(l));
	assert_int_equal(fake_http_count(fx->fake), 2);

	fake_http_push(fx->fake, 200, NULL, lease_answer("2", "", 1, T0, T0, 0));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	leader_stop(l);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* Well under the 2 s retry period: the pause was interrupted. */
	assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 1500);
	assert_false(leader_is_leader(l));
	assert_string_equal(fx->events, "+-");
	assert_int_equal(fake_http_count(fx->fake), 3);
	r = fake_http_request(fx->fake, 2);
	assert_string_equal(r->method, "PUT");
	assert_string_equal(r->uri, LEASE_PATH);
	body = json_loads(r->body, 0, NULL);
	assert_non_null(body);
	assert_string_equal(json_string_value(json_object_get(json_object_get(body, "metadata"),
							       "resourceVersion")), "1");
	assert_string_equal(json_string_value(json_object_get(json_object_get(body, "spec"),
							       "holderIdentity")), "");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(body, "spec"),
							    "leaseDurationSeconds")), 1);
	json_decref(body);
}

/*
 * Readers poll leader_is_leader() while this thread steps through lead, renew and
 * lose.  seq is odd while a step runs; between steps expect holds the settled answer, which a
 * reader must then see.
 */
struct shared {
	struct fixture *fx;
	atomic_int done;
	atomic_long seq;
	atomic_int expect;
	atomic_long checks;  /* settled reads, of all readers */
};

struct reader {
	struct shared *sh;
	long checked;
	long wrong;
};

static void *read_leader(void *arg)
{
	struct reader *rd = arg;
	struct shared *sh = rd->sh;

	/* Bounded: at most 20 million reads, or until the stepping is done. */
	for (long i = 0; i < 20000000 && !atomic_load(&sh->done); i++) {
		long s1 = atomic_load(&sh->seq);
		int e = atomic_load(&sh->expect);
		int v = leader_is_leader(sh->fx->l);
		long s2 = atomic_load(&sh->seq);

		if (s1 != s2 || (s1 & 1))
			continue;
		rd->checked++;
		atomic_fetch_add(&sh->checks, 1);
		if (v != e)
			rd->wrong++;
	}
	return NULL;
}

static void settled_step(struct shared *sh, enum err want, int leading)
{
	atomic_fetch_add(&sh->seq, 1);
	assert_int_equal(step(sh->fx), want);
	atomic_store(&sh->expect, leading);
	atomic_fetch_add(&sh->seq, 1);
}

static void is_leader_is_safe_from_other_threads(void **state)
{
	struct fixture *fx = *state;
	struct shared sh;
	struct reader rd[4];
	pthread_t th[4];
	long checked = 0;

	sh.fx = fx;
	atomic_init(&sh.done, 0);
	atomic_init(&sh.seq, 0);
	atomic_init(&sh.expect, 0);
	atomic_init(&sh.checks, 0);
	for (int i = 0; i < 4; i++) {
		memset(&rd[i], 0, sizeof(rd[i]));
		rd[i].sh = &sh;
		assert_int_equal(pthread_create(&th[i], NULL, read_leader, &rd[i]), 0);
	}
	/* 20 rounds: lead (create), renew, lose it to pod-b, wait for its lease to expire. */
	for (int round = 0; round < 20; round++) {
		int64_t t = v_now(fx);

		push_create(fx, t);
		settled_step(&sh, ERR_OK, 1);
		advance(fx, 2 * S);
		fake_http_push(fx->fake, 200, NULL,
			       lease_answer("2", "pod-a", 15, t, t + 2 * S, 0));
		settled_step(&sh, ERR_OK, 1);
		advance(fx, 2 * S);
		fake_http_push(fx->fake, 409, NULL, STATUS_409);
		fake_http_push(fx->fake, 200, NULL, lease_answer("3", "pod-b", 15, t, t, 1));
		settled_step(&sh, ERR_CONFLICT, 0);
		advance(fx, 16 * S);
	}
	/*
	 * On a loaded machine the readers may not have run during the rounds:
	 * give them up to 5 s of the last settled state, so the test is never
	 * vacuous (checked > 0 below) because of scheduling alone.
	 */
	for (int i = 0; i < 500 && atomic_load(&sh.checks) == 0; i++)
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	atomic_store(&sh.done, 1);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(rd[i].wrong, 0);
		checked += rd[i].checked;
	}
	assert_true(checked > 0);
	assert_int_equal(fake_http_count(fx->fake), 100);
	assert_string_equal(fx->events, "+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-");
	assert_false(leader_is_leader(fx->l));
}

/* A test of this file, between setup() and teardown(). */
#define T(test) cmocka_unit_test_setup_teardown(test, setup, teardown)

UNIT_MAIN(
	T(derived_intervals_follow_client_go),
	T(creates_lease_when_absent),
	T(create_lost_to_another_replica_is_conflict),
	T(takes_expired_lease_of_another),
	T(follower_while_lease_is_renewed),
	T(free_lease_is_taken_at_once),
	T(own_lease_after_restart_is_renewed),
	T(renew_keeps_leadership),
	T(stale_resource_version_falls_back_to_get),
	T(conflict_on_take_over_stays_follower),
	T(is_leader_gauge_follows_leadership),
	T(leader_steps_down_when_another_holds_it),
	T(renew_failures_past_deadline_step_down),
	T(slow_failed_renew_steps_down_when_it_ends),
	T(other_errors_are_passed_through),
	T(stop_releases_the_lease),
	T(failed_release_is_logged),
	T(follower_stop_sends_nothing),
	T(thread_leads_and_releases_on_stop),
	T(is_leader_is_safe_from_other_threads))
