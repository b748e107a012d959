// What a complete head means (lib/http1/semantics.cc): Host, Content-Length,
// Transfer-Encoding, Expect, Connection and Upgrade.
#include "http1_check.h"

#define H11(fields) "POST / HTTP/1.1\r\n" fields "\r\n"
#define H10(fields) "POST / HTTP/1.0\r\n" fields "\r\n"

static weir_http1_request head(const std::string &s, int want = kHead) {
    static weir_header_t h[64];
    weir_http1_request req;
    int rc = parse(s, &req, h);
    assert_int_equal(rc, want == kHead ? static_cast<int>(s.size()) : want);
    return req;
}

static void test_semantics_host_required(void **) {
    CHECK_REQ(H11(""), WEIR_E_MISSING_HOST);
    CHECK_REQ(H11("Hostx: a\r\n"), WEIR_E_MISSING_HOST);
    CHECK_REQ(H10(""), kHead);
    CHECK_REQ(H11("Host: a\r\nhOsT: a\r\n"), WEIR_E_DUPLICATE_HOST);
    CHECK_REQ(H10("Host: a\r\nHost: b\r\n"), WEIR_E_DUPLICATE_HOST);
    CHECK_REQ(H11("Host:\r\n"), kHead); // empty is allowed (RFC 9112 3.2)
    assert_int_equal(head(H10("")).host.len, 0);
    assert_string_equal(str(head(H11("HOST:  example.com:80 \r\n")).host).c_str(), "example.com:80");
}

static void test_semantics_host_syntax(void **) {
    for (const char *ok : {"a", "example.com", "example.com:8080", "127.0.0.1", "127.0.0.1:1", "[::1]", "[::1]:80",
                           "[2001:db8::ffff:1.2.3.4]", "xn--bcher-kva.example", "a_b~c!$&'()*+,;=", "%41b", "h:"}) {
        std::string s = std::string("GET / HTTP/1.1\r\nHost: ") + ok + "\r\n\r\n";
        CHECK_REQ_LIM(s, kHead, defaults());
    }
    for (const char *bad : {"a b", "a/b", "user@host", "[::1", "[zz::1]", "[::1]x", "h:8x", "h:123456", "h:65536",
                            ":80", "%4", "%zz", "a?b", "a#b", "[v1.x]", "\"a\""}) {
        std::string s = std::string("GET / HTTP/1.1\r\nHost: ") + bad + "\r\n\r\n";
        CHECK_REQ_LIM(s, WEIR_E_BAD_HOST, defaults());
    }
}

// RFC 9112 3.2.2: an absolute-form target's authority is the host, whatever
// Host says (a handler routing on host would otherwise see the field's name
// while the request line names another: the Host-confusion class); Host is
// still required and checked (3.2).
static void test_semantics_host_absolute_form(void **) {
    struct {
        const char *target, *field, *want;
    } cases[] = {
        {"http://a.example/x", "b.example", "a.example"},
        {"HTTPS://a.example:8443?q", "a.example", "a.example:8443"},
        {"http://[::1]:80", "b", "[::1]:80"},
        {"https://a", "", "a"},
    };
    for (const auto &c : cases) {
        std::string s = std::string("GET ") + c.target + " HTTP/1.1\r\nHost: " + c.field + "\r\n\r\n";
        CHECK_REQ_LIM(s, kHead, defaults());
        assert_string_equal(str(head(s).host).c_str(), c.want);
    }
    assert_string_equal(str(head("GET /x HTTP/1.1\r\nHost: b.example\r\n\r\n").host).c_str(), "b.example");
    assert_string_equal(str(head("GET http://a/ HTTP/1.0\r\n\r\n").host).c_str(), "a");
    CHECK_REQ("GET http://a/ HTTP/1.1\r\n\r\n", WEIR_E_MISSING_HOST);
    CHECK_REQ("GET http://a/ HTTP/1.1\r\nHost: a b\r\n\r\n", WEIR_E_BAD_HOST);
    CHECK_REQ("GET http://a/ HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", WEIR_E_DUPLICATE_HOST);
}

// valid_host (the Host fast path: one or two loads ending at the value's
// end) answers as valid_authority for every byte at every position of values
// of 1..34 bytes, with and without a colon and port, in exact-size heap
// buffers where the value starts at the buffer's start (no room for the loads:
// the general path) or far enough in.
static void test_semantics_host_fast_path(void **) {
    auto same = [](const std::string &v, size_t off) {
        std::string all = std::string(off, 'x') + v;
        char *buf = static_cast<char *>(malloc(all.size()));
        memcpy(buf, all.data(), all.size());
        bool want = weir::http1::valid_authority(buf + off, v.size(), false);
        bool got = weir::http1::valid_host(buf, buf + off, v.size());
        free(buf);
        if (want != got)
            fail_msg("host \"%s\" at %zu: valid_authority %d, valid_host %d", v.c_str(), off, want, got);
        return want;
    };
    assert_true(same("example.com", 20));
    assert_true(same("api.example.com:8443", 20));
    assert_true(same("A-Z.0:65535", 20));
    assert_true(same("h:00080", 20));
    assert_true(same("h:", 20));
    assert_false(same("h:65536", 20));
    assert_false(same("h:123456", 20));
    assert_false(same("a:1:2", 20));
    assert_false(same(":80", 20));
    assert_true(same(std::string(32, 'a'), 0));
    assert_true(same(std::string(27, 'a') + ":8080", 40));
    assert_false(same(std::string(26, 'a') + ":80800", 40));
    for (size_t n = 1; n <= 34; n++) {
        for (int colon = -1; colon < 7; colon++) {
            std::string base(n, 'k');
            for (size_t i = 0; i < n; i += 3)
                base[i] = "a.-Z9"[i % 5];
            if (colon >= 0 && static_cast<size_t>(colon) < n) {
                size_t at = n - 1 - static_cast<size_t>(colon);
                base[at] = ':';
                for (size_t i = at + 1; i < n; i++)
                    base[i] = "65536"[(i - at - 1) % 5];
            }
            for (size_t pos = 0; pos < n; pos++)
                for (int c = 0; c < 256; c++) {
                    std::string v = base;
                    v[pos] = static_cast<char>(c);
                    same(v, 0);
                    same(v, 33);
                }
        }
    }
}

static void test_semantics_content_length(void **) {
    weir_http1_request r = head(H11("Host: a\r\nContent-Length: 42\r\n"));
    assert_int_equal(r.body_kind, WEIR_BODY_LENGTH);
    assert_int_equal(r.content_length, 42);
    r = head(H11("Host: a\r\nContent-Length: 0\r\n"));
    assert_int_equal(r.body_kind, WEIR_BODY_LENGTH);
    assert_int_equal(r.content_length, 0);
    r = head(H11("Host: a\r\nContent-Length: 7, 7,7\r\ncontent-length: 007\r\n"));
    assert_int_equal(r.content_length, 7);
    CHECK_REQ(H11("Host: a\r\nContent-Length: 7, 7\r\n"), kHead);
    CHECK_REQ(H11("Host: a\r\nContent-Length: 7, 8\r\n"), WEIR_E_BAD_CONTENT_LENGTH);
    CHECK_REQ(H11("Host: a\r\nContent-Length: 7\r\nContent-Length: 8\r\n"), WEIR_E_BAD_CONTENT_LENGTH);
    CHECK_REQ(H11("Host: a\r\nContent-Length: -1\r\n"), WEIR_E_BAD_CONTENT_LENGTH);
    CHECK_REQ(H11("Host: a\r\nContent-Length: +1\r\n"), WEIR_E_BAD_CONTENT_LENGTH);
    CHECK_REQ(H11("Host: a\r\nContent-Length: 1 2\r\n"), WEIR_E_BAD_CONTENT_LENGTH);
    CHECK_REQ(H11("Host: a\r\nContent-Length: 0x10\r\n"), WEIR_E_BAD_CONTENT_LENGTH);
    CHECK_REQ(H11("Host: a\r\nContent-Length:\r\n"), WEIR_E_BAD_CONTENT_LENGTH);
    CHECK_REQ(H11("Host: a\r\nContent-Length: 5,\r\n"), WEIR_E_BAD_CONTENT_LENGTH);
    CHECK_REQ(H11("Host: a\r\nContent-Length: 18446744073709551616\r\n"), WEIR_E_BAD_CONTENT_LENGTH);
    CHECK_REQ(H11("Host: a\r\nContent-Length: 99999999999999999999999999\r\n"), WEIR_E_BAD_CONTENT_LENGTH);
    // Parsed fine, but over max_body: 413.
    CHECK_REQ(H11("Host: a\r\nContent-Length: 18446744073709551615\r\n"), WEIR_E_BODY_TOO_LARGE);
    CHECK_REQ(H11("Host: a\r\nContent-Length: 1048576\r\n"), kHead);
    CHECK_REQ(H11("Host: a\r\nContent-Length: 1048577\r\n"), WEIR_E_BODY_TOO_LARGE);
    weir_http1_limits lim = defaults();
    lim.max_body = 10;
    CHECK_REQ_LIM(H11("Host: a\r\nContent-Length: 10\r\n"), kHead, lim);
    CHECK_REQ_LIM(H11("Host: a\r\nContent-Length: 11\r\n"), WEIR_E_BODY_TOO_LARGE, lim);
    assert_int_equal(weir_http1_status(WEIR_E_BODY_TOO_LARGE), 413);
}

static void test_semantics_transfer_encoding(void **) {
    weir_http1_request r = head(H11("Host: a\r\nTransfer-Encoding: chunked\r\n"));
    assert_int_equal(r.body_kind, WEIR_BODY_CHUNKED);
    CHECK_REQ(H11("Host: a\r\nTransfer-Encoding: CHUNKED\r\n"), kHead);
    CHECK_REQ(H11("Host: a\r\nTransfer-Encoding: , chunked ,\r\n"), kHead);
    CHECK_REQ(H11("Host: a\r\nTransfer-Encoding: gzip, chunked\r\n"), WEIR_E_UNKNOWN_TRANSFER_CODING);
    CHECK_REQ(H11("Host: a\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n"),
              WEIR_E_UNKNOWN_TRANSFER_CODING);
    for (const char *c : {"deflate", "compress", "identity", "x-custom", "gzip;q=1"}) {
        std::string s = std::string("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ") + c + ", chunked\r\n\r\n";
        CHECK_REQ_LIM(s, WEIR_E_UNKNOWN_TRANSFER_CODING, defaults());
    }
    // Framing first: chunked not last or twice, or absent, is 400 (RFC 9112 6.3).
    CHECK_REQ(H11("Host: a\r\nTransfer-Encoding: chunked, gzip\r\n"), WEIR_E_BAD_TRANSFER_ENCODING);
    CHECK_REQ(H11("Host: a\r\nTransfer-Encoding: chunked, chunked\r\n"), WEIR_E_BAD_TRANSFER_ENCODING);
    CHECK_REQ(H11("Host: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"),
              WEIR_E_BAD_TRANSFER_ENCODING);
    CHECK_REQ(H11("Host: a\r\nTransfer-Encoding: gzip\r\n"), WEIR_E_BAD_TRANSFER_ENCODING);
    CHECK_REQ(H11("Host: a\r\nTransfer-Encoding:\r\n"), WEIR_E_BAD_TRANSFER_ENCODING);
    CHECK_REQ(H11("Host: a\r\nTransfer-Encoding: chunked;x=1\r\n"), WEIR_E_BAD_TRANSFER_ENCODING);
    CHECK_REQ(H11("Host: a\r\nTransfer-Encoding: \"chunked\"\r\n"), WEIR_E_BAD_TRANSFER_ENCODING);
    CHECK_REQ(H11("Host: a\r\nTransfer-Encoding: chunked x\r\n"), WEIR_E_BAD_TRANSFER_ENCODING);
    CHECK_REQ(H11("Host: a\r\nTransfer-Encoding: chunkedx\r\n"), WEIR_E_BAD_TRANSFER_ENCODING);
    // Never both framings, and no chunked framing in HTTP/1.0.
    CHECK_REQ(H11("Host: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n"), WEIR_E_CL_AND_TE);
    CHECK_REQ(H11("Host: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n"), WEIR_E_CL_AND_TE);
    CHECK_REQ(H10("Transfer-Encoding: chunked\r\n"), WEIR_E_BAD_TRANSFER_ENCODING);
    assert_int_equal(weir_http1_status(WEIR_E_UNKNOWN_TRANSFER_CODING), 501);
    assert_int_equal(weir_http1_status(WEIR_E_BAD_TRANSFER_ENCODING), 400);
    assert_int_equal(weir_http1_status(WEIR_E_CL_AND_TE), 400);
}

static void test_semantics_expect(void **) {
    weir_http1_request r = head(H11("Host: a\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n"));
    assert_true(r.flags & WEIR_REQ_EXPECT_CONTINUE);
    r = head(H10("Expect: 100-continue\r\n"));
    assert_false(r.flags & WEIR_REQ_EXPECT_CONTINUE);
    assert_false(head(H11("Host: a\r\n")).flags & WEIR_REQ_EXPECT_CONTINUE);
    CHECK_REQ(H11("Host: a\r\nExpect: 100-continue\r\n"), kHead);
    CHECK_REQ(H11("Host: a\r\nExpect: 200-ok\r\n"), WEIR_E_EXPECTATION_FAILED);
    CHECK_REQ(H11("Host: a\r\nExpect: 100-continue, x=y\r\n"), WEIR_E_EXPECTATION_FAILED);
    CHECK_REQ(H11("Host: a\r\nExpect: 100-continuex\r\n"), WEIR_E_EXPECTATION_FAILED);
    CHECK_REQ(H10("Expect: something\r\n"), WEIR_E_EXPECTATION_FAILED);
    assert_int_equal(weir_http1_status(WEIR_E_EXPECTATION_FAILED), 417);
}

static void test_semantics_connection(void **) {
    assert_true(head(H11("Host: a\r\n")).flags & WEIR_REQ_KEEP_ALIVE);
    assert_false(head(H11("Host: a\r\nConnection: close\r\n")).flags & WEIR_REQ_KEEP_ALIVE);
    assert_false(head(H11("Host: a\r\nConnection: foo, CLOSE\r\n")).flags & WEIR_REQ_KEEP_ALIVE);
    assert_false(head(H11("Host: a\r\nConnection: keep-alive\r\nConnection: close\r\n")).flags & WEIR_REQ_KEEP_ALIVE);
    assert_false(head(H10("")).flags & WEIR_REQ_KEEP_ALIVE);
    assert_true(head(H10("Connection: Keep-Alive\r\n")).flags & WEIR_REQ_KEEP_ALIVE);
    assert_false(head(H10("Connection: keep-alive, close\r\n")).flags & WEIR_REQ_KEEP_ALIVE);
    assert_true(head(H11("Host: a\r\nConnection: closed\r\n")).flags & WEIR_REQ_KEEP_ALIVE);
    CHECK_REQ(H11("Host: a\r\nConnection: close\r\n"), kHead);
    // CONNECT never keeps the connection (bytes after its head are a tunnel's).
    assert_false(head("CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n").flags & WEIR_REQ_KEEP_ALIVE);
    assert_false(head("CONNECT a:443 HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n\r\n").flags &
                 WEIR_REQ_KEEP_ALIVE);
    assert_false(head("CONNECT a:443 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").flags & WEIR_REQ_KEEP_ALIVE);
    assert_true(head("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n").flags & WEIR_REQ_KEEP_ALIVE);
    assert_true(head("GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n").flags & WEIR_REQ_KEEP_ALIVE);
}

static void test_semantics_upgrade(void **) {
    assert_true(head(H11("Host: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n")).flags & WEIR_REQ_UPGRADE);
    assert_true(head(H11("Host: a\r\nConnection: keep-alive, upgrade\r\nUpgrade: h2c\r\n")).flags & WEIR_REQ_UPGRADE);
    assert_false(head(H11("Host: a\r\nUpgrade: websocket\r\n")).flags & WEIR_REQ_UPGRADE);
    assert_false(head(H11("Host: a\r\nConnection: upgrade\r\n")).flags & WEIR_REQ_UPGRADE);
    CHECK_REQ(H11("Host: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"), kHead);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_semantics_host_required),      cmocka_unit_test(test_semantics_host_syntax),
        cmocka_unit_test(test_semantics_host_fast_path),
        cmocka_unit_test(test_semantics_host_absolute_form),
        cmocka_unit_test(test_semantics_content_length),     cmocka_unit_test(test_semantics_transfer_encoding),
        cmocka_unit_test(test_semantics_expect),             cmocka_unit_test(test_semantics_connection),
        cmocka_unit_test(test_semantics_upgrade),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
