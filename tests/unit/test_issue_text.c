/* test_issue_text.c - the issue text rules (bridge/issue.c): title, body and comment
 * cuts, the group key hash, repo names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "bridge/issue.h"
#include "core/utf8.h"
#include "core/xalloc.h"

/* ---- title ---- */

static void expect_title(const char *raw, const char *want)
{
	struct buf out = BUF_INIT;
	issue_title_clean(raw, &out);
	assert_string_equal(buf_str(&out), want);
	buf_release(&out);
}

static void title_first_non_empty_line_trimmed(void **state)
{
	(void)state;
	expect_title("GPU idle on node-7", "GPU idle on node-7");
	expect_title("\n   \n\t[FIRING:1] HighLoad  \nsecond line", "[FIRING:1] HighLoad");
	expect_title("  \r\nfirst\rsecond", "first");
	expect_title("first\xe2\x80\xa8second", "first");       /* U+2028 */
	expect_title("\xe2\x80\xa9 first", "first");             /* U+2029 */
	expect_title("a\tb", "a b");
}

static void title_controls_removed(void **state)
{
	(void)state;
	expect_title("a\x01" "b\x1b[31mc\x7f" "d", "ab[31mcd");
	expect_title("x\xc2\x85y\xc2\x9f" "z\xc2\xa0!", "xyz\xc2\xa0!"); /* C1 out, NBSP kept */
	expect_title("\x01\x02 \x03", "alert");
	expect_title("caf\xc3\xa9 \xf0\x9f\x94\xa5", "caf\xc3\xa9 \xf0\x9f\x94\xa5");
}

static void title_invalid_utf8_replaced(void **state)
{
	(void)state;
	expect_title("bad\xff" "byte", "bad\xef\xbf\xbd" "byte");
	expect_title("cut\xe2\x82", "cut\xef\xbf\xbd\xef\xbf\xbd");
	expect_title("\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"); /* overlong '/' */
}

static void title_empty_falls_back(void **state)
{
	struct buf out = BUF_INIT;
	(void)state;
	expect_title("", "alert");
	expect_title(NULL, "alert");
	expect_title(" \n\t\r\n  ", "alert");
	/* Appends to what out holds. */
	buf_adds(&out, "T: ");
	issue_title_clean("x", &out);
	assert_string_equal(buf_str(&out), "T: x");
	buf_release(&out);
}

/* Number of code points in the valid UTF-8 string s. */
static size_t cps(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* raw becomes unit n times then tail; out, issue_title_clean() of it. */
static void clean_repeated(struct buf *raw, const char *unit, int n, const char *tail,
			   struct buf *out)
{
	buf_reset(raw);
	for (int i = 0; i < n; i++)
		buf_adds(raw, unit);
	buf_adds(raw, tail);
	buf_reset(out);
	issue_title_clean(buf_str(raw), out);
}

static void title_cut_at_256_code_points(void **state)
{
	struct buf raw = BUF_INIT, out = BUF_INIT;
	(void)state;

	/* Exactly 256 ASCII: kept whole. */
	for (int i = 0; i < 256; i++)
		buf_addch(&raw, (char)('a' + i % 26));
	issue_title_clean(buf_str(&raw), &out);
	assert_int_equal(out.len, 256);
	assert_string_equal(buf_str(&out), buf_str(&raw));

	/* 257: 255 kept and "…". */
	buf_addch(&raw, 'z');
	buf_reset(&out);
	issue_title_clean(buf_str(&raw), &out);
	assert_int_equal(cps(buf_str(&out)), 256);
	assert_memory_equal(out.data, raw.data, 255);
	assert_string_equal(out.data + 255, "\xe2\x80\xa6");

	/* 300 two-byte characters: cut between characters, valid UTF-8. */
	clean_repeated(&raw, "\xc3\xa9", 300, "", &out);
	assert_int_equal(cps(buf_str(&out)), 256);
	assert_int_equal(out.len, 255 * 2 + 3);
	assert_true(utf8_valid(out.data, out.len));

	/* Four-byte characters and a space right before the cut. */
	clean_repeated(&raw, "\xf0\x9f\x94\xa5", 254, " tail of the title", &out);
	assert_int_equal(out.len, 254 * 4 + 3);
	assert_int_equal(cps(buf_str(&out)), 255);
	assert_true(utf8_valid(out.data, out.len));

	/* 256 characters followed by trailing spaces: trimmed, not cut. */
	clean_repeated(&raw, "x", 256, "     \n", &out);
	assert_int_equal(out.len, 256);
	assert_null(strstr(buf_str(&out), "\xe2\x80\xa6"));
	buf_release(&raw);
	buf_release(&out);
}

/* ---- body ---- */

static void body_fits_unchanged(void **state)
{
	struct buf out = BUF_INIT;
	(void)state;
	issue_body_fit("Alert **fired**.", "<!-- alertbridge:key=ab -->", &out);
	assert_string_equal(buf_str(&out), "Alert **fired**.\n\n<!-- alertbridge:key=ab -->");
	buf_reset(&out);
	issue_body_fit("a comment", NULL, &out);
	assert_string_equal(buf_str(&out), "a comment");
	buf_reset(&out);
	issue_body_fit(NULL, "<!-- alertbridge:key=ab -->", &out);
	assert_string_equal(buf_str(&out), "\n\n<!-- alertbridge:key=ab -->");
	buf_release(&out);
}

/* The N of "... N bytes omitted)_" in s, or -1. */
static long omitted(const char *s)
{
	const char *p = strstr(s, "\n\n_(truncated by alertbridge: ");
	char *end = NULL;
	long n;

	if (!p)
		return -1;
	n = strtol(p + strlen("\n\n_(truncated by alertbridge: "), &end, 10);
	return strncmp(end, " bytes omitted)_", 16) == 0 ? n : -1;
}

static void body_at_the_limit_is_kept_one_more_is_cut(void **state)
{
	const char *marker = "<!-- alertbridge:key=0123456789abcdef -->";
	size_t fit = ISSUE_BODY_MAX_BYTES - 2 - strlen(marker);
	char *body = xmalloc(fit + 2);
	struct buf out = BUF_INIT;
	(void)state;

	memset(body, 'b', fit + 1);
	body[fit] = '\0';
	issue_body_fit(body, marker, &out);
	assert_int_equal(out.len, ISSUE_BODY_MAX_BYTES);
	assert_int_equal(omitted(buf_str(&out)), -1);

	body[fit] = 'b';
	body[fit + 1] = '\0';
	buf_reset(&out);
	issue_body_fit(body, marker, &out);
	assert_true(out.len <= ISSUE_BODY_MAX_BYTES);
	assert_true(omitted(buf_str(&out)) > 0);
	free(body);
	buf_release(&out);
}

static void body_of_70000_bytes_is_cut_with_note(void **state)
{
	const char *marker = "<!-- alertbridge:key=0123456789abcdef -->";
	const size_t n = 70000;
	char *body = xmalloc(n + 1);
	struct buf out = BUF_INIT, want_tail = BUF_INIT;
	size_t kept;
	long gone;
	(void)state;

	memset(body, 'x', n);
	body[n] = '\0';
	issue_body_fit(body, marker, &out);
	assert_true(out.len <= ISSUE_BODY_MAX_BYTES);
	assert_true(out.len >= ISSUE_BODY_MAX_BYTES - 1); /* the budget is used, not wasted */
	gone = omitted(buf_str(&out));
	kept = (size_t)(strstr(buf_str(&out), "\n\n_(truncated") - out.data);
	assert_int_equal((size_t)gone + kept, n);
	buf_printf(&want_tail, "\n\n_(truncated by alertbridge: %ld bytes omitted)_\n\n%s", gone,
		   marker);
	assert_string_equal(out.data + kept, buf_str(&want_tail));
	free(body);
	buf_release(&out);
	buf_release(&want_tail);
}

static void body_cut_on_utf8_boundary(void **state)
{
	const char *marker = "<!-- alertbridge:key=0123456789abcdef -->";
	struct buf body = BUF_INIT, out = BUF_INIT;
	size_t kept;
	(void)state;

	/* "€" is 3 bytes; try each of the 3 alignments against the cut point. */
	for (int shift = 0; shift < 3; shift++) {
		buf_reset(&body);
		for (int i = 0; i < shift; i++)
			buf_addch(&body, 'a');
		for (int i = 0; i < 23400; i++)
			buf_adds(&body, "\xe2\x82\xac");
		buf_reset(&out);
		issue_body_fit(buf_str(&body), marker, &out);
		assert_true(out.len <= ISSUE_BODY_MAX_BYTES);
		assert_true(utf8_valid(out.data, out.len));
		kept = (size_t)(strstr(buf_str(&out), "\n\n_(truncated") - out.data);
		assert_int_equal((kept - (size_t)shift) % 3, 0);
		assert_int_equal(kept + (size_t)omitted(buf_str(&out)), body.len);
		assert_int_equal(strcmp(out.data + out.len - strlen(marker), marker), 0);
	}
	buf_release(&body);
	buf_release(&out);
}

static void comment_without_marker_is_cut_with_note(void **state)
{
	char *body = xmalloc(70001);
	struct buf out = BUF_INIT;
	const char *end;
	(void)state;

	memset(body, 'c', 70000);
	body[70000] = '\0';
	issue_body_fit(body, NULL, &out);
	assert_true(out.len <= ISSUE_BODY_MAX_BYTES);
	end = out.data + out.len - strlen(" bytes omitted)_");
	assert_string_equal(end, " bytes omitted)_");
	assert_null(strstr(buf_str(&out), "<!--"));
	free(body);
	buf_release(&out);
}

/* ---- group key hash ---- */

static void group_key_hash_is_sha256_hex(void **state)
{
	char out[65];
	(void)state;
	issue_group_key_hash("abc", out);
	assert_string_equal(out,
			    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	issue_group_key_hash("", out);
	assert_string_equal(out,
			    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	issue_group_key_hash(NULL, out);
	assert_string_equal(out,
			    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

/* ---- repo names ---- */

static void repo_valid_accepts_github_names(void **state)
{
	struct buf err = BUF_INIT;
	char owner39[64], name100[128];
	(void)state;
	assert_int_equal(issue_repo_valid("my-org/cluster-alerts", &err), ERR_OK);
	assert_int_equal(issue_repo_valid("a/b", &err), ERR_OK);
	assert_int_equal(issue_repo_valid("octocat_acme/x.y_z-1", &err), ERR_OK);
	assert_int_equal(issue_repo_valid("o/.github", NULL), ERR_OK);
	memset(owner39, 'o', 39);
	snprintf(owner39 + 39, sizeof(owner39) - 39, "/r");
	assert_int_equal(issue_repo_valid(owner39, &err), ERR_OK);
	memcpy(name100, "o/", 2);
	memset(name100 + 2, 'n', 100);
	name100[102] = '\0';
	assert_int_equal(issue_repo_valid(name100, &err), ERR_OK);
	assert_string_equal(buf_str(&err), "");
	buf_release(&err);
}

static void expect_bad_repo(const char *repo, const char *want)
{
	struct buf err = BUF_INIT;
	assert_int_equal(issue_repo_valid(repo, &err), ERR_INVALID);
	assert_string_equal(buf_str(&err), want);
	assert_int_equal(issue_repo_valid(repo, NULL), ERR_INVALID);
	buf_release(&err);
}

static void repo_valid_rejects_with_reason(void **state)
{
	char owner40[64], name101[128];
	(void)state;
	expect_bad_repo(NULL, "repo is empty: want owner/name");
	expect_bad_repo("", "repo is empty: want owner/name");
	expect_bad_repo("noslash", "repo \"noslash\": want owner/name");
	expect_bad_repo("a/b/c", "repo \"a/b/c\": want owner/name");
	expect_bad_repo("/b", "repo \"/b\": owner must be 1-39 characters");
	expect_bad_repo("a/", "repo \"a/\": name must be 1-100 characters");
	memset(owner40, 'o', 40);
	snprintf(owner40 + 40, sizeof(owner40) - 40, "/r");
	{
		struct buf err = BUF_INIT;
		assert_int_equal(issue_repo_valid(owner40, &err), ERR_INVALID);
		assert_non_null(strstr(buf_str(&err), "o/r\": owner must be 1-39 characters"));
		buf_release(&err);
	}
	memcpy(name101, "o/", 2);
	memset(name101 + 2, 'n', 101);
	name101[103] = '\0';
	{
		struct buf err = BUF_INIT;
		assert_int_equal(issue_repo_valid(name101, &err), ERR_INVALID);
		assert_non_null(strstr(buf_str(&err), "\": name must be 1-100 characters"));
		buf_release(&err);
	}
	expect_bad_repo("-a/b", "repo \"-a/b\": owner may hold only letters, digits, '-' and "
				"'_', and not start with '-'");
	expect_bad_repo("a b/c", "repo \"a b/c\": owner may hold only letters, digits, '-' and "
				 "'_', and not start with '-'");
	expect_bad_repo("a/b?x=1", "repo \"a/b?x=1\": name may hold only letters, digits, '.', "
				   "'-' and '_', and not be \".\" or \"..\"");
	expect_bad_repo("a/..", "repo \"a/..\": name may hold only letters, digits, '.', '-' and "
				"'_', and not be \".\" or \"..\"");
	expect_bad_repo("a/.", "repo \"a/.\": name may hold only letters, digits, '.', '-' and "
			       "'_', and not be \".\" or \"..\"");
	expect_bad_repo("a/b%2e", "repo \"a/b%2e\": name may hold only letters, digits, '.', '-' "
				  "and '_', and not be \".\" or \"..\"");
}

UNIT_MAIN(
	cmocka_unit_test(title_first_non_empty_line_trimmed),
	cmocka_unit_test(title_controls_removed),
	cmocka_unit_test(title_invalid_utf8_replaced),
	cmocka_unit_test(title_empty_falls_back),
	cmocka_unit_test(title_cut_at_256_code_points),
	cmocka_unit_test(body_fits_unchanged),
	cmocka_unit_test(body_at_the_limit_is_kept_one_more_is_cut),
	cmocka_unit_test(body_of_70000_bytes_is_cut_with_note),
	cmocka_unit_test(body_cut_on_utf8_boundary),
	cmocka_unit_test(comment_without_marker_is_cut_with_note),
	cmocka_unit_test(group_key_hash_is_sha256_hex),
	cmocka_unit_test(repo_valid_accepts_github_names),
	cmocka_unit_test(repo_valid_rejects_with_reason))
