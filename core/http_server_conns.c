/*
 * http_server_conns.c - the server's connection table (http_server_int.h):
 * every open connection with its deadline, the caps that close a new
 * connection at once (max_connections, and its reserve for known clients),
 * the idle connections of the address holding the most that make room for a
 * newcomer at the cap, and the reaper thread that shuts down connections
 * past their deadline.
 */
#include "http_server_int.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "xalloc.h"

#include "banned.h"

#define REAP_PERIOD_MS 100
#define LIMIT_WARN_EVERY_US (10 * 1000000)

/* The IP address of sa as text ("127.0.0.1" also for v4-mapped IPv6); "" if unknown. */
void srv_format_addr(const struct sockaddr *sa, char out[INET6_ADDRSTRLEN])
{
	out[0] = '\0';
	if (!sa)
		return;
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)(const void *)sa;
		if (IN6_IS_ADDR_V4MAPPED(&a6->sin6_addr))
			inet_ntop(AF_INET, &a6->sin6_addr.s6_addr[12], out, INET6_ADDRSTRLEN);
		else
			inet_ntop(AF_INET6, &a6->sin6_addr, out, INET6_ADDRSTRLEN);
	} else if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *a4 = (const struct sockaddr_in *)(const void *)sa;
		inet_ntop(AF_INET, &a4->sin_addr, out, INET6_ADDRSTRLEN);
	}
}

void srv_peer_key(const struct sockaddr *sa, char out[SRV_PEER_KEY_LEN])
{
	struct in6_addr net;

	if (!sa || sa->sa_family != AF_INET6 ||
	    IN6_IS_ADDR_V4MAPPED(&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr)) {
		srv_format_addr(sa, out);
		return;
	}
	net = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
	memset(&net.s6_addr[8], 0, 8);
	if (!inet_ntop(AF_INET6, &net, out, INET6_ADDRSTRLEN)) {
		out[0] = '\0';
		return;
	}
	memcpy(out + strlen(out), "/64", sizeof("/64"));  /* INET6_ADDRSTRLEN + 4 fit */
}

/* Wait for a request's headers: from now, at most min(header, read timeout). */
void srv_arm_for_headers(struct srv *s, struct conn *c, int64_t now_us, int kept_alive)
{
	c->start_us = now_us;
	c->deadline_us = now_us + s->header_timeout_us;
	c->phase = kept_alive ? SRV_PHASE_NEXT_REQUEST : "headers";
}

/*
 * Warn that a cap closed connections (msg says which), at most every
 * LIMIT_WARN_EVERY_US; under s->lock.
 */
static void warn_limit(struct srv *s, int64_t now, const char *msg)
{
	struct log_line *l;

	if (s->last_limit_warn_us && now - s->last_limit_warn_us < LIMIT_WARN_EVERY_US)
		return;
	s->last_limit_warn_us = now;
	l = log_begin(LOG_WARN, msg);
	log_int(l, "max_connections", s->max_connections);
	if (s->reserve)
		log_int(l, "reserved", s->reserve);
	log_int(l, "refused_total", (int64_t)s->refused);
	log_end(l);
}

/* The bucket of key in s->peers (FNV-1a). */
static unsigned peer_bucket(const char *key)
{
	uint32_t h = 2166136261u;

	for (; *key; key++)
		h = (h ^ (unsigned char)*key) * 16777619u;
	return h % SRV_PEER_BUCKETS;
}

/* key's entry in s->peers, or NULL when it holds no admitted connection; under s->lock. */
static struct peer *peer_find(const struct srv *s, const char *key)
{
	struct peer *p;

	for (p = s->peers[peer_bucket(key)]; p; p = p->next)
		if (!strcmp(p->key, key))
			return p;
	return NULL;
}

/* Count one more admitted connection from key; its entry (s's).  Under s->lock. */
static struct peer *peer_add(struct srv *s, const char *key)
{
	struct peer *p = peer_find(s, key);
	unsigned b;

	if (!p) {
		b = peer_bucket(key);
		p = xcalloc(1, sizeof(*p));
		memcpy(p->key, key, sizeof(p->key));
		p->next = s->peers[b];
		s->peers[b] = p;
	}
	p->conns++;
	return p;
}

/* Count one fewer on p; freed at none.  Under s->lock. */
static void peer_drop(struct srv *s, struct peer *p)
{
	struct peer **pp;

	if (--p->conns)
		return;
	for (pp = &s->peers[peer_bucket(p->key)]; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	free(p);
}

/* Count c in the table (nconns and its address) and give it its header deadline. */
static void admit(struct srv *s, struct conn *c, int64_t now)
{
	c->admitted = 1;
	c->peer = peer_add(s, c->peer_key);
	s->nconns++;
	srv_arm_for_headers(s, c, now, 0);
}

/* Take c out of the counts (it is closing); nothing if it was never admitted. */
static void unadmit(struct srv *s, struct conn *c)
{
	if (!c->admitted)
		return;
	c->admitted = 0;
	s->nconns--;
	peer_drop(s, c->peer);
	c->peer = NULL;
}

unsigned srv_connections(struct srv *s)
{
	unsigned n;

	pthread_mutex_lock(&s->lock);
	n = s->nconns;
	pthread_mutex_unlock(&s->lock);
	return n;
}

/* Does c wait for a request's headers (a first one, or the next on a kept-alive connection)? */
static int is_idle(const struct conn *c)
{
	return c->admitted && c->deadline_us &&
	       (!strcmp(c->phase, "headers") || !strcmp(c->phase, SRV_PHASE_NEXT_REQUEST));
}

/*
 * The connection a newcomer from client key (srv_peer_key()) may take the
 * place of at the cap (under s->lock): an idle one from the client holding
 * the most, if that holds more than SRV_FAIR_CONNS and at least two more
 * than key (so that
 * it still holds more after the swap, and hoarders do not trade places);
 * the oldest of them.  NULL when there is none.
 */
static struct conn *hoarders_idle(const struct srv *s, const char *key)
{
	const struct peer *mine = peer_find(s, key);
	unsigned floor = mine ? mine->conns + 2 : 2;
	struct conn *c, *best = NULL;

	if (floor <= SRV_FAIR_CONNS)
		floor = SRV_FAIR_CONNS + 1;
	for (c = s->conns; c; c = c->next) {
		if (!is_idle(c) || c->peer->conns < floor)
			continue;
		if (!best || c->peer->conns > best->peer->conns ||
		    (c->peer->conns == best->peer->conns && c->start_us < best->start_us))
			best = c;
	}
	return best;
}

/*
 * Shut down c, a hoarder's idle connection, for a newcomer: it no longer
 * counts (MHD sees EOF and closes it); warned at most every
 * LIMIT_WARN_EVERY_US.  Under s->lock.
 */
static void evict(struct srv *s, struct conn *c, int64_t now)
{
	struct log_line *l;
	unsigned held = c->peer->conns;

	shutdown(c->fd, SHUT_RDWR);
	c->deadline_us = 0;
	unadmit(s, c);
	s->evicted++;
	if (s->last_evict_warn_us && now - s->last_evict_warn_us < LIMIT_WARN_EVERY_US)
		return;
	s->last_evict_warn_us = now;
	l = log_begin(LOG_WARN, "connection limit reached: closed an idle connection of the "
				"address holding the most");
	log_str(l, "remote_addr", c->addr);
	log_int(l, "held", held);
	log_int(l, "max_connections", s->max_connections);
	log_int(l, "evicted_total", (int64_t)s->evicted);
	log_end(l);
}

/* Is addr a known client, not expired?  Under s->lock. */
static int is_known(const struct srv *s, const char *addr, int64_t now)
{
	for (int i = 0; i < SRV_KNOWN_SLOTS; i++)
		if (s->known[i].until_us > now && !strcmp(s->known[i].addr, addr))
			return 1;
	return 0;
}

void srv_note_client(struct srv *s, const char *addr)
{
	int64_t now = clock_mono_us();
	int slot = 0;

	if (!*addr)
		return;
	pthread_mutex_lock(&s->lock);
	/* Its own slot if it has one, else the one that expires first (empty ones: 0). */
	for (int i = 0; i < SRV_KNOWN_SLOTS; i++) {
		if (!strcmp(s->known[i].addr, addr)) {
			slot = i;
			break;
		}
		if (s->known[i].until_us < s->known[slot].until_us)
			slot = i;
	}
	memcpy(s->known[slot].addr, addr, sizeof(s->known[slot].addr));
	s->known[slot].until_us = now + SRV_KNOWN_TTL_US;
	pthread_mutex_unlock(&s->lock);
}

/*
 * Whether a new connection from addr is closed at once, and the warning's
 * message (under s->lock): past max_connections for anyone, past
 * max_connections - reserve for clients that are not known.
 */
static const char *over_cap(const struct srv *s, const char *addr, int64_t now)
{
	if (!s->max_connections)
		return NULL;
	if (s->nconns >= s->max_connections)
		return "connection limit reached: closing new connections";
	if (s->nconns >= s->max_connections - s->reserve && !is_known(s, addr, now))
		return "connection limit reached: the rest is reserved for known clients";
	return NULL;
}

/*
 * Whether client key (srv_peer_key()) holds max_connections_per_ip admitted
 * connections already (under s->lock).  Kept here rather than by
 * libmicrohttpd's MHD_OPTION_PER_IP_CONNECTION_LIMIT, which counts per full
 * address: an IPv6 client counts as its /64.
 */
static int over_share(const struct srv *s, const char *key)
{
	const struct peer *p;

	if (!s->max_per_ip)
		return 0;
	p = peer_find(s, key);
	return p && p->conns >= s->max_per_ip;
}

/*
 * MHD's connection notices.  A new connection is shut down at once past
 * its client's share (over_share()), else tracked and given its
 * header deadline; past the cap (over_cap()) it is shut down at once (MHD
 * then reads EOF and closes it), so the client sees its connection closed
 * rather than waiting in the kernel's backlog.  The reserve is checked at
 * accept, by address: nothing else is known yet, and a known client's
 * address is what passed credentials before.  That leaves a client the
 * reserve does not know yet (every client, right after a start) to the
 * unreserved connections, which idle connections from a few addresses can
 * hold: so at the cap a newcomer takes the place of a hoarder's idle
 * connection (hoarders_idle()), as nginx reuses idle connections when it
 * runs out.  The table stays as full; an idle connection costs its client
 * nothing but a reconnect, and no request in progress is cut.
 */
void srv_on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct srv *s = cls;
	struct conn *c = *socket_context;
	const union MHD_ConnectionInfo *ci;
	const char *why;
	int64_t now = clock_mono_us();

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (!c)
			return;
		pthread_mutex_lock(&s->lock);
		if (c->prev)
			c->prev->next = c->next;
		else
			s->conns = c->next;
		if (c->next)
			c->next->prev = c->prev;
		unadmit(s, c);
		pthread_mutex_unlock(&s->lock);
		free(c);
		*socket_context = NULL;
		return;
	}
	ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return;
	c = xcalloc(1, sizeof(*c));
	c->fd = ci->connect_fd;
	ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	srv_format_addr(ci ? ci->client_addr : NULL, c->addr);
	srv_peer_key(ci ? ci->client_addr : NULL, c->peer_key);
	pthread_mutex_lock(&s->lock);
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	if (over_share(s, c->peer_key)) {
		shutdown(c->fd, SHUT_RDWR);  /* unlogged: the client's own excess */
		pthread_mutex_unlock(&s->lock);
		*socket_context = c;
		return;
	}
	why = over_cap(s, c->addr, now);
	if (why) {
		struct conn *idle = hoarders_idle(s, c->peer_key);
		if (idle) {
			evict(s, idle, now);
			why = NULL;
		}
	}
	if (why) {
		s->refused++;
		warn_limit(s, now, why);
		shutdown(c->fd, SHUT_RDWR);
	} else {
		admit(s, c, now);
	}
	pthread_mutex_unlock(&s->lock);
	*socket_context = c;
}

/*
 * The reaper: every REAP_PERIOD_MS, shut down the connections past their
 * deadline.  shutdown(2) rather than close(2): the socket stays MHD's, which
 * sees EOF and closes it (and sends us the "closed" notice) itself.
 */
void *srv_reap(void *arg)
{
	struct srv *s = arg;
	struct timespec ts;
	struct conn *c;
	int64_t now;

	pthread_mutex_lock(&s->lock);
	while (!s->reaper_stop) {
		now = clock_mono_us();
		for (c = s->conns; c; c = c->next) {
			struct log_line *l;
			if (!c->deadline_us || now < c->deadline_us)
				continue;
			shutdown(c->fd, SHUT_RDWR);
			s->timed_out++;
			/* An idle kept-alive connection is routine (clients pool them). */
			if (!strcmp(c->phase, SRV_PHASE_NEXT_REQUEST))
				l = log_begin(LOG_DEBUG, "closed an idle connection");
			else
				l = log_begin(LOG_INFO, "closed a slow connection");
			log_str(l, "remote_addr", c->addr);
			log_str(l, "waiting_for", c->phase);
			log_int(l, "after_ms", (now - c->start_us) / 1000);
			log_end(l);
			c->deadline_us = 0;
		}
		ts = clock_mono_deadline(REAP_PERIOD_MS);
		pthread_cond_timedwait(&s->reaper_wake, &s->lock, &ts);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}
