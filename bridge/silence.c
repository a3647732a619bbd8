/*
 * silence.c - the commands of GitHub comments and the handler of the
 * "silence" queue (silence.h): one event is one command, made in
 * Alertmanager (core/am_api.h), kept in the store (store/store_silences.h)
 * and answered with one comment on the issue.
 */
#include "bridge/silence.h"

#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/am_api.h"
#include "core/backoff.h"
#include "core/clock.h"
#include "core/duration.h"
#include "core/log.h"
#include "core/rfc3339.h"
#include "store/store_events.h"
#include "store/store_groups.h"
#include "store/store_silences.h"
#include "core/xalloc.h"
#include "core/banned.h"

/* ---- the command parser ---- */

static void copy_cut(char *dst, size_t cap, const char *s, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

void silence_command_parse(const char *text, struct silence_command *out)
{
	const char *p = text ? text : "", *word, *end, *arg;
	char dur[64];
	size_t n;

	memset(out, 0, sizeof(*out));
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p != '/')
		return;
	word = ++p;
	while (isalpha((unsigned char)*p) || *p == '-')
		p++;
	if (p == word || !(*p == '\0' || *p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		return;  /* "/", "/usr/bin": no command word */
	copy_cut(out->word, sizeof(out->word), word, (size_t)(p - word));
	end = p + strcspn(p, "\r\n");
	if (!strcasecmp(out->word, "unsilence")) {
		out->cmd = SILENCE_CMD_UNSILENCE;
		return;
	}
	if (strcasecmp(out->word, "silence")) {
		out->cmd = SILENCE_CMD_UNKNOWN;
		return;
	}
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	arg = p;
	while (p < end && *p != ' ' && *p != '\t')
		p++;
	n = (size_t)(p - arg);
	out->cmd = SILENCE_CMD_INVALID;
	if (n == 0) {
		snprintf(out->error, sizeof(out->error),
			 "/silence needs a duration, e.g. /silence 4h rollout in progress");
		return;
	}
	copy_cut(dur, sizeof(dur), arg, n);
	if (duration_parse(dur, &out->duration_ms, NULL) != ERR_OK || out->duration_ms <= 0) {
		snprintf(out->error, sizeof(out->error),
			 "\"%.40s\" is not a duration (as Prometheus writes them: 30m, 4h, 1d12h)", dur);
		out->duration_ms = 0;
		return;
	}
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	copy_cut(out->reason, sizeof(out->reason), p, (size_t)(end - p));
	out->cmd = SILENCE_CMD_SILENCE;
}

/* ---- the worker ---- */

struct silencer {
	struct silencer_options opts;
	struct am_api *am;
	unsigned int seed;
	struct metric *m_silences;
};

struct silencer *silencer_new(const struct silencer_options *opts)
{
	struct silencer *s = xcalloc(1, sizeof(*s));
	static const char *const labels[] = { "outcome", NULL };
	static const char *const outcomes[] = { "created", "expired", "failed", NULL };
	const char *const *values[] = { outcomes, NULL };

	s->opts = *opts;
	if (s->opts.retry_base_ms <= 0)
		s->opts.retry_base_ms = 5000;
	if (s->opts.retry_max_ms <= 0)
		s->opts.retry_max_ms = 600000;
	s->am = am_api_new(opts->user_agent);
	s->seed = (unsigned int)clock_wall_ms();
	if (!opts->metrics)
		return s;
	s->m_silences = metrics_counter(opts->metrics, "alertbridge_silences_total",
					"Alertmanager silences made (created), ended (expired) "
					"or refused for good (failed) from GitHub issue comments.",
					labels);
	metric_declare(s->m_silences, values);
	return s;
}

void silencer_free(struct silencer *s)
{
	if (!s)
		return;
	am_api_free(s->am);
	free(s);
}

static void count(struct silencer *s, const char *outcome, double n)
{
	const char *v[] = { outcome };

	metric_add(s->m_silences, v, n);
}

/* What one event needs; released in one place (step()). */
struct job {
	struct store_event ev;
	json_t *cmd;           /* the event's payload */
	json_t *alert;         /* the payload of the alert's latest bridge event, or NULL */
	char **keys;           /* the map keys the issue stands for: the event's, or a storm's */
	size_t nkeys;
	int storm;             /* the issue is a storm summary: keys are its folded alerts */
	json_t *shared;        /* storm: the labels its alerts share (NULL: none known) */
	size_t known;          /* storm: the alerts whose labels are still known */
	const struct cfg_receiver *rcv;
	const char *login, *repo, *verb;
	int64_t number, comment_id;
	struct buf reply;      /* the answer on the issue */
	struct buf marker;     /* the reply's marker */
	int64_t now_ms;
	int64_t reply_noted_ms; /* the reply may have been posted from then on (0: not) */
};

static const char *jstr(const json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v ? v : "";
}

static void target_of(const struct cfg_alertmanager *a, struct am_api_target *t)
{
	t->url = a->url;
	t->bearer_token = a->bearer_token;
	t->username = a->basic_auth.username;
	t->password = a->basic_auth.password;
	t->timeout_ms = a->timeout_ms;
}

/*
 * The labels the silence matches: the alert's (issue_per: alert) or the
 * group's groupLabels (issue_per: group), from the alert's latest event;
 * NULL when it is no longer stored (pruned after database_retention).
 */
static const json_t *labels_in(const struct job *j, const json_t *alert)
{
	const char *key = j->rcv->issue_per == CFG_ISSUE_PER_GROUP ? "groupLabels" : "labels";
	const json_t *l = json_object_get(alert, key);

	return json_is_object(l) && json_object_size(l) ? l : NULL;
}

static const json_t *labels_of(const struct job *j)
{
	return labels_in(j, j->alert);
}

/*
 * The map keys j's issue stands for, into j->keys: when the event's (receiver,
 * key) is folded into a storm summary (bridge/storm.h), every alert of that
 * summary (j->storm set), else the event's own key.
 */
static enum err keys_of(struct silencer *s, struct job *j)
{
	struct store_member m = { 0 }, *v = NULL;
	size_t n = 0;
	enum err rc = store_member_get(s->opts.store, j->ev.receiver, j->ev.key, &m);

	if (rc == ERR_OK) {
		rc = store_member_list(s->opts.store, m.summary_id, &v, &n);
		store_member_release(&m);
		if (rc != ERR_OK)
			return rc;
		j->storm = 1;
	} else if (rc != ERR_NOTFOUND) {
		return rc;
	}
	j->keys = xcalloc(n + 1, sizeof(*j->keys));
	for (size_t i = 0; i < n; i++)
		j->keys[j->nkeys++] = xstrdup(v[i].key);
	if (!j->nkeys)
		j->keys[j->nkeys++] = xstrdup(j->ev.key);
	store_member_list_free(v, n);
	return ERR_OK;
}

/*
 * A storm: the labels (as labels_of()) that all its alerts whose latest
 * event is still stored have with the same value, into j->shared (NULL when
 * none is known; possibly empty), their number into j->known.
 */
static void storm_shared_labels(struct silencer *s, struct job *j)
{
	for (size_t i = 0; i < j->nkeys; i++) {
		struct store_event ev = { 0 };
		enum store_event_state state;
		json_t *doc, *v, *w;
		const json_t *l;
		const char *k;
		void *tmp;

		if (store_event_latest(s->opts.store, "bridge", j->ev.receiver, j->keys[i], &ev,
				       &state) != ERR_OK)
			continue;
		doc = json_loads(ev.payload, 0, NULL);
		store_event_release(&ev);
		l = labels_in(j, doc);
		if (l) {
			j->known++;
			if (!j->shared) {
				j->shared = json_deep_copy(l);
			} else {
				json_object_foreach_safe(j->shared, tmp, k, v) {
					w = json_object_get(l, k);
					if (!w || !json_equal(v, w))
						(void)json_object_del(j->shared, k);
				}
			}
		}
		json_decref(doc);
	}
}

/* The matchers' text for people: {a="b", c="d"}. */
static void matchers_text(const json_t *labels, struct buf *out)
{
	const char *k;
	json_t *v;
	int first = 1;

	(void)buf_addch(out, '{');
	json_object_foreach((json_t *)labels, k, v) {
		(void)buf_printf(out, "%s%s=\"%s\"", first ? "" : ", ", k, json_string_value(v));
		first = 0;
	}
	(void)buf_addch(out, '}');
}

/* Outcome of an attempt that failed for now: retried with backoff. */
static int retry(struct silencer *s, struct job *j, const char *what, const struct buf *why)
{
	int64_t wait = backoff_ms(j->ev.attempts, s->opts.retry_base_ms, s->opts.retry_max_ms,
				  &s->seed);
	struct log_line *l = log_begin(LOG_WARN, "silence command failed: retrying");

	log_str(l, "error", buf_str(why));
	log_str(l, "step", what);
	log_str(l, "receiver", j->ev.receiver);
	log_str(l, "key", j->ev.key);
	log_int(l, "retry_in_ms", wait);
	log_end(l);
	return store_event_retry(s->opts.store, j->ev.id, j->now_ms + wait, buf_str(why)) == ERR_DB
		       ? -1 : 1;
}

static int dead(struct silencer *s, struct job *j, const char *reason)
{
	struct log_line *l = log_begin(LOG_ERROR, "silence command dead-lettered");

	log_str(l, "reason", reason);
	log_str(l, "receiver", j->ev.receiver);
	log_str(l, "key", j->ev.key);
	log_end(l);
	count(s, "failed", 1);
	return store_event_dead(s->opts.store, j->ev.id, reason) == ERR_DB ? -1 : 1;
}

/*
 * A reply that may have been posted before a crash or a lost answer is noted
 * "r<ms>~" before the event's own note (answer()); take it off, into
 * j->reply_noted_ms, so that the rest reads as before.
 */
static void reply_note_take(struct job *j)
{
	char *p = j->ev.progress, *end;
	long long ms;

	if (!p || p[0] != 'r')
		return;
	ms = strtoll(p + 1, &end, 10);
	if (end == p + 1 || *end != '~' || ms <= 0)
		return;
	j->reply_noted_ms = (int64_t)ms;
	memmove(p, end + 1, strlen(end + 1) + 1);
}

/*
 * Post j->reply (once: its marker) and finish the event.  The post is noted
 * first ("r<ms>~" before rest, the event's note of the work done), so that
 * the retry of an event whose reply may have been posted (a crash between
 * the POST and the event's end: the client's own doubts die with it) looks
 * for the marker on the issue, once such a POST can no longer land, before
 * it posts again.
 */
static int dead(struct silencer *s, struct job *j, const char *reason);

static int answer_end(struct silencer *s, struct job *j, struct gh_client *gh, const char *rest,
		      const char *dead_reason)
{
	struct buf err = BUF_INIT, note = BUF_INIT;
	enum err rc;

	if (j->reply_noted_ms) {
		int64_t at = gh_write_settled_at(gh, j->reply_noted_ms);

		if (j->now_ms < at) {
			buf_setf(&err, "the reply in doubt may still land on github: looked for in "
				 "%lld ms", (long long)(at - j->now_ms));
			rc = ERR_RETRY;
			goto retry;
		}
		rc = gh_comment_marked(gh, j->repo, j->number, buf_str(&j->marker), &err);
		if (rc == ERR_RETRY || rc == ERR_AUTH)
			goto retry;
		if (rc == ERR_OK)
			goto done;
		buf_reset(&err);  /* not there, or the issue is gone: the post tells */
	}
	(void)buf_printf(&note, "r%lld~%s", (long long)j->now_ms, rest);
	if (!gh_dry_run(gh) && store_event_progress(s->opts.store, j->ev.id, buf_str(&note)) !=
	    ERR_OK) {
		buf_release(&note);
		return -1;
	}
	buf_release(&note);
	(void)buf_printf(&j->reply, "\n\n%s", buf_str(&j->marker));
	rc = gh_comment_create_marked(gh, j->repo, j->number, buf_str(&j->reply),
				      buf_str(&j->marker), &err);
retry:
	if (rc == ERR_RETRY || rc == ERR_AUTH) {
		int r = retry(s, j, "reply", &err);

		buf_release(&err);
		return r;
	}
	if (rc != ERR_OK) {
		/* The issue is locked, gone, or the text refused: the work stands. */
		struct log_line *l = log_begin(LOG_WARN, "silence reply not posted");

		log_str(l, "error", buf_str(&err));
		log_str(l, "repo", j->repo);
		log_int(l, "number", j->number);
		log_end(l);
	}
done:
	buf_release(&err);
	if (dead_reason) {
		/* As before its reply: `map retry` then looks for the silence, then makes it. */
		if (store_event_progress(s->opts.store, j->ev.id, "post~") != ERR_OK)
			return -1;
		return dead(s, j, dead_reason);
	}
	rc = store_event_done(s->opts.store, j->ev.id, NULL, NULL);
	return rc == ERR_DB ? -1 : 1;
}

static int answer(struct silencer *s, struct job *j, struct gh_client *gh, const char *rest)
{
	return answer_end(s, j, gh, rest, NULL);
}

/*
 * A silence Alertmanager refused (reason): say so on the issue (a marker of
 * its own, so that a later success still gets its reply), then dead-letter
 * the command with reason; its note "refused:REASON" lets a retry of the
 * reply skip Alertmanager.
 */
static int refused(struct silencer *s, struct job *j, struct gh_client *gh, const char *reason)
{
	struct buf rest = BUF_INIT;
	int r;

	buf_reset(&j->reply);
	buf_reset(&j->marker);
	(void)buf_printf(&j->marker, "<!-- alertbridge:silence-refused=%lld -->",
			 (long long)j->comment_id);
	(void)buf_printf(&j->reply, "@%s: no silence: %s.\n\nThe command is dead-lettered "
			 "(`alertbridge map list` and the status page show it); once the cause "
			 "is fixed, `alertbridge map retry %s --receiver=%s` sends it again.",
			 j->login, reason, j->ev.key, j->ev.receiver);
	(void)buf_printf(&rest, "refused:%s", reason);
	r = answer_end(s, j, gh, buf_str(&rest), reason);
	buf_release(&rest);
	return r;
}

static int do_silence(struct silencer *s, struct job *j, struct gh_client *gh)
{
	const struct cfg_alertmanager *am = &j->rcv->alertmanager;
	struct am_api_target t = { 0 };
	struct am_api_matcher *ms = NULL;
	struct am_api_silence sil = { 0 };
	struct buf comment = BUF_INIT, mark = BUF_INIT, err = BUF_INIT, who = BUF_INIT;
	struct store_silence row = { 0 };
	const json_t *labels = j->storm ? j->shared : labels_of(j);
	int64_t dur = (int64_t)json_integer_value(json_object_get(j->cmd, "duration_ms"));
	const char *reason = jstr(j->cmd, "reason"), *ext;
	char *id = NULL, until[32];
	const char *k;
	json_t *v;
	size_t n = 0;
	int ambiguous = 0, r = 1, bounded = 0;
	enum err rc;

	if (j->ev.progress && !strncmp(j->ev.progress, "refused:", 8))
		return refused(s, j, gh, j->ev.progress + 8);  /* only its reply was left */
	if (labels && !json_object_size(labels)) {
		(void)buf_printf(&j->reply, "@%s: no silence: the %zu alerts of this storm summary "
				 "share no label, and a silence needs at least one matcher. Silence "
				 "them in Alertmanager.", j->login, j->known);
		return answer(s, j, gh, "");
	}
	if (!labels) {
		(void)buf_printf(&j->reply, "@%s: no silence: the alert's labels are no longer "
			"known to alertbridge (its last notification is older than "
			"database_retention).", j->login);
		return answer(s, j, gh, "");
	}
	if (dur > am->max_silence_ms) {
		dur = am->max_silence_ms;
		bounded = 1;
	}
	ms = xcalloc(json_object_size(labels), sizeof(*ms));
	json_object_foreach((json_t *)labels, k, v) {
		ms[n].name = k;
		ms[n++].value = json_string_value(v) ? json_string_value(v) : "";
	}
	(void)buf_printf(&mark, "alertbridge:comment=%lld", (long long)j->comment_id);
	(void)buf_printf(&comment, "%s%s%s (%s)", reason, *reason ? " " : "",
			 jstr(j->cmd, "issue_url"), buf_str(&mark));
	target_of(am, &t);
	if (j->ev.progress && !strncmp(j->ev.progress, "silenced:", 9)) {
		id = xstrdup(j->ev.progress + 9);  /* made and kept before: only the reply is left */
		goto reply;
	}
	sil.matchers = ms;
	sil.n_matchers = n;
	sil.starts_at_ms = j->now_ms;
	sil.ends_at_ms = j->now_ms + dur;
	sil.created_by = j->login;
	sil.comment = buf_str(&comment);
	if (j->ev.progress && !strcmp(j->ev.progress, "post~")) {
		rc = am_api_silence_find(s->am, &t, &sil, buf_str(&mark), &id, &err);
		if (rc != ERR_OK && rc != ERR_NOTFOUND) {
			r = retry(s, j, "find silence", &err);
			goto out;
		}
	}
	if (!id) {
		if (store_event_progress(s->opts.store, j->ev.id, "post~") != ERR_OK) {
			r = -1;
			goto out;
		}
		rc = am_api_silence_create(s->am, &t, &sil, &id, &ambiguous, &err);
		if (rc == ERR_INVALID) {
			buf_setf(&who, "alertmanager refused the silence: %s", buf_str(&err));
			r = refused(s, j, gh, buf_str(&who));
			goto out;
		}
		if (rc != ERR_OK) {
			r = retry(s, j, "create silence", &err);
			goto out;
		}
	}
	row.receiver = j->ev.receiver;
	row.silence_id = id;
	row.created_by = j->login;
	row.ends_at_ms = j->now_ms + dur;
	row.created_at_ms = j->now_ms;
	for (size_t i = 0; i < j->nkeys; i++) {  /* each alert's card shows it */
		row.key = j->keys[i];
		if (store_silence_put(s->opts.store, &row) != ERR_OK) {
			r = -1;
			goto out;
		}
	}
	buf_reset(&who);
	(void)buf_printf(&who, "silenced:%s", id);
	if (store_event_progress(s->opts.store, j->ev.id, buf_str(&who)) != ERR_OK) {
		r = -1;
		goto out;
	}
	count(s, "created", 1);
	{
		struct log_line *l = log_begin(LOG_INFO, "silence created");

		log_str(l, "silence_id", id);
		log_str(l, "created_by", j->login);
		log_str(l, "receiver", j->ev.receiver);
		log_str(l, "key", j->ev.key);
		log_end(l);
	}
reply:
	rfc3339_format(j->now_ms + dur, until);
	ext = jstr(j->alert, "externalURL");
	buf_reset(&who);
	matchers_text(labels, &who);
	(void)buf_printf(&j->reply, "@%s silenced `%s` until %s (%s", j->login, buf_str(&who), until,
			 "");
	duration_format(dur, &j->reply);
	(void)buf_printf(&j->reply, "%s)%s%s.",
			 bounded ? ", the longest alertmanager.max_silence allows" : "",
			 *reason ? ": " : "", reason);
	if (j->storm) {
		(void)buf_printf(&j->reply, "\n\nThis issue is a storm summary of %zu alert%s: the "
				 "silence matches the labels ", j->nkeys, j->nkeys == 1 ? "" : "s");
		if (j->known < j->nkeys)
			(void)buf_printf(&j->reply, "the %zu of them still known share (%zu no "
					 "longer known)", j->known, j->nkeys - j->known);
		else
			(void)buf_printf(&j->reply, "%s share", j->nkeys == 1 ? "it has" :
					 j->nkeys == 2 ? "both" : "all of them");
		(void)buf_adds(&j->reply, ", so it silences every alert of the storm, and any "
			       "later alert with those labels, until it ends or `/unsilence`.");
	}
	(void)buf_printf(&j->reply, "\n\nSilence: %s/#/silences/%s", *ext ? ext : am->url, id);
	buf_reset(&who);
	(void)buf_printf(&who, "silenced:%s", id);
	r = answer(s, j, gh, buf_str(&who));
out:
	free(id);
	free(ms);
	buf_release(&comment);
	buf_release(&mark);
	buf_release(&err);
	buf_release(&who);
	return r;
}

/* Non-zero when id is one of the ", "-separated IDs in ids. */
static int id_listed(const struct buf *ids, const char *id)
{
	const char *p = buf_str(ids);
	size_t n = strlen(id);

	while ((p = strstr(p, id)) != NULL) {
		if ((p == buf_str(ids) || p[-1] == ' ') && (p[n] == '\0' || p[n] == ','))
			return 1;
		p += n;
	}
	return 0;
}

static int do_unsilence(struct silencer *s, struct job *j, struct gh_client *gh)
{
	struct am_api_target t = { 0 };
	struct store_silence *v = NULL;
	struct buf err = BUF_INIT, ids = BUF_INIT;
	size_t n = 0, expired = 0;
	int r = 1;

	if (j->ev.progress && !strncmp(j->ev.progress, "expired:", 8)) {
		(void)buf_adds(&ids, j->ev.progress + 8);
		goto reply;
	}
	target_of(&j->rcv->alertmanager, &t);
	for (size_t k = 0; k < j->nkeys; k++) {  /* a storm's silence is kept for each alert */
		store_silences_free(v, n);
		v = NULL;
		n = 0;
		if (store_silence_active(s->opts.store, j->ev.receiver, j->keys[k], j->now_ms, &v,
					 &n)) {
			r = -1;
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			int was_active = 0;
			enum err rc = ERR_OK;

			if (!id_listed(&ids, v[i].silence_id)) {
				rc = am_api_silence_expire(s->am, &t, v[i].silence_id, &was_active,
							   &err);
				if (rc != ERR_OK && rc != ERR_NOTFOUND) {
					r = retry(s, j, "expire silence", &err);
					goto out;
				}
				if (was_active)
					expired++;
				(void)buf_printf(&ids, "%s%s", ids.len ? ", " : "",
						 v[i].silence_id);
			}
			if (store_silence_expired(s->opts.store, j->ev.receiver, j->keys[k],
						  v[i].silence_id, j->now_ms) != ERR_OK) {
				r = -1;
				goto out;
			}
		}
	}
	count(s, "expired", (double)expired);
	{
		struct buf note = BUF_INIT;

		(void)buf_printf(&note, "expired:%s", buf_str(&ids));
		if (store_event_progress(s->opts.store, j->ev.id, buf_str(&note)) != ERR_OK)
			r = -1;
		buf_release(&note);
		if (r < 0)
			goto out;
	}
reply:
	if (ids.len)
		(void)buf_printf(&j->reply, "@%s expired the silence%s alertbridge made for this "
				 "issue: %s.", j->login, strchr(buf_str(&ids), ',') ? "s" : "",
				 buf_str(&ids));
	else
		(void)buf_printf(&j->reply, "@%s: no active silence that alertbridge made for this "
				 "issue.", j->login);
	buf_reset(&err);
	(void)buf_printf(&err, "expired:%s", buf_str(&ids));
	r = answer(s, j, gh, buf_str(&err));
out:
	store_silences_free(v, n);
	buf_release(&err);
	buf_release(&ids);
	return r;
}

/* Load what j's command needs, then run it. */
static int run(struct silencer *s, struct job *j, const struct config *cfg, struct gh_client *gh)
{
	struct store_event latest = { 0 };
	enum store_event_state state;
	const char *cmd;

	j->cmd = json_loads(j->ev.payload, 0, NULL);
	cmd = jstr(j->cmd, "cmd");
	j->login = jstr(j->cmd, "login");
	j->repo = jstr(j->cmd, "repo");
	j->number = (int64_t)json_integer_value(json_object_get(j->cmd, "number"));
	j->comment_id = (int64_t)json_integer_value(json_object_get(j->cmd, "comment_id"));
	if (!*cmd || !*j->login || !*j->repo || j->number <= 0 || j->comment_id <= 0)
		return dead(s, j, "invalid silence command payload");
	reply_note_take(j);
	{
		/* The signature covers the body, not X-GitHub-Delivery: act once per comment. */
		struct buf key = BUF_INIT;
		int fresh = 0;
		enum err rc;

		(void)buf_printf(&key, "comment:%lld", (long long)j->comment_id);
		rc = store_command_take(s->opts.store, buf_str(&key), j->ev.received_at_ms,
					j->now_ms, cfg->database_retention_ms, &fresh);
		buf_release(&key);
		if (rc != ERR_OK)
			return -1;  /* logged */
		if (!fresh) {
			struct log_line *l = log_begin(LOG_WARN, "github command ignored: its "
						       "comment was acted on before (a replay)");

			log_int(l, "comment_id", j->comment_id);
			log_str(l, "login", j->login);
			log_str(l, "repo", j->repo);
			log_end(l);
			return store_event_done(s->opts.store, j->ev.id, NULL, NULL) == ERR_DB ? -1
											       : 1;
		}
	}
	j->rcv = cfg_receiver_find(cfg, j->ev.receiver);
	if (!j->rcv)
		return dead(s, j, "receiver no longer configured");
	(void)buf_printf(&j->marker, "<!-- alertbridge:silence=%lld -->", (long long)j->comment_id);
	if (!strcmp(cmd, "unknown")) {
		(void)buf_printf(&j->reply, "@%s: unknown command `/%s`. alertbridge knows "
				 "`/silence DURATION [reason]` and `/unsilence`.", j->login,
				 jstr(j->cmd, "word"));
		return answer(s, j, gh, "");
	}
	if (!strcmp(cmd, "invalid")) {
		(void)buf_printf(&j->reply, "@%s: no silence: %s.", j->login, jstr(j->cmd, "error"));
		return answer(s, j, gh, "");
	}
	if (!j->rcv->alertmanager.url) {
		(void)buf_printf(&j->reply, "@%s: no silence: no Alertmanager is configured for "
				 "this alert (alertmanager.url).", j->login);
		return answer(s, j, gh, "");
	}
	if (keys_of(s, j) != ERR_OK)
		return -1;  /* logged */
	if (!strcmp(cmd, "unsilence"))
		return do_unsilence(s, j, gh);
	if (strcmp(cmd, "silence"))
		return dead(s, j, "unknown silence command in payload");
	if (store_event_latest(s->opts.store, "bridge", j->ev.receiver, j->ev.key, &latest,
			       &state) == ERR_OK)
		j->alert = json_loads(latest.payload, 0, NULL);
	store_event_release(&latest);
	if (j->storm)
		storm_shared_labels(s, j);
	return do_silence(s, j, gh);
}

int silence_step(struct silencer *s, const struct config *cfg, struct gh_client *gh,
		 int64_t now_ms)
{
	struct job j;
	enum err rc;
	int r;

	memset(&j, 0, sizeof(j));
	j.now_ms = now_ms;
	rc = store_next_event(s->opts.store, SILENCE_QUEUE, now_ms, &j.ev);
	if (rc == ERR_NOTFOUND)
		return 0;
	if (rc != ERR_OK)
		return -1;
	r = run(s, &j, cfg, gh);
	store_event_release(&j.ev);
	json_decref(j.cmd);
	json_decref(j.alert);
	json_decref(j.shared);
	for (size_t i = 0; i < j.nkeys; i++)
		free(j.keys[i]);
	free(j.keys);
	buf_release(&j.reply);
	buf_release(&j.marker);
	return r;
}
