/*
 * store_schema.c - the store's schema migrations, one list per engine
 * (db.h): step i takes schema version i to i + 1 and runs in its own
 * transaction (store.c, migrate()).  Both lists have the same length: a
 * future step is appended to BOTH lists, in each engine's dialect; never
 * edit a step that has shipped.  Steps only add (tables, indexes, columns
 * with defaults): during a rolling update on PostgreSQL, replicas of the
 * previous version keep working against the new schema (docs/operating.md, Upgrade).  sqlite's file vacuum mode is not a step
 * (VACUUM cannot run in a transaction): db_sqlite.c sets it at open.
 */
#include "store/store_int.h"

#include <stddef.h>

#include "core/banned.h"

static const char *const sqlite_migrations[] = {
	/* 1: the event inbox and the issue map. */
	"CREATE TABLE events ("
	"  id INTEGER PRIMARY KEY,"
	"  kind TEXT NOT NULL,"
	"  receiver TEXT NOT NULL,"
	"  key TEXT NOT NULL,"
	"  status TEXT NOT NULL,"
	"  starts_at_ms INTEGER NOT NULL,"
	"  ends_at_ms INTEGER NOT NULL DEFAULT 0,"
	"  payload TEXT NOT NULL,"
	"  received_at_ms INTEGER NOT NULL,"
	"  attempts INTEGER NOT NULL DEFAULT 0,"
	"  next_attempt_at_ms INTEGER NOT NULL DEFAULT 0,"
	"  last_error TEXT,"
	"  progress TEXT,"
	"  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done', 'dead')),"
	"  done_at_ms INTEGER"
	");"
	/* store_next_event(): pending events of a kind in id order, small. */
	"CREATE INDEX events_pending ON events (kind, id, next_attempt_at_ms)"
	"  WHERE state = 'pending';"
	/* The per-(receiver, key) hold-back of store_next_event(). */
	"CREATE INDEX events_pending_key ON events (kind, receiver, key, id)"
	"  WHERE state = 'pending';"
	/*
	 * store_dead_count() and store_prune_done().  Partial, so that an
	 * insert (always 'pending') on the intake's hot path touches neither.
	 */
	"CREATE INDEX events_dead ON events (id) WHERE state = 'dead';"
	"CREATE INDEX events_done ON events (done_at_ms) WHERE state = 'done';"
	"CREATE TABLE issues ("
	"  receiver TEXT NOT NULL,"
	"  key TEXT NOT NULL,"
	"  repo TEXT NOT NULL,"
	"  number INTEGER NOT NULL DEFAULT 0,"
	"  state TEXT NOT NULL,"
	"  state_reason TEXT,"
	"  episode_starts_ms INTEGER NOT NULL DEFAULT 0,"
	"  resolved_ends_ms INTEGER NOT NULL DEFAULT 0,"
	"  closed_at_ms INTEGER NOT NULL DEFAULT 0,"
	"  previous_number INTEGER NOT NULL DEFAULT 0,"
	"  created_at_ms INTEGER NOT NULL,"
	"  updated_at_ms INTEGER NOT NULL,"
	"  dead_reason TEXT,"
	"  PRIMARY KEY (receiver, key)"
	") WITHOUT ROWID;",
	/* 2: the janitor's Slack outbox. */
	"CREATE TABLE notices ("
	"  id INTEGER PRIMARY KEY,"
	"  namespace TEXT NOT NULL,"
	"  pod TEXT NOT NULL,"
	"  uid TEXT NOT NULL,"
	"  kind TEXT NOT NULL CHECK (kind IN ('notice', 'reminder', 'cancelled', 'deleted')),"
	"  expires_ms INTEGER NOT NULL DEFAULT 0,"
	"  notify TEXT,"
	"  owner TEXT,"
	"  channel TEXT,"
	"  thread_ts TEXT,"
	"  text TEXT NOT NULL,"
	"  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'dead')),"
	"  attempts INTEGER NOT NULL DEFAULT 0,"
	"  next_attempt_at_ms INTEGER NOT NULL DEFAULT 0,"
	"  created_at_ms INTEGER NOT NULL,"
	"  sent_at_ms INTEGER NOT NULL DEFAULT 0,"
	"  slack_channel_id TEXT,"
	"  slack_ts TEXT,"
	"  last_error TEXT"
	");"
	"CREATE INDEX notices_pending ON notices (next_attempt_at_ms, id) WHERE state = 'pending';"
	"CREATE INDEX notices_pod ON notices (uid, kind, id);",
	/* 3: storm summaries and the alerts folded into them (bridge/storm.h). */
	"CREATE TABLE storm_summaries ("
	"  id INTEGER PRIMARY KEY,"
	"  receiver TEXT NOT NULL,"
	"  repo TEXT NOT NULL,"
	"  alertname TEXT NOT NULL,"
	"  marker_key TEXT NOT NULL,"
	"  number INTEGER NOT NULL DEFAULT 0,"
	"  state TEXT NOT NULL CHECK (state IN ('creating', 'open', 'closed')),"
	"  created_at_ms INTEGER NOT NULL,"
	"  synced_at_ms INTEGER NOT NULL DEFAULT 0,"
	"  next_sync_ms INTEGER NOT NULL DEFAULT 0,"
	"  dirty INTEGER NOT NULL DEFAULT 0"
	");"
	"CREATE INDEX storm_summaries_live ON storm_summaries (receiver, repo, alertname)"
	"  WHERE state != 'closed';"
	"CREATE TABLE storm_members ("
	"  receiver TEXT NOT NULL,"
	"  key TEXT NOT NULL,"
	"  summary_id INTEGER NOT NULL,"
	"  firing INTEGER NOT NULL,"
	"  starts_at_ms INTEGER NOT NULL,"
	"  ends_at_ms INTEGER NOT NULL DEFAULT 0,"
	"  line TEXT NOT NULL DEFAULT '',"
	"  PRIMARY KEY (receiver, key)"
	") WITHOUT ROWID;"
	"CREATE INDEX storm_members_summary ON storm_members (summary_id, firing);",
	/*
	 * 4: repositories whose issues the bridge has scanned for markers to
	 * rebuild the map (a lost database), once per (receiver, repo).
	 */
	"CREATE TABLE repo_scans ("
	"  receiver TEXT NOT NULL,"
	"  repo TEXT NOT NULL,"
	"  done_at_ms INTEGER NOT NULL,"
	"  PRIMARY KEY (receiver, repo)"
	") WITHOUT ROWID;",
	/*
	 * 5: what the bridge remembers of an issue_per: group issue (bridge/group.h):
	 * its members' states and the pending body update.
	 */
	"CREATE TABLE group_states ("
	"  receiver TEXT NOT NULL,"
	"  key TEXT NOT NULL,"
	"  members TEXT NOT NULL,"
	"  payload TEXT NOT NULL,"
	"  dirty INTEGER NOT NULL DEFAULT 0,"
	"  synced_at_ms INTEGER NOT NULL DEFAULT 0,"
	"  next_sync_ms INTEGER NOT NULL DEFAULT 0,"
	"  PRIMARY KEY (receiver, key)"
	") WITHOUT ROWID;"
	"CREATE INDEX group_states_dirty ON group_states (next_sync_ms) WHERE dirty = 1;",
	/*
	 * 6: dead letters by alert, so a new dead letter finds the identical
	 * older ones it replaces (S_EV_DEAD_SUPERSEDE).
	 */
	"CREATE INDEX events_dead_key ON events (kind, receiver, key) WHERE state = 'dead';",
	/*
	 * 7: repeats (store_enqueue()): what else than status, startsAt and
	 * endsAt an event's state is (NULL: not compared; cleared by map forget),
	 * and the newest such event of a key found by index.
	 */
	"ALTER TABLE events ADD COLUMN repeat_state TEXT;"
	"CREATE INDEX events_repeat ON events (kind, receiver, key, id)"
	"  WHERE repeat_state IS NOT NULL;",
	/*
	 * 8: digests (store_digest_add()): one Slack message for several
	 * notices of one owner, or several replies in one thread.  A member
	 * notice names its digest (digest_id) and carries its line of the
	 * digest's table (line, JSON); the digest row is the message.
	 */
	"CREATE TABLE digests ("
	"  id INTEGER PRIMARY KEY,"
	"  kind TEXT NOT NULL,"
	"  channel TEXT NOT NULL,"
	"  thread_ts TEXT,"
	"  part INTEGER NOT NULL,"
	"  parts INTEGER NOT NULL,"
	"  text TEXT NOT NULL,"
	"  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'dead')),"
	"  attempts INTEGER NOT NULL DEFAULT 0,"
	"  next_attempt_at_ms INTEGER NOT NULL DEFAULT 0,"
	"  created_at_ms INTEGER NOT NULL,"
	"  sent_at_ms INTEGER NOT NULL DEFAULT 0,"
	"  slack_channel_id TEXT,"
	"  slack_ts TEXT,"
	"  last_error TEXT"
	");"
	"CREATE INDEX digests_pending ON digests (next_attempt_at_ms, id) WHERE state = 'pending';"
	"ALTER TABLE notices ADD COLUMN digest_id INTEGER;"
	"ALTER TABLE notices ADD COLUMN line TEXT;"
	"CREATE INDEX notices_digest ON notices (digest_id) WHERE digest_id IS NOT NULL;",
	/*
	 * 9: what the on-call page shows of an issue without asking GitHub: the
	 * alert's name and the title as created (NULL for rows made
	 * before, or rebuilt from GitHub).
	 */
	"ALTER TABLE issues ADD COLUMN alertname TEXT;"
	"ALTER TABLE issues ADD COLUMN title TEXT;",
	/*
	 * 10: conditional reads (bridge.c refresh): the ETag GitHub gave the
	 * issue's last answer, and its labels then (a JSON array of names), so
	 * a 304 is answered from the row.  NULL: read unconditionally.
	 */
	"ALTER TABLE issues ADD COLUMN etag TEXT;"
	"ALTER TABLE issues ADD COLUMN labels TEXT;",
	/*
	 * 11: silences from GitHub issues (store_silences.h): the deliveries
	 * taken (X-GitHub-Delivery, pruned after database_retention), the
	 * silences made for a map row, and the map row of an issue by repository
	 * and number (store_issue_by_number(): GitHub compares names ignoring case).
	 */
	"CREATE TABLE gh_deliveries ("
	"  id TEXT PRIMARY KEY,"
	"  received_at_ms INTEGER NOT NULL"
	");"
	"CREATE INDEX gh_deliveries_age ON gh_deliveries (received_at_ms);"
	"CREATE TABLE silences ("
	"  receiver TEXT NOT NULL,"
	"  key TEXT NOT NULL,"
	"  silence_id TEXT NOT NULL,"
	"  created_by TEXT NOT NULL,"
	"  ends_at_ms INTEGER NOT NULL,"
	"  created_at_ms INTEGER NOT NULL,"
	"  expired_at_ms INTEGER NOT NULL DEFAULT 0,"
	"  PRIMARY KEY (receiver, key, silence_id)"
	");"
	"CREATE INDEX issues_repo_number ON issues (lower(repo), number);",
	/*
	 * 12: the link of the issue a new one superseded (previous_number), as
	 * GitHub gave it (html_url): after a reroute it lives in another
	 * repository than the row's.  NULL: built from the row's repo.
	 */
	"ALTER TABLE issues ADD COLUMN previous_url TEXT;",
	/*
	 * 13: the GitHub content budget's spending (store_budget.h): each
	 * mutating request's time, recorded before it is sent, by credential
	 * owner ("" the default), so that a new process (or replica) goes on
	 * with the budget of the one before it.  Pruned to the last hour.
	 */
	"CREATE TABLE gh_budget ("
	"  owner TEXT NOT NULL,"
	"  sent_at_ms INTEGER NOT NULL"
	");"
	"CREATE INDEX gh_budget_sent ON gh_budget (sent_at_ms);",
};

/*
 * PostgreSQL: steps 1..3 create the schema of sqlite's version 10 (BIGINT
 * for every integer, an identity column where sqlite has its rowid, the same
 * partial indexes; three steps only because C bounds a string literal's
 * length); steps 4..10 are empty, so that both engines count the same
 * versions.  Every integer column is BIGINT: most hold
 * milliseconds since the epoch, which overflow INTEGER.
 */
static const char *const pg_migrations[] = {
	/* 1..3: sqlite's versions 1..10.  1: the event inbox and the issue map. */
	"CREATE TABLE events ("
	"  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
	"  kind TEXT NOT NULL,"
	"  receiver TEXT NOT NULL,"
	"  key TEXT NOT NULL,"
	"  status TEXT NOT NULL,"
	"  starts_at_ms BIGINT NOT NULL,"
	"  ends_at_ms BIGINT NOT NULL DEFAULT 0,"
	"  payload TEXT NOT NULL,"
	"  received_at_ms BIGINT NOT NULL,"
	"  attempts BIGINT NOT NULL DEFAULT 0,"
	"  next_attempt_at_ms BIGINT NOT NULL DEFAULT 0,"
	"  last_error TEXT,"
	"  progress TEXT,"
	"  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done', 'dead')),"
	"  done_at_ms BIGINT,"
	"  repeat_state TEXT"
	");"
	"CREATE INDEX events_pending ON events (kind, id, next_attempt_at_ms)"
	"  WHERE state = 'pending';"
	"CREATE INDEX events_pending_key ON events (kind, receiver, key, id)"
	"  WHERE state = 'pending';"
	"CREATE INDEX events_dead ON events (id) WHERE state = 'dead';"
	"CREATE INDEX events_done ON events (done_at_ms) WHERE state = 'done';"
	"CREATE INDEX events_dead_key ON events (kind, receiver, key) WHERE state = 'dead';"
	"CREATE INDEX events_repeat ON events (kind, receiver, key, id)"
	"  WHERE repeat_state IS NOT NULL;"
	"CREATE TABLE issues ("
	"  receiver TEXT NOT NULL,"
	"  key TEXT NOT NULL,"
	"  repo TEXT NOT NULL,"
	"  number BIGINT NOT NULL DEFAULT 0,"
	"  state TEXT NOT NULL,"
	"  state_reason TEXT,"
	"  episode_starts_ms BIGINT NOT NULL DEFAULT 0,"
	"  resolved_ends_ms BIGINT NOT NULL DEFAULT 0,"
	"  closed_at_ms BIGINT NOT NULL DEFAULT 0,"
	"  previous_number BIGINT NOT NULL DEFAULT 0,"
	"  created_at_ms BIGINT NOT NULL,"
	"  updated_at_ms BIGINT NOT NULL,"
	"  dead_reason TEXT,"
	"  alertname TEXT,"
	"  title TEXT,"
	"  etag TEXT,"
	"  labels TEXT,"
	"  PRIMARY KEY (receiver, key)"
	");",
	/* 2: the janitor's Slack outbox and its digests. */
	"CREATE TABLE notices ("
	"  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
	"  namespace TEXT NOT NULL,"
	"  pod TEXT NOT NULL,"
	"  uid TEXT NOT NULL,"
	"  kind TEXT NOT NULL CHECK (kind IN ('notice', 'reminder', 'cancelled', 'deleted')),"
	"  expires_ms BIGINT NOT NULL DEFAULT 0,"
	"  notify TEXT,"
	"  owner TEXT,"
	"  channel TEXT,"
	"  thread_ts TEXT,"
	"  text TEXT NOT NULL,"
	"  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'dead')),"
	"  attempts BIGINT NOT NULL DEFAULT 0,"
	"  next_attempt_at_ms BIGINT NOT NULL DEFAULT 0,"
	"  created_at_ms BIGINT NOT NULL,"
	"  sent_at_ms BIGINT NOT NULL DEFAULT 0,"
	"  slack_channel_id TEXT,"
	"  slack_ts TEXT,"
	"  last_error TEXT,"
	"  digest_id BIGINT,"
	"  line TEXT"
	");"
	"CREATE INDEX notices_pending ON notices (next_attempt_at_ms, id) WHERE state = 'pending';"
	"CREATE INDEX notices_pod ON notices (uid, kind, id);"
	"CREATE INDEX notices_digest ON notices (digest_id) WHERE digest_id IS NOT NULL;"
	"CREATE TABLE digests ("
	"  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
	"  kind TEXT NOT NULL,"
	"  channel TEXT NOT NULL,"
	"  thread_ts TEXT,"
	"  part BIGINT NOT NULL,"
	"  parts BIGINT NOT NULL,"
	"  text TEXT NOT NULL,"
	"  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'dead')),"
	"  attempts BIGINT NOT NULL DEFAULT 0,"
	"  next_attempt_at_ms BIGINT NOT NULL DEFAULT 0,"
	"  created_at_ms BIGINT NOT NULL,"
	"  sent_at_ms BIGINT NOT NULL DEFAULT 0,"
	"  slack_channel_id TEXT,"
	"  slack_ts TEXT,"
	"  last_error TEXT"
	");"
	"CREATE INDEX digests_pending ON digests (next_attempt_at_ms, id) WHERE state = 'pending';",
	/* 3: storm summaries and members, repository scans, group states. */
	"CREATE TABLE storm_summaries ("
	"  id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,"
	"  receiver TEXT NOT NULL,"
	"  repo TEXT NOT NULL,"
	"  alertname TEXT NOT NULL,"
	"  marker_key TEXT NOT NULL,"
	"  number BIGINT NOT NULL DEFAULT 0,"
	"  state TEXT NOT NULL CHECK (state IN ('creating', 'open', 'closed')),"
	"  created_at_ms BIGINT NOT NULL,"
	"  synced_at_ms BIGINT NOT NULL DEFAULT 0,"
	"  next_sync_ms BIGINT NOT NULL DEFAULT 0,"
	"  dirty BIGINT NOT NULL DEFAULT 0"
	");"
	"CREATE INDEX storm_summaries_live ON storm_summaries (receiver, repo, alertname)"
	"  WHERE state != 'closed';"
	"CREATE TABLE storm_members ("
	"  receiver TEXT NOT NULL,"
	"  key TEXT NOT NULL,"
	"  summary_id BIGINT NOT NULL,"
	"  firing BIGINT NOT NULL,"
	"  starts_at_ms BIGINT NOT NULL,"
	"  ends_at_ms BIGINT NOT NULL DEFAULT 0,"
	"  line TEXT NOT NULL DEFAULT '',"
	"  PRIMARY KEY (receiver, key)"
	");"
	"CREATE INDEX storm_members_summary ON storm_members (summary_id, firing);"
	"CREATE TABLE repo_scans ("
	"  receiver TEXT NOT NULL,"
	"  repo TEXT NOT NULL,"
	"  done_at_ms BIGINT NOT NULL,"
	"  PRIMARY KEY (receiver, repo)"
	");"
	"CREATE TABLE group_states ("
	"  receiver TEXT NOT NULL,"
	"  key TEXT NOT NULL,"
	"  members TEXT NOT NULL,"
	"  payload TEXT NOT NULL,"
	"  dirty BIGINT NOT NULL DEFAULT 0,"
	"  synced_at_ms BIGINT NOT NULL DEFAULT 0,"
	"  next_sync_ms BIGINT NOT NULL DEFAULT 0,"
	"  PRIMARY KEY (receiver, key)"
	");"
	"CREATE INDEX group_states_dirty ON group_states (next_sync_ms) WHERE dirty = 1;",
	/* 4..10: in steps 1..3 on PostgreSQL. */
	"", "", "", "", "", "", "",
	/*
	 * 11: silences from GitHub issues (store_silences.h): the deliveries
	 * taken (X-GitHub-Delivery, pruned after database_retention), the
	 * silences made for a map row, and the map row of an issue by repository
	 * and number (store_issue_by_number(): GitHub compares names ignoring case).
	 */
	"CREATE TABLE gh_deliveries ("
	"  id TEXT PRIMARY KEY,"
	"  received_at_ms BIGINT NOT NULL"
	");"
	"CREATE INDEX gh_deliveries_age ON gh_deliveries (received_at_ms);"
	"CREATE TABLE silences ("
	"  receiver TEXT NOT NULL,"
	"  key TEXT NOT NULL,"
	"  silence_id TEXT NOT NULL,"
	"  created_by TEXT NOT NULL,"
	"  ends_at_ms BIGINT NOT NULL,"
	"  created_at_ms BIGINT NOT NULL,"
	"  expired_at_ms BIGINT NOT NULL DEFAULT 0,"
	"  PRIMARY KEY (receiver, key, silence_id)"
	");"
	"CREATE INDEX issues_repo_number ON issues (lower(repo), number);",
	/* 12: the superseded issue's link (as sqlite's 12). */
	"ALTER TABLE issues ADD COLUMN previous_url TEXT;",
	/* 13: the GitHub content budget's spending (as sqlite's 13). */
	"CREATE TABLE gh_budget ("
	"  owner TEXT NOT NULL,"
	"  sent_at_ms BIGINT NOT NULL"
	");"
	"CREATE INDEX gh_budget_sent ON gh_budget (sent_at_ms);",
};

#define N_SQLITE ((int)(sizeof(sqlite_migrations) / sizeof(sqlite_migrations[0])))
#define N_PG ((int)(sizeof(pg_migrations) / sizeof(pg_migrations[0])))

_Static_assert(N_SQLITE == N_PG, "append each schema step to both migration lists");

const char *const *store_migrations(enum db_engine engine, int *n)
{
	*n = N_SQLITE;
	return engine == DB_POSTGRES ? pg_migrations : sqlite_migrations;
}
