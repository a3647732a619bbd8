/* test_metrics.c - metrics registry: exact text format output, escaping, concurrency. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "core/metrics.h"

static char *render(struct metrics *m)
{
	struct buf b = BUF_INIT;

	metrics_render(m, &b);
	return buf_detach(&b);
}

/* m renders exactly as want; m is freed. */
static void renders_as(struct metrics *m, const char *want)
{
	char *out = render(m);

	assert_string_equal(out, want);
	free(out);
	metrics_free(m);
}

/* An empty registry renders nothing (and sorts nothing: qsort of NULL is undefined). */
static void empty_registry_renders_nothing(void **state)
{
	struct metrics *m = metrics_new();
	struct buf out = BUF_INIT;
	(void)state;

	metrics_render(m, &out);
	assert_string_equal(buf_str(&out), "");
	buf_release(&out);
	metrics_free(m);
}

static void counter_and_gauge_text(void **state)
{
	static const char *const labels[] = {"method", "code", NULL};
	struct metrics *m = metrics_new();
	struct metric *c, *g;

	(void)state;
	c = metrics_counter(m, "http_requests_total", "Requests served.", labels);
	g = metrics_gauge(m, "queue_depth", "Events waiting.", NULL);
	metric_add(c, (const char *const[]){"POST", "200"}, 1);
	metric_add(c, (const char *const[]){"GET", "404"}, 2);
	metric_add(c, (const char *const[]){"POST", "200"}, 3);
	metric_add(c, (const char *const[]){"POST", "200"}, -5); /* ignored */
	metric_set(g, NULL, 7);
	metric_add(g, NULL, -2.5);
	renders_as(m, "# HELP http_requests_total Requests served.\n"
		   "# TYPE http_requests_total counter\n"
		   "http_requests_total{method=\"GET\",code=\"404\"} 2\n"
		   "http_requests_total{method=\"POST\",code=\"200\"} 4\n"
		   "# HELP queue_depth Events waiting.\n"
		   "# TYPE queue_depth gauge\n"
		   "queue_depth 4.5\n");
}

static void escaping_of_labels_and_help(void **state)
{
	static const char *const labels[] = {"path", NULL};
	struct metrics *m = metrics_new();
	struct metric *c;

	(void)state;
	c = metrics_counter(m, "odd_total", "Help with \\ and\nnewline and \"quotes\".", labels);
	metric_add(c, (const char *const[]){"a\\b\"c\nd"}, 1);
	metric_add(c, (const char *const[]){NULL}, 1);
	renders_as(m, "# HELP odd_total Help with \\\\ and\\nnewline and \"quotes\".\n"
		   "# TYPE odd_total counter\n"
		   "odd_total{path=\"\"} 1\n"
		   "odd_total{path=\"a\\\\b\\\"c\\nd\"} 1\n");
}

static void histogram_text(void **state)
{
	static const char *const labels[] = {"route", NULL};
	static const double bounds[] = {0.1, 1, 2.5, INFINITY};
	struct metrics *m = metrics_new();
	struct metric *h;

	(void)state;
	h = metrics_histogram(m, "req_seconds", "Latency.", labels, bounds, 4);
	metric_observe(h, (const char *const[]){"/x"}, 0.05);
	metric_observe(h, (const char *const[]){"/x"}, 0.1); /* le is inclusive */
	metric_observe(h, (const char *const[]){"/x"}, 2);
	metric_observe(h, (const char *const[]){"/x"}, 100);
	renders_as(m, "# HELP req_seconds Latency.\n"
		   "# TYPE req_seconds histogram\n"
		   "req_seconds_bucket{route=\"/x\",le=\"0.1\"} 2\n"
		   "req_seconds_bucket{route=\"/x\",le=\"1\"} 2\n"
		   "req_seconds_bucket{route=\"/x\",le=\"2.5\"} 3\n"
		   "req_seconds_bucket{route=\"/x\",le=\"+Inf\"} 4\n"
		   "req_seconds_sum{route=\"/x\"} 102.15\n"
		   "req_seconds_count{route=\"/x\"} 4\n");
}

static void labelless_histogram_and_empty_family(void **state)
{
	static const char *const labels[] = {"x", NULL};
	static const double bounds[] = {1};
	struct metrics *m = metrics_new();
	struct metric *h;

	(void)state;
	(void)metrics_counter(m, "unused_total", "Never touched.", labels);
	h = metrics_histogram(m, "size_bytes", "Sizes.", NULL, bounds, 1);
	metric_observe(h, NULL, 0.5);
	renders_as(m, "# HELP size_bytes Sizes.\n"
		   "# TYPE size_bytes histogram\n"
		   "size_bytes_bucket{le=\"1\"} 1\n"
		   "size_bytes_bucket{le=\"+Inf\"} 1\n"
		   "size_bytes_sum 0.5\n"
		   "size_bytes_count 1\n");
}

static void numbers_as_prometheus_reads_them(void **state)
{
	struct metrics *m = metrics_new();

	(void)state;
	metric_set(metrics_gauge(m, "a", "", NULL), NULL, 1e6);
	metric_set(metrics_gauge(m, "b", "", NULL), NULL, NAN);
	metric_set(metrics_gauge(m, "c", "", NULL), NULL, -INFINITY);
	metric_set(metrics_gauge(m, "d", "", NULL), NULL, 0.1 + 0.2);
	metric_set(metrics_gauge(m, "e", "", NULL), NULL, 1.5e300);
	metric_set(metrics_gauge(m, "f", "", NULL), NULL, -0.0);
	metric_add(metrics_counter(m, "g_total", "", NULL), NULL, NAN); /* ignored */
	renders_as(m, "# HELP a \n# TYPE a gauge\na 1000000\n"
		   "# HELP b \n# TYPE b gauge\nb NaN\n"
		   "# HELP c \n# TYPE c gauge\nc -Inf\n"
		   "# HELP d \n# TYPE d gauge\nd 0.30000000000000004\n"
		   "# HELP e \n# TYPE e gauge\ne 1.5e+300\n"
		   "# HELP f \n# TYPE f gauge\nf 0\n"
		   "# HELP g_total \n# TYPE g_total counter\ng_total 0\n");
}

static void register_twice_returns_same_family(void **state)
{
	static const char *const labels[] = {"a", NULL};
	struct metrics *m = metrics_new();

	(void)state;
	assert_ptr_equal(metrics_counter(m, "x_total", "X.", labels),
			 metrics_counter(m, "x_total", "X.", labels));
	metric_add(NULL, NULL, 1); /* NULL family: no-op */
	metric_set(NULL, NULL, 1);
	metric_observe(NULL, NULL, 1);
	metrics_free(m);
	metrics_free(NULL);
}

#define THREADS 4
#define ADDS 20000

struct adder {
	struct metric *c;
	struct metric *lc;
};

static void *add_many(void *arg)
{
	struct adder *a = arg;
	int i;

	for (i = 0; i < ADDS; i++) {
		metric_add(a->c, NULL, 1);
		metric_add(a->lc, (const char *const[]){i % 2 ? "odd" : "even"}, 1);
	}
	return NULL;
}

static void concurrent_adds_sum_exactly(void **state)
{
	static const char *const labels[] = {"parity", NULL};
	struct metrics *m = metrics_new();
	struct adder a;
	pthread_t t[THREADS];
	int i;

	(void)state;
	a.c = metrics_counter(m, "hits_total", "Hits.", NULL);
	a.lc = metrics_counter(m, "parity_total", "By parity.", labels);
	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, add_many, &a), 0);
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	renders_as(m, "# HELP hits_total Hits.\n# TYPE hits_total counter\n"
		   "hits_total 80000\n"
		   "# HELP parity_total By parity.\n# TYPE parity_total counter\n"
		   "parity_total{parity=\"even\"} 40000\n"
		   "parity_total{parity=\"odd\"} 40000\n");
}

static void process_metrics_are_collected(void **state)
{
	struct metrics *m = metrics_new();
	char *out;

	(void)state;
	metrics_process_collect(m);
	metrics_process_collect(m); /* second call reuses the families */
	out = render(m);
	assert_non_null(strstr(out, "# TYPE process_cpu_seconds_total counter\n"));
	assert_non_null(strstr(out, "\nprocess_open_fds "));
	assert_non_null(strstr(out, "\nprocess_max_fds "));
	assert_non_null(strstr(out, "\nprocess_start_time_seconds 1"));
	assert_null(strstr(out, "process_resident_memory_bytes 0\n"));
	assert_null(strstr(out, "process_open_fds 0\n"));
	free(out);
	metrics_free(m);
}

static void remove_deletes_one_series(void **state)
{
	static const char *const names[] = { "namespace", "pod", NULL };
	struct metrics *m = metrics_new();
	struct metric *g = metrics_gauge(m, "expiry", "Expiry.", names);
	const char *a[] = { "ns", "a" }, *b[] = { "ns", "b" }, *c[] = { "ns", "c" };
	struct buf out = BUF_INIT;

	(void)state;
	metric_set(g, a, 1);
	metric_set(g, b, 2);
	metric_remove(g, b);
	metric_remove(g, c);     /* no such series: nothing happens */
	metric_remove(NULL, c);
	metrics_render(m, &out);
	assert_string_equal(buf_str(&out), "# HELP expiry Expiry.\n# TYPE expiry gauge\n"
					   "expiry{namespace=\"ns\",pod=\"a\"} 1\n");
	metric_set(g, b, 3);     /* comes back when set again */
	buf_reset(&out);
	metrics_render(m, &out);
	assert_non_null(strstr(buf_str(&out), "expiry{namespace=\"ns\",pod=\"b\"} 3\n"));
	buf_release(&out);
	metrics_free(m);
}

/*
 * Known series exist at 0 before their first increment (issue 18 item 12:
 * increase() missed the first dead letter of a series born at 1).
 */
static void declare_creates_the_cross_product_at_zero(void **state)
{
	static const char *const names[] = { "receiver", "reason", NULL };
	static const char *const rcv[] = { "a", "b", NULL };
	static const char *const why[] = { "x", "y", "z", NULL };
	static const char *const empty[] = { NULL };
	struct metrics *m = metrics_new();
	struct metric *c = metrics_counter(m, "dead_total", "Dead.", names);
	struct metric *plain = metrics_counter(m, "plain_total", "Plain.", NULL);
	const char *ax[] = { "a", "x" };

	(void)state;
	metric_add(c, ax, 2);
	metric_declare(c, (const char *const *const[]){ rcv, why });
	metric_declare(c, (const char *const *const[]){ rcv, why });  /* again: no duplicates */
	metric_declare(c, (const char *const *const[]){ rcv, empty });  /* nothing */
	metric_declare(NULL, NULL);
	metric_declare(plain, NULL);
	renders_as(m, "# HELP dead_total Dead.\n# TYPE dead_total counter\n"
		   "dead_total{receiver=\"a\",reason=\"x\"} 2\n"
		   "dead_total{receiver=\"a\",reason=\"y\"} 0\n"
		   "dead_total{receiver=\"a\",reason=\"z\"} 0\n"
		   "dead_total{receiver=\"b\",reason=\"x\"} 0\n"
		   "dead_total{receiver=\"b\",reason=\"y\"} 0\n"
		   "dead_total{receiver=\"b\",reason=\"z\"} 0\n"
		   "# HELP plain_total Plain.\n# TYPE plain_total counter\n"
		   "plain_total 0\n");
}

UNIT_MAIN(
	cmocka_unit_test(empty_registry_renders_nothing),
	cmocka_unit_test(counter_and_gauge_text),
	cmocka_unit_test(remove_deletes_one_series),
	cmocka_unit_test(declare_creates_the_cross_product_at_zero),
	cmocka_unit_test(escaping_of_labels_and_help),
	cmocka_unit_test(histogram_text),
	cmocka_unit_test(labelless_histogram_and_empty_family),
	cmocka_unit_test(numbers_as_prometheus_reads_them),
	cmocka_unit_test(register_twice_returns_same_family),
	cmocka_unit_test(concurrent_adds_sum_exactly),
	cmocka_unit_test(process_metrics_are_collected))
