/*
 * bridge_fixture.h - fixtures of the reconciler's unit tests (test_bridge*.c):
 * struct env (a bridge on a fake_http GitHub and an in-memory store, in
 * virtual time from T0), alert events of the fingerprint FP queued as the
 * intake would, canned issues and checks of the requests made.  Failures end
 * the test (cmocka).
 */
#ifndef AB_TEST_BRIDGE_FIXTURE_H
#define AB_TEST_BRIDGE_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "bridge/bridge.h"
#include "bridge/render.h"
#include "core/config.h"
#include "store/store.h"
#include "tests/unit/helpers/fake_http.h"

#define T0 INT64_C(1795000000000) /* 2026-11-18T... UTC, the virtual clock's start */
#define FP "43257ea8bc3d7780"

struct env {
	struct fake_http *gh;
	struct config *cfg;
	struct store *st;
	struct render *render;
	struct bridge *b;
	int64_t now;
	int leading;       /* what may_act answers */
	size_t lose_after; /* >0: may_act turns 0 once GitHub saw this many requests */
	struct bridge_options bo; /* what b was made with */
	struct metrics *metrics;  /* bfx_setup's with_metrics: bo.metrics; bfx_teardown() frees */
};

/* An issue as GitHub answers it: number, state, state_reason and closed_at as JSON values. */
#define ISSUE_JSON(n, state, reason, closed)                                              \
	"{\"number\":" #n ",\"state\":\"" state "\",\"state_reason\":" reason                  \
	",\"closed_at\":" closed ",\"html_url\":\"https://github.com/my-org/alerts/issues/" #n \
	"\",\"repository_url\":\"https://api.github.com/repos/my-org/alerts\"}"

/* The virtual clock of the env ctx, in ms (bridge_options.now_ms). */
int64_t bfx_v_now(void *ctx);
/* Advance the virtual clock of the env ctx by ms (bridge_options.sleep_ms). */
void bfx_v_sleep(void *ctx, int64_t ms);
/*
 * Build e: the fake GitHub, a config with receiver "default" (repo
 * my-org/alerts) plus extra_github lines under github: and receiver_extra
 * lines under the receiver (either may be NULL), the store, the templates and
 * the bridge, in virtual time from T0.  scanned: record the repository as
 * already scanned for markers, so the test sees only the calls of its events
 * (the map rebuild has its own tests).
 */
void bfx_env_start_scan(struct env *e, const char *extra_github, const char *receiver_extra,
			int scanned);
/*
 * bfx_env_start() on the store at store_target (a file, so that another connection can
 * change it under the bridge: sfx_sql_exec()), the repository scanned.
 */
void bfx_env_start_store(struct env *e, const char *store_target);
/* bfx_env_start_scan() with the repository scanned. */
void bfx_env_start(struct env *e, const char *extra_github, const char *receiver_extra);
/*
 * A restart of the bridge of e (as a process restart: store and GitHub kept),
 * with github.dry_run set to dry_run.
 */
void bfx_bridge_restart(struct env *e, int dry_run);
/* Free everything of e and zero it; a zeroed (already stopped) e is left as it is. */
void bfx_env_stop(struct env *e);

/*
 * A test's setup, as a row of the cmocka test table: the config lines and whether the
 * repository counts as scanned (bfx_env_start_scan()).  A test without one gets none.
 */
struct bfx_setup {
	const char *extra_github;
	const char *receiver_extra;
	int unscanned;    /* 1: the repository is not scanned yet (the map rebuild runs) */
	int with_metrics; /* 1: the bridge counts into e->metrics (metrics_new()) */
};
/*
 * cmocka setup: *state (the row's prestate, a const struct bfx_setup *, or NULL for
 * bfx_env_start(e, NULL, NULL)) is replaced by a started struct env * that the test
 * owns until bfx_teardown() frees it; -1 when out of memory.
 */
int bfx_setup(void **state);
/*
 * cmocka teardown: bfx_env_stop() the env of *state (stopped already: nothing), then free
 * its metrics and it.
 */
int bfx_teardown(void **state);
/* A row of the test table: f(void **state) runs on a started env, *state, from setup s. */
#define BFX_TEST(f) cmocka_unit_test_setup_teardown(f, bfx_setup, bfx_teardown)
#define BFX_TEST_WITH(f, s) \
	cmocka_unit_test_prestate_setup_teardown(f, bfx_setup, bfx_teardown, (void *)(s))
/* Queue one alert event of FP with that severity label, as the intake would (RFC 3339 times). */
void bfx_enqueue_sev(struct env *e, const char *status, const char *starts, const char *ends,
		     const char *severity);
/* bfx_enqueue_sev() of the alert with fingerprint fp (16 hex digits) instead of FP. */
void bfx_enqueue_fp(struct env *e, const char *fp, const char *status, const char *starts,
		    const char *ends, const char *severity);
/*
 * Queue one bridge event of receiver "default" as the intake would: key (FP, or a group's
 * hash), status, the episode's times (ms UTC, ends 0: none) and payload, the event
 * document; received now.
 */
void bfx_enqueue_doc(struct env *e, const char *key, const char *status, int64_t starts_at_ms,
		     int64_t ends_at_ms, const char *payload);
/* bfx_enqueue_sev() with severity critical. */
void bfx_enqueue(struct env *e, const char *status, const char *starts, const char *ends);
/*
 * Fail unless the i-th request is method uri, with body_part in its body
 * (NULL: any body), and GitHub's authorization and API version headers.
 */
void bfx_assert_request(struct env *e, size_t i, const char *method, const char *uri,
			const char *body_part);
/*
 * The next step closes open issue n (GitHub answers the GET, the comment and
 * the PATCH, after `first` answers already pushed for calls before them).
 */
void bfx_step_closes(struct env *e, int n, size_t first);
/* The marker of the resolved comment of episode EP1 ended at 2026-11-21T01:00:00Z. */
#define RESOLVED_MARKER \
	"<!-- alertbridge:episode=2026-11-21T00:49:48.539Z event=resolved-1795222800000 -->"
/*
 * The next step resumes a resolve of FP whose comment on open issue 3 was in doubt: it
 * reads the issue, finds the RESOLVED_MARKER comment on it and only closes the issue
 * (three requests, from the count before it); then FP's row is closed, nothing pending.
 */
void bfx_step_finds_the_comment_and_closes(struct env *e);
/*
 * Write the progress note of the event due now (bfx_enqueue()d last), as a process killed
 * mid-transition leaves it (store_event_progress()); fails when no event is due.
 */
void bfx_note_progress(struct env *e, const char *progress);
/* FP's map row into *row (store_issue_release() it); fails when there is none. */
void bfx_get_row(struct env *e, struct store_issue *row);
/* Fail unless FP's map row is issue number (< 0: any) in state (NULL: any). */
void bfx_assert_row(struct env *e, int64_t number, const char *state);
/* FP's row as dry-run writes it (number 0, open), for the episode 2026-11-21T00:49:48.539Z. */
void bfx_put_dry_run_row(struct env *e);

/*
 * A scripted scenario, as a table (the shape of test_issue.c's): bfx_run() takes the steps
 * in order, each an event queued, an answer GitHub will give, the bridge stepped, the
 * clock moved or a check of what GitHub saw; a failed check names its step.
 */
enum bfx_op {
	BFX_FIRE,    /* queue FP firing since a, severity c (NULL: critical) */
	BFX_RESOLVE, /* queue FP resolved: the episode since a, ended at b */
	BFX_ANSWER,  /* GitHub's next answer: status n, body a */
	BFX_DROP,    /* GitHub's next answer: the connection drops once the request is read */
	BFX_STEP,    /* bridge_step() returns n */
	BFX_LATER,   /* the virtual clock moves n ms */
	BFX_CALLS,   /* GitHub has seen n requests */
	BFX_SAW,     /* request n was method b of uri a with c in its body (bfx_assert_request) */
	BFX_CLOSES,  /* the next step closes open issue n (bfx_step_closes, first 0) */
};
struct bfx_step {
	enum bfx_op op;
	int64_t n;
	const char *a, *b, *c;
};
#define EP1 "2026-11-21T00:49:48.539Z" /* the first episode's startsAt */
#define NO_END "0001-01-01T00:00:00Z"   /* endsAt of a firing alert */
#define FIRE(starts) { BFX_FIRE, 0, starts, NULL, NULL }
#define FIRE_SEV(starts, severity) { BFX_FIRE, 0, starts, NULL, severity }
#define RESOLVE(starts, ends) { BFX_RESOLVE, 0, starts, ends, NULL }
#define GH(status, body) { BFX_ANSWER, status, body, NULL, NULL }
#define GH_DROP { BFX_DROP, 0, NULL, NULL, NULL }
#define STEP(n) { BFX_STEP, n, NULL, NULL, NULL }
#define LATER(ms) { BFX_LATER, ms, NULL, NULL, NULL }
#define CALLS(n) { BFX_CALLS, n, NULL, NULL, NULL }
#define SAW(i, method, uri, part) { BFX_SAW, i, uri, method, part }
#define CLOSES(n) { BFX_CLOSES, n, NULL, NULL, NULL }
/* GitHub answers an open issue n (a create's 201, a read's 200). */
#define GH_OPEN(status, n) GH(status, ISSUE_JSON(n, "open", "null", "null"))
/* GitHub answers issue n closed as completed at closed_at. */
#define GH_CLOSED(n, closed_at) \
	GH(200, ISSUE_JSON(n, "closed", "\"completed\"", "\"" closed_at "\""))
/* The first episode fires and issue n is created for it: the opening of most scenarios. */
#define CREATES(n) FIRE(EP1), GH_OPEN(201, n), STEP(1)
/* Run the steps (a braced list) on e. */
#define BFX_RUN(e, ...)                                                     \
	do {                                                                \
		const struct bfx_step steps_[] = { __VA_ARGS__ };           \
		bfx_run(e, steps_, sizeof(steps_) / sizeof(steps_[0]));    \
	} while (0)
void bfx_run(struct env *e, const struct bfx_step *steps, size_t n);

#endif
