/*
 * webhook.c - POST /v1/webhook: authenticate, parse, route, queue, answer.
 *
 * One request is one unit of work: struct request owns everything the
 * handler allocates and request_release() frees it.  With issue_per: alert
 * each alert's event document is written into a scratch buffer, copied to
 * an allocation of its own, and the alert's part of the parsed JSON is
 * released (am_alert_release()): the JSON tree is about 4.4 times the body,
 * and the freed pieces serve the next documents, so a 10,000-alert, 10 MB
 * webhook peaks near body + tree (58 MB) instead of body + tree + documents
 * (76 MB).
 */
#include "bridge/webhook.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bridge/issue.h"
#include "bridge/webhook_cache.h"
#include "core/intake.h"
#include "core/log.h"
#include "core/xalloc.h"

#include "core/clock.h"
#include "store/store_events.h"
#include "core/banned.h"

struct webhook {
	const struct config *cfg;
	struct store *store;
	const struct auth *auth;
	struct reload *reload;
	struct am_options limits;
	size_t max_events_bytes;
	int64_t (*now_ms)(void *now_ctx);
	void *now_ctx;
	struct metric *requests;  /* {receiver, code} */
	struct metric *alerts;    /* {receiver, status} */
	struct metric *invalid;   /* {receiver, reason} */
	struct metric *repeated;  /* {receiver} */
	struct metric *cache_hits;  /* {receiver} */
	struct metric *truncated;  /* {receiver} */
	struct metric *duration;  /* seconds, no labels */
	struct webhook_cache *cache;  /* recent bodies (webhook_cache.h) */
	/* The config generation whose series exist at 0 (declare_series()). */
	pthread_mutex_t declared_mu;
	uint64_t declared_serial;
	int declared;
};

/* The state of one request, from the first check to the answer. */
struct request {
	const struct srv_request *req;
	const struct config *cfg;        /* the receivers of this request (webhook_options.reload) */
	uint64_t generation;             /* its reload generation's serial, 0 without reload */
	const struct auth *auth;         /* its credentials */
	struct am_payload *p;
	const struct cfg_receiver *rcv;  /* the receiver found, or NULL */
	const char *asked;               /* the receiver name looked up, or NULL */
	char asked_body[128];            /* the receiver a rejected payload named (am_error) */
	const char *query_repo;          /* ?repo= when non-empty, else NULL */
	struct intake_verdict v;         /* the HTTP status answered; a rejection's reason */
	struct buf detail;               /* store_enqueue()'s errmsg */
	char field[128];                 /* JSON path of the error, "" for none */
	struct buf docs;                 /* group: its event's payload; alert: scratch */
	char **owned;                    /* alert: n_owned strings the events point at */
	size_t n_owned;
	struct buf member;               /* scratch: the "repo" member of one document */
	struct buf dead_docs;            /* documents and reasons of the dead letters */
	struct store_event *evs;         /* n_evs events of the valid alerts, then n_dead dead ones */
	size_t n_evs;
	size_t n_dead;
	size_t n_repeated;               /* alerts whose event was a repeat, not stored */
	char group_state[65];            /* issue_per: group: the repeat_state of its event */
	struct webhook_cache_request seen;  /* what the cache knows the request by */
	struct webhook_cache_entry hit;  /* answered from the cache when hit.n_evs > 0 */
};

static const double DURATION_BUCKETS[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
					   0.1, 0.25, 0.5, 1, 2.5, 5, 10 };
#define N_DURATION_BUCKETS (sizeof(DURATION_BUCKETS) / sizeof(DURATION_BUCKETS[0]))

/* The codes of the answers with a receiver, and of those without (see webhook.h). */
static const char *const RECEIVER_CODES[] = { "200", "400", "413", "503", NULL };
static const char *const UNKNOWN_CODES[] = { "400", "401", "404", "413", "415", NULL };

/*
 * Create at 0 the series of cfg's receivers that are known in advance, so
 * that increase() sees their first increment (a series that first appears
 * at 1 has no increase: the first dead letter would go unnoticed).  Once per
 * config generation (serial: reload_gen.serial, 0 without reload); the
 * series of a receiver that is no longer configured stay, as counters do.
 */
static void declare_series(struct webhook *w, const struct config *cfg, uint64_t serial)
{
	static const char *const statuses[] = { "firing", "resolved", NULL };
	static const char *const repo_reason[] = { WEBHOOK_REPO_LABEL, NULL };
	static const char *const none[] = { "", NULL };

	if (!w->requests)
		return;
	pthread_mutex_lock(&w->declared_mu);
	if (w->declared && w->declared_serial == serial) {
		pthread_mutex_unlock(&w->declared_mu);
		return;
	}
	w->declared = 1;
	w->declared_serial = serial;
	pthread_mutex_unlock(&w->declared_mu);
	metric_declare(w->requests, (const char *const *const[]){ none, UNKNOWN_CODES });
	for (size_t i = 0; i < cfg->receivers_count; i++) {
		const char *const rcv[] = { cfg->receivers[i].name, NULL };

		metric_declare(w->requests, (const char *const *const[]){ rcv, RECEIVER_CODES });
		metric_declare(w->alerts, (const char *const *const[]){ rcv, statuses });
		metric_declare(w->invalid, (const char *const *const[]){ rcv, am_invalid_members });
		metric_declare(w->invalid, (const char *const *const[]){ rcv, repo_reason });
		metric_declare(w->repeated, (const char *const *const[]){ rcv });
		metric_declare(w->cache_hits, (const char *const *const[]){ rcv });
		metric_declare(w->truncated, (const char *const *const[]){ rcv });
	}
}

struct webhook *webhook_new(const struct webhook_options *opts)
{
	static const char *const requests_labels[] = { "receiver", "code", NULL };
	static const char *const alerts_labels[] = { "receiver", "status", NULL };
	static const char *const invalid_labels[] = { "receiver", "reason", NULL };
	static const char *const repeated_labels[] = { "receiver", NULL };
	struct webhook *w;

	assert(opts && opts->cfg && opts->store);
	w = xcalloc(1, sizeof(*w));
	w->cfg = opts->cfg;
	w->store = opts->store;
	w->auth = opts->auth;
	w->reload = opts->reload;
	w->limits = opts->limits;
	w->limits.keep_invalid_alerts = 1;
	w->max_events_bytes = opts->max_events_bytes ? opts->max_events_bytes
						     : WEBHOOK_MAX_EVENTS_BYTES;
	w->now_ms = opts->now_ms;
	w->now_ctx = opts->now_ctx;
	if (opts->metrics) {
		struct metrics *m = opts->metrics;

		w->requests = metrics_counter(m, "alertbridge_webhook_requests_total",
					      "Webhook requests answered, by receiver and code.",
					      requests_labels);
		w->alerts = metrics_counter(m, "alertbridge_webhook_alerts_total",
					    "Alerts queued, by receiver and status.",
					    alerts_labels);
		w->invalid = metrics_counter(m, "alertbridge_webhook_alerts_invalid_total",
					     "Alerts dead-lettered at intake as invalid, by receiver "
					     "and reason (the alert's member that failed).",
					     invalid_labels);
		w->repeated = metrics_counter(m, "alertbridge_webhook_alerts_repeated_total",
					      "Alerts whose state equals the last one stored for "
					      "their key (a repeat): answered, nothing stored.",
					      repeated_labels);
		w->cache_hits = metrics_counter(m, "alertbridge_webhook_cache_hits_total",
						"Requests whose body was seen before and whose "
						"alerts are all repeats: answered without parsing.",
						repeated_labels);
		w->truncated = metrics_counter(m, "alertbridge_webhook_alerts_truncated_total",
					       "Alerts Alertmanager left out of webhooks (their "
					       "truncatedAlerts: its max_alerts), by receiver.",
					       repeated_labels);
		w->duration = metrics_histogram(m, "alertbridge_webhook_duration_seconds",
						"Time spent handling a webhook, commit included.",
						NULL, DURATION_BUCKETS, N_DURATION_BUCKETS);
	}
	w->cache = webhook_cache_new(WEBHOOK_CACHE_SLOTS);
	pthread_mutex_init(&w->declared_mu, NULL);
	declare_series(w, w->cfg, 0);
	return w;
}

void webhook_free(struct webhook *w)
{
	if (!w)
		return;
	webhook_cache_free(w->cache);
	pthread_mutex_destroy(&w->declared_mu);
	free(w);
}

static int64_t now_ms(const struct webhook *w)
{
	if (w->now_ms)
		return w->now_ms(w->now_ctx);
	return clock_wall_ms();
}

/* An empty query parameter or label counts as absent: NULL. */
static const char *non_empty(const char *s)
{
	return s && *s ? s : NULL;
}

/*
 * Check ?repo= (400 when invalid: the request's own) and every alert's
 * alertbridge_repo label (an invalid one makes its alert invalid); 0 when
 * the request goes on.
 */
static int check_repos(struct request *r)
{
	struct buf why = BUF_INIT;
	char field[128];
	int status = 0;

	if (r->query_repo && issue_repo_valid(r->query_repo, &why) != ERR_OK) {
		status = intake_reject(&r->v, 400, "invalid repo query parameter",
				       "query parameter repo: %s", buf_str(&why));
		goto out;
	}
	for (size_t i = 0; i < r->p->n_alerts; i++) {
		const char *label = non_empty(am_labels_get(&r->p->alerts[i].labels,
							    WEBHOOK_REPO_LABEL));

		if (!label || issue_repo_valid(label, &why) == ERR_OK)
			continue;
		snprintf(field, sizeof(field), "alerts[%zu].labels.%s", r->p->alerts[i].index,
			 WEBHOOK_REPO_LABEL);
		am_alert_invalidate(r->p, i, WEBHOOK_REPO_LABEL, field, "%s", buf_str(&why));
	}
	am_payload_sort_invalid(r->p);
out:
	buf_release(&why);
	return status;
}

/* The repository alert i names itself: its label, else ?repo=, else NULL. */
static const char *given_repo_of(const struct request *r, size_t i)
{
	const char *label = non_empty(am_labels_get(&r->p->alerts[i].labels, WEBHOOK_REPO_LABEL));

	return label ? label : r->query_repo;
}

/*
 * The repository of alert i for its repeat state: the one it names, else
 * the receiver's repo as configured (a template is rendered by the bridge,
 * bridge_route(); the alert's labels, which it renders from, are its
 * fingerprint's).
 */
static const char *repo_of(const struct request *r, size_t i)
{
	const char *given = given_repo_of(r, i);

	return given ? given : r->rcv->repo;
}

/*
 * Append alert i's document (group: the group's, am_group_event_json()),
 * with "repo" added when the alert names its repository (given_repo_of()),
 * then a NUL.  am_event_json() writes a compact object, so its closing brace
 * is replaced by the new member: no second parse.  The member is built in
 * r->member (reused across alerts) so that hitting the size limit never
 * leaves half of it behind.
 */
static enum err add_doc_of(struct request *r, size_t i, int group)
{
	struct buf *d = &r->docs;
	size_t start = d->len;
	const char *given = given_repo_of(r, i);
	enum err rc;

	rc = group ? am_group_event_json(r->p, d) : am_event_json(r->p, i, d);
	if (rc != ERR_OK)
		goto out;
	assert(d->len > start && d->data[d->len - 1] == '}');
	if (!given) {
		rc = buf_addch(d, '\0');
		goto out;
	}
	buf_reset(&r->member);
	(void)buf_adds(&r->member, ",\"repo\":");
	intake_json_quote(&r->member, given);
	(void)buf_add(&r->member, "}", 2);  /* with the NUL that ends the document */
	buf_truncate(d, d->len - 1);
	rc = buf_add(d, r->member.data, r->member.len);
out:
	if (rc != ERR_OK)
		buf_truncate(d, start);
	return rc;
}

static enum err add_doc(struct request *r, size_t i)
{
	return add_doc_of(r, i, 0);
}

static void fill_event(const struct request *r, struct store_event *ev, int64_t received_ms)
{
	ev->kind = (char *)"bridge";
	ev->receiver = r->rcv->name;
	ev->received_at_ms = received_ms;
}

/* A copy of s that lives as long as the request. */
static char *keep(struct request *r, const char *s)
{
	r->owned[r->n_owned] = xstrdup(s);
	return r->owned[r->n_owned++];
}

/*
 * issue_per: alert - one event per alert.  Each document is copied out of
 * the scratch buffer and its alert released (see the top of this file);
 * the scratch's max bounds one document, total all of them
 * (max_events_bytes, as one buffer did).
 */
static enum err build_alert_events(struct request *r, int64_t received_ms, size_t max_bytes)
{
	struct am_payload *p = r->p;
	size_t total = 0;

	r->evs = xcalloc(p->n_alerts, sizeof(*r->evs));
	r->owned = xcalloc(2 * p->n_alerts, sizeof(*r->owned));
	for (size_t i = 0; i < p->n_alerts; i++) {
		struct store_event *ev = &r->evs[i];
		struct am_alert *a = &p->alerts[i];
		const char *given = given_repo_of(r, i);

		buf_reset(&r->docs);
		if (add_doc(r, i) != ERR_OK || r->docs.len > max_bytes - total)
			return ERR_TOOBIG;
		total += r->docs.len;
		fill_event(r, ev, received_ms);
		ev->key = a->fingerprint;
		ev->status = (char *)(a->firing ? "firing" : "resolved");
		ev->starts_at_ms = a->starts_at_ms;
		ev->ends_at_ms = a->ends_at_ms;
		ev->payload = keep(r, r->docs.data);
		/* The label points into the alert's JSON; the query and the config outlive r. */
		ev->repeat_state = given && given != r->query_repo ? keep(r, given)
								   : repo_of(r, i);
		r->n_evs = i + 1;
		am_alert_release(p, i);
	}
	return ERR_OK;
}

static int by_fingerprint(const void *a, const void *b)
{
	const struct am_alert *const *x = a, *const *y = b;

	return strcmp((*x)->fingerprint, (*y)->fingerprint);
}

/*
 * The repeat_state of a group's event: SHA-256 hex of its repository and
 * its members (fingerprint, status, startsAt, endsAt) by fingerprint, so a
 * member that comes, goes or changes makes the event no repeat.
 */
static void group_state(struct request *r, char out[65])
{
	const struct am_payload *p = r->p;
	const struct am_alert **members = xcalloc(p->n_alerts, sizeof(*members));
	struct buf canon = BUF_INIT;

	for (size_t i = 0; i < p->n_alerts; i++)
		members[i] = &p->alerts[i];
	qsort(members, p->n_alerts, sizeof(*members), by_fingerprint);
	(void)buf_printf(&canon, "%s\n", repo_of(r, 0));
	for (size_t i = 0; i < p->n_alerts; i++)
		(void)buf_printf(&canon, "%s %s %lld %lld\n", members[i]->fingerprint,
				 members[i]->status, (long long)members[i]->starts_at_ms,
				 (long long)members[i]->ends_at_ms);
	issue_group_key_hash(buf_str(&canon), out);
	buf_release(&canon);
	free(members);
}

/* issue_per: group - one event for the payload (see webhook.h). */
static enum err build_group_event(struct request *r, int64_t received_ms, char key[65])
{
	const struct am_payload *p = r->p;
	struct store_event *ev;
	int resolved = strcmp(p->status, "resolved") == 0;
	enum err rc;

	rc = add_doc_of(r, 0, 1);
	if (rc != ERR_OK)
		return rc;
	issue_group_key_hash(p->group_key, key);
	r->evs = xcalloc(1, sizeof(*r->evs));
	r->n_evs = 1;
	ev = &r->evs[0];
	fill_event(r, ev, received_ms);
	ev->key = key;
	ev->status = p->status;
	ev->payload = r->docs.data;
	group_state(r, r->group_state);
	ev->repeat_state = r->group_state;
	ev->starts_at_ms = p->alerts[0].starts_at_ms;
	for (size_t i = 0; i < p->n_alerts; i++) {
		const struct am_alert *a = &p->alerts[i];

		if (a->starts_at_ms < ev->starts_at_ms)
			ev->starts_at_ms = a->starts_at_ms;
		if (resolved && a->ends_at_ms > ev->ends_at_ms)
			ev->ends_at_ms = a->ends_at_ms;
	}
	return ERR_OK;
}

/* Append the dead letters of the invalid alerts to r->evs (see intake_dead_events()). */
static enum err add_dead_events(const struct webhook *w, struct request *r)
{
	struct store_event *all;

	if (!r->p->n_invalid)
		return ERR_OK;
	all = xcalloc(r->n_evs + r->p->n_invalid, sizeof(*all));
	if (r->n_evs)
		memcpy(all, r->evs, r->n_evs * sizeof(*all));
	free(r->evs);
	r->evs = all;
	r->n_dead = r->p->n_invalid;
	return intake_dead_events(r->p, "bridge", r->rcv->name, now_ms(w), &r->dead_docs,
				  r->evs + r->n_evs);
}

/*
 * A body seen before (webhook_cache.h) whose events the store says are all
 * repeats: r->hit holds its entry and r->rcv its receiver; 1.  Else 0 and
 * the request goes the whole way (a changed state, a forgotten key, a
 * dry-run row: the store's rule decides, as for a parsed body).
 */
static int answer_from_cache(struct webhook *w, struct request *r)
{
	uint64_t version;
	int all = 0;

	r->seen.generation = r->generation;
	r->seen.query_receiver = srv_query(r->req, "receiver");
	r->seen.query_repo = srv_query(r->req, "repo");
	r->seen.body = r->req->body;
	r->seen.body_len = r->req->body_len;
	if (!webhook_cache_get(w->cache, &r->seen, &r->hit))
		return 0;
	r->rcv = cfg_receiver_find(r->cfg, r->hit.receiver);
	version = r->hit.repeats_version;
	if (r->rcv && store_repeats(w->store, r->hit.evs, r->hit.n_evs, &version, &all) == ERR_OK &&
	    all) {
		if (version != r->hit.repeats_version)
			webhook_cache_set_repeats_version(w->cache, &r->seen, version);
		r->n_evs = r->hit.n_evs;
		r->n_repeated = r->hit.n_repeated;
		return 1;
	}
	r->rcv = NULL;
	webhook_cache_entry_release(&r->hit);
	return 0;
}

/* Keep what r's body queued for its next arrival (not with dead letters, not a huge one). */
static void remember(struct webhook *w, const struct request *r)
{
	struct webhook_cache_entry e = { 0 };

	if (r->n_dead || r->p->n_invalid || r->p->n_dropped || !r->n_evs ||
	    r->n_evs > WEBHOOK_CACHE_MAX_EVENTS)
		return;
	e.receiver = (char *)r->rcv->name;
	e.n_alerts = r->p->n_alerts;
	for (size_t i = 0; i < r->p->n_alerts; i++)
		e.n_firing += r->p->alerts[i].firing != 0;
	e.n_repeated = r->n_evs == 1 ? r->p->n_alerts : r->n_evs;
	e.truncated = r->p->truncated_alerts;
	e.evs = r->evs;
	e.n_evs = r->n_evs;
	webhook_cache_put(w->cache, &r->seen, &e);
}

/* The alerts of the request, valid and invalid, parsed or from the cache. */
static size_t n_alerts(const struct request *r)
{
	return r->hit.n_evs ? r->hit.n_alerts : r->p->n_alerts + r->p->n_invalid;
}

/* Alerts Alertmanager left out of the request (its truncatedAlerts). */
static int64_t n_truncated(const struct request *r)
{
	return r->hit.n_evs ? r->hit.truncated : r->p->truncated_alerts;
}

/* Steps 1-7 of webhook.h; returns the HTTP status, with r filled for the answer. */
static int intake(struct webhook *w, struct request *r)
{
	const struct srv_request *req = r->req;
	struct am_error aerr;
	char group_key[65];
	enum err rc;

	if (intake_admit(&r->v, r->auth, req))
		return r->v.status;
	if (answer_from_cache(w, r))
		return r->v.status = 200;
	r->asked = non_empty(srv_query(req, "receiver"));
	if (am_parse(req->body, req->body_len, &w->limits, &r->p, &aerr) != ERR_OK) {
		snprintf(r->field, sizeof(r->field), "%s", aerr.field);
		snprintf(r->asked_body, sizeof(r->asked_body), "%s", aerr.receiver);
		if (!r->asked)
			r->asked = non_empty(r->asked_body);
		/* Counted under the receiver it names, when one is configured. */
		r->rcv = r->asked ? cfg_receiver_find(r->cfg, r->asked) : NULL;
		return intake_reject(&r->v, 400, "invalid payload", "%s", aerr.message);
	}
	if (!r->asked)
		r->asked = r->p->receiver_name;
	r->rcv = cfg_receiver_find(r->cfg, r->asked);
	if (!r->rcv)
		return intake_reject(&r->v, 404, "unknown receiver", "unknown receiver \"%s\"",
				     r->asked);
	r->query_repo = non_empty(srv_query(req, "repo"));
	if (check_repos(r))
		return r->v.status;

	buf_init(&r->docs, w->max_events_bytes);
	buf_init(&r->dead_docs, w->max_events_bytes);
	rc = ERR_OK;  /* with every alert invalid there are only dead letters */
	if (r->p->n_alerts && r->rcv->issue_per == CFG_ISSUE_PER_GROUP)
		rc = build_group_event(r, now_ms(w), group_key);
	else if (r->p->n_alerts)
		rc = build_alert_events(r, now_ms(w), w->max_events_bytes);
	if (rc == ERR_OK)
		rc = add_dead_events(w, r);
	if (rc != ERR_OK)
		return intake_reject(&r->v, 413, "payload too large",
				     "events of this payload exceed %zu bytes", w->max_events_bytes);

	rc = store_enqueue(w->store, r->evs, r->n_evs + r->n_dead, &r->detail);
	if (rc == ERR_DB)
		return intake_reject(&r->v, 503, "store unavailable", "store unavailable: %s",
				     buf_str(&r->detail));
	if (rc != ERR_OK)  /* an event we built is incomplete: a bug, but answer it */
		return intake_reject(&r->v, 500, "internal error", "internal error: %s",
				     buf_str(&r->detail));
	for (size_t i = 0; i < r->n_evs; i++) {
		if (r->evs[i].repeated)  /* a group's event stands for all its alerts */
			r->n_repeated += r->n_evs == 1 ? r->p->n_alerts : 1;
	}
	remember(w, r);
	return r->v.status = 200;
}

static void answer(struct request *r, struct srv_response *res)
{
	struct buf *b = &res->body;

	res->status = r->v.status;
	res->content_type = "application/json";
	if (r->v.status == 200) {
		(void)buf_adds(b, "{\"status\":\"ok\",\"receiver\":");
		intake_json_quote(b, r->rcv->name);
		(void)buf_printf(b, ",\"alerts\":%zu", n_alerts(r));
		if (!r->hit.n_evs && r->p->n_invalid)
			(void)buf_printf(b, ",\"invalid\":%zu", r->p->n_invalid);
		(void)buf_addch(b, '}');
		return;
	}
	intake_error_member(res, r->v.status, r->auth, buf_str(&r->v.msg), r->field,
			    r->v.status == 404 ? "receiver" : NULL, r->asked);
}

static void log_request(const struct request *r, int64_t duration_us)
{
	enum log_level level = r->v.status >= 500 ? LOG_ERROR : LOG_WARN;
	struct log_line *l;

	if (r->v.status == 200 && r->n_dead) {
		const struct am_alert *first = &r->p->alerts[r->p->n_alerts];

		/* One line per request, however many alerts: the first reason, and the count. */
		l = log_begin(LOG_WARN, "webhook alerts dead-lettered");
		log_str(l, "receiver", r->rcv->name);
		log_int(l, "invalid", (int64_t)r->n_dead);
		log_int(l, "alerts", (int64_t)(r->p->n_alerts + r->p->n_invalid));
		log_str(l, "key", first->fingerprint);
		log_str(l, "field", first->invalid->field);
		log_str(l, "error", first->invalid->message);
		log_str(l, "remote", srv_remote_addr(r->req));
		log_end(l);
	}
	if (r->v.status == 200 && !r->hit.n_evs && r->p->n_dropped) {
		/* Alertmanager derives them from the alerts: the alert that carries it is the bad one. */
		l = log_begin(LOG_WARN, "webhook group fields left out");
		log_str(l, "receiver", r->rcv->name);
		log_int(l, "dropped", (int64_t)r->p->n_dropped);
		log_str(l, "field", r->p->dropped.field);
		log_str(l, "error", r->p->dropped.message);
		log_str(l, "group_key", r->p->group_key);
		log_end(l);
	}
	if (r->v.status == 200 && n_truncated(r) > 0) {
		l = log_begin(LOG_INFO, "webhook alerts truncated by alertmanager");
		log_str(l, "receiver", r->rcv->name);
		log_int(l, "truncated", n_truncated(r));
		log_int(l, "alerts", (int64_t)n_alerts(r));
		log_str(l, "hint", "raise max_alerts of the webhook_config in Alertmanager");
		log_end(l);
	}
	if (r->v.status == 200) {
		l = log_begin(LOG_DEBUG, "webhook request");
		log_int(l, "code", r->v.status);
		log_str(l, "receiver", r->rcv->name);
		log_int(l, "alerts", (int64_t)n_alerts(r));
		log_int(l, "events", (int64_t)r->n_evs);
		log_int(l, "repeated", (int64_t)r->n_repeated);
		log_int(l, "invalid", (int64_t)r->n_dead);
		log_str(l, "cache", r->hit.n_evs ? "hit" : "miss");
		log_fmt(l, "duration_ms", "%.3f", (double)duration_us / 1000.0);
		log_end(l);
		return;
	}
	l = log_begin(level, "webhook rejected");
	log_int(l, "code", r->v.status);
	log_str(l, "reason", r->v.reason);
	/* The name asked for is client input: bounded, and escaped by the logger. */
	if (r->asked)
		log_strn(l, "receiver", r->asked, strnlen(r->asked, 128));
	intake_log_rejected(l, &r->v, r->field, r->req, duration_us);
}

static void observe(const struct webhook *w, const struct request *r, int64_t duration_us)
{
	const char *receiver = r->rcv ? r->rcv->name : "";
	char code[8];
	const char *req_labels[] = { receiver, code };

	if (!w->requests)
		return;
	snprintf(code, sizeof(code), "%d", r->v.status);
	metric_add(w->requests, req_labels, 1);
	metric_observe(w->duration, NULL, (double)duration_us / 1e6);
	if (r->v.status == 200) {
		size_t firing = 0, valid = r->hit.n_evs ? r->hit.n_alerts : r->p->n_alerts;
		const char *firing_labels[] = { receiver, "firing" };
		const char *resolved_labels[] = { receiver, "resolved" };
		const char *receiver_labels[] = { receiver };

		if (r->hit.n_evs) {
			firing = r->hit.n_firing;
			metric_add(w->cache_hits, receiver_labels, 1);
		}
		for (size_t i = 0; !r->hit.n_evs && i < r->p->n_alerts; i++)
			firing += r->p->alerts[i].firing != 0;
		if (firing)
			metric_add(w->alerts, firing_labels, (double)firing);
		if (firing < valid)
			metric_add(w->alerts, resolved_labels, (double)(valid - firing));
		if (r->n_repeated)
			metric_add(w->repeated, receiver_labels, (double)r->n_repeated);
		if (n_truncated(r) > 0)
			metric_add(w->truncated, receiver_labels, (double)n_truncated(r));
		for (size_t i = 0; i < r->n_dead; i++) {
			const char *invalid_labels[] = {
				receiver, r->p->alerts[r->p->n_alerts + i].invalid_reason };

			metric_add(w->invalid, invalid_labels, 1);
		}
	}
}

void webhook_rejected(void *ctx, const struct srv_request *req, int status)
{
	struct webhook *w = ctx;
	const struct reload_gen *g = reload_acquire(w->reload);
	const struct config *cfg = g ? g->cfg : w->cfg;
	const char *asked = non_empty(srv_query(req, "receiver"));
	const struct cfg_receiver *rcv = asked ? cfg_receiver_find(cfg, asked) : NULL;
	char code[8];
	const char *labels[] = { rcv ? rcv->name : "", code };

	snprintf(code, sizeof(code), "%d", status);
	metric_add(w->requests, labels, 1);
	reload_release(w->reload, g);
}

static void request_release(struct request *r)
{
	webhook_cache_entry_release(&r->hit);
	am_payload_free(r->p);
	buf_release(&r->v.msg);
	buf_release(&r->detail);
	buf_release(&r->docs);
	for (size_t i = 0; i < r->n_owned; i++)
		free(r->owned[i]);
	free(r->owned);
	buf_release(&r->member);
	buf_release(&r->dead_docs);
	free(r->evs);
}

void webhook_handle(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	struct webhook *w = ctx;
	struct request r;
	int64_t start_us = clock_mono_us(), duration_us;
	const struct reload_gen *g = reload_acquire(w->reload);

	memset(&r, 0, sizeof(r));
	r.req = req;
	r.cfg = g ? g->cfg : w->cfg;
	r.auth = g ? g->auth : w->auth;
	r.generation = g ? g->serial : 0;
	declare_series(w, r.cfg, r.generation);
	(void)intake(w, &r);
	answer(&r, res);
	duration_us = clock_mono_us() - start_us;
	observe(w, &r, duration_us);
	log_request(&r, duration_us);
	request_release(&r);
	reload_release(w->reload, g);
}
