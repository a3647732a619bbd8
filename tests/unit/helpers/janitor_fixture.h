/*
 * janitor_fixture.h - fixtures of the janitor's unit tests (test_janitor*.c):
 * struct env (a janitor on two fake_http servers, the Kubernetes API and
 * Slack, and an in-memory store, in virtual time from T0), canned pods and
 * alerts, and checks of the requests made.  Failures end the test (cmocka).
 */
#ifndef AB_TEST_JANITOR_FIXTURE_H
#define AB_TEST_JANITOR_FIXTURE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"
#include "core/metrics.h"
#include "store/store.h"
#include "store/store_outbox.h"
#include "janitor/janitor.h"
#include "tests/unit/helpers/fake_http.h"

#define T0 INT64_C(1794960000000) /* 2026-11-18T00:00:00Z */
#define MIN (60 * 1000LL)
#define HOUR (60 * MIN)
#define POD_PATH "/api/v1/namespaces/ml-team/pods/train-1"
#define LIST_PATH "/api/v1/pods?limit=500"
#define EVENTS_PATH "/api/v1/namespaces/ml-team/events"
#define OK_POST "{\"ok\":true,\"channel\":\"C0GPU\",\"ts\":\"1794960000.000100\"}"
#define MARKED_BY_US                                                                   \
	"\"janitor/expires\":\"2026-11-19T00:00:00Z\","                                \
	"\"janitor/marked-expires\":\"2026-11-19T00:00:00Z\","                         \
	"\"janitor/marked-at\":\"2026-11-18T00:00:00Z\","                              \
	"\"janitor/reason\":\"JanitorIdleGPUPod\""

struct env {
	struct fake_http *kube, *slack;
	struct config *cfg;
	struct store *st;
	struct metrics *metrics;
	struct kube_client *kc;
	struct slack_client *sc;
	struct janitor *j;
	int64_t now;
	struct buf rows;  /* "ns/pod=action;" per plan row */
	FILE *log;
	int leading;          /* what is_leader answers (env_opts.leader_hook) */
	size_t lose_after;    /* >0: is_leader turns 0 once the kube fake saw this many requests */
};

/* What a test changes of the environment; zero fields keep the defaults. */
struct env_opts {
	int leader_hook;         /* give the janitor is_leader() (env.leading) */
	int64_t kube_timeout_ms; /* real time: 0 means 5000 */
	int64_t slack_timeout_ms;
	int slack_attempts;      /* 0 means 1 */
	struct reload *reload;   /* janitor_options.reload */
	int64_t batch_window_ms; /* janitor.notice_batch_window (0: 0s) */
	unsigned max_deletions;  /* janitor.max_deletions_per_sweep; 0 means 2 */
	const char *store_target; /* the store (a file: sfx_sql_exec() may change it); NULL: memory */
};

/* The annotations of a pod of a JanitorPodPendingTooLong mark, due, notified at notified. */
#define DUE_ANN(notified)                                                             \
	"\"janitor/expires\":\"2026-11-17T23:59:00Z\",\"janitor/marked-at\":"          \
	"\"2026-11-16T23:59:00Z\",\"janitor/reason\":\"JanitorPodPendingTooLong\","   \
	"\"janitor/notified-at\":\"" notified "\""

/* The virtual clock of the env ctx, in ms. */
int64_t jfx_v_now(void *ctx);
/* Advance the virtual clock of the env ctx by ms. */
void jfx_v_sleep(void *ctx, int64_t ms);
/* How many requests f received with method. */
size_t jfx_count_method(struct fake_http *f, const char *method);
/* Build e: fakes, config (dry_run or not), store, clients and janitor, as o changes them. */
void jfx_env_start_with(struct env *e, int dry_run, const struct env_opts *o);
/*
 * Fill jo with what every janitor of e has: e's config, store, Kubernetes and Slack clients
 * and virtual clock (the other fields stay as they are).
 */
void jfx_janitor_options(struct env *e, struct janitor_options *jo);
/* jfx_env_start_with() with the default options. */
void jfx_env_start(struct env *e, int dry_run);
/* Free everything of e and give the log back to stderr. */
void jfx_env_stop(struct env *e);
/*
 * Per-test setup and teardown (cmocka): jfx_setup() makes *state a struct env (heap)
 * started with jfx_env_start_with(e, 0, opts), opts being what *state held on entry (the
 * test's initial state: a const struct env_opts *, or NULL for the defaults), and
 * jfx_teardown() stops it with jfx_env_stop() and frees it.
 */
int jfx_setup(void **state);
int jfx_teardown(void **state);

/* A test between jfx_setup() and jfx_teardown(), in the default environment. */
#define JFX_TEST(test) cmocka_unit_test_setup_teardown(test, jfx_setup, jfx_teardown)
/* The same in the environment opts (a pointer to a static const struct env_opts) makes. */
#define JFX_TEST_WITH(test, opts) \
	cmocka_unit_test_prestate_setup_teardown(test, jfx_setup, jfx_teardown, (void *)(opts))
/* What was logged since jfx_env_start() (a static buffer, valid until the next call). */
char *jfx_read_log(struct env *e);
/* Fail unless hay (may be NULL) contains needle. */
void jfx_assert_contains(const char *hay, const char *needle);
/* A pod object of ml-team (malloc'd): annotations is the inside of the JSON object. */
char *jfx_pod_json(const char *name, const char *uid, const char *annotations,
		   const char *owner_kind, const char *owner_name);
/* Queue a 200 answer of pod name/uid with annotations on f. */
void jfx_push_pod(struct fake_http *f, const char *name, const char *uid,
		  const char *annotations);
/* Queue a metadata-only list page of n pods (each a jfx_pod_json() string, consumed). */
void jfx_push_list(struct fake_http *f, char **pods, size_t n);
/* Queue a list page of the one pod name/uid with annotations ann. */
void jfx_push_one(struct fake_http *f, const char *name, const char *uid, const char *ann);
/* Queue one alert for pod ns/pod (uid may be NULL) as the intake would. */
void jfx_enqueue(struct env *e, const char *status, const char *alertname, const char *ns,
		 const char *pod, const char *uid);
/*
 * Point n's namespace, pod, uid and kind at "ml-team", pod, uid and kind (not copied: they
 * must outlive n's use); the other fields stay as they are.
 */
void jfx_notice_of(struct store_notice *n, const char *pod, const char *uid, const char *kind);
/* A notice of uid already delivered at sent_at_ms, as the outbox records it. */
void jfx_delivered_notice(struct env *e, const char *pod, const char *uid, int64_t expires_ms,
			  int64_t sent_at_ms);
/* The i-th request f received, failing unless it is method uri. */
const struct fake_request *jfx_req(struct fake_http *f, size_t i, const char *method,
				   const char *uri);
/* Fail unless the i-th request f received is the POST of an Event with this reason. */
void jfx_event_posted(struct fake_http *f, size_t i, const char *reason);
/* Fail unless r's body is the JSON want. */
void jfx_body_is(const struct fake_request *r, const char *want);
/* r's body parsed (json_decref() it); fails when it is not JSON. */
json_t *jfx_body_json(const struct fake_request *r);
/* Fail unless the requests from the first-th on were all reads. */
void jfx_no_mutation(struct fake_http *f, size_t first);
/* janitor_sweep() row callback: appends "ns/pod=action;" to the env ctx's rows. */
void jfx_collect_row(void *ctx, const struct janitor_plan_row *row);
/* Run one sweep of e, its rows collected in e->rows; fail unless it returns want. */
void jfx_sweep(struct env *e, enum err want);
/* Run one sweep of e that returns ERR_OK; fail unless its rows are want ("ns/pod=action;"...). */
void jfx_sweep_rows(struct env *e, const char *want);
/*
 * Mark ml-team/<pod> (uid) on a firing JanitorIdleGPUPod alert, as the worker does: queues
 * the alert, the pod before (no annotations) and after (MARKED_BY_US) and the Event's 201 on
 * the Kubernetes fake, then runs one worker step (fails unless it handled an event).  The
 * pod's notice is then pending in the outbox.
 */
void jfx_mark(struct env *e, const char *pod, const char *uid);
/*
 * The outbox delivers the pending notice of ml-team/train-1 (uid-1) and stamps the pod:
 * queues Slack's OK_POST and the marked pod twice (the stamp's GET and PATCH answers), then
 * runs one notice step (fails unless it handled a notice).
 */
void jfx_deliver(struct env *e);
/*
 * Fail unless the latest notice of uid-1 of kind ("cancelled", "deleted"...) is a reply in
 * the thread of the notice jfx_delivered_notice() recorded (thread_ts 1794950000.000100), in
 * channel (NULL: not checked), its text containing text.
 */
void jfx_reply_is(struct env *e, const char *kind, const char *channel, const char *text);
/* Fail unless the latest notice of uid of kind ("notice", "reminder"...) is in state want. */
void jfx_notice_state_is(struct env *e, const char *uid, const char *kind,
			 enum store_notice_state want);
/* The metrics as exposed (a static buffer, valid until the next call). */
const char *jfx_metrics_text(struct env *e);

#endif
