/*
 * test_reload.c - the reload of the configuration (core/reload.c): generations
 * held across a swap stay whole, a broken file or extra keeps the running
 * one, the gauges, the keys that need a restart, the auto-reload poll, and
 * POST and PUT /-/reload's answers behind the state guard (web/guard.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "core/reload.h"
#include "core/xalloc.h"
#include "web/guard.h"
#include "tests/unit/helpers/http_server_fixture.h"
#include "tests/unit/helpers/tmpdir.h"

struct fx {
	char dir[64];
	char path[96];
	struct metrics *m;
	struct reload *r;
	int prepared, freed, after_ok, after_failed;
	int fail_prepare;
	pthread_mutex_t lock;
};

static void write_file(const char *path, const char *text)
{
	char tmp[128];

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	tfx_write_file(NULL, tmp, text);
	assert_int_equal(rename(tmp, path), 0);
}

/* A config whose one receiver has the label `label`; extra is appended. */
static void write_config(struct fx *fx, const char *label, const char *extra)
{
	char text[512];

	snprintf(text, sizeof(text),
		 "listen_address: 127.0.0.1:9095\n"
		 "receivers:\n"
		 "  - name: r\n"
		 "    repo: o/r\n"
		 "    labels: [\"%s\"]\n"
		 "%s", label, extra ? extra : "");
	write_file(fx->path, text);
}

/* prepare: the ext is a copy of the label, so a holder can check cfg and ext agree. */
static enum err prepare(void *ctx, const struct config *cfg, void **ext, struct buf *errmsg)
{
	struct fx *fx = ctx;

	pthread_mutex_lock(&fx->lock);
	fx->prepared++;
	pthread_mutex_unlock(&fx->lock);
	if (fx->fail_prepare) {
		buf_setf(errmsg, "templates/x.mustache:3: unclosed section");
		*ext = NULL;
		return ERR_INVALID;
	}
	*ext = xstrdup(cfg->receivers[0].labels.items[0]);
	return ERR_OK;
}

static struct fx *g_fx;  /* for ext_free, which has no ctx */

static void ext_free(void *ext)
{
	if (ext) {
		pthread_mutex_lock(&g_fx->lock);
		g_fx->freed++;
		pthread_mutex_unlock(&g_fx->lock);
	}
	free(ext);
}

static void after(void *ctx, int ok)
{
	struct fx *fx = ctx;

	__atomic_add_fetch(ok ? &fx->after_ok : &fx->after_failed, 1, __ATOMIC_SEQ_CST);
}

static struct config *load(const char *path)
{
	struct config *cfg = NULL;
	struct buf err = BUF_INIT;

	if (cfg_load(path, &cfg, &err))
		fail_msg("%s", buf_str(&err));
	buf_release(&err);
	return cfg;
}

static int setup(void **state)
{
	struct fx *fx = xcalloc(1, sizeof(*fx));
	struct reload_options ro = { 0 };
	struct buf err = BUF_INIT;
	struct config *cfg;
	void *ext = NULL;

	unsetenv("GITHUB_TOKEN");
	log_setup(LOG_ERROR, LOG_LOGFMT);
	pthread_mutex_init(&fx->lock, NULL);
	g_fx = fx;
	tfx_mkdtemp(fx->dir, sizeof(fx->dir), "ab-reload");
	snprintf(fx->path, sizeof(fx->path), "%s/alertbridge.yml", fx->dir);
	write_config(fx, "v1", NULL);
	cfg = load(fx->path);
	assert_int_equal(prepare(fx, cfg, &ext, NULL), ERR_OK);
	fx->m = metrics_new();
	ro.config_file = fx->path;
	ro.metrics = fx->m;
	ro.prepare = prepare;
	ro.ext_free = ext_free;
	ro.after = after;
	ro.ctx = fx;
	ro.enable_lifecycle = 1;
	assert_int_equal(reload_new(&ro, cfg, ext, &fx->r, &err), ERR_OK);
	buf_release(&err);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fx *fx = *state;

	reload_free(fx->r);
	metrics_free(fx->m);
	tfx_remove_tree(fx->dir);
	pthread_mutex_destroy(&fx->lock);
	free(fx);
	return 0;
}

/* The value of a gauge without labels in the /metrics text, or -1. */
static double gauge(struct fx *fx, const char *name)
{
	struct buf out = BUF_INIT;
	char want[128];
	const char *p;
	double v = -1;

	metrics_render(fx->m, &out);
	snprintf(want, sizeof(want), "\n%s ", name);
	p = strstr(buf_str(&out), want);
	if (p)
		v = strtod(p + strlen(want), NULL);
	buf_release(&out);
	return v;
}

static const char *label_of(const struct reload_gen *g)
{
	return g->cfg->receivers[0].labels.items[0];
}

static void swap_keeps_held_generation_whole(void **state)
{
	struct fx *fx = *state;
	const struct reload_gen *old = reload_acquire(fx->r), *cur;
	struct buf err = BUF_INIT;

	assert_int_equal(old->serial, 1);
	assert_string_equal(label_of(old), "v1");
	assert_true(gauge(fx, "alertbridge_config_last_reload_successful") == 1);
	assert_true(gauge(fx, "alertbridge_config_last_reload_success_timestamp_seconds") > 1.7e9);
	write_config(fx, "v2", NULL);
	assert_int_equal(reload_run(fx->r, "test", &err), ERR_OK);
	cur = reload_acquire(fx->r);
	assert_int_equal(cur->serial, 2);
	assert_string_equal(label_of(cur), "v2");
	assert_string_equal((const char *)cur->ext, "v2");
	/* The holder of generation 1 still sees all of it, as it was. */
	assert_string_equal(label_of(old), "v1");
	assert_string_equal((const char *)old->ext, "v1");
	reload_release(fx->r, old);
	assert_int_equal(fx->freed, 0);  /* generation 1 lives until reload_free() */
	write_config(fx, "v3", NULL);
	assert_int_equal(reload_run(fx->r, "test", &err), ERR_OK);
	assert_int_equal(fx->freed, 0);  /* generation 2 is still held */
	reload_release(fx->r, cur);
	assert_int_equal(fx->freed, 1);  /* ... and freed by its last release */
	assert_int_equal(fx->after_ok, 2);
	buf_release(&err);
}

static void broken_file_keeps_running_config(void **state)
{
	struct fx *fx = *state;
	struct buf err = BUF_INIT;
	const struct reload_gen *g;

	write_file(fx->path, "receivers:\n  - name: r\n    repo: [o/r\n");
	assert_int_equal(reload_run(fx->r, "test", &err), ERR_INVALID);
	assert_non_null(strstr(buf_str(&err), "alertbridge.yml:"));
	assert_true(gauge(fx, "alertbridge_config_last_reload_successful") == 0);
	write_config(fx, "v2", "webhook:\n  max_body_byte: 1\n");
	assert_int_equal(reload_run(fx->r, "test", &err), ERR_INVALID);
	assert_non_null(strstr(buf_str(&err), "alertbridge.yml:7: webhook.max_body_byte: unknown key"));
	g = reload_acquire(fx->r);
	assert_int_equal(g->serial, 1);
	assert_string_equal(label_of(g), "v1");
	reload_release(fx->r, g);
	assert_int_equal(fx->after_failed, 2);
	/* Templates that do not compile: the same, and nothing leaks. */
	write_config(fx, "v2", NULL);
	fx->fail_prepare = 1;
	assert_int_equal(reload_run(fx->r, "test", &err), ERR_INVALID);
	assert_string_equal(buf_str(&err), "templates/x.mustache:3: unclosed section");
	fx->fail_prepare = 0;
	/* Webhook credentials that cannot be used (an empty token file). */
	{
		char tok[128], extra[256];
		snprintf(tok, sizeof(tok), "%s/token", fx->dir);
		write_file(tok, "\n");
		snprintf(extra, sizeof(extra), "webhook:\n  bearer_token_file: token\n");
		write_config(fx, "v2", extra);
	}
	assert_int_equal(reload_run(fx->r, "test", &err), ERR_INVALID);
	g = reload_acquire(fx->r);
	assert_int_equal(g->serial, 1);
	reload_release(fx->r, g);
	/* Fixed: reloads, the gauge is back to 1. */
	write_config(fx, "v4", NULL);
	assert_int_equal(reload_run(fx->r, "test", &err), ERR_OK);
	assert_true(gauge(fx, "alertbridge_config_last_reload_successful") == 1);
	g = reload_acquire(fx->r);
	assert_string_equal(label_of(g), "v4");
	reload_release(fx->r, g);
	buf_release(&err);
}

static void restart_keys_keep_running_values(void **state)
{
	struct fx *fx = *state;
	struct config *old, *cur;

	(void)fx;
	write_config(fx, "a", "database: one.db\ngithub:\n  content_per_hour: 100\n");
	old = load(fx->path);
	write_config(fx, "b", "database: two.db\ngithub:\n  content_per_hour: 200\n");
	cur = load(fx->path);
	free(cur->listen_address);
	cur->listen_address = xstrdup("127.0.0.1:9999");
	cur->github.token = xstrdup("a-token");  /* presence changes the GitHub client's mode */
	assert_int_equal(reload_keep_restart_keys(old, cur), 4);
	assert_string_equal(cur->listen_address, "127.0.0.1:9095");
	assert_string_equal(cur->database, "one.db");
	assert_int_equal(cur->github.content_per_hour, 100);
	assert_null(cur->github.token);
	/* What reloads is left alone. */
	assert_string_equal(cur->receivers[0].labels.items[0], "b");
	assert_int_equal(reload_keep_restart_keys(old, cur), 0);
	cfg_free(cur);
	/* web.auth: the page's guard is built at start; a change is reported, not applied. */
	write_config(fx, "a", "database: one.db\ngithub:\n  content_per_hour: 100\n"
		     "web:\n  auth:\n    basic_auth_users:\n      alice: "
		     "$2y$10$e2lvtyLS5vsyOmRmo5J1QOH.bP8LANhsqwqmIdWbSwtlDbibo4Iye\n");
	cur = load(fx->path);
	assert_int_equal(reload_keep_restart_keys(old, cur), 1);
	cfg_free(old);
	cfg_free(cur);
}

/*
 * database and database_password_file (PostgreSQL) are opened once at start:
 * a change of either keeps the running value.
 */
static void database_keys_need_restart(void **state)
{
	struct fx *fx = *state;
	struct config *old, *cur;
	char pw[128], extra[384];

	snprintf(pw, sizeof(pw), "%s/pg-password", fx->dir);
	write_file(pw, "s3cr3t\n");
	snprintf(pw, sizeof(pw), "%s/pg-password-2", fx->dir);
	write_file(pw, "s3cr3t-2\n");
	write_config(fx, "a", "database: postgres://ab@db1.example/alertbridge\n"
		     "database_password_file: pg-password\n");
	old = load(fx->path);
	write_config(fx, "b", "database: postgres://ab@db2.example/alertbridge\n"
		     "database_password_file: pg-password-2\n");
	cur = load(fx->path);
	assert_int_equal(reload_keep_restart_keys(old, cur), 2);
	assert_string_equal(cur->database, "postgres://ab@db1.example/alertbridge");
	snprintf(extra, sizeof(extra), "%s/pg-password", fx->dir);
	assert_string_equal(cur->database_password_file, extra);
	assert_int_equal(reload_keep_restart_keys(old, cur), 0);
	cfg_free(cur);
	/* Dropping the password file (libpq's PGPASSFILE then) needs a restart too. */
	write_config(fx, "c", "database: postgres://ab@db1.example/alertbridge\n");
	cur = load(fx->path);
	assert_int_equal(reload_keep_restart_keys(old, cur), 1);
	assert_string_equal(cur->database_password_file, extra);
	cfg_free(old);
	cfg_free(cur);
}

struct reader {
	struct fx *fx;
	int stop;
	int mismatches;
	int reads;
};

static void *read_loop(void *arg)
{
	struct reader *rd = arg;

	while (!__atomic_load_n(&rd->stop, __ATOMIC_ACQUIRE) && rd->reads < 1000000) {
		const struct reload_gen *g = reload_acquire(rd->fx->r);

		if (strcmp(label_of(g), (const char *)g->ext))
			rd->mismatches++;
		rd->reads++;
		reload_release(rd->fx->r, g);
	}
	return NULL;
}

/* Readers on other threads never see a config with another generation's extras. */
static void concurrent_readers_see_whole_generations(void **state)
{
	struct fx *fx = *state;
	struct reader rd = { fx, 0, 0, 0 };
	struct buf err = BUF_INIT;
	pthread_t t[2];
	char label[16];

	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, read_loop, &rd), 0);
	for (int i = 0; i < 30; i++) {
		snprintf(label, sizeof(label), "gen-%d", i);
		write_config(fx, label, NULL);
		assert_int_equal(reload_run(fx->r, "test", &err), ERR_OK);
	}
	__atomic_store_n(&rd.stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(rd.mismatches, 0);
	assert_true(rd.reads > 0);
	assert_int_equal(fx->freed, 29);  /* every generation but 1 and the current */
	buf_release(&err);
}

/* The poll reloads a changed file once, and not again until it changes. */
static void auto_reload_polls_contents(void **state)
{
	struct fx *fx = *state;
	struct buf err = BUF_INIT;
	const struct reload_gen *g;

	assert_int_equal(reload_watch_start(fx->r, 20, &err), ERR_OK);
	usleep(100 * 1000);
	assert_int_equal(fx->after_ok + fx->after_failed, 0);  /* nothing changed */
	write_config(fx, "auto", NULL);
	for (int i = 0; i < 200 && __atomic_load_n(&fx->after_ok, __ATOMIC_SEQ_CST) < 1; i++)
		usleep(10 * 1000);
	g = reload_acquire(fx->r);
	assert_string_equal(label_of(g), "auto");
	reload_release(fx->r, g);
	write_file(fx->path, "receivers: [\n");
	for (int i = 0; i < 200 && __atomic_load_n(&fx->after_failed, __ATOMIC_SEQ_CST) < 1; i++)
		usleep(10 * 1000);
	usleep(100 * 1000);
	assert_int_equal(fx->after_failed, 1);  /* a failed content is not retried */
	assert_int_equal(fx->after_ok, 1);
	buf_release(&err);
}

static void http_endpoint(void **state)
{
	struct fx *fx = *state;
	struct srv_options so = { 0 };
	struct buf err = BUF_INIT;
	struct reply rep;
	struct srv *s = NULL;
	struct guard_admin g = { fx->r, NULL, reload_handle, fx->r };
	char url[128], tok[128];
	const char *const bearer[] = { "Authorization: Bearer hook-secret", NULL };
	const char *const wrong[] = { "Authorization: Bearer nope", NULL };

	snprintf(tok, sizeof(tok), "%s/token", fx->dir);
	write_file(tok, "hook-secret\n");
	write_config(fx, "h", "webhook:\n  bearer_token_file: token\n");
	assert_int_equal(reload_run(fx->r, "test", &err), ERR_OK);  /* credentials now set */
	so.listen_address = "127.0.0.1:0";
	so.threads = 1;
	assert_int_equal(srv_new(&so, &s, &err), ERR_OK);
	assert_int_equal(srv_route(s, "POST", "/-/reload", guard_admin_handle, &g), ERR_OK);
	assert_int_equal(srv_route(s, "PUT", "/-/reload", guard_admin_handle, &g), ERR_OK);
	assert_int_equal(srv_start(s, &err), ERR_OK);
	hfx_url_for(url, sizeof(url), s, "/-/reload");

	memset(&rep, 0, sizeof(rep));
	assert_int_equal(hfx_fetch("POST", url, "", NULL, &rep), CURLE_OK);
	assert_int_equal(rep.status, 401);
	assert_non_null(strstr(buf_str(&rep.headers), "WWW-Authenticate: Bearer"));
	hfx_reply_release(&rep);
	memset(&rep, 0, sizeof(rep));
	assert_int_equal(hfx_fetch("POST", url, "", wrong, &rep), CURLE_OK);
	assert_int_equal(rep.status, 401);
	hfx_reply_release(&rep);
	assert_int_equal(fx->after_ok, 1);  /* neither reloaded */

	memset(&rep, 0, sizeof(rep));
	assert_int_equal(hfx_fetch("POST", url, "", bearer, &rep), CURLE_OK);
	assert_int_equal(rep.status, 200);
	assert_string_equal(buf_str(&rep.body), "Reloaded.\n");
	hfx_reply_release(&rep);
	/* PUT too, as Prometheus' web.go registers both */
	memset(&rep, 0, sizeof(rep));
	assert_int_equal(hfx_fetch("PUT", url, "", bearer, &rep), CURLE_OK);
	assert_int_equal(rep.status, 200);
	hfx_reply_release(&rep);
	assert_int_equal(fx->after_ok, 3);

	/* A failure says less than the log: no path, no line (issue 19 item 8). */
	write_file(fx->path, "receivers: [\n");
	memset(&rep, 0, sizeof(rep));
	assert_int_equal(hfx_fetch("POST", url, "", bearer, &rep), CURLE_OK);
	assert_int_equal(rep.status, 500);
	assert_string_equal(buf_str(&rep.body), "reload failed, see the log\n");
	hfx_reply_release(&rep);
	assert_int_equal(fx->after_failed, 1);

	memset(&rep, 0, sizeof(rep));
	assert_int_equal(hfx_fetch("GET", url, NULL, NULL, &rep), CURLE_OK);
	assert_int_equal(rep.status, 405);
	hfx_reply_release(&rep);
	srv_stop(s);
	srv_free(s);
	buf_release(&err);
}

static void http_endpoint_off_without_lifecycle(void **state)
{
	struct fx *fx = *state;
	struct reload_options ro = { 0 };
	struct reload *r = NULL;
	struct srv_request req = { 0 };
	struct srv_response res = { 0 };
	struct buf err = BUF_INIT;

	ro.config_file = fx->path;
	assert_int_equal(reload_new(&ro, load(fx->path), NULL, &r, &err), ERR_OK);
	req.method = "POST";
	req.path = "/-/reload";
	buf_init(&res.body, 0);
	reload_handle(r, &req, &res);
	assert_int_equal(res.status, 403);
	assert_string_equal(buf_str(&res.body), "Lifecycle API is not enabled.\n");
	buf_release(&res.body);
	reload_free(r);
	buf_release(&err);
}

/* A test of this file, between setup() and teardown(). */
#define T(test) cmocka_unit_test_setup_teardown(test, setup, teardown)

UNIT_MAIN_WITH(curl_global_init(CURL_GLOBAL_DEFAULT), (void)0,
	T(swap_keeps_held_generation_whole),
	T(broken_file_keeps_running_config),
	T(restart_keys_keep_running_values),
	T(database_keys_need_restart),
	T(concurrent_readers_see_whole_generations),
	T(auto_reload_polls_contents),
	T(http_endpoint),
	T(http_endpoint_off_without_lifecycle))
