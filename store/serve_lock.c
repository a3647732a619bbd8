/*
 * serve_lock.c - "<database>.lock" (serve_lock.h): an open-file-description
 * lock of fcntl(2), so that the kernel, not a PID check, says whether the
 * holder still runs, and a PID and URL written in the file for the people
 * and commands that find it taken.
 */
#include "store/serve_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/db.h"
#include "core/healthcheck.h"
#include "core/xalloc.h"
#include "core/banned.h"

#define HEALTHY_PATH "/-/healthy"  /* what healthcheck_url() ends with */
#define NOTE_KEY "writes:\n"  /* the note's first line (serve_lock.h) */

struct serve_lock {
	int fd;
	char *path;
	long unclean_pid;  /* the PID the file named when taken (its holder never released it) */
	char *unclean_note;  /* its note: serve_lock_unclean_note(); NULL: none */
	int settled;       /* serve_lock_settled(): the release may mark the stop clean */
	pthread_mutex_t mu;  /* guards the file's text and the fields below */
	char url[256];     /* the URL line ("" until serve_lock_set_address()) */
	char *note;        /* the note in the file (malloc'd); NULL: none */
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
 * The unclean holder's note in fd's text (serve_lock.h: after "writes:"),
 * its padding cut; NULL when there is none.  malloc'd.
 */
static char *read_note(int fd)
{
	char *text = xmalloc(NOTE_FILE_BYTES + 1), *at, *out = NULL;
	ssize_t n = pread(fd, text, NOTE_FILE_BYTES, 0);
	size_t len;

	if (n > 0) {
		text[n] = '\0';
		at = strstr(text, "\n" NOTE_KEY);
		if (at) {
			at += 1 + strlen(NOTE_KEY);
			len = strlen(at);
			while (len && at[len - 1] == ' ')
				len--;
			out = xstrndup(at, len);
		}
	}
	free(text);
	return out;
}

/* Write the file's text: PID, URL, and the note when there is one.  Under l->mu. */
static enum err write_all(struct serve_lock *l, int truncate, struct buf *errmsg)
{
	struct buf text = BUF_INIT;
	enum err rc = ERR_OK;

	(void)buf_printf(&text, "%ld\n%s\n", (long)getpid(), l->url);
	if (l->note && text.len + strlen(NOTE_KEY) + strlen(l->note) <= NOTE_FILE_BYTES) {
		(void)buf_adds(&text, NOTE_KEY);
		(void)buf_adds(&text, l->note);
	}
	if (l->note) {  /* padded: always the same size, rewritten in place */
		while (text.len < NOTE_FILE_BYTES)
			(void)buf_addch(&text, ' ');
		truncate = 0;
	}
	if ((truncate && ftruncate(l->fd, 0) != 0) ||
	    pwrite(l->fd, text.data, text.len, 0) != (ssize_t)text.len) {
		buf_setf(errmsg, "%s: %s", l->path, strerror(errno));
		rc = ERR_IO;
	}
	buf_release(&text);
	return rc;
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
	l->unclean_note = h.pid ? read_note(fd) : NULL;
	pthread_mutex_init(&l->mu, NULL);
	fd = -1;
	path = NULL;
	snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	rc = write_text(l, pid, errmsg);
	if (!rc && l->unclean_note && *l->unclean_note)  /* passed on */
		serve_lock_note(l, l->unclean_note);
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
		rc = write_all(l, 1, errmsg);
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

const char *serve_lock_unclean_note(const struct serve_lock *l)
{
	return l ? l->unclean_note : NULL;
}

void serve_lock_note(struct serve_lock *l, const char *text)
{
	if (!l || !text)
		return;
	pthread_mutex_lock(&l->mu);
	if (!l->note || strcmp(l->note, text)) {
		struct buf err = BUF_INIT;

		free(l->note);
		l->note = xstrdup(text);
		(void)write_all(l, 0, &err);
		buf_release(&err);
	}
	pthread_mutex_unlock(&l->mu);
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
	/*
	 * A clean stop names no PID; a failed truncate leaves it unclean, the
	 * safe side.  Pending writes stay noted, and so does the doubt of an
	 * unclean holder without a note until settled.
	 */
	if ((!l->note || !*l->note) && (!l->unclean_pid || l->unclean_note || l->settled))
		(void)!ftruncate(l->fd, 0);
	close(l->fd);  /* the last descriptor of its open file description: the lock goes */
	pthread_mutex_destroy(&l->mu);
	free(l->note);
	free(l->unclean_note);
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
