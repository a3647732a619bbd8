/*
 * fuzz_am.c - libFuzzer harness for the webhook payload parser: am_parse() on
 * the fuzzed body (default limits, small ones, and small ones keeping invalid
 * alerts apart), then, for every accepted payload, am_event_json() of each
 * valid alert, which must be JSON that reads back with the alert's
 * fingerprint and labels, and for each invalid one a reason, a status, a
 * 16-hex-digit fingerprint and am_alert_raw_json() that reads back.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/am.h"
#include "core/buf.h"

#include "core/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The string value of v, or "" when v is not a string. */
static const char *str(const json_t *v)
{
	const char *s = json_string_value(v);

	return s ? s : "";
}

static void check_event(const struct am_payload *p, size_t i)
{
	struct buf ev = BUF_INIT;
	json_t *doc, *labels;
	json_error_t jerr;

	if (am_event_json(p, i, &ev) != ERR_OK)
		abort(); /* no max on ev: cannot be ERR_TOOBIG */
	doc = json_loadb(buf_str(&ev), ev.len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		abort(); /* the queue's document must read back */
	if (strcmp(str(json_object_get(doc, "fingerprint")),
		   p->alerts[i].fingerprint))
		abort();
	labels = json_object_get(doc, "labels");
	if (!json_is_object(labels) || json_object_size(labels) != p->alerts[i].labels.n)
		abort();
	for (size_t k = 0; k < p->alerts[i].labels.n; k++) {
		const struct am_label *l = &p->alerts[i].labels.v[k];

		if (strcmp(str(json_object_get(labels, l->name)), l->value))
			abort();
	}
	json_decref(doc);
	buf_release(&ev);
}

static void check_invalid(const struct am_alert *a)
{
	struct buf raw = BUF_INIT;
	json_t *doc;

	if (!a->invalid || !a->invalid_reason || !a->invalid->message[0])
		abort(); /* an invalid alert says why */
	if (strcmp(a->status, "firing") && strcmp(a->status, "resolved"))
		abort(); /* its event needs a status */
	if (strlen(a->fingerprint) != 16 || strspn(a->fingerprint, "0123456789abcdef") != 16)
		abort(); /* and a key */
	if (am_alert_raw_json(a, &raw) != ERR_OK)
		abort();
	doc = json_loadb(buf_str(&raw), raw.len, 0, NULL);
	if (!json_is_object(doc))
		abort();
	json_decref(doc);
	buf_release(&raw);
}

static void parse(const uint8_t *data, size_t size, const struct am_options *opts)
{
	struct am_payload *p = NULL;
	struct am_error err;

	memset(&err, 0x55, sizeof(err));
	if (am_parse((const char *)data, size, opts, &p, &err) != ERR_OK) {
		if (p)
			abort(); /* *out NULL on error */
		if (!memchr(err.field, 0, sizeof(err.field)) ||
		    !memchr(err.message, 0, sizeof(err.message)) || !err.message[0])
			abort(); /* a terminated, non-empty reason */
		return;
	}
	if (!p || p->n_alerts + p->n_invalid == 0 || ((!opts || !opts->keep_invalid_alerts) && p->n_invalid))
		abort();
	for (size_t i = 0; i < p->n_alerts; i++) {
		if (p->alerts[i].invalid)
			abort();
		check_event(p, i);
	}
	for (size_t i = 0; i < p->n_invalid; i++)
		check_invalid(&p->alerts[p->n_alerts + i]);
	am_payload_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct am_options small = { 3, 4, 16, 32, 0 };
	static const struct am_options keep = { 3, 4, 16, 32, 1 };

	parse(data, size, NULL);
	parse(data, size, &small);
	parse(data, size, &keep);
	return 0;
}
