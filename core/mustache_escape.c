/*
 * mustache_escape.c - the escaping modes of {{name}} (core/mustache.h): the
 * spec's HTML, Slack's three entities, GitHub Markdown for issue bodies and
 * comments, and one line of plain text for issue titles and labels.  Part of
 * the mustache module: mustache.c calls mustache_escape_append() for every
 * escaped interpolation.
 */
#include "mustache.h"

#include <stdint.h>
#include <string.h>

#include "utf8.h"

#include "banned.h"

#define REPLACEMENT "\xef\xbf\xbd" /* U+FFFD, for bytes that are not UTF-8 */
/*
 * U+2060 WORD JOINER: invisible, joins nothing (unlike U+200D, which joins
 * emoji into one glyph), and splits "@octocat" and "#12" for GitHub's
 * reference filters: see markdown_char().
 */
#define WORD_JOINER "\xe2\x81\xa0"

static int is_alnum(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static int is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static int lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* Unicode's explicit bidi formatting characters (UAX #9, table 4): embeddings, overrides, isolates. */
static int is_bidi_control(uint32_t cp)
{
	return (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/* Line breaks: \n, \r (a \r\n pair is one: the caller skips the \n), U+2028, U+2029. */
static int is_line_break(uint32_t cp)
{
	return cp == '\n' || cp == '\r' || cp == 0x2028 || cp == 0x2029;
}

/* C0 controls but the line breaks, DEL, C1 controls. */
static int is_control(uint32_t cp)
{
	return (cp < 0x20 && !is_line_break(cp)) || (cp >= 0x7f && cp <= 0x9f);
}

/* The entity for c in the modes that use entities, or NULL when c goes out as it is. */
static const char *entity(enum mustache_escape mode, char c)
{
	switch (c) {
	case '&':
		return "&amp;";
	case '<':
		return "&lt;";
	case '>':
		return "&gt;";
	case '"':
		return mode == MUSTACHE_ESCAPE_SLACK ? NULL : "&quot;";
	default:
		return NULL;
	}
}

static enum err add_entities(struct buf *out, enum mustache_escape mode, const char *s, size_t n)
{
	size_t i, run = 0;
	enum err rc = ERR_OK;

	for (i = 0; i < n && !rc; i++) {
		const char *e = entity(mode, s[i]);
		if (!e)
			continue;
		rc = buf_add(out, s + run, i - run);
		if (!rc)
			rc = buf_adds(out, e);
		run = i + 1;
	}
	return rc ? rc : buf_add(out, s + run, n - run);
}

/*
 * Where a value starting with 1-9 digits and "." or ")" then a blank or its
 * end would open an ordered list at the start of a line (CommonMark 5.2,
 * "ordered list marker"): the offset of that delimiter, else n.
 */
static size_t list_delimiter(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n && i < 10 && is_digit(s[i]))
		i++;
	if (i == 0 || i > 9 || i >= n || (s[i] != '.' && s[i] != ')'))
		return n;
	if (i + 1 < n && s[i + 1] != ' ' && s[i + 1] != '\t' && s[i + 1] != '\n' &&
	    s[i + 1] != '\r')
		return n;
	return i;
}

/*
 * GitHub Markdown for one ASCII byte s[i] of the value s[0..n); start: nothing
 * of the value is out yet, so s[i] may be at the start of a line of the
 * page.  Appends the byte, escaped or followed by a word joiner as needed.
 *
 * The rules, each for what it stops:
 *  - & < > " as HTML entities (as the spec's HTML mode: raw HTML, autolinks
 *    in <...>, entity references such as &#x202E;, block quotes);
 *  - a backslash before the ASCII punctuation that opens inline syntax
 *    anywhere (GFM spec 0.29, 6.1 "Backslash escapes"): \ ` * ~ [ ] | $
 *    (code spans, emphasis, strikethrough, links and images, table cells,
 *    GitHub's $math$); _ only where it may open or close emphasis (not
 *    between two letters or digits: snake_case stays as it is); # at the
 *    start or after a blank (ATX headings and their closing #s); - + = at
 *    the start (lists, thematic breaks, setext underlines), the . or ) of
 *    "12. " at the start (ordered lists); the ":" of "://" and the "." of
 *    "www." (GFM's extended autolinks, 6.9, are recognised at those bytes);
 *  - a word joiner after @ before a letter or digit, after # before a digit
 *    and after the "-" of "GH-" before a digit: GitHub links (and notifies)
 *    @user, @org/team, #12, owner/repo#12 and GH-12 after the Markdown is
 *    rendered, on the text of the page (outside code and links), where a
 *    backslash is already gone; an invisible character between the two
 *    keeps the text as it reads and takes the reference away (it also stops
 *    e-mail autolinks).
 */
static enum err markdown_char(struct buf *out, const unsigned char *s, size_t n, size_t i,
			      int start, size_t list_at)
{
	unsigned char c = s[i];
	unsigned char prev = i > 0 ? s[i - 1] : 0, next = i + 1 < n ? s[i + 1] : 0;
	const char *e = entity(MUSTACHE_ESCAPE_MARKDOWN, (char)c);
	int escape = 0, join = 0;
	enum err rc;

	if (e)
		return buf_adds(out, e);
	switch (c) {
	case '\\': case '`': case '*': case '~': case '[': case ']': case '|': case '$':
		escape = 1;
		break;
	case '_':
		escape = start || !is_alnum(prev) || !is_alnum(next);
		break;
	case '#':
		escape = start || prev == ' ' || prev == '\t';
		join = is_digit(next);
		break;
	case '-':
		escape = start;
		join = is_digit(next) && i >= 2 && lower(s[i - 2]) == 'g' && lower(prev) == 'h' &&
		       (i == 2 || !is_alnum(s[i - 3]));
		break;
	case '+': case '=':
		escape = start;
		break;
	case '.': case ')':
		escape = i == list_at ||
			 (c == '.' && i >= 3 && lower(s[i - 3]) == 'w' && lower(s[i - 2]) == 'w' &&
			  lower(prev) == 'w' && (i == 3 || !is_alnum(s[i - 4])));
		break;
	case ':':
		escape = next == '/' && i + 2 < n && s[i + 2] == '/';
		break;
	case '@':
		join = is_alnum(next);
		break;
	default:
		break;
	}
	rc = escape ? buf_addch(out, '\\') : ERR_OK;
	if (!rc)
		rc = buf_addch(out, (char)c);
	if (!rc && join)
		rc = buf_adds(out, WORD_JOINER);
	return rc;
}

/*
 * MUSTACHE_ESCAPE_MARKDOWN and MUSTACHE_ESCAPE_LINE: walk s[0..n) by code
 * point.  Both: bytes that are not UTF-8 become U+FFFD, bidi controls are
 * dropped, a tab is a space.  LINE: every run of line breaks and controls is
 * one space, nothing else changes.  MARKDOWN: a line break is "<br>" (the
 * value stays on its line of the page, in a paragraph, a heading or a table
 * cell alike), other controls are dropped, blanks at the start are dropped
 * (four would make an indented code block), ASCII bytes as markdown_char().
 */
static enum err add_text(struct buf *out, enum mustache_escape mode, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, len, list_at;
	int start = 1, gap = 0;
	enum err rc = ERR_OK;

	while (i < n && mode == MUSTACHE_ESCAPE_MARKDOWN && (s[i] == ' ' || s[i] == '\t'))
		i++;
	list_at = i + list_delimiter(u + i, n - i);
	while (i < n && !rc) {
		uint32_t cp = 0;
		int bad = 0;

		len = utf8_decode(s + i, n - i, &cp);
		if (len == 0) {
			cp = 0xfffd;
			len = 1;
			bad = 1;
		}
		if (is_bidi_control(cp)) {
			i += len;
			continue;
		}
		if (is_line_break(cp) || is_control(cp) || cp == '\t') {
			if (cp == '\r' && i + 1 < n && s[i + 1] == '\n')
				len = 2;
			i += len;
			if (mode == MUSTACHE_ESCAPE_LINE)
				gap = 1;
			else if (is_line_break(cp))
				rc = buf_adds(out, "<br>");
			else if (cp == '\t')
				rc = buf_addch(out, ' ');
			start = start && !is_line_break(cp);
			continue;
		}
		if (gap) {
			rc = buf_addch(out, ' ');
			gap = 0;
		}
		if (rc)
			break;
		if (bad)
			rc = buf_adds(out, REPLACEMENT);
		else if (cp < 0x80 && mode == MUSTACHE_ESCAPE_MARKDOWN)
			rc = markdown_char(out, u, n, i, start, list_at);
		else
			rc = buf_add(out, s + i, len);
		start = 0;
		i += len;
	}
	if (!rc && gap)
		rc = buf_addch(out, ' ');
	return rc;
}

enum err mustache_escape_append(struct buf *out, enum mustache_escape mode, const char *s,
				size_t n)
{
	if (!s)
		return ERR_OK;
	switch (mode) {
	case MUSTACHE_ESCAPE_NONE:
		return buf_add(out, s, n);
	case MUSTACHE_ESCAPE_HTML:
	case MUSTACHE_ESCAPE_SLACK:
		return add_entities(out, mode, s, n);
	case MUSTACHE_ESCAPE_MARKDOWN:
	case MUSTACHE_ESCAPE_LINE:
		return add_text(out, mode, s, n);
	}
	return buf_add(out, s, n);
}

void mustache_html_escape(struct buf *out, const char *s)
{
	size_t n = s ? strlen(s) : 0, i = 0, run = 0;

	/* Runs of bytes that stay as they are go out whole. */
	while (i < n) {
		uint32_t cp = 0;
		size_t len = utf8_decode(s + i, n - i, &cp);
		const char *e = len == 1 ? entity(MUSTACHE_ESCAPE_HTML, s[i]) : NULL;

		if (len == 0) {
			e = REPLACEMENT;
			len = 1;
		} else if (is_bidi_control(cp)) {
			e = "";
		}
		if (!e) {
			i += len;
			continue;
		}
		/* Like every buf append that returns nothing: a full out keeps a prefix. */
		if (buf_add(out, s + run, i - run) || buf_adds(out, e))
			return;
		i += len;
		run = i;
	}
	(void)buf_add(out, s + run, n - run);
}
