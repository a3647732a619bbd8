/*
 * gh_assignees.c - which assignees GitHub's 422 rejects (bridge/gh_assignees.h).
 */
#include "bridge/gh_assignees.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/xalloc.h"

#include "core/banned.h"

/* Is login among the rejected values of an error (a string, or an array of them)? */
static int value_names(json_t *value, const char *login)
{
	size_t i;
	json_t *v;

	if (json_is_string(value))
		return !strcmp(json_string_value(value), login);
	json_array_foreach(value, i, v)
		if (json_is_string(v) && !strcmp(json_string_value(v), login))
			return 1;
	return 0;
}

/* An error about the assignees (GitHub says "assignees"; older answers "assignee"). */
static int about_assignees(json_t *e)
{
	const char *field = json_string_value(json_object_get(e, "field"));

	return field && (!strcmp(field, "assignees") || !strcmp(field, "assignee"));
}

const char **gh_assignees_kept(int status, const char *body, size_t len,
			       const char *const *assignees, struct buf *dropped)
{
	json_t *root, *errs, *e;
	size_t n = 0, i, k = 0;
	int about = 0, named = 0;
	size_t before = dropped->len;
	const char **kept;

	if (status != 422 || !body)
		return NULL;
	root = json_loadb(body, len, 0, NULL);
	errs = json_object_get(root, "errors");
	json_array_foreach(errs, i, e) {
		if (about_assignees(e)) {
			about = 1;
			named |= json_object_get(e, "value") != NULL;
		}
	}
	while (assignees[n])
		n++;
	kept = about ? xcalloc(n + 1, sizeof(*kept)) : NULL;
	for (i = 0; kept && i < n; i++) {
		int rejected = !named;
		size_t j;
		json_array_foreach(errs, j, e)
			rejected |= about_assignees(e) &&
				    value_names(json_object_get(e, "value"), assignees[i]);
		if (!rejected)
			kept[k++] = assignees[i];
		else
			(void)buf_printf(dropped, "%s%s", dropped->len > before ? "," : "",
					 assignees[i]);
	}
	json_decref(root);
	if (kept && dropped->len == before) {  /* it named no one we sent: not ours to fix */
		free(kept);
		return NULL;
	}
	return kept;
}
