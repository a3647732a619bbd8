/*
 * issue.c - the bridge's issue state machine (DESIGN.md, "Bridge semantics")
 * and the text rules for GitHub issues: marker, title, body, repo name.
 *
 * Everything here is pure computation on its arguments, so each row of the
 * state table is unit-tested without GitHub or sqlite.
 */
#include "bridge/issue.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/base16.h>

#include "core/codec.h"
#include "core/http_client.h"
#include "core/rfc3339.h"
#include "core/utf8.h"
#include "core/xalloc.h"

#include "core/banned.h"

const char *issue_action_str(enum issue_action a)
{
	switch (a) {
	case ISSUE_NOTHING:
		return "nothing";
	case ISSUE_CREATE:
		return "create";
	case ISSUE_COMMENT_REFIRE:
		return "comment_refire";
	case ISSUE_REOPEN:
		return "reopen";
	case ISSUE_CREATE_LINKED:
		return "create_linked";
	case ISSUE_CLOSE:
		return "close";
	case ISSUE_COMMENT_RESOLVED:
		return "comment_resolved";
	}
	return "unknown";
}

/* ---- the state machine ---- */

static int is_closed(const struct store_issue *row)
{
	return row->state == STORE_ISSUE_CLOSED;
}

static int reason_is(const struct store_issue *row, const char *reason)
{
	return row->state_reason && strcmp(row->state_reason, reason) == 0;
}

/* A resolve's end; a missing or earlier endsAt counts as its startsAt. */
static int64_t resolve_end(const struct issue_event *ev)
{
	return ev->ends_at_ms > ev->starts_at_ms ? ev->ends_at_ms : ev->starts_at_ms;
}

static enum issue_action plan_firing(const struct store_issue *row, const struct issue_event *ev,
				     const struct issue_policy *pol, int64_t now_ms,
				     const char **why)
{
	if (!row) {
		*why = "no issue for the alert yet";
		return ISSUE_CREATE;
	}
	if (ev->starts_at_ms < row->episode_starts_ms) {
		*why = "stale event";
		return ISSUE_NOTHING;
	}
	if (ev->starts_at_ms == row->episode_starts_ms) {
		*why = "same episode";
		return ISSUE_NOTHING;
	}
	if (ev->starts_at_ms < row->resolved_ends_ms) {
		*why = "started before the applied resolve ended";
		return ISSUE_NOTHING;
	}
	if (!is_closed(row)) {
		*why = "new episode, issue open";
		return ISSUE_COMMENT_REFIRE;
	}
	/* closed_at 0 (unknown) counts as long ago: a new linked issue is the safe side. */
	if (row->closed_at_ms == 0 || now_ms - row->closed_at_ms > pol->reopen_window_ms) {
		*why = "closed longer ago than reopen_window";
		return ISSUE_CREATE_LINKED;
	}
	if (reason_is(row, "not_planned")) {
		*why = "closed as not planned";
		return ISSUE_NOTHING;
	}
	if (reason_is(row, "duplicate")) {
		*why = "closed as duplicate";
		return ISSUE_NOTHING;
	}
	*why = "closed within reopen_window";
	return ISSUE_REOPEN;
}

static enum issue_action plan_resolved(const struct store_issue *row,
				       const struct issue_event *ev,
				       const struct issue_policy *pol, const char **why)
{
	int64_t end = resolve_end(ev);

	if (!row) {
		*why = "no issue for the alert";
		return ISSUE_NOTHING;
	}
	if (ev->starts_at_ms < row->episode_starts_ms || end < row->resolved_ends_ms) {
		*why = "stale event";
		return ISSUE_NOTHING;
	}
	if (row->resolved_ends_ms != 0 && end == row->resolved_ends_ms) {
		*why = "resolve already applied";
		return ISSUE_NOTHING;
	}
	if (is_closed(row)) {
		*why = "issue already closed";
		return ISSUE_NOTHING;
	}
	if (pol->auto_close) {
		*why = "resolved, auto_close on";
		return ISSUE_CLOSE;
	}
	*why = "resolved, auto_close off";
	return ISSUE_COMMENT_RESOLVED;
}

enum issue_action issue_plan(const struct store_issue *row, const struct issue_event *ev,
			     const struct issue_policy *pol, int64_t now_ms, const char **why)
{
	const char *reason = NULL;
	enum issue_action a;

	assert(ev && pol);
	if (ev->firing)
		a = plan_firing(row, ev, pol, now_ms, &reason);
	else
		a = plan_resolved(row, ev, pol, &reason);
	if (why)
		*why = reason;
	return a;
}

int issue_firing_current(const struct store_issue *row, const struct issue_event *ev)
{
	return ev->firing && ev->starts_at_ms >= row->episode_starts_ms &&
	       ev->starts_at_ms >= row->resolved_ends_ms;
}

int issue_plan_rests_on_closed(const struct store_issue *row, const struct issue_event *ev,
			       const struct issue_policy *pol, int64_t now_ms)
{
	struct store_issue as_open;

	if (!row || !is_closed(row) || issue_plan(row, ev, pol, now_ms, NULL) != ISSUE_NOTHING)
		return 0;
	as_open = *row;  /* shallow: read only */
	as_open.state = STORE_ISSUE_OPEN;
	as_open.state_reason = NULL;
	as_open.closed_at_ms = 0;
	return issue_plan(&as_open, ev, pol, now_ms, NULL) != ISSUE_NOTHING;
}

static void set_str(char **field, const char *value)
{
	free(*field);
	*field = value ? xstrdup(value) : NULL;
}

static int set_i64(int64_t *field, int64_t value)
{
	if (*field == value)
		return 0;
	*field = value;
	return 1;
}

static int raise_i64(int64_t *field, int64_t value)
{
	return value > *field ? set_i64(field, value) : 0;
}

/* Record ev as seen without a GitHub change; returns whether row changed. */
static int note_seen(struct store_issue *row, const struct issue_event *ev)
{
	int changed = raise_i64(&row->episode_starts_ms, ev->starts_at_ms);

	if (!ev->firing && ev->starts_at_ms >= row->episode_starts_ms)
		changed |= raise_i64(&row->resolved_ends_ms, resolve_end(ev));
	return changed;
}

static void apply_create(struct store_issue *row, enum issue_action a,
			 const struct issue_event *ev, int64_t now_ms)
{
	if (a == ISSUE_CREATE_LINKED) {
		row->previous_number = row->number;
		row->number = 0;
	}
	row->state = STORE_ISSUE_OPEN;
	set_str(&row->state_reason, NULL);
	row->episode_starts_ms = ev->starts_at_ms;
	row->resolved_ends_ms = 0;
	row->closed_at_ms = 0;
	row->created_at_ms = now_ms;
	row->updated_at_ms = now_ms;
}

void issue_apply(struct store_issue *row, enum issue_action a, const struct issue_event *ev,
		 int64_t now_ms)
{
	int changed = 1;

	if (!row)
		return;
	assert(ev);
	switch (a) {
	case ISSUE_NOTHING:
		changed = note_seen(row, ev);
		break;
	case ISSUE_CREATE:
	case ISSUE_CREATE_LINKED:
		apply_create(row, a, ev, now_ms);
		break;
	case ISSUE_COMMENT_REFIRE:
		row->episode_starts_ms = ev->starts_at_ms;
		break;
	case ISSUE_REOPEN:
		row->state = STORE_ISSUE_OPEN;
		set_str(&row->state_reason, "reopened");
		row->closed_at_ms = 0;
		row->episode_starts_ms = ev->starts_at_ms;
		break;
	case ISSUE_CLOSE:
		row->state = STORE_ISSUE_CLOSED;
		set_str(&row->state_reason, "completed");
		row->closed_at_ms = now_ms;
		(void)note_seen(row, ev);
		break;
	case ISSUE_COMMENT_RESOLVED:
		(void)note_seen(row, ev);
		break;
	}
	if (changed)
		row->updated_at_ms = now_ms;
}

/* ---- text rules ---- */

#define MARKER_OPEN "<!--"
#define MARKER_TAG "alertbridge:key="
#define MARKER_RECEIVER_TAG "alertbridge:receiver="
#define MARKER_CLOSE "-->"
#define MARKER_KEY_MAX 128
#define MARKER_RECEIVER_MAX 255  /* decoded bytes */

static int is_key_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

static int is_marker_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

void issue_marker(const char *key, struct buf *out)
{
	(void)buf_printf(out, MARKER_OPEN " " MARKER_TAG "%s " MARKER_CLOSE, key ? key : "");
}

/*
 * The key length of a well-formed marker starting at p ("<!--"), with *key
 * set to its first character; 0 when p does not start one.
 */
static size_t marker_at(const char *p, const char **key)
{
	size_t n = 0;

	p += strlen(MARKER_OPEN);
	while (is_marker_space(*p))
		p++;
	if (strncmp(p, MARKER_TAG, strlen(MARKER_TAG)) != 0)
		return 0;
	p += strlen(MARKER_TAG);
	while (n <= MARKER_KEY_MAX && is_key_char((unsigned char)p[n]))
		n++;
	if (n == 0 || n > MARKER_KEY_MAX)
		return 0;
	*key = p;
	p += n;
	while (is_marker_space(*p))
		p++;
	return strncmp(p, MARKER_CLOSE, strlen(MARKER_CLOSE)) == 0 ? n : 0;
}

void issue_marker_receiver(const char *receiver, const char *key, struct buf *out)
{
	if (receiver && *receiver) {
		(void)buf_adds(out, MARKER_OPEN " " MARKER_RECEIVER_TAG);
		http_url_escape(receiver, out);
		(void)buf_adds(out, " " MARKER_CLOSE " ");
	}
	issue_marker(key, out);
}

/*
 * A well-formed receiver marker "<!-- alertbridge:receiver=R -->" that ends
 * right before end (only marker spaces between) and starts at or after
 * body: R decoded into out, 1; else 0 (out unchanged).
 */
static int receiver_before(const char *body, const char *end, struct buf *out)
{
	struct buf dec = BUF_INIT;
	const char *p = end, *v, *open;
	size_t tag = strlen(MARKER_RECEIVER_TAG);
	int ok = 0;

	while (p > body && is_marker_space(p[-1]))
		p--;
	if ((size_t)(p - body) < strlen(MARKER_CLOSE) ||
	    strncmp(p - strlen(MARKER_CLOSE), MARKER_CLOSE, strlen(MARKER_CLOSE)))
		return 0;
	p -= strlen(MARKER_CLOSE);
	while (p > body && is_marker_space(p[-1]))
		p--;
	/* the value: [A-Za-z0-9._~%-] back to the tag */
	v = p;
	while (v > body && (is_key_char((unsigned char)v[-1]) || v[-1] == '%' || v[-1] == '~'))
		v--;
	if (v == p || (size_t)(v - body) < tag || strncmp(v - tag, MARKER_RECEIVER_TAG, tag))
		return 0;
	open = v - tag;
	while (open > body && is_marker_space(open[-1]))
		open--;
	if ((size_t)(open - body) < strlen(MARKER_OPEN) ||
	    strncmp(open - strlen(MARKER_OPEN), MARKER_OPEN, strlen(MARKER_OPEN)))
		return 0;
	if (http_url_unescape(v, (size_t)(p - v), &dec) != ERR_OK)
		goto out;
	if (dec.len == 0 || dec.len > MARKER_RECEIVER_MAX)
		goto out;
	buf_reset(out);
	(void)buf_add(out, dec.data, dec.len);
	ok = 1;
out:
	buf_release(&dec);
	return ok;
}

int issue_marker_parse_receiver(const char *body, struct buf *receiver_out,
				struct buf *key_out)
{
	const char *p = body, *key = NULL, *at = NULL, *k;
	size_t key_len = 0, n;

	if (!body)
		return 0;
	for (p = strstr(p, MARKER_OPEN); p; p = strstr(p + 1, MARKER_OPEN)) {
		n = marker_at(p, &k);
		if (n) {
			key = k;
			key_len = n;
			at = p;
		}
	}
	if (!key)
		return 0;
	if (receiver_out && !receiver_before(body, at, receiver_out))
		buf_reset(receiver_out);
	buf_reset(key_out);
	(void)buf_add(key_out, key, key_len);
	return 1;
}

/*
 * Whether p (after the marker's startsAt) is the transition
 * "event=resolved-<ms>", ended by a space, tab or line break; *ends_ms then
 * gets its endsAt.
 */
static int resolved_transition(const char *p, int64_t *ends_ms)
{
	static const char word[] = "event=resolved-";
	char *end = NULL;
	long long v;

	while (*p == ' ' || *p == '\t')
		p++;
	if (strncmp(p, word, sizeof(word) - 1))
		return 0;
	p += sizeof(word) - 1;
	if (*p < '0' || *p > '9')
		return 0;
	v = strtoll(p, &end, 10);
	if (*end == '\0' || !strchr(" \t\r\n", *end))
		return 0;
	*ends_ms = (int64_t)v;
	return 1;
}

void issue_episode_fold(const char *text, struct issue_episode_seen *seen)
{
	size_t open_len = strlen(ISSUE_EPISODE_MARKER_OPEN);

	for (const char *p = text ? strstr(text, ISSUE_EPISODE_MARKER_OPEN) : NULL; p;
	     p = strstr(p + open_len, ISSUE_EPISODE_MARKER_OPEN)) {
		const char *v = p + open_len;
		const char *end = strpbrk(v, " \t\r\n");
		struct issue_event ev = { 0 };
		char t[40];

		if (!end || (size_t)(end - v) >= sizeof(t))
			continue;
		memcpy(t, v, (size_t)(end - v));
		t[end - v] = '\0';
		if (rfc3339_parse(t, &ev.starts_at_ms) != ERR_OK || ev.starts_at_ms <= 0)
			continue;
		if (ev.starts_at_ms > seen->starts_ms) {
			seen->starts_ms = ev.starts_at_ms;
			seen->resolved_ends_ms = 0;
		}
		if (ev.starts_at_ms != seen->starts_ms)
			continue;
		if (resolved_transition(end, &ev.ends_at_ms) &&
		    resolve_end(&ev) > seen->resolved_ends_ms)
			seen->resolved_ends_ms = resolve_end(&ev);
	}
}

int issue_marker_parse(const char *body, struct buf *key_out)
{
	return issue_marker_parse_receiver(body, NULL, key_out);
}

/*
 * Length of the UTF-8 sequence at s (n bytes left, n >= 1), or 0 when it is
 * ill-formed.  utf8_valid() holds the rules; this only finds the length the
 * lead byte claims.
 */
static size_t seq_len(const unsigned char *s, size_t n)
{
	size_t len;

	if (s[0] < 0x80)
		len = 1;
	else if (s[0] >= 0xc0 && s[0] < 0xe0)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] < 0xf0)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] < 0xf8)
		len = 4;
	else
		return 0;
	return len <= n && utf8_valid((const char *)s, len) ? len : 0;
}

static int is_line_break(const unsigned char *s, size_t len)
{
	if (len == 1)
		return s[0] == '\n' || s[0] == '\r';
	/* U+2028 LINE SEPARATOR, U+2029 PARAGRAPH SEPARATOR */
	return len == 3 && s[0] == 0xe2 && s[1] == 0x80 && (s[2] == 0xa8 || s[2] == 0xa9);
}

/* C0 controls, DEL and C1 controls (U+0080-U+009F, encoded C2 80-C2 9F). */
static int is_control(const unsigned char *s, size_t len)
{
	if (len == 1)
		return s[0] < 0x20 || s[0] == 0x7f;
	return len == 2 && s[0] == 0xc2 && s[1] < 0xa0;
}

/*
 * Clean the line of raw[0..n) that starts at *pos into line: controls
 * removed, tab as space, invalid bytes as U+FFFD, spaces trimmed.  Leaves
 * *pos after the line break, or at n.  Returns the code points in line.
 */
static size_t clean_line(const unsigned char *raw, size_t n, size_t *pos, struct buf *line)
{
	size_t i = *pos, len, cps = 0, kept_cps = 0, kept_len = 0;

	buf_reset(line);
	while (i < n) {
		len = seq_len(raw + i, n - i);
		if (len == 0) {
			(void)buf_adds(line, "\xef\xbf\xbd"); /* U+FFFD */
			i++;
		} else if (is_line_break(raw + i, len)) {
			i += len;
			break;
		} else if (raw[i] == ' ' || raw[i] == '\t') {
			i++;
			if (line->len) { /* leading spaces are dropped */
				(void)buf_addch(line, ' ');
				cps++;
			}
			continue; /* not kept until something follows */
		} else if (is_control(raw + i, len)) {
			i += len;
			continue;
		} else {
			(void)buf_add(line, raw + i, len);
			i += len;
		}
		cps++;
		kept_len = line->len;
		kept_cps = cps;
	}
	*pos = i;
	buf_truncate(line, kept_len);
	return kept_cps;
}

/* Byte offset of code point number cp in the valid UTF-8 string s. */
static size_t cp_offset(const char *s, size_t cp)
{
	size_t i = 0;

	while (cp > 0 && s[i]) {
		i++;
		while (((unsigned char)s[i] & 0xc0) == 0x80)
			i++;
		cp--;
	}
	return i;
}

void issue_title_clean(const char *raw, struct buf *out)
{
	const unsigned char *s = (const unsigned char *)(raw ? raw : "");
	struct buf line = BUF_INIT;
	size_t n = strlen((const char *)s), pos = 0, cps = 0, end;

	while (pos < n) {
		cps = clean_line(s, n, &pos, &line);
		if (cps)
			break;
	}
	if (cps > ISSUE_TITLE_MAX_CHARS) {
		/* Keep 255 code points, drop spaces before the cut, end with "…". */
		end = cp_offset(buf_str(&line), ISSUE_TITLE_MAX_CHARS - 1);
		while (end > 0 && line.data[end - 1] == ' ')
			end--;
		buf_truncate(&line, end);
		(void)buf_adds(&line, "\xe2\x80\xa6");
	}
	(void)buf_adds(out, line.len ? buf_str(&line) : "alert");
	buf_release(&line);
}

static size_t decimal_digits(size_t v)
{
	size_t d = 1;

	while (v >= 10) {
		v /= 10;
		d++;
	}
	return d;
}

#define TRUNC_NOTE_FMT "\n\n_(truncated by alertbridge: %zu bytes omitted)_"
/* The note's length without its number. */
#define TRUNC_NOTE_FIXED (sizeof(TRUNC_NOTE_FMT) - 1 - 3)

void issue_body_fit(const char *body, const char *marker, struct buf *out)
{
	size_t body_len = body ? strlen(body) : 0;
	size_t tail_len = marker ? 2 + strlen(marker) : 0;
	size_t room, keep;

	if (tail_len <= ISSUE_BODY_MAX_BYTES && body_len <= ISSUE_BODY_MAX_BYTES - tail_len) {
		(void)buf_add(out, body ? body : "", body_len);
	} else {
		/*
		 * Budget the note with as many digits as the whole body has:
		 * the bytes omitted are fewer, so the note is never longer.
		 */
		room = ISSUE_BODY_MAX_BYTES;
		room = room > tail_len ? room - tail_len : 0;
		room = room > TRUNC_NOTE_FIXED + decimal_digits(body_len)
			       ? room - TRUNC_NOTE_FIXED - decimal_digits(body_len)
			       : 0;
		keep = utf8_cut(body, body_len, room);
		(void)buf_add(out, body, keep);
		(void)buf_printf(out, TRUNC_NOTE_FMT, body_len - keep);
	}
	if (marker) {
		(void)buf_adds(out, "\n\n");
		(void)buf_adds(out, marker);
	}
}

void issue_group_key_hash(const char *group_key, char out[65])
{
	unsigned char md[CODEC_SHA256_LEN];
	const char *s = group_key ? group_key : "";

	codec_sha256(s, strlen(s), md);
	base16_encode_update(out, CODEC_SHA256_LEN, md);  /* nettle: lower-case hex */
	out[BASE16_ENCODE_LENGTH(CODEC_SHA256_LEN)] = '\0';
}

#define REPO_OWNER_MAX 39
#define REPO_NAME_MAX 100

static int is_owner_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_';
}

/* Position of the first byte of s[0..n) that is not allowed, or n. */
static size_t first_bad(const char *s, size_t n, int (*ok)(unsigned char))
{
	size_t i = 0;

	while (i < n && ok((unsigned char)s[i]))
		i++;
	return i;
}

enum err issue_repo_valid(const char *repo, struct buf *errmsg)
{
	const char *slash;
	size_t owner_len, name_len, bad;

	if (!repo || !*repo) {
		buf_setf(errmsg, "repo is empty: want owner/name");
		return ERR_INVALID;
	}
	slash = strchr(repo, '/');
	if (!slash || strchr(slash + 1, '/')) {
		buf_setf(errmsg, "repo \"%s\": want owner/name", repo);
		return ERR_INVALID;
	}
	owner_len = (size_t)(slash - repo);
	name_len = strlen(slash + 1);
	if (owner_len == 0 || owner_len > REPO_OWNER_MAX) {
		buf_setf(errmsg, "repo \"%s\": owner must be 1-%d characters", repo,
			 REPO_OWNER_MAX);
		return ERR_INVALID;
	}
	if (name_len == 0 || name_len > REPO_NAME_MAX) {
		buf_setf(errmsg, "repo \"%s\": name must be 1-%d characters", repo, REPO_NAME_MAX);
		return ERR_INVALID;
	}
	bad = first_bad(repo, owner_len, is_owner_char);
	if (bad < owner_len || repo[0] == '-') {
		buf_setf(errmsg,
			 "repo \"%s\": owner may hold only letters, digits, '-' and '_', "
			 "and not start with '-'",
			 repo);
		return ERR_INVALID;
	}
	bad = first_bad(slash + 1, name_len, is_key_char);
	if (bad < name_len || strcmp(slash + 1, ".") == 0 || strcmp(slash + 1, "..") == 0) {
		buf_setf(errmsg,
			 "repo \"%s\": name may hold only letters, digits, '.', '-' and '_', "
			 "and not be \".\" or \"..\"",
			 repo);
		return ERR_INVALID;
	}
	return ERR_OK;
}
