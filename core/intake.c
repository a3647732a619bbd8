/*
 * intake.c - the answers both webhook intakes share: Content-Type check,
 * JSON quoting and error bodies, 401 challenge, 503 Retry-After.
 */
#include "intake.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "utf8.h"
#include "banned.h"

int intake_content_type_is_json(const char *ct)
{
	static const char want[] = "application/json";

	if (!ct)
		return 0;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (strncasecmp(ct, want, sizeof(want) - 1) != 0)
		return 0;
	ct += sizeof(want) - 1;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	return *ct == '\0' || *ct == ';';
}

void intake_json_quote(struct buf *b, const char *s)
{
	int valid;

	if (!s)
		s = "";
	valid = utf8_valid(s, strlen(s));
	(void)buf_addch(b, '"');
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\') {
			(void)buf_addch(b, '\\');
			(void)buf_addch(b, (char)*c);
		} else if (*c == '\n') {
			(void)buf_adds(b, "\\n");
		} else if (*c == '\t') {
			(void)buf_adds(b, "\\t");
		} else if (*c == '\r') {
			(void)buf_adds(b, "\\r");
		} else if (*c < 0x20 || *c == 0x7f) {
			(void)buf_printf(b, "\\u%04x", *c);
		} else if (*c >= 0x80 && !valid) {
			(void)buf_adds(b, "\\ufffd");
		} else {
			(void)buf_addch(b, (char)*c);
		}
	}
	(void)buf_addch(b, '"');
}

void intake_error_member(struct srv_response *res, int status, const struct auth *a,
			 const char *msg, const char *field, const char *name, const char *value)
{
	struct buf *b = &res->body;

	res->status = status;
	res->content_type = "application/json";
	(void)buf_adds(b, "{\"error\":");
	intake_json_quote(b, status == 401 ? "unauthorized" : msg);
	if (field && *field) {
		(void)buf_adds(b, ",\"field\":");
		intake_json_quote(b, field);
	}
	if (name) {
		(void)buf_addch(b, ',');
		intake_json_quote(b, name);
		(void)buf_addch(b, ':');
		intake_json_quote(b, value);
	}
	(void)buf_addch(b, '}');
	/* Header names and values here are constants: srv_response_header cannot fail. */
	if (status == 401 && auth_challenge(a))
		(void)!srv_response_header(res, "WWW-Authenticate", auth_challenge(a));
	if (status == 503) {
		char retry[16];

		snprintf(retry, sizeof(retry), "%d", INTAKE_RETRY_AFTER_S);
		(void)!srv_response_header(res, "Retry-After", retry);
	}
}

void intake_error(struct srv_response *res, int status, const struct auth *a, const char *msg,
		  const char *field)
{
	intake_error_member(res, status, a, msg, field, NULL, NULL);
}

