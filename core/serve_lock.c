/*
 * serve_lock.c - "<database>.lock" (serve_lock.h): an open-file-description
 * lock of fcntl(2), so that the kernel, not a PID check, says whether the
 * holder still runs, and a PID and URL written in the file for the people
 * and commands that find it taken.
 */
#include "serve_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "healthcheck.h"
#include "xalloc.h"
#include "banned.h"

#define HEALTHY_PATH "/-/healthy"  /* what healthcheck_url() ends with */
#define SETTLE_KEY "writes_settle_at="  /* the note's line (serve_lock.h) */

struct serve_lock {
	int fd;
	char *path;
	long unclean_pid;  /* the PID the file named when taken (its holder never released it) */
	int64_t unclean_settle_at;  /* its note: serve_lock_unclean_settle_at() */
	int settled;       /* serve_lock_settled(): the release may mark the stop clean */
	pthread_mutex_t mu;  /* guards the file's text and the fields below */
	char url[256];     /* the URL line ("" until serve_lock_set_address()) */
	int noted;         /* a note line is in the file */
	int64_t note_ms;   /* its value */
};

/* "<target>.lock", or NULL when target has no file to lock. */
static char *lock_path(const char *target)
{
	struct buf p = BUF_INIT;

	if (!target || !*target || db_target_is_postgres(target) || !strcmp(target, ":memory:"))
		return NULL;
	(void)buf_printf(&p, "%s.lock", target);
	return buf_detach(&p);
}

/* The whole file, exclusively: fcntl(2) "Open file description locks". */
static struct flock whole_file(void)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	return fl;  /* l_start 0, l_len 0: to the end, however it grows; l_pid 0 as OFD wants */
}

/* Read "PID\nURL\n" from fd into *h (zeroed first; what is missing stays empty). */
static void read_holder(int fd, struct serve_lock_holder *h)
{
	char text[sizeof(h->url) + 32], *nl, *end = NULL;
	ssize_t n = pread(fd, text, sizeof(text) - 1, 0);

	memset(h, 0, sizeof(*h));
	if (n <= 0)
		return;
	text[n] = '\0';
	h->pid = strtol(text, &end, 10);
	if (!end || *end != '\n' || h->pid < 0) {
		h->pid = 0;
		return;
	}
	nl = strchr(end + 1, '\n');
	if (nl && (size_t)(nl - end - 1) < sizeof(h->url))
		memcpy(h->url, end + 1, (size_t)(nl - end - 1));
}

/*
 * The unclean holder's note in fd's text (serve_lock.h: the third line):
 * its value, -1 when there is none.
 */
static int64_t read_note(int fd)
{
	char text[512], *at;
	ssize_t n = pread(fd, text, sizeof(text) - 1, 0);

	if (n <= 0)
		return -1;
	text[n] = '\0';
	at = strstr(text, "\n" SETTLE_KEY);
	return at ? strtoll(at + 1 + strlen(SETTLE_KEY), NULL, 10) : -1;
}

/* Replace the file's text by text (our PID, and the URL once known). */
static enum err write_text(struct serve_lock *l, const char *text, struct buf *errmsg)
{
	size_t n = strlen(text);

	if (ftruncate(l->fd, 0) != 0 || pwrite(l->fd, text, n, 0) != (ssize_t)n) {
		buf_setf(errmsg, "%s: %s", l->path, strerror(errno));
		return ERR_IO;
	}
	return ERR_OK;
}

static void say_held(const char *target, const char *path, const struct serve_lock_holder *h,
		     struct buf *errmsg)
{
	if (h->pid > 0)
		buf_setf(errmsg, "database %s is in use by process %ld (lock file %s)", target,
			 h->pid, path);
	else
		buf_setf(errmsg, "database %s is in use by another process (lock file %s)", target,
			 path);
}

enum err serve_lock_take(const char *target, struct serve_lock **out,
			 struct serve_lock_holder *holder, struct buf *errmsg)
{
	struct serve_lock_holder h;
	struct serve_lock *l = NULL;
	struct flock fl = whole_file();
	char pid[32];
	char *path = lock_path(target);
	enum err rc = ERR_OK;
	int fd = -1;

	*out = NULL;
	if (holder)
		memset(holder, 0, sizeof(*holder));
	if (!path)
		return ERR_OK;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		buf_setf(errmsg, "%s: %s", path, strerror(errno));
		rc = ERR_IO;
		goto out;
	}
	if (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
		if (errno != EACCES && errno != EAGAIN) {
			buf_setf(errmsg, "%s: lock: %s", path, strerror(errno));
			rc = ERR_IO;
			goto out;
		}
		read_holder(fd, &h);
		say_held(target, path, &h, errmsg);
		if (holder)
			*holder = h;
		rc = ERR_CONFLICT;
		goto out;
	}
	l = xcalloc(1, sizeof(*l));
	l->fd = fd;
	l->path = path;
	read_holder(fd, &h);  /* a PID left in a file nobody locks: released uncleanly */
	l->unclean_pid = h.pid;
	l->unclean_settle_at = h.pid ? read_note(fd) : 0;
	pthread_mutex_init(&l->mu, NULL);
	fd = -1;
	path = NULL;
	snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	rc = write_text(l, pid, errmsg);
	if (!rc && l->unclean_settle_at > 0)  /* passed on while it may matter */
		serve_lock_note_writes(l, 0);
	if (rc) {
		serve_lock_free(l);
		l = NULL;
	}
out:
	if (fd >= 0)
		close(fd);
	free(path);
	*out = l;
	return rc;
}

enum err serve_lock_set_address(struct serve_lock *l, const char *listen_address, int port,
				int tls, struct buf *errmsg)
{
	struct buf addr = BUF_INIT, url = BUF_INIT, text = BUF_INIT;
	const char *colon = listen_address ? strrchr(listen_address, ':') : NULL;
	enum err rc;

	if (!l)
		return ERR_OK;
	if (!colon) {
		buf_setf(errmsg, "listen address \"%s\": want HOST:PORT or :PORT",
			 listen_address ? listen_address : "");
		return ERR_INVALID;
	}
	(void)buf_add(&addr, listen_address, (size_t)(colon - listen_address));
	(void)buf_printf(&addr, ":%d", port);
	rc = healthcheck_url(buf_str(&addr), tls, &url, errmsg);
	if (rc == ERR_OK) {
		buf_truncate(&url, url.len - strlen(HEALTHY_PATH));
		pthread_mutex_lock(&l->mu);
		snprintf(l->url, sizeof(l->url), "%s", buf_str(&url));
		(void)buf_printf(&text, "%ld\n%s\n", (long)getpid(), l->url);
		if (l->noted)
			(void)buf_printf(&text, SETTLE_KEY "%020" PRId64 "\n", l->note_ms);
		rc = write_text(l, buf_str(&text), errmsg);
		pthread_mutex_unlock(&l->mu);
	}
	buf_release(&addr);
	buf_release(&url);
	buf_release(&text);
	return rc;
}

long serve_lock_unclean(const struct serve_lock *l)
{
	return l ? l->unclean_pid : 0;
}

int64_t serve_lock_unclean_settle_at(const struct serve_lock *l)
{
	return l ? l->unclean_settle_at : 0;
}

void serve_lock_note_writes(struct serve_lock *l, int64_t at_ms)
{
	struct buf text = BUF_INIT;

	if (!l)
		return;
	if (at_ms < l->unclean_settle_at && !l->settled)
		at_ms = l->unclean_settle_at;
	pthread_mutex_lock(&l->mu);
	if (!l->noted || l->note_ms != at_ms) {
		/* Same length each time (PID, URL, 20 digits): rewritten in place, never
		 * emptied, so a reader (serve_lock_held()) always finds the PID and URL. */
		(void)buf_printf(&text, "%ld\n%s\n" SETTLE_KEY "%020" PRId64 "\n", (long)getpid(),
				 l->url, at_ms);
		if (pwrite(l->fd, text.data, text.len, 0) == (ssize_t)text.len) {
			l->noted = 1;
			l->note_ms = at_ms;
		}
	}
	pthread_mutex_unlock(&l->mu);
	buf_release(&text);
}

void serve_lock_settled(struct serve_lock *l)
{
	if (l)
		l->settled = 1;
}

void serve_lock_free(struct serve_lock *l)
{
	if (!l)
		return;
	/* A clean stop names no PID; a failed truncate leaves it unclean, the safe side. */
	if (!l->unclean_pid || l->settled)
		(void)!ftruncate(l->fd, 0);
	close(l->fd);  /* the last descriptor of its open file description: the lock goes */
	pthread_mutex_destroy(&l->mu);
	free(l->path);
	free(l);
}

int serve_lock_held(const char *target, struct serve_lock_holder *holder, struct buf *errmsg)
{
	struct flock fl = whole_file();
	char *path = lock_path(target);
	int fd = -1, held = 0;

	memset(holder, 0, sizeof(*holder));
	if (!path)
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		held = errno == ENOENT ? 0 : -1;
		if (held)
			buf_setf(errmsg, "%s: %s", path, strerror(errno));
		goto out;
	}
	fl.l_type = F_RDLCK;  /* any lock held by another description conflicts with it */
	if (fcntl(fd, F_OFD_GETLK, &fl) != 0) {
		buf_setf(errmsg, "%s: lock: %s", path, strerror(errno));
		held = -1;
		goto out;
	}
	if (fl.l_type != F_UNLCK) {
		read_holder(fd, holder);
		held = 1;
	}
out:
	if (fd >= 0)
		close(fd);
	free(path);
	return held;
}
