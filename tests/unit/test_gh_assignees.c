/*
 * test_gh_assignees.c - which assignees GitHub's 422 answer to a create
 * rejects (bridge/gh_assignees.h), on answers shaped as GitHub sends them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "bridge/gh_assignees.h"

static const char *const sent[] = { "oncall", "ghost", "nobody", NULL };

/* kept as "a,b" (or NULL when the function returned NULL) and the dropped list. */
static void expect(int status, const char *body, const char *want_kept, const char *want_dropped)
{
	struct buf dropped = BUF_INIT, kept_s = BUF_INIT;
	const char **kept = gh_assignees_kept(status, body, body ? strlen(body) : 0, sent,
					      &dropped);

	if (!want_kept) {
		assert_null(kept);
		assert_int_equal(dropped.len, 0);
	} else {
		assert_non_null(kept);
		for (size_t i = 0; kept[i]; i++)
			buf_printf(&kept_s, "%s%s", i ? "," : "", kept[i]);
		assert_string_equal(buf_str(&kept_s), want_kept);
		assert_string_equal(buf_str(&dropped), want_dropped);
	}
	free(kept);
	buf_release(&dropped);
	buf_release(&kept_s);
}

#define ERR(field, value) \
	"{\"resource\":\"Issue\",\"field\":\"" field "\",\"code\":\"invalid\"" value "}"
#define ANSWER(errors) "{\"message\":\"Validation Failed\",\"errors\":[" errors "]}"

static void named_logins_are_dropped(void **state)
{
	(void)state;
	expect(422, ANSWER(ERR("assignees", ",\"value\":\"ghost\"")), "oncall,nobody", "ghost");
	expect(422, ANSWER(ERR("assignees", ",\"value\":\"ghost\"") ","
			   ERR("assignees", ",\"value\":\"nobody\"")), "oncall", "ghost,nobody");
	expect(422, ANSWER(ERR("assignees", ",\"value\":[\"oncall\",\"ghost\"]")), "nobody",
	       "oncall,ghost");
	expect(422, ANSWER(ERR("assignee", ",\"value\":\"nobody\"")), "oncall,ghost", "nobody");
}

static void unnamed_error_drops_everyone(void **state)
{
	(void)state;
	expect(422, ANSWER(ERR("assignees", "")), "", "oncall,ghost,nobody");
}

static void other_answers_are_not_about_assignees(void **state)
{
	(void)state;
	expect(422, ANSWER(ERR("title", ",\"value\":\"ghost\"")), NULL, NULL);
	expect(422, ANSWER(ERR("assignees", ",\"value\":\"someone-else\"")), NULL, NULL);
	expect(400, ANSWER(ERR("assignees", ",\"value\":\"ghost\"")), NULL, NULL);
	expect(422, "not json", NULL, NULL);
	expect(422, NULL, NULL, NULL);
	expect(422, "{\"message\":\"Validation Failed\"}", NULL, NULL);
}

UNIT_MAIN(
	cmocka_unit_test(named_logins_are_dropped),
	cmocka_unit_test(unnamed_error_drops_everyone),
	cmocka_unit_test(other_answers_are_not_about_assignees))
