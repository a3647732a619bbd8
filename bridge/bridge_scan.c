/*
 * bridge_scan.c - the bridge's map rebuilt from GitHub after the database was
 * created (bridge_ensure_scanned(), bridge_int.h; the scan itself is
 * bridge/rebuild.h's).
 */
#include "bridge/bridge_int.h"

#include <stdlib.h>
#include <string.h>

#include "bridge/issue.h"
#include "bridge/rebuild.h"
#include "core/log.h"
#include "core/xalloc.h"
#include "store/store_map.h"

#include "core/banned.h"

/*
 * The receiver's fixed labels (no template, no empty "name:" value; GitHub
 * cannot filter by a comma inside one), comma-separated, for the rebuild's
 * labels= filter; "" when it has none.  Not with routes: their issues may
 * carry other labels.
 */
static void fixed_labels(const struct cfg_receiver *rcv, struct buf *out)
{
	for (size_t i = 0; !rcv->routes_count && i < rcv->labels.count; i++) {
		const char *l = rcv->labels.items[i];
		size_t n = strlen(l);

		if (!n || strstr(l, "{{") || strchr(l, ',') || l[n - 1] == ':')
			continue;
		if (out->len)
			(void)buf_addch(out, ',');
		(void)buf_adds(out, l);
	}
}

/* The repositories of one scan: the event's first, then the others not scanned yet. */
struct scan_repos {
	const char **items;
	size_t count;
};

/*
 * Add repo to the scan when it is an "owner/name" (not a template), not in it
 * yet and not scanned for receiver since the database was created.
 * ERR_DB when the store cannot say.
 */
static enum err add_unscanned(struct bridge *b, const char *receiver, const char *repo,
			      struct scan_repos *r, struct buf *errmsg)
{
	enum err rc;

	if (!repo || strstr(repo, "{{") || issue_repo_valid(repo, NULL) != ERR_OK)
		return ERR_OK;
	for (size_t i = 0; i < r->count; i++)
		if (!strcmp(r->items[i], repo))
			return ERR_OK;
	rc = store_scan_get(b->opts.store, receiver, repo, NULL);
	if (rc == ERR_OK)
		return ERR_OK;
	if (rc != ERR_NOTFOUND) {
		buf_setf(errmsg, "cannot read the scans of %s", repo);
		return rc;
	}
	r->items = xreallocarray(r->items, r->count + 1, sizeof(*r->items));
	r->items[r->count++] = repo;
	return ERR_OK;
}

/* The log line of a scan: rows imported, pages read, the other repositories scanned. */
static void log_scan(const struct work *w, const struct scan_repos *r, enum err rc,
		     int64_t imported, int pages, const char *detail)
{
	struct log_line *l = log_begin(rc ? LOG_WARN : LOG_INFO,
				       rc ? "map rebuild from github failed, will retry"
					  : "map rebuilt from github");
	struct buf also = BUF_INIT;

	for (size_t i = 1; i < r->count; i++)
		(void)buf_printf(&also, "%s%s", also.len ? "," : "", r->items[i]);
	if (rc)
		log_err(l, rc);
	log_str(l, "receiver", w->ev.receiver);
	log_str(l, "repo", w->repo);
	if (also.len)
		log_str(l, "also", buf_str(&also));
	log_int(l, "rows", imported);
	log_int(l, "pages", pages);
	if (rc)
		log_str(l, "detail", detail);
	log_end(l);
	buf_release(&also);
}

enum err bridge_ensure_scanned(struct bridge *b, struct work *w, struct buf *errmsg)
{
	const struct cfg_receiver *rcv = w->rcv;
	struct scan_repos r = { NULL, 0 };
	enum err *skipped = NULL;
	struct buf labels = BUF_INIT;
	int64_t imported = 0;
	int pages = 0;
	enum err rc;

	if (gh_dry_run(b->gh) || issue_repo_valid(w->repo, NULL) != ERR_OK)
		return ERR_OK;  /* no calls; or a repo the create will reject for good */
	rc = add_unscanned(b, w->ev.receiver, w->repo, &r, errmsg);
	if (rc || !r.count)
		goto out;
	rc = add_unscanned(b, w->ev.receiver, rcv->repo, &r, errmsg);
	for (size_t i = 0; !rc && i < rcv->routes_count; i++)
		rc = add_unscanned(b, w->ev.receiver, rcv->routes[i].repo, &r, errmsg);
	if (rc)
		goto out;
	fixed_labels(rcv, &labels);
	skipped = xcalloc(r.count, sizeof(*skipped));
	rc = rebuild_scan(b->gh, b->opts.store, w->ev.receiver, r.items, r.count,
			  buf_str(&labels), rcv->reopen_window_ms, bridge_now_ms(b), skipped,
			  &imported, &pages, errmsg);
	for (size_t i = 0; !rc && i < r.count; i++)
		if (skipped[i] == ERR_OK)  /* one not read is read again with its next event */
			rc = store_scan_done(b->opts.store, w->ev.receiver, r.items[i],
					     bridge_now_ms(b));
	log_scan(w, &r, rc, imported, pages, buf_str(errmsg));
	metric_add(b->m_rebuilt, NULL, (double)imported);
out:
	buf_release(&labels);
	free(r.items);
	free(skipped);
	return rc;
}
