/*
 * silence.h - silences from GitHub issues: the commands a comment may hold
 * (/silence DURATION [reason], /unsilence), and the worker's handler of the
 * durable "silence" queue that makes and expires the silences in
 * Alertmanager (core/am_api.h) and answers on the issue (bridge/gh.h).
 * bridge/gh_webhook.h queues the commands; the bridge's worker runs
 * silence_step() between its own events (bridge/bridge.h), so replies share
 * the GitHub client's pacing and the leader's lease.
 *
 * The queue's events: kind SILENCE_QUEUE, the map row's (receiver, key),
 * status "firing", payload a JSON object {"v": 1, "cmd": "silence" |
 * "unsilence" | "unknown" | "invalid", "login", "comment_id", "repo",
 * "number", "issue_url", "duration_ms", "reason", "word", "error"}.
 *
 * Once per comment: a command whose comment ID another command took before
 * (store_command_take(): the signed body resent under a new
 * X-GitHub-Delivery) is done without acting or answering.
 *
 * Exactly once: before its POST a silence writes the progress note
 * "post~"; a retry with that note (a timeout, a 5xx, a crash, a failover)
 * first asks Alertmanager for the silences with the same matchers, and adopts
 * the one of the same createdBy whose comment carries the marker
 * "alertbridge:comment=<comment id>".  The
 * silence's ID is then kept (table silences; note "silenced:<id>") before
 * the reply is posted with gh_comment_create_marked() (marker
 * "<!-- alertbridge:silence=<comment id> -->"), so neither is made twice.
 * A silence Alertmanager refuses (400) is dead-lettered with its answer as
 * the reason; other failures (5xx, timeouts, a refused token) are retried
 * with backoff.
 *
 * A storm summary (bridge/storm.h: the event's (receiver, key) is a folded
 * alert) stands for all its folded alerts: /silence makes one silence whose
 * matchers are the labels they all share (an on-call engineer silences the
 * storm, including the alerts that join it later; one silence per alert
 * would be thousands, and miss those), kept in the store for each of them;
 * /unsilence expires the silences of all of them.
 */
#ifndef AB_SILENCE_H
#define AB_SILENCE_H

#include <stddef.h>
#include <stdint.h>

#include "bridge/gh.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"
#include "core/metrics.h"
#include "store/store.h"

/* The queue kind of the commands. */
#define SILENCE_QUEUE "silence"
/* What every alertbridge comment carries, and what makes a comment never a command. */
#define SILENCE_OWN_MARKER "<!-- alertbridge:"

enum silence_cmd {
	SILENCE_CMD_NONE = 0,   /* the first line is no command: nothing to do */
	SILENCE_CMD_SILENCE,    /* /silence DURATION [reason] */
	SILENCE_CMD_UNSILENCE,  /* /unsilence */
	SILENCE_CMD_UNKNOWN,    /* /word that is neither: a short reply */
	SILENCE_CMD_INVALID,    /* /silence with a missing or bad duration: error says why */
};

/* A parsed command; strings point into the struct. */
struct silence_command {
	enum silence_cmd cmd;
	int64_t duration_ms;  /* SILENCE_CMD_SILENCE: the duration asked for (> 0) */
	char word[32];        /* the command word without '/', cut to fit */
	char reason[512];     /* the rest of the line after the duration, trimmed; may be "" */
	char error[160];      /* SILENCE_CMD_INVALID: why */
};

/*
 * Parse the first line of comment body text: a command is '/' then a word
 * of [a-z-] (ASCII, matched without case) ended by a blank or the line's
 * end; "/silence" takes a Prometheus duration (core/duration.h: "4h",
 * "1h30m", "2d"; 0 is invalid) and the rest of the line as the reason.
 * Leading blanks and a CR before the newline are skipped.  A first line
 * that is no command (text, "/usr/bin is full") is SILENCE_CMD_NONE.
 */
void silence_command_parse(const char *text, struct silence_command *out);

struct silencer;

struct silencer_options {
	struct store *store;     /* outlives the silencer */
	struct metrics *metrics; /* may be NULL */
	const char *user_agent;  /* sent to Alertmanager */
	int64_t retry_base_ms;   /* retry schedule (0: 5 s ... */
	int64_t retry_max_ms;    /* ... to 10 min) */
};

/* A new silencer (its Alertmanager client, its metrics); never NULL. */
struct silencer *silencer_new(const struct silencer_options *opts);
/* Free; s may be NULL. */
void silencer_free(struct silencer *s);

/*
 * Handle the oldest due event of SILENCE_QUEUE, on the caller's thread,
 * under cfg (its receivers' alertmanager) with gh for the reply; now_ms the
 * caller's clock.  Returns 1 when an event was handled (done, retried or
 * dead-lettered), 0 when none was due, -1 when the store failed.
 */
int silence_step(struct silencer *s, const struct config *cfg, struct gh_client *gh,
		 int64_t now_ms);

#endif
