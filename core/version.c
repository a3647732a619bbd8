/*
 * version.c - build identity and library versions (version.h).  The only
 * object compiled with the Makefile's AB_VERSION, AB_REVISION and
 * AB_BUILD_DATE defines; the fallbacks below are for a build without them.
 */
#include "version.h"

#include <curl/curl.h>
#include <gnutls/gnutls.h>
#include <jansson.h>
#include <microhttpd.h>
#include <nettle/version.h>
#include <sqlite3.h>
#include <yaml.h>

#include "banned.h"

#ifndef AB_VERSION
#define AB_VERSION "0.1.0"
#endif
#ifndef AB_REVISION
#define AB_REVISION "unknown"
#endif
#ifndef AB_BUILD_DATE
#define AB_BUILD_DATE "unknown"
#endif
#if defined(__clang__)
#define AB_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define AB_COMPILER "gcc " __VERSION__
#else
#define AB_COMPILER "unknown"
#endif

static const struct version_info info = {
	AB_VERSION, AB_REVISION, AB_BUILD_DATE, AB_COMPILER,
};

const struct version_info *version_get(void)
{
	return &info;
}

const char *version_user_agent(void)
{
	return "alertbridge/" AB_VERSION;
}

void version_text(struct buf *out)
{
	const curl_version_info_data *curl = curl_version_info(CURLVERSION_NOW);

	(void)buf_printf(out, "alertbridge version %s (revision: %s)\n", info.version,
			 info.revision);
	(void)buf_printf(out, "  build date:    %s\n", info.build_date);
	(void)buf_printf(out, "  compiler:      %s\n", info.compiler);
	(void)buf_printf(out, "  libmicrohttpd: %s\n", MHD_get_version());
	(void)buf_printf(out, "  libcurl:       %s (%s)\n", curl->version,
			 curl->ssl_version ? curl->ssl_version : "no TLS");
	(void)buf_printf(out, "  jansson:       %s\n", jansson_version_str());
	(void)buf_printf(out, "  sqlite:        %s\n", sqlite3_libversion());
	(void)buf_printf(out, "  libyaml:       %s\n", yaml_get_version_string());
	(void)buf_printf(out, "  gnutls:        %s\n", gnutls_check_version(NULL));
	(void)buf_printf(out, "  nettle:        %d.%d\n", nettle_version_major(),
			 nettle_version_minor());
}

void version_register_metric(struct metrics *m, const struct version_info *vi)
{
	static const char *const names[] = { "version", "revision", "build_date", "compiler",
					     NULL };
	const char *values[4];
	struct metric *g;

	if (!vi)
		vi = &info;
	values[0] = vi->version;
	values[1] = vi->revision;
	values[2] = vi->build_date;
	values[3] = vi->compiler;
	g = metrics_gauge(m, "alertbridge_build_info",
			  "A metric with a constant '1' value labeled by version, revision, "
			  "build date and compiler from which alertbridge was built.",
			  names);
	metric_set(g, values, 1);
}
