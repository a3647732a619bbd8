/*
 * fuzz_am.c - libFuzzer harness for the webhook payload parser: am_parse() on
 * the fuzzed body (default limits and small ones), then, for every accepted
 * payload, am_event_json() of each alert, which must be JSON that reads back
 * with the alert's fingerprint and labels.
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
	if (!p || p->n_alerts == 0)
		abort();
	for (size_t i = 0; i < p->n_alerts; i++)
		check_event(p, i);
	am_payload_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct am_options small = { 3, 4, 16, 32 };

	parse(data, size, NULL);
	parse(data, size, &small);
	return 0;
}
