/*
 * config_janitor.c - the janitor's section of the configuration's schema:
 * the field tables and checks of janitor, its policies (with their
 * defaults), slack, kubernetes, and the deprecated alias leader_election
 * (now top-level).  Part of the loader; config_fields.c holds the other
 * sections, all share config_int.h.
 */
#include "config_int.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "xalloc.h"
#include "banned.h"

const char *const cfg_owned_names[] = {
	[CFG_OWNED_NOTIFY_ONLY] = "notify-only",
	[CFG_OWNED_SCALE_TO_ZERO] = "scale-to-zero",
	[CFG_OWNED_DELETE_OWNER] = "delete-owner",
	NULL,
};

static enum err parse_channels(struct ctx *c, yaml_node_t *node, const char *path, void *field)
{
	struct cfg_slack *slack = field;

	return cfg_parse_pairs(c, node, path, &slack->namespace_channels,
			   &slack->namespace_channels_count, "a namespace", "a channel", NULL);
}

/* "KEY: <a> <what> <other key> (<b>)": a policy duration out of order with another. */
static enum err policy_order(struct ctx *c, yaml_node_t *map, const char *path, const char *key,
			     int64_t a_ms, const char *what, const char *other, int64_t b_ms)
{
	struct buf a = BUF_INIT, b = BUF_INIT;
	enum err rc;

	duration_format(a_ms, &a);
	duration_format(b_ms, &b);
	rc = cfg_fail_key(c, map, path, key, "%s %s %s (%s)", buf_str(&a), what, other,
			  buf_str(&b));
	buf_release(&a);
	buf_release(&b);
	return rc;
}

static enum err check_policy(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct cfg_policy *p = obj;
	enum err rc = cfg_need(c, map, path, "alertname", p->alertname);

	if (rc != ERR_OK)
		return rc;
	if (p->notice_lead_ms > p->grace_ms)
		return policy_order(c, map, path, "notice_lead", p->notice_lead_ms,
				    "is longer than", "grace", p->grace_ms);
	if (p->reminder_before_ms < 0)  /* not given */
		p->reminder_before_ms = p->notice_lead_ms / 2;
	else if (p->reminder_before_ms > 0 && p->reminder_before_ms >= p->notice_lead_ms)
		return policy_order(c, map, path, "reminder_before", p->reminder_before_ms,
				    "is not less than", "notice_lead", p->notice_lead_ms);
	return ERR_OK;
}

static const struct field policy_fields[] = {
	FLD(struct cfg_policy, "alertname", F_STR, alertname, LIVE,
	    "The alert whose pods this policy handles (unique).", .dflt = "required"),
	DUR(struct cfg_policy, "grace", grace_ms, 0, LIVE,
	    "The pod is acted on this long after the alert fires (janitor/expires).",
	    .def = 24 * MS_H),
	DUR(struct cfg_policy, "notice_lead", notice_lead_ms, 0, LIVE,
	    "A delivered notice at least this old before acting (at most grace).", .def = 2 * MS_H),
	DUR(struct cfg_policy, "reminder_before", reminder_before_ms, 0, LIVE,
	    "One reminder in the notice's thread this long before; 0: none; < notice_lead.",
	    .dflt = "notice_lead / 2"),
	ENUM(struct cfg_policy, "owned", owned,
	     "\"scale-to-zero\", \"delete-owner\" or \"notify-only\"", cfg_owned_names, LIVE,
	     "What is done to a pod a controller owns (docs/janitor.md); a bare pod is deleted.",
	     .dump_flags = D_QUOTE),
	FLD(struct cfg_policy, "message", F_STR, message, LIVE, "Extra text for the notice."),
	DUR(struct cfg_policy, "postpone_by", postpone_by_ms, 1, LIVE,
	    "Each click of \"Keep until\" in Slack moves the action this much later.",
	    .def = 24 * MS_H),
	NUM(struct cfg_policy, "max_postpones", F_UINT, max_postpones, 0, 100, LIVE,
	    "Most postponements of one pod; 0: no button.", .def = 3),
	DUR(struct cfg_policy, "max_lifetime", max_lifetime_ms, 0, LIVE,
	    "Never postponed past the pod's creation plus this; 0: no bound."),
};
FIELDSET(policy_set, policy_fields, check_policy);

static enum err check_slack(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct cfg_slack *s = obj;
	enum err rc = cfg_exclusive(c, map, path, "bot_token_file", s->bot_token_file,
				"webhook_url_file", s->webhook_url_file);

	if (rc == ERR_OK && s->signing_secret_file && !s->bot_token_file) {
		/* The button's answers (chat.update, lookups) need the Web API. */
		return cfg_fail_key(c, map, path, "signing_secret_file",
				    "needs bot_token_file (the answers use chat.update)");
	}
	return rc != ERR_OK ? rc : cfg_check_url(c, map, path, "api_url", s->api_url);
}

static const struct field slack_fields[] = {
	FLD(struct cfg_slack, "api_url", F_STR, api_url, RESTART,
	    "Slack's Web API; http(s) only.", .def_str = CFG_DEFAULT_SLACK_API_URL),
	SECRET(struct cfg_slack, "bot_token_file", bot_token_file, bot_token, PRESENCE,
	       "File holding the bot token (xoxb-...); not with webhook_url_file."),
	SECRET(struct cfg_slack, "webhook_url_file", webhook_url_file, webhook_url, PRESENCE,
	       "File holding an incoming webhook URL (no threads); not with bot_token_file."),
	SECRET(struct cfg_slack, "signing_secret_file", signing_secret_file, signing_secret, LIVE,
	       "The Slack app's signing secret (the \"Keep until\" button); needs bot_token_file."),
	FLD(struct cfg_slack, "default_channel", F_STR, default_channel, LIVE,
	    "Channel of the notices nothing else places (owner, namespace channel)."),
	FLD(struct cfg_slack, "owner_label", F_STR, owner_label, LIVE,
	    "Pod label naming the owner (Slack user, e-mail or channel) the notice goes to."),
	/* parse_channels fills both namespace_channels and its count: it gets the struct. */
	PAIRS(struct cfg_slack, "namespace_channels", namespace_channels, parse_channels,
	     "a mapping of namespaces to channels", LIVE,
	     "The channel of each namespace's notices when the pod names no owner."),
};
FIELDSET(slack_set, slack_fields, check_slack);

static const struct field kubernetes_fields[] = {
	FLD(struct cfg_kubernetes, "kubeconfig", F_PATH, kubeconfig, LIVE,
	    "A kubeconfig file; null or \"\": the pod's in-cluster service account."),
	FLD(struct cfg_kubernetes, "context", F_STR, context, LIVE,
	    "The kubeconfig's context; null: its current-context."),
};
FIELDSET(kubernetes_set, kubernetes_fields, NULL);

static void policy_defaults(void *item);
/* Policies: each with its defaults, alertnames unique. */
static const struct cfg_records policy_records = {
	policy_defaults, "alertname", "policy alertname", offsetof(struct cfg_policy, alertname),
	strcmp
};

static enum err check_janitor(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	const struct cfg_janitor *j = obj;

	if (j->notice_batch_window_ms > CFG_MAX_NOTICE_BATCH_WINDOW_MS)
		return policy_order(c, map, path, "notice_batch_window", j->notice_batch_window_ms,
				    "is longer than", "the maximum", CFG_MAX_NOTICE_BATCH_WINDOW_MS);
	return ERR_OK;
}

static const struct field janitor_fields[] = {
	FLD(struct cfg_janitor, "enabled", F_BOOL, enabled, RESTART,
	    "Run the pod janitor in serve."),
	FLD(struct cfg_janitor, "dry_run", F_BOOL, dry_run, RESTART,
	    "Notify only, never act on a pod: set false to act.", .def = 1),
	MAP(struct cfg_janitor, "kubernetes", kubernetes, kubernetes_set, RESTART,
	    "How the janitor reaches the Kubernetes API."),
	FLD(struct cfg_janitor, "exclude_namespaces", F_LIST, exclude_namespaces, LIVE,
	    "Namespaces never touched; a list given replaces the default.",
	    .def_str = "kube-system"),
	DUR(struct cfg_janitor, "sweep_interval", sweep_interval_ms, 1, LIVE,
	    "Time between two sweeps of the pods.", .def = MS_M),
	NUM(struct cfg_janitor, "max_deletions_per_sweep", F_UINT, max_deletions_per_sweep, 0,
	    100000, LIVE, "Most pods acted on in one sweep; 0: none.", .def = 10),
	DUR(struct cfg_janitor, "notice_batch_window", notice_batch_window_ms, 0, LIVE,
	    "Notices of one owner within this of the first go out as one digest (at most 5m).",
	    .def = 5 * MS_S),
	REC(struct cfg_janitor, "policies", policies, &policy_records, policy_set,
	    "a list of policies", LIVE, "What to do with the pods of which alert."),
	MAP(struct cfg_janitor, "slack", slack, slack_set, LIVE, "Where notices go."),
	ALIAS("leader_election", leader_election, cfg_leader_set, "leader_election", RESTART,
	      "Deprecated alias of `leader_election` (a warning at load); not with it."),
};
const struct fieldset cfg_janitor_set = { janitor_fields,
					 sizeof(janitor_fields) / sizeof(janitor_fields[0]),
					 check_janitor, NULL };

/* A policy's defaults: its rows', and reminder_before unset (check_policy: notice_lead / 2). */
static void policy_defaults(void *item)
{
	struct cfg_policy *p = item;

	memset(p, 0, sizeof(*p));
	cfg_set_defaults(&policy_set, p);
	p->reminder_before_ms = -1;
}
