/*
 * xalloc.h - allocation that aborts on failure.
 *
 * alertbridge runs under a supervisor that restarts it; an out-of-memory
 * condition is not something a request handler can recover from, so these
 * wrappers log to stderr and abort() instead of returning NULL (redis zmalloc,
 * git xmalloc).  Sizes that come from input must be capped before calling.
 */
#ifndef AB_XALLOC_H
#define AB_XALLOC_H

#include <stddef.h>

/* malloc(n); never returns NULL (n == 0 allocates 1 byte). */
void *xmalloc(size_t n);
/* calloc(nmemb, size) with overflow check; never returns NULL. */
void *xcalloc(size_t nmemb, size_t size);
/* realloc(p, n); never returns NULL. */
void *xrealloc(void *p, size_t n);
/* reallocarray: realloc(p, nmemb * size) with overflow check (aborts on overflow). */
void *xreallocarray(void *p, size_t nmemb, size_t size);
/* strdup(s); s == NULL returns NULL. */
char *xstrdup(const char *s);
/* Copy of the first n bytes of s plus a NUL; s must hold n bytes. */
char *xstrndup(const char *s, size_t n);

#endif
