/*
 * metrics.h - a thread-safe registry of Prometheus metrics and its rendering
 * in the text exposition format 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/).
 *
 * Families (counter, gauge, histogram) are registered once, at start, with
 * their label names; a series is created the first time a set of label
 * values is used.  Updating a series costs one mutex (the family's).
 */
#ifndef AB_METRICS_H
#define AB_METRICS_H

#include <stddef.h>

#include "buf.h"

struct metrics;
/* One family: a name, its help, type and label names, and its series. */
struct metric;

/* A new empty registry; never NULL.  Free with metrics_free(). */
struct metrics *metrics_new(void);
/* Free the registry and every family in it; m may be NULL. */
void metrics_free(struct metrics *m);

/*
 * Register a family and return it; the pointer lives as long as the registry.
 * name must match [a-zA-Z_:][a-zA-Z0-9_:]*; label_names is a NULL-terminated
 * array of names matching [a-zA-Z_][a-zA-Z0-9_]* (not starting with "__"),
 * or NULL for none; help is any text.  All strings are copied.  Registering
 * the same name again with the same type and label names returns the same
 * family; an invalid name or a clash is a programming error (assert).
 * Counters should be named *_total, as Prometheus recommends.
 */
struct metric *metrics_counter(struct metrics *m, const char *name, const char *help,
			       const char *const *label_names);
struct metric *metrics_gauge(struct metrics *m, const char *name, const char *help,
			     const char *const *label_names);
/*
 * A histogram with n upper bounds in buckets, strictly increasing (a last
 * +Inf is allowed and implied anyway); label_names must not contain "le".
 */
struct metric *metrics_histogram(struct metrics *m, const char *name, const char *help,
				 const char *const *label_names, const double *buckets, size_t n);

/*
 * Update the series of f named by label_values: an array of exactly as many
 * strings as f has label names (NULL entries count as ""), or NULL when f
 * has no labels (the fast path: no lookup).  The series is created on first
 * use.  f may be NULL (nothing happens), so optional metrics need no checks.
 * metric_add: counters and gauges; a counter ignores v < 0 and NaN.
 * metric_set: gauges only.
 * metric_observe: histograms only; v in the histogram's unit (seconds, bytes).
 */
void metric_add(struct metric *f, const char *const *label_values, double v);
void metric_set(struct metric *f, const char *const *label_values, double v);
void metric_observe(struct metric *f, const char *const *label_values, double v);
/*
 * Create, at 0, every series of f named by one value from each of
 * values[0] (for f's first label name), values[1], ... - each a
 * NULL-terminated array of strings: their cross product.  Series that
 * exist keep their values.  For the series whose label values are known in
 * advance (the configured receivers, a fixed list of reasons): Prometheus'
 * increase() and rate() count from a series' first sample, so a series that
 * first appears at 1 shows no increase and an alert on it would miss the
 * first event; declared at 0 (at start, and again for a new config), it
 * does not.  f NULL, or an empty array among values: nothing; f without
 * labels: its one series (values unused).  All strings are copied.
 */
void metric_declare(struct metric *f, const char *const *const *values);

/*
 * A counter of requests by outcome and reason, as the signed endpoints keep
 * (labels outcome, reason): registered in m by metrics_counter(), and its
 * series outcome="accepted" with each of accepted and outcome="refused" with
 * each of refused (NULL-terminated) declared at 0.  m NULL: NULL (metric_add
 * ignores a NULL family).
 */
struct metric *metrics_outcome_counter(struct metrics *m, const char *name, const char *help,
				       const char *const *accepted, const char *const *refused);

/*
 * Delete the series of f named by label_values (as for metric_add), so it is
 * no longer rendered: for gauges that describe things that went away (a pod
 * the janitor no longer tracks).  No-op when f is NULL, has no labels, or
 * has no such series.
 */
void metric_remove(struct metric *f, const char *const *label_values);

/*
 * Append the whole registry to out in text format 0.0.4: families sorted by
 * name, each with "# HELP" and "# TYPE" lines, then its series sorted by
 * label values; histograms as cumulative _bucket{le="..."} lines ending with
 * le="+Inf", then _sum and _count.  A labelled family without series yet is
 * left out.  Label values are escaped (\\, \", \n); numbers are written as
 * Prometheus reads them (integers without exponent, +Inf, -Inf, NaN).
 */
void metrics_render(struct metrics *m, struct buf *out);

/*
 * Register (first time) and update the standard process metrics of this
 * process: process_start_time_seconds, process_cpu_seconds_total,
 * process_resident_memory_bytes, process_virtual_memory_bytes,
 * process_open_fds and process_max_fds, read from /proc/self (Linux).  Call
 * it before metrics_render() in the /metrics handler.  Values it cannot read
 * are left as they were.
 */
void metrics_process_collect(struct metrics *m);

#endif
