/*
 * annotate.c - the janitor's kube-janitor compatible annotations and its sweep policy.
 *
 * Pure functions over a sorted annotation array: parsing and formatting kube-janitor's UTC
 * times on core/rfc3339.h's UTC calendar (TZ never matters), TTLs, the
 * mark/unmark merge patches and the sweeper's decision.  See annotate.h for the rules.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/rfc3339.h"
#include "core/xalloc.h"
#include "janitor/annotate.h"

#include "core/banned.h"

#define MS_PER_S INT64_C(1000)
#define MS_PER_DAY INT64_C(86400000)
#define QUOTE_MAX 64 /* bytes of a bad value quoted in an error message */

/* ---- arithmetic ---- */

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t add_sat(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* ---- error messages ---- */

/* Append value quoted, non-printable bytes as \xNN, cut at QUOTE_MAX bytes with "...". */
static void add_quoted(struct buf *b, const char *value)
{
	size_t i;

	(void)buf_addch(b, '"');
	for (i = 0; value[i] != '\0' && i < QUOTE_MAX; i++) {
		unsigned char c = (unsigned char)value[i];

		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
			(void)buf_printf(b, "\\x%02x", c);
		else
			(void)buf_addch(b, (char)c);
	}
	(void)buf_addch(b, '"');
	if (value[i] != '\0')
		(void)buf_adds(b, "...");
}

/* errmsg = `annotation NAME "VALUE": WHY`, naming the annotation for the pod's owner. */
static void bad_annotation(struct buf *errmsg, const char *name, const char *value,
			   const char *why)
{
	if (errmsg == NULL)
		return;
	buf_setf(errmsg, "annotation %s ", name);
	add_quoted(errmsg, value);
	(void)buf_printf(errmsg, ": %s", why);
}

/* ---- annotation sets ---- */

static int kv_cmp(const void *a, const void *b)
{
	const struct janitor_kv *x = a, *y = b;

	return strcmp(x->name, y->name);
}

void janitor_kv_sort(struct janitor_kv *kv, size_t n)
{
	if (n > 1)
		qsort(kv, n, sizeof(*kv), kv_cmp);
}

const char *janitor_kv_get(const struct janitor_kv *kv, size_t n, const char *name)
{
	struct janitor_kv key = { name, NULL };
	const struct janitor_kv *hit;

	if (n == 0)
		return NULL;
	hit = bsearch(&key, kv, n, sizeof(*kv), kv_cmp);
	return hit != NULL ? hit->value : NULL;
}

/* ---- times ---- */

/*
 * Read a number of min_digits..max_digits ASCII digits at *p, advancing *p.  Returns -1 when
 * there are fewer than min_digits.  Like strptime, a field takes as many digits as it may.
 */
static int64_t read_digits(const char **p, int min_digits, int max_digits)
{
	int64_t v = 0;
	int i;

	for (i = 0; i < max_digits && (*p)[i] >= '0' && (*p)[i] <= '9'; i++)
		v = v * 10 + ((*p)[i] - '0');
	if (i < min_digits)
		return -1;
	*p += i;
	return v;
}

static bool read_char(const char **p, char c)
{
	if (**p != c)
		return false;
	(*p)++;
	return true;
}

/*
 * n numbers at *p separated by sep, into v[0..n): the i-th of digits[i][0]..digits[i][1]
 * digits (read_digits()), advancing *p.  false when a number or a separator is missing.
 */
static bool read_fields(const char **p, char sep, const int (*digits)[2], int n, int64_t *v)
{
	for (int i = 0; i < n; i++) {
		if (i > 0 && !read_char(p, sep))
			return false;
		v[i] = read_digits(p, digits[i][0], digits[i][1]);
		if (v[i] < 0)
			return false;
	}
	return true;
}

/* The time of a civil date and time read by parse_civil(): NULL, or why it is none. */
static const char *check_civil(int64_t y, int64_t mo, int64_t d, int64_t h, int64_t mi,
			       int64_t sec, int64_t *out_ms)
{
	if (y < 1)
		return "year out of range 0001-9999";
	if (mo < 1 || mo > 12)
		return "month out of range 1-12";
	if (d < 1 || d > rfc3339_days_in_month(y, (unsigned)mo))
		return "day out of range for the month";
	if (h > 23)
		return "hour out of range 0-23";
	if (mi > 59)
		return "minute out of range 0-59";
	if (sec > 59)
		return "second out of range 0-59";
	*out_ms = rfc3339_from_civil(y, (unsigned)mo, (unsigned)d, (unsigned)h, (unsigned)mi,
				     (unsigned)sec);
	return NULL;
}

/*
 * The three forms share a prefix: date, then optionally "THH:MM", then optionally ":SSZ".  A
 * time without seconds must end there (kube-janitor has no "HH:MMZ" form), and seconds need Z.
 *
 * Why not strptime(3): kube-janitor reads janitor/expires with Python's datetime.strptime
 * ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M", "%Y-%m-%d"), and an annotation one accepts must
 * mean the same to the other.  glibc's strptime differs from Python's where it matters here:
 * it skips white space before a number ("2026- 1-02" passes), reads a year of 1 to 4 digits
 * (Python wants 4), and takes "%d" 31 in any month (timegm() then rolls 2026-02-30 into
 * March); matching Python's vectors (tests/unit/test_annotate.c) would need a check after it
 * for each of these.  So the digits are read here, and the calendar (days in a month, days
 * since the epoch) is core/rfc3339.h's, itself built on timegm(3).
 */
static const char *parse_civil(const char *s, int64_t *out_ms)
{
	static const char FORMS[] =
		"want YYYY-MM-DD, YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SSZ (UTC)";
	static const int DATE_DIGITS[3][2] = { { 4, 4 }, { 1, 2 }, { 1, 2 } };  /* YYYY-M-D */
	static const int TIME_DIGITS[2][2] = { { 1, 2 }, { 1, 2 } };  /* H:M */
	const char *p = s;
	int64_t v[6] = { 0 };  /* year, month, day, hour, minute, second */

	if (!read_fields(&p, '-', DATE_DIGITS, 3, v))
		return FORMS;
	if (*p == 'T' || *p == 't') {
		p++;
		if (!read_fields(&p, ':', TIME_DIGITS, 2, v + 3))
			return FORMS;
		if (read_char(&p, ':')) {
			v[5] = read_digits(&p, 1, 2);
			if (v[5] < 0 || (*p != 'Z' && *p != 'z'))
				return FORMS;
			p++;
		}
	}
	if (*p != '\0')
		return FORMS;
	return check_civil(v[0], v[1], v[2], v[3], v[4], v[5], out_ms);
}

enum err janitor_parse_time(const char *s, int64_t *out_ms, struct buf *errmsg)
{
	const char *why;

	if (s == NULL) {
		buf_setf(errmsg, "no time given");
		return ERR_INVALID;
	}
	why = parse_civil(s, out_ms);
	if (why != NULL) {
		if (errmsg != NULL) {
			buf_reset(errmsg);
			add_quoted(errmsg, s);
			(void)buf_printf(errmsg, ": %s", why);
		}
		return ERR_INVALID;
	}
	return ERR_OK;
}

enum err janitor_format_time(int64_t time_ms, char out[JANITOR_TIME_LEN])
{
	char s[32];

	out[0] = '\0';
	if (time_ms < rfc3339_from_civil(1, 1, 1, 0, 0, 0) ||
	    time_ms >= rfc3339_from_civil(10000, 1, 1, 0, 0, 0))
		return ERR_INVALID;
	rfc3339_format(time_ms, s); /* years 0001-9999: exactly JANITOR_TIME_LEN bytes */
	memcpy(out, s, JANITOR_TIME_LEN);
	return ERR_OK;
}

enum err janitor_parse_ttl(const char *s, int64_t *ttl_ms, struct buf *errmsg)
{
	const char *p = s;
	int64_t v = 0, unit_ms, ms;

	if (s == NULL) {
		buf_setf(errmsg, "no ttl given");
		return ERR_INVALID;
	}
	if (strcasecmp(s, "forever") == 0) {
		*ttl_ms = JANITOR_TTL_FOREVER;
		return ERR_OK;
	}
	while (*p >= '0' && *p <= '9') {
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *p - '0', &v))
			goto too_big;
		p++;
	}
	switch (p > s && *p != '\0' && p[1] == '\0' ? *p : '\0') {
	case 's': unit_ms = MS_PER_S; break;
	case 'm': unit_ms = 60 * MS_PER_S; break;
	case 'h': unit_ms = 3600 * MS_PER_S; break;
	case 'd': unit_ms = MS_PER_DAY; break;
	case 'w': unit_ms = 7 * MS_PER_DAY; break;
	default:
		if (errmsg != NULL) {
			buf_reset(errmsg);
			add_quoted(errmsg, s);
			(void)buf_adds(errmsg, ": want a number and a unit s, m, h, d or w "
					       "(e.g. 60s, 5m, 8h, 7d, 2w), or forever");
		}
		return ERR_INVALID;
	}
	if (__builtin_mul_overflow(v, unit_ms, &ms))
		goto too_big;
	*ttl_ms = ms;
	return ERR_OK;
too_big:
	if (errmsg != NULL) {
		buf_reset(errmsg);
		add_quoted(errmsg, s);
		(void)buf_adds(errmsg, ": too long to count in milliseconds");
	}
	return ERR_INVALID;
}

/* ---- pod state ---- */

/*
 * Parse the time annotation name (if present) into *ms.  On a bad value records the first error
 * in errmsg and returns false.
 */
static bool read_time_ann(const struct janitor_kv *kv, size_t n, const char *name, int64_t *ms,
			  bool first_error, struct buf *errmsg)
{
	const char *value = janitor_kv_get(kv, n, name);
	struct buf why = BUF_INIT;
	int64_t t;
	bool ok = true;

	*ms = JANITOR_NO_TIME;
	if (value == NULL)
		return true;
	if (janitor_parse_time(value, &t, &why) == ERR_OK) {
		*ms = t;
	} else {
		ok = false;
		if (first_error)
			buf_setf(errmsg, "annotation %s %s", name, buf_str(&why));
	}
	buf_release(&why);
	return ok;
}

enum err janitor_pod_state(const struct janitor_kv *kv, size_t n, int64_t creation_ms,
			   struct janitor_pod_state *out, struct buf *errmsg)
{
	const char *ttl = janitor_kv_get(kv, n, JANITOR_ANN_TTL);
	const char *exempt = janitor_kv_get(kv, n, JANITOR_ANN_EXEMPT);
	struct buf why = BUF_INIT;
	bool ok = true;
	int64_t ttl_ms;

	memset(out, 0, sizeof(*out));
	out->ttl_expiry_ms = JANITOR_NO_TIME;
	out->expiry_ms = JANITOR_NO_TIME;
	out->reason = janitor_kv_get(kv, n, JANITOR_ANN_REASON);
	out->notify = janitor_kv_get(kv, n, JANITOR_ANN_NOTIFY);
	out->marked = janitor_kv_get(kv, n, JANITOR_ANN_MARKED_AT) != NULL;

	if (exempt != NULL) {
		if (strcasecmp(exempt, "true") == 0) {
			out->exempt = true;
		} else if (strcasecmp(exempt, "false") != 0) {
			bad_annotation(errmsg, JANITOR_ANN_EXEMPT, exempt,
				       "want \"true\" or \"false\"");
			ok = false;
		}
	}
	if (ttl != NULL) {
		if (janitor_parse_ttl(ttl, &ttl_ms, &why) != ERR_OK) {
			if (ok)
				buf_setf(errmsg, "annotation %s %s", JANITOR_ANN_TTL,
					 buf_str(&why));
			ok = false;
		} else if (ttl_ms == JANITOR_TTL_FOREVER) {
			out->forever = true;
		} else if (ttl_ms > 0) {
			/* kube-janitor acts on a TTL only above zero: "0s" sets no expiry. */
			out->ttl_expiry_ms = add_sat(creation_ms, ttl_ms);
		}
	}
	ok = read_time_ann(kv, n, JANITOR_ANN_EXPIRES, &out->expires_ms, ok, errmsg) && ok;
	ok = read_time_ann(kv, n, JANITOR_ANN_MARKED_AT, &out->marked_at_ms, ok, errmsg) && ok;
	ok = read_time_ann(kv, n, JANITOR_ANN_NOTIFIED_AT, &out->notified_at_ms, ok, errmsg) && ok;

	out->expiry_ms = out->expires_ms;
	if (out->ttl_expiry_ms != JANITOR_NO_TIME &&
	    (out->expiry_ms == JANITOR_NO_TIME || out->ttl_expiry_ms < out->expiry_ms))
		out->expiry_ms = out->ttl_expiry_ms;
	out->invalid = !ok;
	buf_release(&why);
	return ok ? ERR_OK : ERR_INVALID;
}

/* ---- patches ---- */

static int op_cmp(const void *a, const void *b)
{
	const struct janitor_patch_op *x = a, *y = b;

	return strcmp(x->name, y->name);
}

/* Add an op; value NULL removes name.  Callers add each name once and sort at the end. */
static void patch_add(struct janitor_patch *p, const char *name, const char *value)
{
	assert(p->n < JANITOR_PATCH_MAX);
	p->ops[p->n].name = name;
	p->ops[p->n].value = xstrdup(value);
	p->n++;
}

static void patch_sort(struct janitor_patch *p)
{
	if (p->n > 1)
		qsort(p->ops, p->n, sizeof(p->ops[0]), op_cmp);
}

void janitor_patch_release(struct janitor_patch *p)
{
	size_t i;

	if (p == NULL)
		return;
	for (i = 0; i < p->n; i++)
		free(p->ops[i].value);
	memset(p, 0, sizeof(*p));
}

const struct janitor_patch_op *janitor_patch_find(const struct janitor_patch *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (strcmp(p->ops[i].name, name) == 0)
			return &p->ops[i];
	return NULL;
}

enum err janitor_mark_patch(const struct janitor_pod_state *st, int64_t now_ms, int64_t grace_ms,
			    const char *reason, struct janitor_patch *out, struct buf *errmsg)
{
	char when[JANITOR_TIME_LEN];
	int64_t target;
	enum err rc = ERR_OK;

	assert(out->n == 0);
	assert(grace_ms >= 0);
	assert(reason != NULL && reason[0] != '\0');
	if (st->invalid || st->exempt || st->forever) {
		buf_setf(errmsg, "pod not marked: %s",
			 st->invalid ? "it has an invalid janitor annotation"
			 : st->exempt ? "it is exempt (janitor/exempt: \"true\")"
				      : "its janitor/ttl is forever");
		return ERR_INVALID;
	}
	/*
	 * Once marked, a later expires is the owner's snooze: keep it.  Without any expires (a
	 * person removed it while the alert still fires) the mark is renewed.
	 */
	if (st->expires_ms == JANITOR_NO_TIME || !st->marked) {
		/* Round down: an expiry a fraction of a second early, never later. */
		target = floor_div(add_sat(now_ms, grace_ms), MS_PER_S) * MS_PER_S;
		if (st->expires_ms == JANITOR_NO_TIME || st->expires_ms > target) {
			rc = janitor_format_time(target, when);
			if (rc != ERR_OK) {
				buf_setf(errmsg, "expiry out of range: now %lld ms + grace %lld ms",
					 (long long)now_ms, (long long)grace_ms);
				goto out;
			}
			patch_add(out, JANITOR_ANN_EXPIRES, when);
			patch_add(out, JANITOR_ANN_MARKED_EXPIRES, when);
		}
	}
	if (!st->marked) {
		rc = janitor_format_time(now_ms, when);
		if (rc != ERR_OK) {
			buf_setf(errmsg, "time out of range: now %lld ms", (long long)now_ms);
			goto out;
		}
		patch_add(out, JANITOR_ANN_MARKED_AT, when);
	}
	if (st->reason == NULL || strcmp(st->reason, reason) != 0)
		patch_add(out, JANITOR_ANN_REASON, reason);
	patch_sort(out);
out:
	if (rc != ERR_OK)
		janitor_patch_release(out);
	return rc;
}

void janitor_notified_patch(int64_t now_ms, struct janitor_patch *out)
{
	char when[JANITOR_TIME_LEN];
	int64_t up = -floor_div(-now_ms, MS_PER_S) * MS_PER_S;
	enum err rc;

	assert(out->n == 0);
	rc = janitor_format_time(up, when);
	assert(rc == ERR_OK); /* now_ms comes from the clock */
	(void)rc;
	patch_add(out, JANITOR_ANN_NOTIFIED_AT, when);
}

void janitor_unmark_patch(const struct janitor_kv *kv, size_t n, struct janitor_patch *out)
{
	static const char *const ours[] = {
		JANITOR_ANN_MARKED_AT, JANITOR_ANN_MARKED_EXPIRES, JANITOR_ANN_NOTIFIED_AT,
		JANITOR_ANN_POSTPONED, JANITOR_ANN_REASON,
	};
	const char *expires = janitor_kv_get(kv, n, JANITOR_ANN_EXPIRES);
	const char *marked_expires = janitor_kv_get(kv, n, JANITOR_ANN_MARKED_EXPIRES);
	size_t i;

	assert(out->n == 0);
	if (janitor_kv_get(kv, n, JANITOR_ANN_MARKED_AT) == NULL)
		return;
	for (i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		if (janitor_kv_get(kv, n, ours[i]) != NULL)
			patch_add(out, ours[i], NULL);
	if (expires != NULL && marked_expires != NULL && strcmp(expires, marked_expires) == 0)
		patch_add(out, JANITOR_ANN_EXPIRES, NULL);
	patch_sort(out);
}

/* ---- the sweeper's rule ---- */

static struct janitor_decision decide(enum janitor_action action, enum janitor_skip why,
				      int64_t at_ms)
{
	struct janitor_decision d = { action, why, at_ms };

	return d;
}

struct janitor_decision janitor_sweep_decision(const struct janitor_pod_state *st, int64_t now_ms,
					       int64_t notice_lead_ms, bool namespace_excluded,
					       bool being_deleted)
{
	int64_t notice_due, act_at;

	assert(notice_lead_ms >= 0);
	if (namespace_excluded)
		return decide(JANITOR_SKIP, JANITOR_SKIP_EXCLUDED, JANITOR_NO_TIME);
	if (being_deleted)
		return decide(JANITOR_SKIP, JANITOR_SKIP_BEING_DELETED, JANITOR_NO_TIME);
	if (st->invalid)
		return decide(JANITOR_SKIP, JANITOR_SKIP_INVALID, JANITOR_NO_TIME);
	if (st->exempt)
		return decide(JANITOR_SKIP, JANITOR_SKIP_EXEMPT, JANITOR_NO_TIME);
	if (st->forever)
		return decide(JANITOR_SKIP, JANITOR_SKIP_FOREVER, JANITOR_NO_TIME);
	if (st->expiry_ms == JANITOR_NO_TIME)
		return decide(JANITOR_SKIP, JANITOR_SKIP_NO_EXPIRY, JANITOR_NO_TIME);

	if (st->notified_at_ms == JANITOR_NO_TIME) {
		notice_due = add_sat(st->expiry_ms, -notice_lead_ms);
		if (now_ms < notice_due)
			return decide(JANITOR_WAIT, JANITOR_SKIP_NONE, notice_due);
		act_at = add_sat(now_ms, notice_lead_ms);
		if (act_at < st->expiry_ms)
			act_at = st->expiry_ms;
		return decide(JANITOR_NOTIFY, JANITOR_SKIP_NONE, act_at);
	}
	act_at = add_sat(st->notified_at_ms, notice_lead_ms);
	if (act_at < st->expiry_ms)
		act_at = st->expiry_ms;
	if (now_ms < act_at)
		return decide(JANITOR_WAIT, JANITOR_SKIP_NONE, act_at);
	return decide(JANITOR_ACT, JANITOR_SKIP_NONE, JANITOR_NO_TIME);
}

const char *janitor_action_str(enum janitor_action action)
{
	switch (action) {
	case JANITOR_SKIP: return "skip";
	case JANITOR_WAIT: return "wait";
	case JANITOR_NOTIFY: return "notify";
	case JANITOR_ACT: return "act";
	}
	return "unknown";
}

const char *janitor_skip_str(enum janitor_skip why)
{
	switch (why) {
	case JANITOR_SKIP_NONE: return "none";
	case JANITOR_SKIP_EXCLUDED: return "excluded-namespace";
	case JANITOR_SKIP_BEING_DELETED: return "being-deleted";
	case JANITOR_SKIP_INVALID: return "invalid-annotation";
	case JANITOR_SKIP_EXEMPT: return "exempt";
	case JANITOR_SKIP_FOREVER: return "ttl-forever";
	case JANITOR_SKIP_NO_EXPIRY: return "no-expiry";
	}
	return "unknown";
}
