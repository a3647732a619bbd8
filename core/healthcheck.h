/*
 * healthcheck.h - `alertbridge healthcheck`: ask a running alertbridge on
 * this host whether it is alive (GET /-/healthy), for a Docker HEALTHCHECK
 * that needs no curl in the image.
 */
#ifndef AB_HEALTHCHECK_H
#define AB_HEALTHCHECK_H

#include <stdint.h>

#include "buf.h"
#include "err.h"

/*
 * Append to out the URL of /-/healthy for a server listening on
 * listen_address ("HOST:PORT", ":PORT", "[V6]:PORT"; as the config's
 * listen_address): a wildcard or empty host is asked on the loopback
 * (0.0.0.0 and "" as 127.0.0.1, [::] as [::1]); tls selects https.
 * ERR_INVALID, with errmsg, when listen_address has no ":PORT".
 */
enum err healthcheck_url(const char *listen_address, int tls, struct buf *out,
			 struct buf *errmsg) __attribute__((warn_unused_result));

/*
 * GET healthcheck_url(listen_address, tls) within timeout_ms.  With tls the
 * server certificate is not verified (the question is only whether this
 * host's process answers).  ERR_OK on a 200; otherwise ERR_IO for another
 * status, ERR_INVALID for the address, or http_do()'s error (no answer), with
 * errmsg saying which.
 */
enum err healthcheck_probe(const char *listen_address, int tls, int64_t timeout_ms,
			   struct buf *errmsg) __attribute__((warn_unused_result));

/*
 * The `alertbridge healthcheck` command: healthcheck_probe() of listen_address
 * when not NULL, else of the listen_address of the configuration at
 * config_path (cfg_load(); https when its webhook.tls is set), within 5 s.
 * Says why on stderr when not healthy.  Returns the exit status: 0 healthy,
 * 1 not, or the configuration does not load.
 */
int healthcheck_command(const char *listen_address, const char *config_path);

#endif
