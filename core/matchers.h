/*
 * matchers.h - Alertmanager's label matchers (a receiver's `routes:`,
 * core/config.h struct cfg_matcher), parsed and matched exactly as
 * Alertmanager 0.27 and later parse and match a route's `matchers:`
 * (https://prometheus.io/docs/alerting/latest/configuration/#matcher).
 *
 * One `matchers:` entry is a list: `team="ml", severity=~"page|critical"`,
 * optionally in braces, `{team="ml"}`; each matcher is name op value with
 * op one of = != =~ !~.  Alertmanager has two grammars for it:
 *
 *   classic (pkg/labels/parse.go): the name is [a-zA-Z_:][a-zA-Z0-9_:]*,
 *     the value the rest of the matcher, trimmed of spaces, in optional
 *     double quotes, with the escapes \" \\ \n (any other backslash is
 *     literal); matchers are split at commas outside double quotes;
 *   UTF-8 (matcher/parse/, 0.27): a name or value is a double-quoted Go
 *     string (all of Go's escapes: \t \x41 \u00e9 ...) or an unquoted run of
 *     any characters but spaces and { } ! = ~ , \ " ' `.
 *
 * Alertmanager's default (neither --enable-feature=classic-mode nor
 * utf8-strict-mode) is MATCHER_FALLBACK, and so is the config's: the
 * classic grammar's result when it accepts the text, else the UTF-8
 * grammar's, else the error.  Alertmanager logs a warning when it keeps the
 * classic result although the UTF-8 grammar refuses the text or reads it
 * differently; matcher_parse_list() gives that warning to the caller.
 *
 * A label the alert lacks has the value "" (team!="ml" matches an alert
 * without a team, team="" one without).  =~ and !~ take RE2 syntax (Go's
 * regexp, https://github.com/google/re2/wiki/Syntax), fully anchored as
 * Alertmanager anchors it, ^(?:value)$, matched over UTF-8 characters, `.`
 * not matching a newline unless (?s).  They run on PCRE2 (libpcre2-8, UTF
 * mode): what RE2 refuses is refused here before PCRE2 sees it —
 * back-references (\1), lookaround ((?= (?! (?<= (?<!), atomic groups
 * ((?>), possessive and stacked repetitions (a*+ a**), recursion and
 * subroutine calls ((?R) (?1) (?&n)), conditionals ((?(), comments ((?#),
 * branch reset ((?|), verbs ((*ACCEPT) (*UTF)), callouts ((?C), flags other
 * than i m s U, escapes RE2 lacks (\C \G \K \R \X \Z \h \e \cX \g \k \N \o
 * \u \E ...), repetition counts above 1000 (also nested: (a{10}){101}),
 * \p names Go does not know —
 * and RE2's readings of \s (no \v), \v (the character U+000B), octal \123,
 * \x, `{`, $ and (?i)\p{Lu} are kept.  Matching is linear in the label's
 * length (PCRE2's DFA matcher), as RE2's.  Known differences, all rare:
 * (?i) with a script's \p (Go also matches µ for (?i)\p{Greek}); the
 * Unicode version of the tables (PCRE2's against Go's); Go's limit on a
 * whole program's size ("expression too large") is not applied.
 */
#ifndef AB_MATCHERS_H
#define AB_MATCHERS_H

#include <stddef.h>

#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"

/* Which of Alertmanager's grammars reads a matchers text (see the top of this file). */
enum matcher_grammar {
	MATCHER_FALLBACK = 0, /* Alertmanager's default since 0.27: classic, else UTF-8 */
	MATCHER_UTF8,         /* --enable-feature=utf8-strict-mode: matcher/parse only */
	MATCHER_CLASSIC,      /* --enable-feature=classic-mode: pkg/labels only */
};

/*
 * Parse one `matchers:` entry, text (a list of zero or more matchers, NUL-
 * terminated UTF-8), with grammar, and append what it holds to *ms, *count
 * (*ms is reallocated; the caller releases each with matcher_release() and
 * frees *ms).  "" and "{}" hold no matcher.  When warning is not NULL it is
 * reset and, under MATCHER_FALLBACK, set to Alertmanager's warning when the
 * classic grammar's result was kept although the UTF-8 grammar refuses the
 * text or reads it otherwise (the text's UTF-8 form in "suggestion").
 * Errors: ERR_INVALID with errmsg (may be NULL) saying why, e.g.
 *   bad matcher format: "team"            (classic grammar)
 *   matcher value contains unescaped double quote: "x
 *   0:1: unexpected ,: expected label name (UTF-8 grammar; columns in characters)
 *   invalid regex "(": missing closing parenthesis
 *   invalid regex "(a)\1": back-references are not supported by RE2
 *   text is not valid UTF-8
 * Under MATCHER_FALLBACK the classic grammar's error comes first and the
 * UTF-8 grammar's follows ("; UTF-8 grammar: ...").  On error nothing is
 * appended.
 */
enum err matcher_parse_list(const char *text, enum matcher_grammar grammar,
			    struct cfg_matcher **ms, size_t *count, struct buf *warning,
			    struct buf *errmsg) WARN_UNUSED;

/* Free what m holds and zero it; m may be NULL. */
void matcher_release(struct cfg_matcher *m);

/* 1 when a label whose value is value (NULL: the alert lacks it, i.e. "") satisfies m. */
int matcher_matches(const struct cfg_matcher *m, const char *value);

/*
 * m as Alertmanager writes it (pkg/labels Matcher.String()), appended to out:
 * name op "value" with \ " and newline escaped, or, when the name holds a
 * space or one of { } ! = ~ , \ " ' ` (or is empty, which Alertmanager
 * would write unquoted and could not read back), "name" op "value" both as
 * Go quotes them.  The text reads back to m under MATCHER_FALLBACK.
 */
void matcher_format(const struct cfg_matcher *m, struct buf *out);

/*
 * s (not NULL) as a matcher value, appended to out: in double quotes, with
 * \ " and newline escaped (Alertmanager's Matcher.String()); the value
 * matcher_format() writes after a plain name.
 */
void matcher_quote_value(const char *s, struct buf *out);

/*
 * The route of receiver r an alert takes: the index of the first of
 * r->routes whose matchers all match (a route without matchers matches
 * every alert), or -1 when none does (the receiver's own settings apply).
 * label(ctx, name) gives the alert's value of a label, NULL when it lacks it.
 */
int cfg_route_select(const struct cfg_receiver *r,
		     const char *(*label)(void *ctx, const char *name), void *ctx);

#endif
