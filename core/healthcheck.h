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
 * The flags of the serve command that process proc_dir ("/proc/1": the
 * container's main process) runs, for a HEALTHCHECK that cannot see them:
 * when proc_dir/exe is the same file as /proc/self/exe (this executable;
 * stat(2) device and inode) and proc_dir/cmdline (proc(5): the arguments,
 * each ended by a NUL) names the command "serve", set *listen_address to its
 * --web.listen-address and *config_file to its --config.file (each
 * "--flag=V" or "--flag V"; NULL when absent; a relative config path is
 * made proc_dir/cwd/PATH, so it resolves as it did for serve), new strings
 * (free()), and return 1.  Else 0, both NULL: another program, another
 * command, or proc_dir not readable (not Linux, or another user's process).
 */
int healthcheck_serve_flags(const char *proc_dir, char **listen_address, char **config_file);

/*
 * The `alertbridge healthcheck` command: healthcheck_probe() of the address
 * the running service listens on, chosen as serve chooses it, within 5 s.
 * Each of --web.listen-address (listen_address) and --config.file
 * (config_file) is healthcheck's own flag when given (NULL: not given),
 * else that of the serve command PID 1 runs (healthcheck_serve_flags() of
 * "/proc/1": in the image, serve is PID 1 and may have been given other
 * flags than the HEALTHCHECK), else default_config for the file.  The
 * address is the flag's, else the config's listen_address (serve's
 * precedence); https when the config's webhook.tls is set.  A config that
 * does not load is an error only when the address must come from it.  Says
 * why on stderr when not healthy.  Returns the exit status: 0 healthy, 1
 * not, or no address.
 */
int healthcheck_command(const char *listen_address, const char *config_file,
			const char *default_config);

#endif
