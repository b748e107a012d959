// lib/conn/conn_proxy.cc: a Conn that owes a PROXY header reads it before
// its first request, from the same buffer: the requests after it in the
// same read are parsed as HTTP, whether the bytes come whole, split at
// every byte boundary, or one at a time.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <string>

#include "cmocka_cxx.h"
#include "conn_check.h"
#include "support/proxy_text.h"

using namespace weir;
using namespace conn_check;

namespace {

const std::string kV1 = "PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\n";
const std::string kReqs = "GET /a HTTP/1.1\r\nHost: t\r\n\r\nGET /b HTTP/1.1\r\nHost: t\r\n\r\n";

std::string peer_of(const sockaddr_storage &ss) {
    char a[INET6_ADDRSTRLEN] = "";
    if (ss.ss_family == AF_INET6) {
        auto *s = reinterpret_cast<const sockaddr_in6 *>(&ss);
        inet_ntop(AF_INET6, &s->sin6_addr, a, sizeof a);
        return "[" + std::string(a) + "]:" + std::to_string(ntohs(s->sin6_port));
    }
    auto *s = reinterpret_cast<const sockaddr_in *>(&ss);
    inet_ntop(AF_INET, &s->sin_addr, a, sizeof a);
    return std::string(a) + ":" + std::to_string(ntohs(s->sin_port));
}

// Feeds header + requests split at `at` (then the rest), answers both
// requests, and checks the peer the Conn wrote.
void run_split(const std::string &header, const std::string &want, size_t at) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    PeerAddr peer;
    c.expect_proxy(&peer, true);
    assert_true(c.wait() == ConnWait::Proxy);
    std::string all = header + kReqs;
    assert_int_equal(feed(c, all.substr(0, at)), at);
    if (at < header.size()) {
        assert_true(c.proxy_pending());
        assert_false(c.detachable()); // no boundary while the header is owed
        assert_null(c.take_request());
    }
    assert_int_equal(feed(c, all.substr(at)), all.size() - at);
    assert_false(c.proxy_pending());
    sockaddr_storage got;
    socklen_t len;
    peer.get(&got, &len);
    assert_string_equal(peer_of(got).c_str(), want.c_str());
    Exchange *a = c.take_request(), *b = c.take_request();
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(sv(a->req.path).c_str(), "/a");
    assert_string_equal(sv(b->req.path).c_str(), "/b");
    assert_int_equal(answer(c, a, "1"), 0);
    assert_int_equal(answer(c, b, "2"), 0);
    std::string out = drain(c);
    assert_true(out.find("\r\n\r\n1") != std::string::npos && out.find("\r\n\r\n2") != std::string::npos);
    assert_true(c.detachable());
    assert_int_equal(c.counters().requests, 2);
}

void test_conn_proxy_split_everywhere(void **) {
    std::string v2 = proxytext::v2(0x21, 0x21, proxytext::v6_block("2001:db8::9", "2001:db8::1", 8080, 80),
                                   proxytext::tlv(weir::proxy::PP2_TYPE_ALPN, "http/1.1"));
    for (size_t at = 0; at <= kV1.size() + kReqs.size(); at++)
        run_split(kV1, "192.0.2.1:56324", at);
    for (size_t at = 0; at <= v2.size() + kReqs.size(); at++)
        run_split(v2, "[2001:db8::9]:8080", at);
}

void test_conn_proxy_byte_by_byte(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    PeerAddr peer;
    c.expect_proxy(&peer, true);
    assert_int_equal(feed(c, kV1 + kReqs, 1), kV1.size() + kReqs.size());
    assert_non_null(c.take_request());
    assert_non_null(c.take_request());
    assert_int_equal(peer.len(), sizeof(sockaddr_in));
    assert_true(c.proxy_result() == Conn::ProxyResult::V1);
}

// The socket's peer stands for LOCAL.
void test_conn_proxy_local_keeps_peer(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    sockaddr_storage sock{};
    sock.ss_family = AF_UNIX;
    PeerAddr peer;
    peer.set(sock, 7);
    c.expect_proxy(&peer, true);
    feed(c, proxytext::v2(0x20, 0x00, "") + kReqs);
    assert_int_equal(peer.sa()->sa_family, AF_UNIX);
    assert_int_equal(peer.len(), 7);
    assert_true(c.proxy_result() == Conn::ProxyResult::V2Local);
    assert_non_null(c.take_request());
}

// Refused: a 400, nothing handed out, the close reason and the cause.
void refused(const std::string &bytes, bool trusted, Conn::ProxyResult cause) {
    ConnSettings s = settings();
    s.proxy_max_bytes = 300;
    ConnPool pool(s);
    Conn c(s, pool, 1);
    PeerAddr peer;
    c.expect_proxy(&peer, trusted);
    feed(c, bytes);
    assert_null(c.take_request());
    std::string out = drain(c);
    assert_true(out.rfind("HTTP/1.1 400 ", 0) == 0);
    assert_true(c.wait() == ConnWait::Done);
    assert_int_equal(c.close_reason(), WEIR_CLOSE_PROXY);
    assert_true(c.proxy_result() == cause);
    assert_int_equal(c.counters().requests, 0);
    assert_int_equal(c.counters().parse_errors, 0);
    assert_int_equal(peer.len(), 0);
}

void test_conn_proxy_refusals(void **) {
    refused(kReqs, true, Conn::ProxyResult::Missing);
    refused("PROXY TCP4 1.2.3.4 5.6.7.8 1 99999\r\n" + kReqs, true, Conn::ProxyResult::Malformed);
    refused("PROXY UNKNOWN " + std::string(120, 'x'), true, Conn::ProxyResult::Oversized);
    refused(proxytext::v2(0x21, 0x11, proxytext::v4_block("1.2.3.4", "5.6.7.8", 1, 2),
                          proxytext::tlv(0xE0, std::string(400, 'x'))),
            true, Conn::ProxyResult::Oversized);
    refused(kV1 + kReqs, false, Conn::ProxyResult::Untrusted);
}

void test_conn_proxy_expiry(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    {
        Conn c(s, pool, 1); // part of a header: 408
        PeerAddr peer;
        c.expect_proxy(&peer, true);
        feed(c, "PROXY TCP4 ");
        assert_true(c.wait() == ConnWait::Proxy);
        c.expire_proxy();
        assert_true(drain(c).rfind("HTTP/1.1 408 ", 0) == 0);
        assert_int_equal(c.close_reason(), WEIR_CLOSE_PROXY);
        assert_true(c.proxy_result() == Conn::ProxyResult::Timeout);
    }
    {
        Conn c(s, pool, 2); // nothing: closed without a word
        PeerAddr peer;
        c.expect_proxy(&peer, true);
        c.expire_proxy();
        assert_true(drain(c).empty());
        assert_true(c.wait() == ConnWait::Done);
        assert_int_equal(c.close_reason(), WEIR_CLOSE_PROXY);
        assert_true(c.proxy_result() == Conn::ProxyResult::Timeout);
    }
    {
        Conn c(s, pool, 3); // after the header: the request's own timers
        PeerAddr peer;
        c.expect_proxy(&peer, true);
        feed(c, kV1);
        assert_true(c.wait() == ConnWait::FirstByte);
        feed(c, "GET /");
        assert_true(c.wait() == ConnWait::Head);
    }
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conn_proxy_split_everywhere), cmocka_unit_test(test_conn_proxy_byte_by_byte),
        cmocka_unit_test(test_conn_proxy_local_keeps_peer), cmocka_unit_test(test_conn_proxy_refusals),
        cmocka_unit_test(test_conn_proxy_expiry),
    };
    return cmocka_run_group_tests_name("conn_proxy", tests, nullptr, nullptr);
}
