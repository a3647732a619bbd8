/*
 * matchers.h - Alertmanager-style label matchers (a receiver's `routes:`,
 * core/config.h struct cfg_matcher), with the syntax and semantics of
 * Alertmanager's `matchers` (https://prometheus.io/docs/alerting/latest/
 * configuration/#matcher):
 *
 *   name op value      op: = != =~ !~
 *   severity=~"critical|page"   team!="ml"   alertname=DiskFull
 *
 * Spaces around the operator are allowed.  The name is
 * [a-zA-Z_:][a-zA-Z0-9_:]* or a double-quoted string; the value is a
 * double-quoted string (escapes \" \\ \n \t) or, unquoted, the rest of the
 * text with surrounding spaces trimmed (no '"' in it).  A label the alert
 * lacks has the value "" (so team!="ml" matches an alert without a team, and
 * team="" one without).  Regexes are fully anchored as Alertmanager anchors
 * them, ^(?:value)$; they are compiled as POSIX extended regular expressions
 * (regcomp, REG_EXTENDED), which covers the RE2 syntax of simple regexes
 * (alternation, classes, repetition, groups) but not RE2's Perl classes
 * (\d, \w) or flags ((?i)): those fail to compile and are reported.
 */
#ifndef AB_MATCHERS_H
#define AB_MATCHERS_H

#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"

/*
 * Parse text into *out (overwritten; release with matcher_release()).
 * Errors: ERR_INVALID with errmsg (may be NULL) saying why, e.g.
 *   expected a label name at "=x"
 *   expected one of = != =~ !~ after "team"
 *   unterminated quoted value
 *   invalid regex "(": parentheses not balanced
 * On error *out holds nothing.
 */
enum err matcher_parse(const char *text, struct cfg_matcher *out, struct buf *errmsg) WARN_UNUSED;

/* Free what m holds and zero it; m may be NULL. */
void matcher_release(struct cfg_matcher *m);

/* 1 when a label whose value is value (NULL: the alert lacks it, i.e. "") satisfies m. */
int matcher_matches(const struct cfg_matcher *m, const char *value);

/* m as Alertmanager writes it, name op "value" (value quoted and escaped), appended to out. */
void matcher_format(const struct cfg_matcher *m, struct buf *out);

/*
 * The route of receiver r an alert takes: the index of the first of
 * r->routes whose matchers all match (a route without matchers matches
 * every alert), or -1 when none does (the receiver's own settings apply).
 * label(ctx, name) gives the alert's value of a label, NULL when it lacks it.
 */
int cfg_route_select(const struct cfg_receiver *r,
		     const char *(*label)(void *ctx, const char *name), void *ctx);

#endif
