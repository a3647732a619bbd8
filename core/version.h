/*
 * version.h - this binary's build identity (version, git revision, build
 * date, compiler) and the runtime versions of the libraries it linked, for
 * `alertbridge version` / `--version` and the alertbridge_build_info metric
 * (as Prometheus' own prometheus_build_info).  The Makefile passes the values
 * to version.c alone (-D), so a new commit recompiles one object.
 */
#ifndef AB_VERSION_H
#define AB_VERSION_H

#include "buf.h"
#include "metrics.h"

struct version_info {
	const char *version;     /* "0.1.0": the VERSION file, else `git describe` */
	const char *revision;    /* git commit (12 hex digits, "-dirty" when modified), or "unknown" */
	const char *build_date;  /* UTC, RFC 3339 "2026-11-25T15:44:12Z"; SOURCE_DATE_EPOCH if set */
	const char *compiler;    /* "gcc 12.2.0" (__VERSION__) */
};

/* This binary's identity; static storage, never NULL. */
const struct version_info *version_get(void);

/* "alertbridge/VERSION", the User-Agent of our HTTP clients; static storage. */
const char *version_user_agent(void);

/*
 * Append the text `alertbridge version` prints: the first line
 * "alertbridge version V (revision: R)", then the build date, the compiler and
 * one line per linked library with the version it runs with (asked of the
 * library at run time: MHD_get_version, curl_version_info, jansson_version_str,
 * sqlite3_libversion, yaml_get_version_string, gnutls_check_version,
 * nettle_version_major/minor), each line ending in '\n'.
 */
void version_text(struct buf *out);

/*
 * Register the gauge alertbridge_build_info{version,revision,build_date,
 * compiler} in m and set it to 1, with vi's values (version_get() when vi is
 * NULL).  Label values are escaped by metrics_render() (text format 0.0.4).
 */
void version_register_metric(struct metrics *m, const struct version_info *vi);

#endif
