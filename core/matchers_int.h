/*
 * matchers_int.h - what the parts of the matchers module share: the list the
 * two grammars fill (matchers.c: the classic grammar, the fallback and
 * matching; matchers_utf8.c: the UTF-8 grammar; matchers_re2.c: RE2 regexes
 * on PCRE2).  Not for other modules: they use matchers.h.
 */
#ifndef AB_MATCHERS_INT_H
#define AB_MATCHERS_INT_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "config.h"
#include "err.h"

/*
 * Set errmsg (NULL: no message) to the printf-formatted fmt and return
 * ERR_INVALID: how the UTF-8 grammar and the regex translation refuse
 * their input.  matchers.c.
 */
enum err matchers_fail(struct buf *errmsg, const char *fmt, ...) PRINTF_LIKE(2, 3);

/* Matchers as a grammar reads them: name, op, value; re stays NULL until mvec_compile(). */
struct mvec {
	struct cfg_matcher *v;
	size_t n;
};

#define MVEC_INIT { NULL, 0 }

/* Append (op, name, value); takes ownership of name and value (malloc'd). */
void mvec_push(struct mvec *mv, enum cfg_match_op op, char *name, char *value);
/* Release every matcher and the array; mv may be NULL; leaves it empty. */
void mvec_release(struct mvec *mv);

/*
 * Alertmanager's matcher/parse.Matchers(): text by the UTF-8 grammar into mv
 * (empty on entry), regexes not compiled.  Errors: ERR_INVALID with errmsg
 * worded as Alertmanager words it ("0:1: unexpected ,: expected label name").
 * text must be valid UTF-8 of length n.
 */
enum err matchers_parse_utf8(const char *text, size_t n, struct mvec *mv,
			     struct buf *errmsg) WARN_UNUSED;

/*
 * Compile value as Alertmanager's regexp.Compile("^(?:" + value + ")$") would,
 * on PCRE2; *re receives an opaque handle for mre_match()/mre_free().
 * Errors: ERR_INVALID, errmsg "invalid regex \"value\": why".
 */
enum err mre_compile(const char *value, void **re, struct buf *errmsg) WARN_UNUSED;
/* 1 when the compiled re matches subject[0..n), 0 when not (also on a match error). */
int mre_match(const void *re, const char *subject, size_t n);
/* Free a handle of mre_compile(); NULL is fine. */
void mre_free(void *re);

/*
 * The UTF-8 character at s (n > 0 bytes, valid UTF-8) into *cp; returns its
 * length in bytes (1..4).
 */
size_t mutf8_decode(const char *s, size_t n, uint32_t *cp);
/* Append code point cp (<= 0x10FFFF, not a surrogate) to out as UTF-8. */
void mutf8_append(struct buf *out, uint32_t cp);
/* Go's unicode.IsSpace(cp): the Unicode White_Space characters. */
int mutf8_is_space(uint32_t cp);

#endif
