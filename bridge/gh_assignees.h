/*
 * gh_assignees.h - reading GitHub's answer to a create that names assignees
 * it cannot assign (bridge/gh.h, gh_issue_create()).
 */
#ifndef AB_GH_ASSIGNEES_H
#define AB_GH_ASSIGNEES_H

#include <stddef.h>

#include "core/buf.h"

/*
 * GitHub REST: POST /repos/{owner}/{repo}/issues answers 422 "Validation
 * Failed" with errors[] {"field": "assignees" (or "assignee"), "code":
 * "invalid", "value": the login} when an assignee cannot be assigned (no
 * access to the repository, no such user); "value" may also be an array of
 * logins, or absent.  Given such an answer (status, the JSON body of len
 * bytes) to a create that sent assignees (NULL-terminated, not NULL), return
 * the assignees to keep: a malloc'd NULL-terminated array whose entries point
 * into assignees (free() the array only; it may be empty), and append the
 * dropped logins, comma-separated, to *dropped.  Every assignee is dropped
 * when no assignee error names a login.  NULL (dropped untouched) when the
 * answer is not such a 422 or names none of the assignees sent.
 */
const char **gh_assignees_kept(int status, const char *body, size_t len,
			       const char *const *assignees, struct buf *dropped);

#endif
