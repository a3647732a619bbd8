/*
 * matchers_re2.c - the regexes of =~ and !~ with Go's RE2 syntax and
 * semantics (https://github.com/google/re2/wiki/Syntax, Go's regexp/syntax),
 * run on PCRE2.  Go's pattern is read once, what RE2 refuses is refused,
 * and a PCRE2 pattern that means the same is written: every escape and
 * class member in a spelling PCRE2 reads one way only (\x{...}), \s as
 * RE2's [\t\n\f\r ], \v as U+000B, a `{` that is no RE2 repetition as \{.
 * Matching uses PCRE2's DFA matcher: no backtracking, so, as with RE2, the
 * time is linear in the label's length whatever the pattern.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "matchers_int.h"

#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"
#include "xalloc.h"
#include "banned.h"

/* Go's limits (regexp/syntax): repetition counts and nesting. */
#define RE2_MAX_REPEAT 1000
#define RE2_MAX_NEST 1000  /* parentheses: PCRE2's limit is set to it */
#define DFA_WORKSPACE 4096  /* ints; PCRE2 asks for more on large patterns: see mre_match() */

#define F_MULTILINE 1  /* (?m) */
#define F_FOLD 2       /* (?i) */

struct tr {
	const char *s;     /* Go's pattern, ^(?:value)$ */
	size_t n, i;
	struct buf out;    /* the PCRE2 pattern */
	struct buf *why;   /* the reason of a refusal */
	int last_repeat;   /* the item before was a repetition */
	unsigned atom;     /* the item before: its copies of the innermost thing (Go's repeatIsValid) */
	unsigned prod[RE2_MAX_NEST + 1];  /* per open group: the most copies along one path */
	size_t depth;      /* groups open */
	unsigned char flags[RE2_MAX_NEST + 1];  /* F_MULTILINE, F_FOLD in force, per group depth */
};

static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_octal(int c) { return c >= '0' && c <= '7'; }
static int is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static int is_alnum(int c) { return is_alpha(c) || is_digit(c); }

static int hex_val(int c)
{
	if (is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int at(const struct tr *t, size_t k)
{
	return k < t->n ? (unsigned char)t->s[k] : -1;
}

/* PCRE2 allocates through xmalloc: out of memory aborts, as everywhere (xalloc.h). */
static void *pcre_malloc(PCRE2_SIZE n, void *data)
{
	(void)data;
	return xmalloc(n);
}

static void pcre_free(void *p, void *data)
{
	(void)data;
	free(p);
}

/* One code point as PCRE2 reads it in and out of classes alike. */
static void emit_cp(struct tr *t, uint32_t cp)
{
	(void)buf_printf(&t->out, "\\x{%x}", (unsigned)cp);
}

/*
 * Go's parseEscape(): the character of a single-character escape at t->i
 * (on the backslash) into *cp, t->i after it.  Octal \0 \012 \123 (\1..\7
 * alone are back-references: refused), \x7F, \x{10FFFF}, \a \f \t \n \r \v,
 * and \ before ASCII punctuation.  Anything else is refused.
 */
static enum err escape_char(struct tr *t, uint32_t *cp)
{
	int c = at(t, t->i + 1);
	uint32_t v = 0;

	if (c < 0)
		return matchers_fail(t->why, "trailing backslash at end of expression");
	if (c < 0x80 && !is_alnum(c)) {
		*cp = (uint32_t)c;
		t->i += 2;
		return ERR_OK;
	}
	switch (c) {
	case '1': case '2': case '3': case '4': case '5': case '6': case '7':
		if (!is_octal(at(t, t->i + 2)))
			return matchers_fail(t->why,
					     "back-references such as \\%c are not supported by RE2", c);
		/* an octal number */
		__attribute__((fallthrough));
	case '0':
		t->i += 1;
		for (int k = 0; k < 3 && is_octal(at(t, t->i)); k++)
			v = v * 8 + (uint32_t)(t->s[t->i++] - '0');
		*cp = v;
		return ERR_OK;
	case 'x':
		t->i += 2;
		if (at(t, t->i) == '{') {
			size_t digits = 0;

			for (t->i++; hex_val(at(t, t->i)) >= 0; t->i++, digits++) {
				v = v * 16 + (uint32_t)hex_val(at(t, t->i));
				if (v > 0x10FFFF)
					return matchers_fail(t->why,
							     "invalid escape sequence: \\x{...} above U+10FFFF");
			}
			if (!digits || at(t, t->i) != '}')
				return matchers_fail(t->why,
						     "invalid escape sequence: \\x{ needs hex digits and }");
			t->i++;
		} else {
			if (hex_val(at(t, t->i)) < 0 || hex_val(at(t, t->i + 1)) < 0)
				return matchers_fail(t->why,
						     "invalid escape sequence: \\x needs two hex digits");
			v = (uint32_t)(hex_val(at(t, t->i)) * 16 + hex_val(at(t, t->i + 1)));
			t->i += 2;
		}
		*cp = v;
		return ERR_OK;
	case 'a': *cp = 7; break;
	case 'f': *cp = '\f'; break;
	case 't': *cp = '\t'; break;
	case 'n': *cp = '\n'; break;
	case 'r': *cp = '\r'; break;
	case 'v': *cp = 0x0b; break;
	case 'C':
		return matchers_fail(t->why, "\\C (any byte) is not supported by RE2");
	default:
		if (c >= 0x80)
			return matchers_fail(t->why,
					     "invalid escape sequence: \\ before a non-ASCII character");
		return matchers_fail(t->why, "invalid escape sequence \\%c (not RE2 syntax)", c);
	}
	t->i += 2;
	return ERR_OK;
}

/* \d \D \w \W \s \S at t->i: written (in_class: as class members); 0 when none is there. */
static int perl_class(struct tr *t, int in_class)
{
	int c = at(t, t->i + 1);

	if (at(t, t->i) != '\\')
		return 0;
	switch (c) {
	case 'd': case 'D': case 'w': case 'W':
		(void)buf_printf(&t->out, "\\%c", c);
		break;
	case 's':  /* RE2: [\t\n\f\r ], no \v (PCRE2's \s has it) */
		(void)buf_adds(&t->out, in_class ? "\\t\\n\\f\\r\\x{20}" : "[\\t\\n\\f\\r\\x{20}]");
		break;
	case 'S':
		(void)buf_adds(&t->out, in_class ? "\\x{0}-\\x{8}\\x{b}\\x{e}-\\x{1f}\\x{21}-\\x{10ffff}"
						 : "[^\\t\\n\\f\\r\\x{20}]");
		break;
	default:
		return 0;
	}
	t->i += 2;
	return 1;
}

/*
 * The names Go's \p{...} knows (regexp/syntax unicodeTable()): "Any", the
 * general categories and the scripts of Go's unicode package
 * (unicode.Categories, unicode.Scripts: Unicode 15.0, Go 1.21), sorted.
 */
static const char *const unicode_names[] = {
	"Adlam", "Ahom", "Anatolian_Hieroglyphs", "Any", "Arabic", "Armenian", "Avestan", "Balinese",
	"Bamum", "Bassa_Vah", "Batak", "Bengali", "Bhaiksuki", "Bopomofo", "Brahmi", "Braille",
	"Buginese", "Buhid", "C", "Canadian_Aboriginal", "Carian", "Caucasian_Albanian", "Cc", "Cf",
	"Chakma", "Cham", "Cherokee", "Chorasmian", "Co", "Common", "Coptic", "Cs", "Cuneiform",
	"Cypriot", "Cypro_Minoan", "Cyrillic", "Deseret", "Devanagari", "Dives_Akuru", "Dogra",
	"Duployan", "Egyptian_Hieroglyphs", "Elbasan", "Elymaic", "Ethiopic", "Georgian",
	"Glagolitic", "Gothic", "Grantha", "Greek", "Gujarati", "Gunjala_Gondi", "Gurmukhi", "Han",
	"Hangul", "Hanifi_Rohingya", "Hanunoo", "Hatran", "Hebrew", "Hiragana", "Imperial_Aramaic",
	"Inherited", "Inscriptional_Pahlavi", "Inscriptional_Parthian", "Javanese", "Kaithi",
	"Kannada", "Katakana", "Kawi", "Kayah_Li", "Kharoshthi", "Khitan_Small_Script", "Khmer",
	"Khojki", "Khudawadi", "L", "Lao", "Latin", "Lepcha", "Limbu", "Linear_A", "Linear_B", "Lisu",
	"Ll", "Lm", "Lo", "Lt", "Lu", "Lycian", "Lydian", "M", "Mahajani", "Makasar", "Malayalam",
	"Mandaic", "Manichaean", "Marchen", "Masaram_Gondi", "Mc", "Me", "Medefaidrin",
	"Meetei_Mayek", "Mende_Kikakui", "Meroitic_Cursive", "Meroitic_Hieroglyphs", "Miao", "Mn",
	"Modi", "Mongolian", "Mro", "Multani", "Myanmar", "N", "Nabataean", "Nag_Mundari",
	"Nandinagari", "Nd", "New_Tai_Lue", "Newa", "Nko", "Nl", "No", "Nushu",
	"Nyiakeng_Puachue_Hmong", "Ogham", "Ol_Chiki", "Old_Hungarian", "Old_Italic",
	"Old_North_Arabian", "Old_Permic", "Old_Persian", "Old_Sogdian", "Old_South_Arabian",
	"Old_Turkic", "Old_Uyghur", "Oriya", "Osage", "Osmanya", "P", "Pahawh_Hmong", "Palmyrene",
	"Pau_Cin_Hau", "Pc", "Pd", "Pe", "Pf", "Phags_Pa", "Phoenician", "Pi", "Po", "Ps",
	"Psalter_Pahlavi", "Rejang", "Runic", "S", "Samaritan", "Saurashtra", "Sc", "Sharada",
	"Shavian", "Siddham", "SignWriting", "Sinhala", "Sk", "Sm", "So", "Sogdian", "Sora_Sompeng",
	"Soyombo", "Sundanese", "Syloti_Nagri", "Syriac", "Tagalog", "Tagbanwa", "Tai_Le", "Tai_Tham",
	"Tai_Viet", "Takri", "Tamil", "Tangsa", "Tangut", "Telugu", "Thaana", "Thai", "Tibetan",
	"Tifinagh", "Tirhuta", "Toto", "Ugaritic", "Vai", "Vithkuqi", "Wancho", "Warang_Citi",
	"Yezidi", "Yi", "Z", "Zanabazar_Square", "Zl", "Zp", "Zs",
};

static int name_cmp(const void *key, const void *elem)
{
	return strcmp(key, *(const char *const *)elem);
}

/*
 * \pN \p{Name} \PN \P{^Name} at t->i (Go's parseUnicodeClass), written as
 * is when Go knows the name.  Returns 1 when written, 0 when there is none,
 * -1 refused.
 */
static int unicode_class(struct tr *t)
{
	size_t start = t->i, k = t->i + 2, name, end;
	char buf[64];

	if (at(t, t->i) != '\\' || (at(t, t->i + 1) != 'p' && at(t, t->i + 1) != 'P') ||
	    at(t, k) < 0)
		return 0;
	if (at(t, k) != '{') {
		name = k;
		end = k + mutf8_decode(t->s + k, t->n - k, &(uint32_t){ 0 });
		k = end;
	} else {
		const char *close = memchr(t->s + k, '}', t->n - k);

		if (!close) {
			matchers_fail(t->why, "invalid character class range: \\%c{ without }",
				      t->s[start + 1]);
			return -1;
		}
		name = k + 1 + (at(t, k + 1) == '^');
		end = (size_t)(close - t->s);
		k = end + 1;
	}
	if (end - name >= sizeof(buf)) {
		matchers_fail(t->why, "invalid character class range: unknown Unicode class");
		return -1;
	}
	memcpy(buf, t->s + name, end - name);
	buf[end - name] = 0;
	if (!bsearch(buf, unicode_names, sizeof(unicode_names) / sizeof(unicode_names[0]),
		     sizeof(unicode_names[0]), name_cmp)) {
		matchers_fail(t->why,
			      "invalid character class range: \\%c{%s} is no Unicode category or "
			      "script Go knows", t->s[start + 1], buf);
		return -1;
	}
	t->i = k;
	/*
	 * (?i)\p{Lu}: Go matches the class's case-folded orbit, every cased letter
	 * (regexp/syntax: unicode.FoldCategory); PCRE2's caseless flag leaves \p
	 * alone, so the cased letters are named: \p{L&}.
	 */
	if ((t->flags[t->depth] & F_FOLD) &&
	    (!strcmp(buf, "Lu") || !strcmp(buf, "Ll") || !strcmp(buf, "Lt"))) {
		int negated = (t->s[start + 1] == 'P') != (t->s[name - 1] == '^');

		(void)buf_printf(&t->out, "\\%c{L&}", negated ? 'P' : 'p');
		return 1;
	}
	(void)buf_add(&t->out, t->s + start, k - start);
	return 1;
}

/* [:alpha:] or [:^alpha:] at t->i inside a class: 1 written, 0 none there, -1 refused. */
static int posix_class(struct tr *t)
{
	static const char *const names[] = { "alnum", "alpha", "ascii", "blank", "cntrl",
					     "digit", "graph", "lower", "print", "punct",
					     "space", "upper", "word", "xdigit" };
	const char *end;
	size_t from = t->i + 2, len;

	if (at(t, t->i) != '[' || at(t, t->i + 1) != ':' || t->i + 2 >= t->n)
		return 0;
	end = strstr(t->s + from, ":]");
	if (!end)
		return 0;
	len = (size_t)(end - (t->s + from));
	if (len && t->s[from] == '^') {
		from++;
		len--;
	}
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (strlen(names[k]) == len && !memcmp(names[k], t->s + from, len)) {
			(void)buf_add(&t->out, t->s + t->i, (size_t)(end + 2 - (t->s + t->i)));
			t->i = (size_t)(end + 2 - t->s);
			return 1;
		}
	matchers_fail(t->why, "invalid character class range: unknown POSIX class");
	return -1;
}

/* One class member's character at t->i: an escape or a UTF-8 character. */
static enum err class_char(struct tr *t, uint32_t *cp)
{
	if (t->i >= t->n)
		return matchers_fail(t->why, "missing closing ]");
	if (t->s[t->i] == '\\')
		return escape_char(t, cp);
	t->i += mutf8_decode(t->s + t->i, t->n - t->i, cp);
	return ERR_OK;
}

/* A bracketed class at t->i (Go's parseClass): each member written in PCRE2's one reading. */
static enum err char_class(struct tr *t)
{
	int first = 1, r;
	uint32_t lo, hi;

	(void)buf_addch(&t->out, '[');
	t->i++;
	if (at(t, t->i) == '^') {
		(void)buf_addch(&t->out, '^');
		t->i++;
	}
	while (t->i >= t->n || t->s[t->i] != ']' || first) {
		first = 0;
		r = posix_class(t);
		if (r == 0)
			r = unicode_class(t);
		if (r < 0)
			return ERR_INVALID;
		if (r > 0 || perl_class(t, 1))
			continue;
		if (class_char(t, &lo))
			return ERR_INVALID;
		hi = lo;
		if (at(t, t->i) == '-' && at(t, t->i + 1) >= 0 && at(t, t->i + 1) != ']') {
			t->i++;
			if (class_char(t, &hi))
				return ERR_INVALID;
			if (hi < lo)
				return matchers_fail(t->why, "invalid character class range");
		}
		emit_cp(t, lo);
		if (hi != lo) {
			(void)buf_addch(&t->out, '-');
			emit_cp(t, hi);
		}
	}
	(void)buf_addch(&t->out, ']');
	t->i++;
	return ERR_OK;
}

/* Go's parseInt(): digits without a leading zero; capped so that too big stays too big. */
static int repeat_int(struct tr *t, size_t *k, long *n)
{
	if (!is_digit(at(t, *k)) || (at(t, *k) == '0' && is_digit(at(t, *k + 1))))
		return 0;
	for (*n = 0; is_digit(at(t, *k)); (*k)++)
		if (*n < 100000000)
			*n = *n * 10 + (t->s[*k] - '0');
	return 1;
}

/* {n} {n,} {n,m} at t->i (Go's parseRepeat); 0 when it is none: the { is then a literal. */
static int repeat_braces(struct tr *t, long *min, long *max, size_t *end)
{
	size_t k = t->i + 1;

	if (!repeat_int(t, &k, min))
		return 0;
	*max = *min;
	if (at(t, k) == ',') {
		k++;
		if (at(t, k) == '}')
			*max = -1;
		else if (!repeat_int(t, &k, max))
			return 0;
	}
	if (at(t, k) != '}')
		return 0;
	*end = k + 1;
	return 1;
}

/* * + ? {n,m} at t->i, with its lazy ?: RE2 refuses a repetition of a repetition (a** a*+). */
static enum err repetition(struct tr *t)
{
	long min = 0, max = 0;
	size_t end = t->i + 1;

	if (t->s[t->i] == '{') {
		if (!repeat_braces(t, &min, &max, &end)) {
			(void)buf_adds(&t->out, "\\{");
			t->i++;
			t->last_repeat = 0;
			t->atom = 1;
			return ERR_OK;
		}
		if (min > RE2_MAX_REPEAT || max > RE2_MAX_REPEAT || (max >= 0 && min > max))
			return matchers_fail(t->why, "invalid repeat count (RE2 allows 0 to 1000)");
		/*
		 * Go (repeatIsValid): nested counted repetitions make at most 1000
		 * copies along any path, (a{10}){100}; a{0} makes none, a{0,} is a*.
		 */
		if (max < 0)
			max = min ? min : 1;
		if (max && t->atom > RE2_MAX_REPEAT / (unsigned)max)
			return matchers_fail(t->why, "invalid repeat count (nested repetitions "
					     "make more than 1000 copies)");
		t->atom *= (unsigned)max;
		if (t->atom > t->prod[t->depth])
			t->prod[t->depth] = t->atom;
	}
	if (t->last_repeat)
		return matchers_fail(t->why, "invalid nested repetition operator (possessive a*+ "
				     "and stacked a** repetitions are not supported by RE2)");
	(void)buf_add(&t->out, t->s + t->i, end - t->i);
	t->i = end;
	if (at(t, t->i) == '?') {
		(void)buf_addch(&t->out, '?');
		t->i++;
	}
	t->last_repeat = 1;
	return ERR_OK;
}

/* What follows "(?" when it is no RE2 group: the name of the construct, for the refusal. */
static const char *perl_group_name(const char *p)
{
	/* Constructs known by their first characters after "(?", and their names. */
	static const struct {
		const char *prefix;
		const char *name;
	} named[] = {
		{ "=", "lookahead (?=" },
		{ "!", "negative lookahead (?!" },
		{ "<=", "lookbehind (?<=" },
		{ "<!", "negative lookbehind (?<!" },
		{ ">", "atomic group (?>" },
		{ "|", "branch reset (?|" },
		{ "#", "comment (?#" },
		{ "(", "conditional (?(" },
		{ "P=", "named back-reference (?P=" },
		{ "C", "callout (?C" },
		{ "'", "named group (?'name'" },
	};

	if (p[0] == 'R' || p[0] == '&' || is_digit(p[0]) ||
	    ((p[0] == '+' || p[0] == '-') && is_digit(p[1])) || (p[0] == 'P' && p[1] == '>'))
		return "recursion or subroutine call (?R (?1 (?&name";
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		if (!strncmp(p, named[i].prefix, strlen(named[i].prefix)))
			return named[i].name;
	return NULL;
}

/* A group opens: it starts with its parent's (?m). */
static enum err open_group(struct tr *t)
{
	if (t->depth == RE2_MAX_NEST)
		return matchers_fail(t->why, "expression nests too deeply");
	t->flags[t->depth + 1] = t->flags[t->depth];
	t->prod[t->depth + 1] = 1;
	t->depth++;
	return ERR_OK;
}

/* "(?" at t->i: a named group (?P<n> (?<n>, or flags (?i) (?i-s:; the rest is refused. */
static enum err perl_group(struct tr *t)
{
	const char *p = t->s + t->i + 2;
	const char *what = perl_group_name(p);
	size_t k;
	int neg = 0, saw = 0, set = 0, clear = 0;

	if (what)
		return matchers_fail(t->why, "%s is not supported by RE2", what);
	if ((p[0] == 'P' && p[1] == '<') || p[0] == '<') {
		const char *name = p + (p[0] == 'P' ? 2 : 1);
		const char *end = strchr(name, '>');

		if (!end || end == name)
			return matchers_fail(t->why, "invalid named capture");
		for (const char *q = name; q < end; q++)
			if (*q != '_' && !is_alnum((unsigned char)*q))
				return matchers_fail(t->why, "invalid named capture");
		(void)buf_adds(&t->out, "(?<");
		(void)buf_add(&t->out, name, (size_t)(end + 1 - name));
		if (open_group(t))
			return ERR_INVALID;
		t->i = (size_t)(end + 1 - t->s);
		t->last_repeat = 0;
		return ERR_OK;
	}
	for (k = t->i + 2; k < t->n; k++) {
		int c = t->s[k];

		if (c == 'i' || c == 'm' || c == 's' || c == 'U') {
			saw = 1;
			if (c == 'm' || c == 'i')
				*(neg ? &clear : &set) |= c == 'm' ? F_MULTILINE : F_FOLD;
		} else if (c == '-' && !neg) {
			neg = 1;
			saw = 0;
		} else if ((c == ':' || c == ')') && !(neg && !saw)) {
			/* (?) sets nothing: RE2 takes it, PCRE2 need not see it */
			if (k > t->i + 2 || c == ':')
				(void)buf_add(&t->out, t->s + t->i, k + 1 - t->i);
			if (c == ':' && open_group(t))
				return ERR_INVALID;
			t->flags[t->depth] = (unsigned char)((t->flags[t->depth] | set) & ~clear);
			t->i = k + 1;
			t->last_repeat = 0;
			return ERR_OK;
		} else {
			break;
		}
	}
	if (k < t->n && t->s[k] != '-' && t->s[k] != ':' && t->s[k] != ')')
		return matchers_fail(t->why, "invalid or unsupported Perl syntax: \"%.*s\" "
				     "(RE2's flags are i, m, s and U)", (int)(k + 1 - t->i),
				     t->s + t->i);
	return matchers_fail(t->why, "invalid or unsupported Perl syntax: a (?flags) group");
}

/* \Q...\E at t->i: the text up to \E (or the end) as literals. */
static void quoted_literal(struct tr *t)
{
	const char *from = t->s + t->i + 2;
	const char *end = strstr(from, "\\E");
	const char *stop = end ? end : t->s + t->n;

	for (const char *q = from; q < stop;) {
		uint32_t cp;

		q += mutf8_decode(q, (size_t)(stop - q), &cp);
		emit_cp(t, cp);
	}
	t->i = (size_t)((end ? end + 2 : stop) - t->s);
}

/* An escape outside a class at t->i. */
static enum err escape(struct tr *t)
{
	int c = at(t, t->i + 1);
	uint32_t cp;
	int r;

	if (perl_class(t, 0))
		return ERR_OK;
	r = unicode_class(t);
	if (r)
		return r < 0 ? ERR_INVALID : ERR_OK;
	if (c == 'b' || c == 'B' || c == 'A' || c == 'z') {
		(void)buf_printf(&t->out, "\\%c", c);
		t->i += 2;
		return ERR_OK;
	}
	if (c == 'Q') {
		quoted_literal(t);
		return ERR_OK;
	}
	if (escape_char(t, &cp))
		return ERR_INVALID;
	emit_cp(t, cp);
	return ERR_OK;
}

/* The whole of Go's pattern, item by item. */
static enum err translate(struct tr *t)
{
	while (t->i < t->n) {
		int c = (unsigned char)t->s[t->i];
		enum err rc = ERR_OK;
		int repeat = 0;
		unsigned atom = 1;  /* a character, class or assertion: one copy */

		switch (c) {
		case '(':
			if (at(t, t->i + 1) == '*')
				return matchers_fail(t->why, "PCRE's (*VERB) is not supported by "
						     "RE2 (missing argument to repetition "
						     "operator: *)");
			if (at(t, t->i + 1) == '?') {
				rc = perl_group(t);
				break;
			}
			(void)buf_addch(&t->out, '(');
			t->i++;
			rc = open_group(t);
			break;
		case ')':
			atom = t->prod[t->depth];  /* the group is the next repetition's operand */
			if (t->depth)
				t->depth--;
			if (atom > t->prod[t->depth])
				t->prod[t->depth] = atom;
			(void)buf_addch(&t->out, ')');
			t->i++;
			break;
		case '$':  /* RE2: the end of the text; with (?m), also before \n (PCRE2's (?m)$) */
			(void)buf_adds(&t->out, t->flags[t->depth] & F_MULTILINE ? "$" : "\\z");
			t->i++;
			break;
		case '|': case '^': case '.':
			(void)buf_addch(&t->out, (char)c);
			t->i++;
			break;
		case '[':
			rc = char_class(t);
			break;
		case '*': case '+': case '?': case '{':
			rc = repetition(t);
			repeat = t->last_repeat;
			atom = t->atom;
			break;
		case '\\':
			rc = escape(t);
			break;
		case ']': case '}':
			(void)buf_printf(&t->out, "\\%c", c);
			t->i++;
			break;
		default: {
			uint32_t cp;
			size_t len = mutf8_decode(t->s + t->i, t->n - t->i, &cp);

			(void)buf_add(&t->out, t->s + t->i, len);
			t->i += len;
		}
		}
		if (rc)
			return rc;
		t->last_repeat = repeat;
		t->atom = atom;
	}
	return ERR_OK;
}

enum err mre_compile(const char *value, void **re, struct buf *errmsg)
{
	struct tr t = { 0 };
	struct buf go = BUF_INIT, why = BUF_INIT;
	pcre2_general_context *gc = NULL;
	pcre2_compile_context *cc = NULL;
	pcre2_code *code = NULL;
	enum err rc = ERR_INVALID;
	int ecode = 0;
	PCRE2_SIZE eoff = 0;

	*re = NULL;
	(void)buf_printf(&go, "^(?:%s)$", value);
	t.s = buf_str(&go);
	t.n = go.len;
	t.why = &why;
	t.prod[0] = 1;
	if (translate(&t))
		goto out;
	gc = pcre2_general_context_create(pcre_malloc, pcre_free, NULL);
	cc = pcre2_compile_context_create(gc);
	(void)pcre2_set_newline(cc, PCRE2_NEWLINE_LF);
	(void)pcre2_set_parens_nest_limit(cc, RE2_MAX_NEST);
	/*
	 * UTF: characters, not bytes.  ALT_CIRCUMFLEX: RE2's (?m)^ also matches
	 * after a final newline.  No DOTALL: `.` is not \n unless (?s).  $ was
	 * written \z where RE2's is the end of the text (DOLLAR_ENDONLY would do
	 * it, but PCRE2 10.42's DFA matcher then ignores (?m) for $).
	 */
	code = pcre2_compile((PCRE2_SPTR)buf_str(&t.out), t.out.len,
			     PCRE2_UTF | PCRE2_ALT_CIRCUMFLEX | PCRE2_NEVER_BACKSLASH_C | PCRE2_NEVER_UCP,
			     &ecode, &eoff, cc);
	if (!code) {
		PCRE2_UCHAR msg[256];

		if (pcre2_get_error_message(ecode, msg, sizeof(msg)) < 0)
			(void)buf_printf(&why, "PCRE2 error %d", ecode);
		else
			(void)buf_adds(&why, (const char *)msg);
		goto out;
	}
	*re = code;
	rc = ERR_OK;
out:
	if (rc)
		buf_setf(errmsg, "invalid regex \"%s\": %s", value, buf_str(&why));
	pcre2_compile_context_free(cc);
	pcre2_general_context_free(gc);
	buf_release(&t.out);
	buf_release(&go);
	buf_release(&why);
	return rc;
}

/*
 * Go reads a byte that starts no valid UTF-8 sequence as U+FFFD (utf8.DecodeRune
 * gives RuneError, width 1): the same for PCRE2, which needs valid UTF-8.
 */
static void go_runes(const char *s, size_t n, struct buf *out)
{
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		size_t len = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;

		if (len <= n - i && utf8_valid(s + i, len)) {
			(void)buf_add(out, s + i, len);
			i += len;
		} else {
			(void)buf_adds(out, "\xef\xbf\xbd");
			i++;
		}
	}
}

int mre_match(const void *re, const char *subject, size_t n)
{
	int ws[DFA_WORKSPACE];
	struct buf fixed = BUF_INIT;
	pcre2_match_data *md;
	int rc;

	if (!utf8_valid(subject, n)) {
		go_runes(subject, n, &fixed);
		subject = buf_str(&fixed);
		n = fixed.len;
	}
	md = pcre2_match_data_create_from_pattern(re, NULL);  /* the pattern's allocator */
	rc = pcre2_dfa_match(re, (PCRE2_SPTR)subject, n, 0, PCRE2_NO_UTF_CHECK, md, NULL, ws,
			     sizeof(ws) / sizeof(ws[0]));
	if (rc == PCRE2_ERROR_DFA_WSSIZE)  /* a very large pattern: the backtracking matcher */
		rc = pcre2_match(re, (PCRE2_SPTR)subject, n, 0, PCRE2_NO_UTF_CHECK, md, NULL);
	pcre2_match_data_free(md);
	buf_release(&fixed);
	return rc >= 0;
}

void mre_free(void *re)
{
	pcre2_code_free(re);
}
