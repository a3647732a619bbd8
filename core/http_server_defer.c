/*
 * http_server_defer.c - slow work off the server's worker threads
 * (srv_defer(), http_server.h).  A handler that must spend long on the CPU
 * before it can answer (a bcrypt) has its request suspended
 * (MHD_suspend_connection) and its work queued for SRV_DEFER_THREADS
 * threads of our own; when the work is done the request is resumed
 * (MHD_resume_connection) and its handler runs again.  A worker thread is
 * never held, so unauthenticated work cannot starve the webhooks.
 */
#include "http_server_int.h"

#include <stdlib.h>

#include "banned.h"

/* A slow-work thread: run queued work until srv_defer_stop() and the queue is empty. */
static void *defer_main(void *arg)
{
	struct srv *s = arg;
	struct srv_request_impl *x;

	pthread_mutex_lock(&s->defer_mu);
	for (;;) {
		while (!s->defer_head && !s->defer_stop)
			pthread_cond_wait(&s->defer_wake, &s->defer_mu);
		x = s->defer_head;
		if (!x)
			break;
		s->defer_head = x->defer_next;
		if (!s->defer_head)
			s->defer_tail = NULL;
		s->defer_queued--;
		pthread_mutex_unlock(&s->defer_mu);
		x->defer_fn(x->defer_arg);
		x->deferred = 1;
		pthread_mutex_lock(&s->defer_mu);
		/*
		 * Resumed under defer_mu, so srv_defer_drain() cannot return (and
		 * MHD_stop_daemon() run) between the count and the resume.  The
		 * manual: "It is safe to resume a suspended connection at any time."
		 */
		MHD_resume_connection(x->conn);
		if (--s->defer_pending == 0)
			pthread_cond_broadcast(&s->defer_idle);
	}
	pthread_mutex_unlock(&s->defer_mu);
	return NULL;
}

enum err srv_defer_start(struct srv *s)
{
	for (; s->defer_threads < SRV_DEFER_THREADS; s->defer_threads++)
		if (pthread_create(&s->defer_thread[s->defer_threads], NULL, defer_main, s))
			return ERR_IO;
	return ERR_OK;
}

void srv_defer_drain(struct srv *s)
{
	pthread_mutex_lock(&s->defer_mu);
	/*
	 * No new deferral from here on (srv_defer() answers ERR_RETRY): a kept-
	 * alive connection may still bring a request between this and
	 * MHD_stop_daemon(), and it must not be left suspended.  The threads
	 * still run what is queued.
	 */
	s->defer_stop = 1;
	pthread_cond_broadcast(&s->defer_wake);
	while (s->defer_pending > 0)
		pthread_cond_wait(&s->defer_idle, &s->defer_mu);
	pthread_mutex_unlock(&s->defer_mu);
}

void srv_defer_stop(struct srv *s)
{
	pthread_mutex_lock(&s->defer_mu);
	s->defer_stop = 1;
	pthread_cond_broadcast(&s->defer_wake);
	pthread_mutex_unlock(&s->defer_mu);
	for (unsigned i = 0; i < s->defer_threads; i++)
		pthread_join(s->defer_thread[i], NULL);
	s->defer_threads = 0;
}

void srv_defer_release(struct srv_request_impl *x)
{
	if (x->defer_release && x->defer_arg)
		x->defer_release(x->defer_arg);
	x->defer_arg = NULL;
}

enum err srv_defer(const struct srv_request *req, void (*fn)(void *arg),
		   void (*release)(void *arg), void *arg)
{
	struct srv_request_impl *x = req->impl;
	struct srv *s = x->srv;
	enum err rc = ERR_RETRY;

	if (x->defer_fn || !fn)
		return ERR_INVALID;
	pthread_mutex_lock(&s->defer_mu);
	if (s->defer_queued < SRV_DEFER_QUEUE && !s->defer_stop) {
		x->defer_fn = fn;
		x->defer_release = release;
		x->defer_arg = arg;
		x->deferring = 1;
		/*
		 * Suspended here, inside the access handler (the only safe place,
		 * says the manual) and before the work is queued, so the resume
		 * always finds it suspended.
		 */
		MHD_suspend_connection(x->conn);
		x->defer_next = NULL;
		if (s->defer_tail)
			s->defer_tail->defer_next = x;
		else
			s->defer_head = x;
		s->defer_tail = x;
		s->defer_queued++;
		s->defer_pending++;
		pthread_cond_signal(&s->defer_wake);
		rc = ERR_OK;
	}
	pthread_mutex_unlock(&s->defer_mu);
	return rc;
}

void *srv_deferred(const struct srv_request *req)
{
	return req->impl->deferred ? req->impl->defer_arg : NULL;
}
