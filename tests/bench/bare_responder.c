/*
 * bare_responder.c - the benchmark's baseline: a bare libmicrohttpd server with
 * alertbridge's threading model (internal polling thread, a pool of 4 threads,
 * each on poll() as core/http_server.c) that reads each request body, discards it and answers 200
 * {"status":"ok"}.  `make bench` runs wrk against it and against alertbridge to
 * show what intake (auth, parsing, the durable sqlite commit) costs.
 *
 * usage: bare_responder PORT_FILE   binds 127.0.0.1 on an ephemeral port, writes
 * the port number to PORT_FILE, serves until SIGTERM or SIGINT.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <microhttpd.h>

#include "core/banned.h"

#define POOL_THREADS 4
#define CONNECTION_TIMEOUT_S 30

static const char ok_body[] = "{\"status\":\"ok\"}";

/* Per request: bytes of body seen, so the whole upload is consumed before answering. */
struct req {
	size_t body_bytes;
};

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct req *r = *con_cls;
	struct MHD_Response *resp = NULL;
	enum MHD_Result rc = MHD_NO;

	(void)cls;
	(void)url;
	(void)method;
	(void)version;
	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		*con_cls = r;
		return MHD_YES;
	}
	if (*upload_data_size) {
		(void)upload_data;
		r->body_bytes += *upload_data_size;
		*upload_data_size = 0;
		return MHD_YES;
	}
	resp = MHD_create_response_from_buffer(sizeof(ok_body) - 1, (void *)ok_body,
					       MHD_RESPMEM_PERSISTENT);
	if (!resp)
		goto out;
	if (MHD_add_response_header(resp, "Content-Type", "application/json") != MHD_YES)
		goto out;
	rc = MHD_queue_response(conn, MHD_HTTP_OK, resp);
out:
	MHD_destroy_response(resp);
	return rc;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)conn;
	(void)toe;
	free(*con_cls);
	*con_cls = NULL;
}

static int write_port(const char *path, unsigned port)
{
	FILE *f = fopen(path, "w");
	int rc = -1;

	if (!f)
		return -1;
	if (fprintf(f, "%u\n", port) > 0)
		rc = 0;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa;
	struct MHD_Daemon *d = NULL;
	const union MHD_DaemonInfo *info;
	sigset_t set;
	int sig = 0;
	int rc = 1;

	if (argc != 2) {
		fprintf(stderr, "usage: bare_responder PORT_FILE\n");
		return 2;
	}
	/* Block the stop signals in every thread (MHD's inherit the mask); main waits for them. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
		return 1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = 0;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	d = MHD_start_daemon(MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG, 0, NULL,
			     NULL, on_request, NULL,
			     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
			     MHD_OPTION_THREAD_POOL_SIZE, (unsigned)POOL_THREADS,
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT_S,
			     MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "bare_responder: cannot start libmicrohttpd: %s\n",
			strerror(errno));
		goto out;
	}
	info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	if (!info || !info->port || write_port(argv[1], info->port) != 0) {
		fprintf(stderr, "bare_responder: cannot publish the port in %s\n", argv[1]);
		goto out;
	}
	if (sigwait(&set, &sig) != 0)
		goto out;
	rc = 0;
out:
	if (d)
		MHD_stop_daemon(d);
	return rc;
}
