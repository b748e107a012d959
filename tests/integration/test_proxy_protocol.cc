// The PROXY protocol (cfg.proxy_protocol, docs/api.md "The PROXY protocol"),
// on the test backend (scripts/run-tests runs it on both). The handler
// answers with weir_exchange_peer as "ADDRESS:PORT" ("[v6]:port").
//   - v1 TCP4, TCP6 and UNKNOWN (the socket's own peer); v2 PROXY over IPv4
//     with TLVs (ALPN, AUTHORITY, NOOP, UNIQUE_ID, SSL with sub-TLVs, a
//     matching CRC32C), over IPv6, LOCAL (the socket's peer), AF_UNSPEC;
//     each counted (proxy_v1, proxy_v2, proxy_local).
//   - the header and a request in one write, and byte by byte; a header
//     and three pipelined requests in one write; keep-alive after it.
//   - refusals, each answered 400 (408 for a timeout after some bytes), the
//     answer read by the client and then a FIN (never a reset), counted as
//     WEIR_CLOSE_PROXY and by cause: missing, malformed (a v1 field, a v2
//     CRC32C that does not match), oversized (v1 without its CRLF, v2 past
//     proxy_max_bytes), untrusted (proxy_trusted without 127.0.0.0/8; the
//     arm that must pass: with it), timeouts (part of a header: 408;
//     nothing: closed without a byte).
//   - negative arm: proxy_protocol off, a header is a bad request
//     (WEIR_CLOSE_BAD_REQUEST, proxy counters 0) and the peer is the socket's.
//   - the proxied peer survives weir_engine_transplant into an engine that
//     asks for headers too (it is not asked again), and a connection whose
//     header is partly in at the call moves once it is whole; and a hot
//     upgrade (weir_handover_offer / take_over in one process), where the
//     image crosses the wire.
//   - weir_engine_create: malformed proxy_trusted, proxy_protocol or
//     proxy_max_bytes are -EINVAL.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <string>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"
#include "support/proxy_text.h"

using namespace testnet;
using namespace proxytext;

namespace {

void handler(void *user, weir_exchange *ex) {
    sockaddr_storage ss{};
    socklen_t len = 0;
    assert_int_equal(weir_exchange_peer(ex, &ss, &len), 0);
    std::string tag = user ? std::string(static_cast<const char *>(user)) + " " : "";
    answer(ex, 200, tag + addr_text(ss));
}

weir_config proxy_cfg(const char *tag = nullptr) {
    weir_config c = config(1, WEIR_MODE_INLINE, handler, const_cast<char *>(tag));
    c.proxy_protocol = WEIR_PROXY_ON;
    return c;
}

// The client's own address as the server's socket sees it.
std::string own_addr(const Client &c) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    getsockname(c.fd, reinterpret_cast<sockaddr *>(&ss), &len);
    return addr_text(ss);
}

// What ends an exchange: 1 a FIN, -errno a reset or error, 0 nothing in ms.
int end_of(Client &c, int ms) {
    pollfd p{c.fd, POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0)
        return 0;
    char b[256];
    ssize_t n = ::recv(c.fd, b, sizeof b, 0);
    return n == 0 ? 1 : n < 0 ? -errno : 2;
}

std::string one(Server &s, const std::string &bytes) {
    Client c = connect_to(s.port);
    assert_true(send_all(c, bytes));
    Response r = read_response(c);
    assert_int_equal(r.status, 200);
    return r.body;
}

const std::string kV1Four = "PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\n";

void test_v1(void **) {
    Server s;
    assert_int_equal(s.start(proxy_cfg()), 0);
    assert_string_equal(one(s, kV1Four + get("/")).c_str(), "192.0.2.1:56324");
    assert_string_equal(one(s, "PROXY TCP6 2001:db8::1 2001:db8::2 65535 80\r\n" + get("/")).c_str(),
                        "[2001:db8::1]:65535");
    Client c = connect_to(s.port);
    assert_true(send_all(c, "PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n" + get("/")));
    Response r = read_response(c);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body.c_str(), own_addr(c).c_str()); // UNKNOWN: the socket's peer
    weir_metrics m = s.metrics();
    assert_int_equal(m.proxy_v1, 3);
    assert_int_equal(m.proxy_v2, 0);
    assert_int_equal(m.proxy_local, 1);
    assert_int_equal(m.requests, 3);
}

void test_v2(void **) {
    Server s;
    assert_int_equal(s.start(proxy_cfg()), 0);
    std::string ssl = std::string("\x07\0\0\0\0", 5) + tlv(weir::proxy::PP2_SUBTYPE_SSL_VERSION, "TLSv1.3") +
                      tlv(weir::proxy::PP2_SUBTYPE_SSL_CN, "client");
    std::string tlvs = tlv(weir::proxy::PP2_TYPE_ALPN, "http/1.1") + tlv(weir::proxy::PP2_TYPE_AUTHORITY, "ex.org") +
                       tlv(weir::proxy::PP2_TYPE_NOOP, std::string(3, '\0')) +
                       tlv(weir::proxy::PP2_TYPE_UNIQUE_ID, "abc") + tlv(weir::proxy::PP2_TYPE_SSL, ssl) +
                       tlv(0xE0, "custom");
    std::string h4 = with_crc(v2(0x21, 0x11, v4_block("203.0.113.9", "10.0.0.1", 40000, 80), tlvs));
    assert_string_equal(one(s, h4 + get("/")).c_str(), "203.0.113.9:40000");
    std::string h6 = v2(0x21, 0x21, v6_block("2001:db8:1::7", "2001:db8::2", 1, 443));
    assert_string_equal(one(s, h6 + get("/")).c_str(), "[2001:db8:1::7]:1");
    for (const std::string &keep : {v2(0x20, 0x00, ""), v2(0x20, 0x11, v4_block("1.1.1.1", "2.2.2.2", 1, 2)),
                                    v2(0x21, 0x00, "", tlv(weir::proxy::PP2_TYPE_NOOP, ""))}) {
        Client c = connect_to(s.port);
        assert_true(send_all(c, keep + get("/")));
        Response r = read_response(c);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body.c_str(), own_addr(c).c_str()); // LOCAL, UNSPEC: the socket's peer
    }
    weir_metrics m = s.metrics();
    assert_int_equal(m.proxy_v2, 5);
    assert_int_equal(m.proxy_local, 3);
    assert_int_equal(m.closes[WEIR_CLOSE_PROXY], 0);
}

// One write, byte by byte, a pipeline, keep-alive.
void test_framing(void **) {
    Server s;
    assert_int_equal(s.start(proxy_cfg()), 0);
    std::string h2 = v2(0x21, 0x11, v4_block("192.0.2.7", "10.0.0.1", 7, 80));
    for (const std::string &h : {kV1Four, h2}) {
        std::string want = h == kV1Four ? "192.0.2.1:56324" : "192.0.2.7:7";
        std::string all = h + get("/a");
        Client c = connect_to(s.port);
        for (char b : all) {
            assert_true(send_all(c, std::string(1, b)));
            sleep_ms(1);
        }
        assert_string_equal(read_response(c).body.c_str(), want.c_str());
        Client p = connect_to(s.port);
        assert_true(send_all(p, h + get("/1") + get("/2") + get("/3")));
        for (int i = 0; i < 3; i++)
            assert_string_equal(read_response(p).body.c_str(), want.c_str());
        assert_true(send_all(p, get("/again"))); // keep-alive: the same peer, no header again
        assert_string_equal(read_response(p).body.c_str(), want.c_str());
    }
    weir_metrics m = s.metrics();
    assert_int_equal(m.requests, 10);
    assert_int_equal(m.proxy_v1 + m.proxy_v2, 4);
}

// Sends bytes, expects status, then a FIN (not a reset).
void refused(Server &s, const std::string &bytes, int status) {
    Client c = connect_to(s.port);
    assert_true(send_all(c, bytes));
    Response r = read_response(c);
    assert_int_equal(r.status, status);
    assert_int_equal(end_of(c, 3000), 1);
}

void test_refusals(void **) {
    weir_config cfg = proxy_cfg();
    cfg.proxy_max_bytes = 300;
    Server s;
    assert_int_equal(s.start(cfg), 0);
    refused(s, get("/"), 400); // missing
    refused(s, "PROXY TCP4 192.0.2.1 198.51.100.2 56324 65536\r\n" + get("/"), 400); // malformed port
    refused(s, "PROXY TCP4  192.0.2.1 198.51.100.2 1 2\r\n" + get("/"), 400);        // two spaces
    std::string bad = with_crc(v2(0x21, 0x11, v4_block("192.0.2.1", "10.0.0.1", 1, 2)));
    bad[20] ^= 1; // the address changed after the checksum
    refused(s, bad + get("/"), 400);
    refused(s, "PROXY TCP4 " + std::string(100, '1'), 400); // oversized v1: no CRLF in 107
    refused(s, v2(0x21, 0x11, v4_block("192.0.2.1", "10.0.0.1", 1, 2), tlv(0xE1, std::string(400, 'x'))), 400);
    assert_int_equal(s.wait_closes(WEIR_CLOSE_PROXY, 6), 6);
    weir_metrics m = s.metrics();
    assert_int_equal(m.closes[WEIR_CLOSE_PROXY], 6);
    assert_int_equal(m.proxy_missing, 1);
    assert_int_equal(m.proxy_malformed, 3);
    assert_int_equal(m.proxy_oversized, 2);
    assert_int_equal(m.proxy_v1 + m.proxy_v2, 0);
    assert_int_equal(m.requests, 0);
    assert_int_equal(m.closes[WEIR_CLOSE_BAD_REQUEST], 0);
}

void test_untrusted(void **) {
    weir_config cfg = proxy_cfg();
    cfg.proxy_trusted = "10.0.0.0/8, 2001:db8::/32";
    Server s;
    assert_int_equal(s.start(cfg), 0);
    refused(s, kV1Four + get("/"), 400);
    weir_metrics m = s.metrics();
    assert_int_equal(m.proxy_untrusted, 1);
    assert_int_equal(m.closes[WEIR_CLOSE_PROXY], 1);
    assert_int_equal(m.proxy_v1, 0);
    // The arm that must pass: 127.0.0.0/8 listed (the list was copied at create).
    std::string list = "10.0.0.0/8, 127.0.0.0/8";
    cfg.proxy_trusted = list.c_str();
    Server t;
    assert_int_equal(t.start(cfg), 0);
    list.assign(list.size(), 'x');
    assert_string_equal(one(t, kV1Four + get("/")).c_str(), "192.0.2.1:56324");
    assert_int_equal(t.metrics().proxy_untrusted, 0);
}

void test_timeouts(void **) {
    weir_config cfg = proxy_cfg();
    cfg.proxy_timeout_ms = 150;
    cfg.header_timeout_ms = 10000; // the header's deadline is its own
    Server s;
    assert_int_equal(s.start(cfg), 0);
    int64_t t0 = now_ms();
    refused(s, "PROXY TCP4 192.0.2.1 ", 408); // part of a header: 408
    assert_true(now_ms() - t0 >= 140);
    Client quiet = connect_to(s.port); // nothing: closed without a byte
    assert_true(wait_closed(quiet, bound_ms(3000)));
    assert_true(quiet.buf.empty());
    assert_int_equal(s.wait_closes(WEIR_CLOSE_PROXY, 2), 2);
    weir_metrics m = s.metrics();
    assert_int_equal(m.proxy_timeouts, 2);
    assert_int_equal(m.closes[WEIR_CLOSE_SILENT], 0);
    assert_int_equal(m.closes[WEIR_CLOSE_HEADER_TIMEOUT], 0);
    // A header in time, then the request's own header timeout counts from there.
    Client c = connect_to(s.port);
    assert_true(send_all(c, kV1Four));
    sleep_ms(300); // past proxy_timeout_ms: it no longer applies
    assert_true(send_all(c, get("/")));
    assert_string_equal(read_response(c).body.c_str(), "192.0.2.1:56324");
}

// Negative arm: without proxy_protocol a header is no HTTP, and the peer is
// the socket's.
void test_off(void **) {
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_INLINE, handler, nullptr)), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/")));
    Response r = read_response(c);
    assert_string_equal(r.body.c_str(), own_addr(c).c_str());
    refused(s, kV1Four + get("/"), 400);
    weir_metrics m = s.metrics();
    assert_int_equal(m.closes[WEIR_CLOSE_BAD_REQUEST], 1);
    assert_int_equal(m.closes[WEIR_CLOSE_PROXY], 0);
    assert_int_equal(m.proxy_v1 + m.proxy_missing + m.proxy_malformed, 0);
}

// The proxied peer moves with the connection; B asks its own accepts for a
// header, never a moved connection.
void test_transplant(void **) {
    Server a, b;
    assert_int_equal(a.start(proxy_cfg("A")), 0);
    weir_config cb = proxy_cfg("B");
    cb.backend = test_backend() == WEIR_BACKEND_URING ? WEIR_BACKEND_EPOLL : WEIR_BACKEND_URING;
    assert_int_equal(b.start(cb), 0);
    Client c = connect_to(a.port);
    assert_true(send_all(c, kV1Four + get("/")));
    assert_string_equal(read_response(c).body.c_str(), "A 192.0.2.1:56324");
    Client half = connect_to(a.port); // its header partly in at the call
    assert_true(send_all(half, "PROXY TCP6 2001:db8::5 "));
    sleep_ms(30);
    assert_int_equal(weir_engine_transplant(a.e, b.e, 0), 0);
    sleep_ms(30);
    assert_true(send_all(c, get("/")));
    assert_string_equal(read_response(c).body.c_str(), "B 192.0.2.1:56324");
    assert_true(send_all(half, "2001:db8::6 9 80\r\n" + get("/")));
    std::string first = read_response(half).body; // read by A, it may answer before the boundary
    assert_true(first == "A [2001:db8::5]:9" || first == "B [2001:db8::5]:9");
    assert_true(send_all(half, get("/")));
    assert_string_equal(read_response(half).body.c_str(), "B [2001:db8::5]:9");
    weir_metrics ma = a.metrics();
    assert_int_equal(ma.transplant_detached, 2);
    assert_int_equal(ma.proxy_v1, 2);
    weir_metrics mb = b.metrics();
    assert_int_equal(mb.proxy_v1 + mb.proxy_missing + mb.proxy_malformed, 0); // never asked again
    assert_int_equal(mb.closes[WEIR_CLOSE_PROXY], 0);
}

// A hot upgrade: the image crosses the handover's wire with its peer.
void test_handover(void **) {
    Server a, b;
    weir_config ca = proxy_cfg("A");
    ca.workers = 2;
    assert_int_equal(a.start(ca), 0);
    Client c = connect_to(a.port);
    assert_true(send_all(c, "PROXY TCP6 2001:db8::77 2001:db8::1 4444 443\r\n" + get("/")));
    assert_string_equal(read_response(c).body.c_str(), "A [2001:db8::77]:4444");
    std::string path = "/tmp/weir-test-proxy-" + std::to_string(::getpid()) + ".sock";
    weir_handover_options o{};
    o.size = sizeof o;
    o.wait_ms = 5000;
    weir_handover *ha = nullptr, *hb = nullptr;
    assert_int_equal(weir_handover_offer(a.e, path.c_str(), &o, &ha), 0);
    weir_config cb = proxy_cfg("B");
    cb.workers = 2;
    assert_int_equal(create(cb, &b.e), 0);
    assert_int_equal(weir_handover_take_over(b.e, path.c_str(), &o, &hb), 0);
    assert_int_equal(engine_port(b.e, &b.port), 0);
    assert_int_equal(weir_engine_start(b.e), 0);
    assert_int_equal(weir_handover_wait(ha, 5000000000LL), 0);
    assert_int_equal(weir_handover_wait(hb, 5000000000LL), 0);
    assert_true(send_all(c, get("/")));
    assert_string_equal(read_response(c).body.c_str(), "B [2001:db8::77]:4444");
    weir_handover_free(ha);
    weir_handover_free(hb);
    weir_metrics mb = b.metrics();
    assert_int_equal(mb.transplant_received, 1);
    assert_int_equal(mb.proxy_v1 + mb.proxy_missing + mb.closes[WEIR_CLOSE_PROXY], 0); // never asked again
    Client fresh = connect_to(b.port); // B's own accepts do owe a header
    assert_true(send_all(fresh, kV1Four + get("/")));
    assert_string_equal(read_response(fresh).body.c_str(), "B 192.0.2.1:56324");
}

void test_config(void **) {
    for (const char *bad : {"", "10.0.0.0/33", "::1/129", "example.org", "10.0.0.0/8,", "10.0.0.0/ 8", "1.2.3.4/08"}) {
        weir_config c = proxy_cfg();
        c.proxy_trusted = bad;
        weir_engine *e = nullptr;
        assert_int_equal(weir_engine_create(&c, &e), -EINVAL);
    }
    weir_config c = proxy_cfg();
    c.proxy_protocol = 2;
    weir_engine *e = nullptr;
    assert_int_equal(weir_engine_create(&c, &e), -EINVAL);
    c = proxy_cfg();
    c.proxy_max_bytes = 100;
    assert_int_equal(weir_engine_create(&c, &e), -EINVAL);
    c = proxy_cfg();
    c.proxy_trusted = " 10.0.0.0/8 ,::1, 192.168.0.7";
    assert_int_equal(weir_engine_create(&c, &e), 0);
    weir_engine_destroy(e);
    assert_string_equal(weir_close_reason_name(WEIR_CLOSE_PROXY), "proxy");
    // A 0.3 caller's size ends before the proxy fields: whatever lies past
    // it, the protocol is off and the engine serves plain HTTP.
    c = proxy_cfg();
    c.size = offsetof(weir_config, proxy_protocol);
    c.proxy_trusted = "not parsed";
    Server old;
    assert_int_equal(old.start(c), 0);
    Client cl = connect_to(old.port);
    assert_true(send_all(cl, get("/")));
    assert_string_equal(read_response(cl).body.c_str(), own_addr(cl).c_str());
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v1),       cmocka_unit_test(test_v2),        cmocka_unit_test(test_framing),
        cmocka_unit_test(test_refusals), cmocka_unit_test(test_untrusted), cmocka_unit_test(test_timeouts),
        cmocka_unit_test(test_off),      cmocka_unit_test(test_transplant), cmocka_unit_test(test_handover),
        cmocka_unit_test(test_config),
    };
    return cmocka_run_group_tests_name("proxy_protocol", tests, nullptr, nullptr);
}
