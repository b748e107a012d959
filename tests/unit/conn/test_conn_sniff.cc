// lib/conn/conn_sniff.cc: with h2c on, a fresh connection's first bytes are
// compared with HTTP/2's client preface before the HTTP/1 parser sees them.
// Each case fails if the preface is parsed as a request (the negative arm:
// sniffing off, the same bytes are refused as HTTP/1), if an HTTP/1 request
// that shares the preface's first letters is held back or misread, or if the
// bytes HTTP/2 needs are not all left for it to lift.
#include <string>

#include "cmocka_cxx.h"
#include "conn_check.h"

using namespace weir;
using namespace conn_check;

namespace {

const std::string kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const std::string kSettings = std::string("\0\0\0\4\0\0\0\0\0", 9); // an empty SETTINGS frame

// The preface and a frame after it, whole: HTTP/2 is wanted, nothing is
// parsed or answered, and detach() lifts every byte from the preface on.
void test_sniff_preface_whole(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    c.sniff_h2(false);
    feed(c, kPreface + kSettings);
    assert_true(c.wants_h2());
    assert_null(c.take_request());
    assert_string_equal(drain(c).c_str(), "");
    assert_int_equal(c.counters().parse_errors, 0);
    ConnImage img;
    assert_true(c.detach(img));
    assert_int_equal(img.unread_len, kPreface.size() + kSettings.size());
    assert_memory_equal(img.unread, (kPreface + kSettings).data(), img.unread_len);
}

// One byte at a time: nothing is parsed while the bytes so far are the
// preface's beginning, and it is wanted on the 24th.
void test_sniff_preface_byte_by_byte(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    c.sniff_h2(false);
    for (size_t i = 0; i < kPreface.size(); i++) {
        assert_false(c.wants_h2());
        feed(c, kPreface.substr(i, 1));
        assert_null(c.take_request());
        assert_string_equal(drain(c).c_str(), "");
    }
    assert_true(c.wants_h2());
}

// HTTP/1 requests that begin as the preface does ("P", "PR"...) and part
// from it: parsed and answered as HTTP/1, split anywhere.
void test_sniff_http1_shares_prefix(void **) {
    const char *reqs[] = {"POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi",
                          "PRIX / HTTP/1.1\r\nHost: x\r\n\r\n", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"};
    for (const char *r : reqs) {
        std::string req = r;
        for (size_t at = 1; at < req.size(); at++) {
            ConnSettings s = settings();
            ConnPool pool(s);
            Conn c(s, pool, 1);
            c.sniff_h2(false);
            feed(c, req.substr(0, at));
            feed(c, req.substr(at));
            assert_false(c.wants_h2());
            Exchange *x = c.take_request();
            assert_non_null(x);
            assert_int_equal(answer(c, x, "ok"), 0);
            assert_true(drain(c).rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
        }
    }
}

// h2c only: whatever the first bytes are, they are HTTP/2's to judge (its
// session answers a GOAWAY to what is not its preface), never parsed here.
void test_sniff_h2_only_takes_anything(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    c.sniff_h2(true);
    feed(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_true(c.wants_h2());
    assert_null(c.take_request());
    assert_string_equal(drain(c).c_str(), "");
}

// After a PROXY header: the preface is looked for where HTTP would begin.
void test_sniff_after_proxy_header(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    PeerAddr peer;
    c.expect_proxy(&peer, true);
    c.sniff_h2(false);
    feed(c, "PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\n" + kPreface);
    assert_true(c.wants_h2());
    assert_true(c.proxy_result() == Conn::ProxyResult::V1);
    ConnImage img;
    assert_true(c.detach(img));
    assert_int_equal(img.unread_len, kPreface.size());
}

// The negative arm: sniffing off (http1 only), the preface is an HTTP/1
// request of version 2.0 and is refused — what an h2c client got before.
void test_no_sniff_refuses_preface(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    feed(c, kPreface);
    assert_false(c.wants_h2());
    assert_null(c.take_request());
    std::string out = drain(c);
    assert_true(out.rfind("HTTP/1.1 505 ", 0) == 0 || out.rfind("HTTP/1.1 400 ", 0) == 0);
    assert_true(c.wants_close());
}

const std::string kUp = "GET /u HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                        "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n";

// Upgrade: h2c on the first request (auto): its head is left unread, whole,
// for the HTTP/2 session, and nothing is answered here.
void test_upgrade_h2c_first_request(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    c.sniff_h2(false);
    feed(c, kUp + kPreface);
    assert_true(c.wants_h2());
    assert_int_equal(c.h2_upgrade(), kUp.size());
    assert_null(c.take_request());
    assert_string_equal(drain(c).c_str(), "");
    ConnImage img;
    assert_true(c.detach(img));
    assert_int_equal(img.unread_len, kUp.size() + kPreface.size());
    assert_memory_equal(img.unread, kUp.data(), kUp.size());
}

// kUp with its Upgrade or HTTP2-Settings value replaced.
std::string up_with(const char *upgrade, const char *settings) {
    return std::string("GET /u HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: ") + upgrade +
           "\r\nHTTP2-Settings: " + settings + "\r\n\r\n";
}

// Still taken: the token in any case, padded base64, no settings at all (an
// empty payload: every setting at its default), the same six-byte entry
// base64 or base64url; the positive arm of the refused cases below.
void test_upgrade_h2c_taken_variants(void **) {
    const std::string ups[] = {up_with("H2C", "AAMAAABk"), up_with("h2c", "AAMAAABkAAQAAP__"),
                               up_with("h2c", "AAQAAP//"), up_with("h2c", "AAMAAABk=="), up_with("h2c", "")};
    for (const std::string &u : ups) {
        ConnSettings s = settings();
        ConnPool pool(s);
        Conn c(s, pool, 1);
        c.sniff_h2(false);
        feed(c, u);
        assert_true(c.wants_h2());
        assert_int_equal(c.h2_upgrade(), u.size());
    }
}

// Served as HTTP/1.1 instead: a body (it would have to be read first), a
// second request, h2c only (no upgrade from a protocol it does not speak),
// HTTP/1 only (the negative arm: nothing sniffs), no HTTP2-Settings; an
// Upgrade that lists another protocol beside h2c (the host's to choose:
// celeris's TestH2CUpgradeAmbiguousUpgrade; without the `others == 0` of
// h2c_upgrade_asked this case is taken as h2c and fails), and HTTP2-Settings
// that is not base64url, or not whole SETTINGS entries (celeris's
// TestH2CUpgradeInvalidSettings; without `settings_ok` these were answered
// 101 and GOAWAY, and fail here).
void test_upgrade_h2c_refused_cases(void **) {
    std::string with_body = "POST /u HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                            "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABk\r\nContent-Length: 2\r\n\r\nhi";
    std::string no_settings = "GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";
    std::string second = "GET / HTTP/1.1\r\nHost: x\r\n\r\n" + kUp;
    struct Case {
        std::string bytes;
        int sniff; // -1 off, 0 auto
        int requests;
    } cases[] = {{with_body, 0, 1},
                 {no_settings, 0, 1},
                 {second, 0, 2},
                 {kUp, -1, 1},
                 {up_with("websocket, h2c", "AAMAAABk"), 0, 1},
                 {up_with("h2c, foo/2", "AAMAAABk"), 0, 1},
                 {up_with("h2c", "!!!notbase64!!!"), 0, 1},
                 {up_with("h2c", "AAMAAABkAA"), 0, 1}, // 7 bytes: not whole entries
                 {up_with("h2c", "AAMAAABkA"), 0, 1}}; // 4k+1 characters: 6 bytes and a stray sextet
    for (const Case &k : cases) {
        ConnSettings s = settings();
        ConnPool pool(s);
        Conn c(s, pool, 1);
        if (k.sniff == 0)
            c.sniff_h2(false);
        feed(c, k.bytes);
        assert_false(c.wants_h2());
        assert_int_equal(c.h2_upgrade(), 0);
        for (int i = 0; i < k.requests; i++) {
            Exchange *x = c.take_request();
            assert_non_null(x);
            assert_int_equal(answer(c, x, "ok"), 0);
        }
        assert_true(drain(c).rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
    }
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sniff_preface_whole),        cmocka_unit_test(test_sniff_preface_byte_by_byte),
        cmocka_unit_test(test_sniff_http1_shares_prefix),  cmocka_unit_test(test_sniff_h2_only_takes_anything),
        cmocka_unit_test(test_sniff_after_proxy_header),   cmocka_unit_test(test_no_sniff_refuses_preface),
        cmocka_unit_test(test_upgrade_h2c_first_request),  cmocka_unit_test(test_upgrade_h2c_refused_cases),
        cmocka_unit_test(test_upgrade_h2c_taken_variants),
    };
    return cmocka_run_group_tests_name("conn_sniff", tests, nullptr, nullptr);
}
