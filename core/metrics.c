/*
 * metrics.c - Prometheus metrics registry and text format 0.0.4 rendering.
 *
 * The registry lock guards the family list; each family has its own lock
 * guarding its series and their values, so updates of different families
 * never contend.  Series are found by a hash of their label values and a
 * linear scan: families here have few series.
 */
#include "metrics.h"

#include <assert.h>
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "xalloc.h"

#include "banned.h"

enum kind { KIND_COUNTER, KIND_GAUGE, KIND_HISTOGRAM };

struct series {
	char **values;      /* one per label name */
	uint64_t hash;
	double value;       /* counter, gauge */
	uint64_t *buckets;  /* histogram: per bucket (not cumulative), n_bounds + 1 */
	double sum;
	uint64_t count;
};

struct metric {
	char *name;
	char *help;
	enum kind kind;
	char **labels;
	size_t nlabels;
	double *bounds;  /* histogram upper bounds, without +Inf */
	size_t nbounds;

	pthread_mutex_t lock;
	struct series **series;
	size_t nseries;
	struct series *single;  /* the series of a label-less family */
};

struct metrics {
	pthread_mutex_t lock;
	struct metric **families;
	size_t nfamilies;
};

struct metrics *metrics_new(void)
{
	struct metrics *m = xcalloc(1, sizeof(*m));

	pthread_mutex_init(&m->lock, NULL);
	return m;
}

static void series_free(struct series *s, size_t nlabels)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < nlabels; i++)
		free(s->values[i]);
	free(s->values);
	free(s->buckets);
	free(s);
}

static void family_free(struct metric *f)
{
	size_t i;

	if (!f)
		return;
	for (i = 0; i < f->nseries; i++)
		series_free(f->series[i], f->nlabels);
	free(f->series);
	for (i = 0; i < f->nlabels; i++)
		free(f->labels[i]);
	free(f->labels);
	free(f->bounds);
	free(f->name);
	free(f->help);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

void metrics_free(struct metrics *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->nfamilies; i++)
		family_free(m->families[i]);
	free(m->families);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static int valid_name(const char *s, int colon_ok)
{
	const char *p;

	if (!s || !*s || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (p = s; *p; p++) {
		char c = *p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || (colon_ok && c == ':')))
			return 0;
	}
	return 1;
}

/* FNV-1a over the label values, each followed by a 0xff separator. */
static uint64_t hash_values(const char *const *values, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	size_t i;

	for (i = 0; i < n; i++) {
		const unsigned char *p = (const unsigned char *)(values[i] ? values[i] : "");
		for (; *p; p++)
			h = (h ^ *p) * 1099511628211ULL;
		h = (h ^ 0xff) * 1099511628211ULL;
	}
	return h;
}

static struct series *series_new(const struct metric *f, const char *const *values,
				 uint64_t hash)
{
	struct series *s = xcalloc(1, sizeof(*s));
	size_t i;

	s->values = xcalloc(f->nlabels ? f->nlabels : 1, sizeof(*s->values));
	for (i = 0; i < f->nlabels; i++)
		s->values[i] = xstrdup(values && values[i] ? values[i] : "");
	s->hash = hash;
	if (f->kind == KIND_HISTOGRAM)
		s->buckets = xcalloc(f->nbounds + 1, sizeof(*s->buckets));
	return s;
}

static int same_labels(const struct metric *f, const char *const *names)
{
	size_t i;

	for (i = 0; i < f->nlabels; i++)
		if (!names || !names[i] || strcmp(f->labels[i], names[i]))
			return 0;
	return !names || !names[f->nlabels];
}

static struct metric *family_register(struct metrics *m, enum kind kind, const char *name,
				      const char *help, const char *const *label_names,
				      const double *bounds, size_t nbounds)
{
	struct metric *f = NULL;
	size_t i, n = 0;

	assert(valid_name(name, 1));
	while (label_names && label_names[n]) {
		assert(valid_name(label_names[n], 0) && strncmp(label_names[n], "__", 2));
		assert(kind != KIND_HISTOGRAM || strcmp(label_names[n], "le"));
		n++;
	}
	if (nbounds && isinf(bounds[nbounds - 1]) && bounds[nbounds - 1] > 0)
		nbounds--;
	for (i = 0; i < nbounds; i++)
		assert(!isnan(bounds[i]) && (i == 0 || bounds[i] > bounds[i - 1]));

	pthread_mutex_lock(&m->lock);
	for (i = 0; i < m->nfamilies; i++) {
		if (strcmp(m->families[i]->name, name))
			continue;
		f = m->families[i];
		assert(f->kind == kind && same_labels(f, label_names));
		goto out;
	}
	f = xcalloc(1, sizeof(*f));
	f->name = xstrdup(name);
	f->help = xstrdup(help ? help : "");
	f->kind = kind;
	f->nlabels = n;
	f->labels = xcalloc(n ? n : 1, sizeof(*f->labels));
	for (i = 0; i < n; i++)
		f->labels[i] = xstrdup(label_names[i]);
	f->nbounds = nbounds;
	f->bounds = xcalloc(nbounds ? nbounds : 1, sizeof(*f->bounds));
	if (nbounds)
		memcpy(f->bounds, bounds, nbounds * sizeof(*bounds));
	pthread_mutex_init(&f->lock, NULL);
	if (n == 0) {
		f->single = series_new(f, NULL, 0);
		f->series = xcalloc(1, sizeof(*f->series));
		f->series[0] = f->single;
		f->nseries = 1;
	}
	m->families = xreallocarray(m->families, m->nfamilies + 1, sizeof(*m->families));
	m->families[m->nfamilies++] = f;
out:
	pthread_mutex_unlock(&m->lock);
	return f;
}

struct metric *metrics_counter(struct metrics *m, const char *name, const char *help,
			       const char *const *label_names)
{
	return family_register(m, KIND_COUNTER, name, help, label_names, NULL, 0);
}

struct metric *metrics_gauge(struct metrics *m, const char *name, const char *help,
			     const char *const *label_names)
{
	return family_register(m, KIND_GAUGE, name, help, label_names, NULL, 0);
}

struct metric *metrics_histogram(struct metrics *m, const char *name, const char *help,
				 const char *const *label_names, const double *buckets, size_t n)
{
	return family_register(m, KIND_HISTOGRAM, name, help, label_names, buckets, n);
}

/*
 * The index of the series of values (hashed to h; a NULL value is "") in
 * f->series, or f->nseries when there is none; call with f->lock held.
 */
static size_t find_series(const struct metric *f, const char *const *values, uint64_t h)
{
	size_t i, j;

	for (i = 0; i < f->nseries; i++) {
		struct series *s = f->series[i];
		if (s->hash != h)
			continue;
		for (j = 0; j < f->nlabels; j++)
			if (strcmp(s->values[j], values[j] ? values[j] : ""))
				break;
		if (j == f->nlabels)
			return i;
	}
	return f->nseries;
}

/* The series for values, created if new; call with f->lock held. */
static struct series *lookup(struct metric *f, const char *const *values)
{
	uint64_t h;
	size_t i;

	if (f->single)
		return f->single;
	h = hash_values(values, f->nlabels);
	i = find_series(f, values, h);
	if (i < f->nseries)
		return f->series[i];
	f->series = xreallocarray(f->series, f->nseries + 1, sizeof(*f->series));
	f->series[f->nseries] = series_new(f, values, h);
	return f->series[f->nseries++];
}

void metric_declare(struct metric *f, const char *const *const *values)
{
	const char **pick;
	size_t *at, k;

	if (!f)
		return;
	if (!f->nlabels) {
		pthread_mutex_lock(&f->lock);
		(void)lookup(f, NULL);
		pthread_mutex_unlock(&f->lock);
		return;
	}
	for (k = 0; k < f->nlabels; k++)
		if (!values[k] || !values[k][0])
			return;
	pick = xcalloc(f->nlabels, sizeof(*pick));
	at = xcalloc(f->nlabels, sizeof(*at));
	pthread_mutex_lock(&f->lock);
	for (;;) {
		/* at[] counts like an odometer, its last label fastest. */
		for (k = 0; k < f->nlabels; k++)
			pick[k] = values[k][at[k]];
		(void)lookup(f, pick);
		for (k = f->nlabels; k-- > 0;) {
			if (values[k][++at[k]])
				break;
			at[k] = 0;
		}
		if (k == SIZE_MAX)
			break;
	}
	pthread_mutex_unlock(&f->lock);
	free(at);
	free(pick);
}

struct metric *metrics_outcome_counter(struct metrics *m, const char *name, const char *help,
				       const char *const *accepted, const char *const *refused)
{
	static const char *const labels[] = { "outcome", "reason", NULL };
	static const char *const acc[] = { "accepted", NULL }, *const ref[] = { "refused", NULL };
	const char *const *va[] = { acc, accepted, NULL };
	const char *const *vr[] = { ref, refused, NULL };
	struct metric *f;

	if (!m)
		return NULL;
	f = metrics_counter(m, name, help, labels);
	metric_declare(f, va);
	metric_declare(f, vr);
	return f;
}

void metric_remove(struct metric *f, const char *const *label_values)
{
	size_t i;

	if (!f || !f->nlabels || !label_values)
		return;
	pthread_mutex_lock(&f->lock);
	i = find_series(f, label_values, hash_values(label_values, f->nlabels));
	if (i < f->nseries) {
		series_free(f->series[i], f->nlabels);
		memmove(&f->series[i], &f->series[i + 1], (f->nseries - i - 1) * sizeof(*f->series));
		f->nseries--;
	}
	pthread_mutex_unlock(&f->lock);
}

void metric_add(struct metric *f, const char *const *label_values, double v)
{
	if (!f)
		return;
	assert(f->kind != KIND_HISTOGRAM);
	assert(label_values || !f->nlabels);
	if (f->kind == KIND_COUNTER && !(v >= 0))
		return;
	pthread_mutex_lock(&f->lock);
	lookup(f, label_values)->value += v;
	pthread_mutex_unlock(&f->lock);
}

/* Set a series' value; also used for process counters read from /proc. */
static void set_value(struct metric *f, const char *const *label_values, double v)
{
	pthread_mutex_lock(&f->lock);
	lookup(f, label_values)->value = v;
	pthread_mutex_unlock(&f->lock);
}

void metric_set(struct metric *f, const char *const *label_values, double v)
{
	if (!f)
		return;
	assert(f->kind == KIND_GAUGE);
	assert(label_values || !f->nlabels);
	set_value(f, label_values, v);
}

void metric_observe(struct metric *f, const char *const *label_values, double v)
{
	struct series *s;
	size_t lo = 0, hi;

	if (!f)
		return;
	assert(f->kind == KIND_HISTOGRAM);
	assert(label_values || !f->nlabels);
	/* First bound >= v (le is "less or equal"); NaN lands in +Inf. */
	hi = f->nbounds;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (f->bounds[mid] >= v)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (isnan(v))
		lo = f->nbounds;
	pthread_mutex_lock(&f->lock);
	s = lookup(f, label_values);
	s->buckets[lo]++;
	s->sum += v;
	s->count++;
	pthread_mutex_unlock(&f->lock);
}

/*
 * Numbers as Prometheus parses them: integral values below 2^53 without
 * exponent or fraction, others in the shortest form that reads back exactly.
 */
static void add_number(struct buf *out, double v)
{
	char tmp[40];
	int prec;

	if (isnan(v)) {
		(void)buf_adds(out, "NaN");
		return;
	}
	if (isinf(v)) {
		(void)buf_adds(out, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	if (v == floor(v) && fabs(v) < 9007199254740992.0) {
		(void)buf_printf(out, "%.0f", v == 0 ? 0.0 : v);
		return;
	}
	for (prec = 15; prec < 17; prec++) {
		snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
	(void)buf_adds(out, tmp);
}

static void add_uint(struct buf *out, uint64_t v)
{
	(void)buf_printf(out, "%llu", (unsigned long long)v);
}

/* Escape for label values (quote too) or HELP text (quote kept). */
static void add_escaped(struct buf *out, const char *s, int quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			(void)buf_adds(out, "\\\\");
		else if (*s == '\n')
			(void)buf_adds(out, "\\n");
		else if (*s == '"' && quote)
			(void)buf_adds(out, "\\\"");
		else
			(void)buf_addch(out, *s);
	}
}

/* name{l1="v1",...[,le="x"]} with the trailing space. */
static void add_series_name(struct buf *out, const struct metric *f, const struct series *s,
			    const char *suffix, const char *le)
{
	size_t i;

	(void)buf_adds(out, f->name);
	(void)buf_adds(out, suffix);
	if (f->nlabels || le) {
		(void)buf_addch(out, '{');
		for (i = 0; i < f->nlabels; i++) {
			(void)buf_printf(out, "%s%s=\"", i ? "," : "", f->labels[i]);
			add_escaped(out, s->values[i], 1);
			(void)buf_addch(out, '"');
		}
		if (le)
			(void)buf_printf(out, "%sle=\"%s\"", f->nlabels ? "," : "", le);
		(void)buf_addch(out, '}');
	}
	(void)buf_addch(out, ' ');
}

static void render_histogram(struct buf *out, const struct metric *f, const struct series *s)
{
	struct buf le = BUF_INIT;
	uint64_t cum = 0;
	size_t i;

	for (i = 0; i <= f->nbounds; i++) {
		cum += s->buckets[i];
		buf_reset(&le);
		add_number(&le, i < f->nbounds ? f->bounds[i] : INFINITY);
		add_series_name(out, f, s, "_bucket", buf_str(&le));
		add_uint(out, cum);
		(void)buf_addch(out, '\n');
	}
	add_series_name(out, f, s, "_sum", NULL);
	add_number(out, s->sum);
	(void)buf_addch(out, '\n');
	add_series_name(out, f, s, "_count", NULL);
	add_uint(out, s->count);
	(void)buf_addch(out, '\n');
	buf_release(&le);
}

/* qsort comparators need the label count: series are compared value by value. */
static int cmp_series(const void *a, const void *b, void *arg)
{
	const struct series *x = *(const struct series *const *)a;
	const struct series *y = *(const struct series *const *)b;
	size_t i, n = *(const size_t *)arg;
	int c;

	for (i = 0; i < n; i++) {
		c = strcmp(x->values[i], y->values[i]);
		if (c)
			return c;
	}
	return 0;
}

static int cmp_family(const void *a, const void *b)
{
	const struct metric *x = *(const struct metric *const *)a;
	const struct metric *y = *(const struct metric *const *)b;

	return strcmp(x->name, y->name);
}

static void render_family(struct buf *out, struct metric *f)
{
	static const char *const type_name[] = {"counter", "gauge", "histogram"};
	size_t i;

	pthread_mutex_lock(&f->lock);
	if (!f->nseries)
		goto out;
	qsort_r(f->series, f->nseries, sizeof(*f->series), cmp_series, &f->nlabels);
	(void)buf_printf(out, "# HELP %s ", f->name);
	add_escaped(out, f->help, 0);
	(void)buf_printf(out, "\n# TYPE %s %s\n", f->name, type_name[f->kind]);
	for (i = 0; i < f->nseries; i++) {
		if (f->kind == KIND_HISTOGRAM) {
			render_histogram(out, f, f->series[i]);
			continue;
		}
		add_series_name(out, f, f->series[i], "", NULL);
		add_number(out, f->series[i]->value);
		(void)buf_addch(out, '\n');
	}
out:
	pthread_mutex_unlock(&f->lock);
}

void metrics_render(struct metrics *m, struct buf *out)
{
	size_t i;

	pthread_mutex_lock(&m->lock);
	/* Sorting in place is stable enough: names are unique.  None yet: families is NULL. */
	if (m->nfamilies)
		qsort(m->families, m->nfamilies, sizeof(*m->families), cmp_family);
	for (i = 0; i < m->nfamilies; i++)
		render_family(out, m->families[i]);
	pthread_mutex_unlock(&m->lock);
}

/* Read a small /proc file into buf (at most 64 KiB); 0 on success. */
static int read_small(const char *path, struct buf *b)
{
	buf_init(b, 65536);
	(void)buf_read_file(b, path, 0);  /* what was read before an error or the bound */
	return b->len ? 0 : -1;
}

/* Field number field (1-based, as proc(5) counts) of /proc/self/stat. */
static int stat_field(const char *stat, int field, unsigned long long *out)
{
	const char *p = strrchr(stat, ')');
	char *end;
	int i;

	if (!p)
		return -1;
	p++;
	/* After ")" come field 3 (state) onwards, space-separated. */
	for (i = 3; i <= field; i++) {
		while (*p == ' ')
			p++;
		if (!*p)
			return -1;
		if (i == field)
			break;
		while (*p && *p != ' ')
			p++;
	}
	*out = strtoull(p, &end, 10);
	return end == p ? -1 : 0;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;  /* the directory stream's own fd */
}

void metrics_process_collect(struct metrics *m)
{
	struct metric *start = metrics_gauge(m, "process_start_time_seconds",
		"Start time of the process since unix epoch in seconds.", NULL);
	struct metric *cpu = metrics_counter(m, "process_cpu_seconds_total",
		"Total user and system CPU time spent in seconds.", NULL);
	struct metric *rss = metrics_gauge(m, "process_resident_memory_bytes",
		"Resident memory size in bytes.", NULL);
	struct metric *vsz = metrics_gauge(m, "process_virtual_memory_bytes",
		"Virtual memory size in bytes.", NULL);
	struct metric *fds = metrics_gauge(m, "process_open_fds",
		"Number of open file descriptors.", NULL);
	struct metric *maxfds = metrics_gauge(m, "process_max_fds",
		"Maximum number of open file descriptors.", NULL);
	struct buf st = BUF_INIT, ps = BUF_INIT;
	long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	unsigned long long ut, stime, starttime, vsize, rsspages;
	struct rlimit rl;
	int n;

	if (tick > 0 && read_small("/proc/self/stat", &st) == 0) {
		if (!stat_field(st.data, 14, &ut) && !stat_field(st.data, 15, &stime))
			set_value(cpu, NULL, (double)(ut + stime) / (double)tick);
		if (!stat_field(st.data, 23, &vsize))
			set_value(vsz, NULL, (double)vsize);
		if (page > 0 && !stat_field(st.data, 24, &rsspages))
			set_value(rss, NULL, (double)rsspages * (double)page);
		if (!stat_field(st.data, 22, &starttime) && read_small("/proc/stat", &ps) == 0) {
			const char *bt = strstr(ps.data, "\nbtime ");
			if (bt)
				set_value(start, NULL, (double)strtoull(bt + 7, NULL, 10) +
							       (double)starttime / (double)tick);
		}
	}
	n = count_fds();
	if (n >= 0)
		set_value(fds, NULL, n);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		set_value(maxfds, NULL, rl.rlim_cur == RLIM_INFINITY ? INFINITY
								       : (double)rl.rlim_cur);
	buf_release(&st);
	buf_release(&ps);
}
