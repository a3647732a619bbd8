/*
 * test_http_peer_key.c - who counts as one client for max_connections_per_ip
 * (core/http_server_int.h srv_peer_key()): an IPv4 address as itself, also
 * written v4-mapped; an IPv6 address as its /64, the block one host is given
 * (RFC 6177, RFC 7934), so that addresses rotated within it do not each get a
 * share; and the cap applied by the server itself to an IPv6 client.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/http_server.h"
#include "core/http_server_int.h"

static void key_of(const char *text, char out[SRV_PEER_KEY_LEN])
{
	struct sockaddr_in6 a6;
	struct sockaddr_in a4;

	memset(&a6, 0, sizeof(a6));
	memset(&a4, 0, sizeof(a4));
	if (inet_pton(AF_INET6, text, &a6.sin6_addr) == 1) {
		a6.sin6_family = AF_INET6;
		a6.sin6_port = htons(40001);
		srv_peer_key((const struct sockaddr *)&a6, out);
		return;
	}
	assert_int_equal(inet_pton(AF_INET, text, &a4.sin_addr), 1);
	a4.sin_family = AF_INET;
	a4.sin_port = htons(40002);
	srv_peer_key((const struct sockaddr *)&a4, out);
}

static void keys_group_an_ipv6_host_by_its_64(void **state)
{
	static const struct {
		const char *addr, *key;
	} cases[] = {
		{ "192.0.2.7", "192.0.2.7" },
		{ "::ffff:192.0.2.7", "192.0.2.7" },  /* a dual-stack socket's IPv4 client */
		{ "2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64" },
		{ "2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64" },
		{ "2001:db8:1:3::1", "2001:db8:1:3::/64" },  /* the next /64: another client */
		{ "::1", "::/64" },
		{ "fe80::1:2:3:4", "fe80::/64" },
		{ "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db8:ffff:ffff::/64" },
	};
	char key[SRV_PEER_KEY_LEN];
	struct sockaddr_un un;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		key_of(cases[i].addr, key);
		if (strcmp(key, cases[i].key))
			fail_msg("%s: key %s, want %s", cases[i].addr, key, cases[i].key);
	}
	srv_peer_key(NULL, key);
	assert_string_equal(key, "");
	memset(&un, 0, sizeof(un));
	un.sun_family = AF_UNIX;
	srv_peer_key((const struct sockaddr *)&un, key);
	assert_string_equal(key, "");
}

/* A connection to [::1]:port, or -1 when this machine has no IPv6 loopback. */
static int connect_v6(int port)
{
	struct sockaddr_in6 a;
	int fd = socket(AF_INET6, SOCK_STREAM, 0);

	if (fd < 0)
		return -1;
	memset(&a, 0, sizeof(a));
	a.sin6_family = AF_INET6;
	a.sin6_port = htons((uint16_t)port);
	a.sin6_addr = in6addr_loopback;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* 1 when the server closed fd without a byte within limit_ms. */
static int closed_within(int fd, int64_t limit_ms)
{
	struct pollfd p = { fd, POLLIN, 0 };
	char c;

	if (poll(&p, 1, (int)limit_ms) != 1)
		return 0;
	return recv(fd, &c, 1, MSG_DONTWAIT) == 0;
}

static void ipv6_client_held_to_its_share(void **state)
{
	struct srv_options o = { 0 };
	struct buf err = BUF_INIT;
	struct srv *s;
	int held[2], fd;

	(void)state;
	fd = socket(AF_INET6, SOCK_STREAM, 0);
	if (fd < 0) {
		print_message("skipped: no IPv6 on this machine\n");
		skip();
	}
	close(fd);
	o.listen_address = "[::1]:0";
	o.threads = 2;
	o.max_connections = 16;
	o.max_connections_per_ip = 2;
	if (srv_new(&o, &s, &err) != ERR_OK || srv_start(s, &err) != ERR_OK) {
		print_message("skipped: cannot listen on [::1]: %s\n", buf_str(&err));
		buf_release(&err);
		skip();
	}
	held[0] = connect_v6(srv_port(s));
	held[1] = connect_v6(srv_port(s));
	assert_true(held[0] >= 0 && held[1] >= 0);
	assert_int_equal(closed_within(held[1], 300), 0);
	fd = connect_v6(srv_port(s));
	assert_true(fd >= 0);
	assert_int_equal(closed_within(fd, 5000), 1);  /* the third of ::/64: closed at once */
	close(fd);
	close(held[0]);
	close(held[1]);
	srv_free(s);
	buf_release(&err);
}

UNIT_MAIN(cmocka_unit_test(keys_group_an_ipv6_host_by_its_64),
	  cmocka_unit_test(ipv6_client_held_to_its_share))
