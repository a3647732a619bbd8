/* err.c - names for enum err; a switch without default so a new code is flagged. */
#include "err.h"

const char *err_str(enum err code)
{
	switch (code) {
	case ERR_OK: return "ok";
	case ERR_INVALID: return "invalid";
	case ERR_AUTH: return "auth";
	case ERR_FORBIDDEN: return "forbidden";
	case ERR_NOTFOUND: return "not found";
	case ERR_GONE: return "gone";
	case ERR_CONFLICT: return "conflict";
	case ERR_TOOBIG: return "too big";
	case ERR_RETRY: return "retry";
	case ERR_IO: return "io";
	case ERR_DB: return "db";
	case ERR_UNAVAILABLE: return "unavailable";
	}
	return "unknown";
}
