// The request line (lib/http1/request.cc): method, target forms, version,
// leading empty lines, the 414 limit, and the C entry point's argument checks.
#include "http1_check.h"

static void test_request_minimal_get(void **) {
    CHECK_REQ("GET / HTTP/1.1\r\nHost: a\r\n\r\n", kHead);
    std::string s = "GET /p/q?x=1&y HTTP/1.1\r\nHost: a\r\n\r\nBODY";
    weir_http1_request req;
    weir_header_t h[8];
    assert_int_equal(parse(s, &req, h), static_cast<int>(s.size() - 4));
    assert_string_equal(str(req.method).c_str(), "GET");
    assert_string_equal(str(req.target).c_str(), "/p/q?x=1&y");
    assert_string_equal(str(req.path).c_str(), "/p/q");
    assert_string_equal(str(req.query).c_str(), "x=1&y");
    assert_string_equal(str(req.host).c_str(), "a");
    assert_int_equal(req.version_minor, 1);
    assert_int_equal(req.target_form, WEIR_TARGET_ORIGIN);
    assert_int_equal(req.body_kind, WEIR_BODY_NONE);
    assert_int_equal(req.flags, WEIR_REQ_KEEP_ALIVE);
    assert_int_equal(req.num_headers, 1);
    assert_ptr_equal(req.headers, h);
}

static void test_request_method_token(void **) {
    CHECK_REQ("M-SEARCH * HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_TARGET); // * is OPTIONS only
    CHECK_REQ("X!#$%&'*+-.^_`|~9 / HTTP/1.1\r\nHost: a\r\n\r\n", kHead);
    CHECK_REQ("G@T / HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_METHOD);
    CHECK_REQ("GE\x7fT / HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_METHOD);
    CHECK_REQ("\x16\x03\x01\x02\x00", WEIR_E_BAD_METHOD); // a TLS hello
    CHECK_REQ(" / HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_REQUEST_LINE);
    CHECK_REQ("GET\r\n\r\n", WEIR_E_BAD_REQUEST_LINE);
    CHECK_REQ("GET\tHTTP/1.1\r\n\r\n", WEIR_E_BAD_METHOD);
}

static void test_request_separators(void **) {
    CHECK_REQ("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_REQUEST_LINE);
    CHECK_REQ("GET /  HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_VERSION);
    CHECK_REQ("GET /\r\n\r\n", WEIR_E_BAD_REQUEST_LINE); // HTTP/0.9
    CHECK_REQ("GET / HTTP/1.1 \r\nHost: a\r\n\r\n", WEIR_E_BAD_VERSION);
    CHECK_REQ("GET / HTTP/1.1\nHost: a\r\n\r\n", WEIR_E_BAD_LINE_ENDING);
    CHECK_REQ("GET / HTTP/1.1\rHost: a\r\n\r\n", WEIR_E_BAD_LINE_ENDING);
    CHECK_REQ("GET /\n", WEIR_E_BAD_LINE_ENDING);
}

static void test_request_target_bytes(void **) {
    CHECK_REQ("GET /a\x01 HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_TARGET);
    CHECK_REQ("GET /a\x7f HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_TARGET);
    CHECK_REQ("GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_TARGET);
    CHECK_REQ("GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_TARGET);
    CHECK_REQ("GET /a\x00 HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_TARGET);
    // Long targets cross the vector widths; the bad byte at every position.
    for (size_t at = 1; at < 70; at++) {
        std::string t(70, 'a');
        t[0] = '/';
        t[at] = static_cast<char>(0x80 + at);
        CHECK_REQ_LIM("GET " + t + " HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_TARGET, defaults());
    }
    CHECK_REQ("GET /!$&'()*+,;=:@-._~%20?/?a=b HTTP/1.1\r\nHost: a\r\n\r\n", kHead);
}

static void test_request_absolute_form(void **) {
    std::string s = "GET http://example.com:8080/a/b?c=d HTTP/1.1\r\nHost: other\r\n\r\n";
    weir_http1_request req;
    weir_header_t h[8];
    assert_int_equal(parse(s, &req, h), static_cast<int>(s.size()));
    assert_int_equal(req.target_form, WEIR_TARGET_ABSOLUTE);
    assert_string_equal(str(req.path).c_str(), "/a/b");
    assert_string_equal(str(req.query).c_str(), "c=d");
    s = "GET HTTPS://[::1]:443?q=1 HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(parse(s, &req, h), static_cast<int>(s.size()));
    assert_string_equal(str(req.path).c_str(), "/");
    assert_string_equal(str(req.query).c_str(), "q=1");
    s = "GET http://h HTTP/1.1\r\nHost: h\r\n\r\n";
    assert_int_equal(parse(s, &req, h), static_cast<int>(s.size()));
    assert_string_equal(str(req.path).c_str(), "/");
    assert_int_equal(req.query.len, 0);
    CHECK_REQ("GET http://example.com/x HTTP/1.1\r\nHost: example.com\r\n\r\n", kHead);
    CHECK_REQ("GET ftp://example.com/x HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_TARGET);
    CHECK_REQ("GET http:/x HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_TARGET);
    CHECK_REQ("GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_TARGET);      // empty host
    CHECK_REQ("GET http://u@h/x HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_TARGET);   // userinfo
    CHECK_REQ("GET http://h:99999/ HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_TARGET); // port range
    CHECK_REQ("GET example.com/x HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_TARGET);
}

static void test_request_authority_form(void **) {
    std::string s = "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n";
    weir_http1_request req;
    weir_header_t h[8];
    assert_int_equal(parse(s, &req, h), static_cast<int>(s.size()));
    assert_int_equal(req.target_form, WEIR_TARGET_AUTHORITY);
    assert_int_equal(req.path.len, 0);
    CHECK_REQ("CONNECT [2001:db8::1]:443 HTTP/1.1\r\nHost: a\r\n\r\n", kHead);
    CHECK_REQ("CONNECT example.com HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_TARGET);    // no port
    CHECK_REQ("CONNECT example.com: HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_TARGET);   // empty port
    CHECK_REQ("CONNECT / HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_TARGET);              // origin with CONNECT
    CHECK_REQ("GET example.com:443 HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_TARGET);    // authority, not CONNECT
    CHECK_REQ("CONNECT [::1 HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_TARGET);
}

static void test_request_asterisk_form(void **) {
    std::string s = "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n";
    weir_http1_request req;
    weir_header_t h[8];
    assert_int_equal(parse(s, &req, h), static_cast<int>(s.size()));
    assert_int_equal(req.target_form, WEIR_TARGET_ASTERISK);
    CHECK_REQ("OPTIONS / HTTP/1.1\r\nHost: a\r\n\r\n", kHead);
    CHECK_REQ("GET * HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_TARGET);
    CHECK_REQ("OPTIONS *x HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_TARGET);
}

static void test_request_version(void **) {
    CHECK_REQ("GET / HTTP/1.0\r\n\r\n", kHead);
    CHECK_REQ("GET / HTTP/2.0\r\nHost: a\r\n\r\n", WEIR_E_VERSION_UNSUPPORTED);
    CHECK_REQ("GET / HTTP/1.2\r\nHost: a\r\n\r\n", WEIR_E_VERSION_UNSUPPORTED);
    CHECK_REQ("GET / HTTP/0.9\r\n\r\n", WEIR_E_VERSION_UNSUPPORTED);
    CHECK_REQ("GET / HTTP/1.1x\r\nHost: a\r\n\r\n", WEIR_E_BAD_VERSION);
    CHECK_REQ("GET / HTTP/11\r\nHost: a\r\n\r\n", WEIR_E_BAD_VERSION);
    CHECK_REQ("GET / http/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_VERSION);
    CHECK_REQ("GET / HTTP/1.\r\nHost: a\r\n\r\n", WEIR_E_BAD_VERSION);
    CHECK_REQ("GET / HTTP/10.0\r\nHost: a\r\n\r\n", WEIR_E_BAD_VERSION);
    assert_int_equal(weir_http1_status(WEIR_E_VERSION_UNSUPPORTED), 505);
    assert_int_equal(weir_http1_status(WEIR_E_BAD_VERSION), 400);
}

static void test_request_leading_empty_lines(void **) {
    CHECK_REQ("\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", kHead);
    CHECK_REQ("\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", kHead);
    CHECK_REQ("\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_REQUEST_LINE);
    CHECK_REQ("\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_LINE_ENDING);
    CHECK_REQ("\rGET / HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_BAD_LINE_ENDING);
}

static void test_request_line_too_long(void **) {
    weir_http1_limits lim = defaults();
    lim.max_request_line = 32;
    // "GET /" + pad + " HTTP/1.1" is exactly 32 bytes: accepted.
    std::string pad(32 - 14, 'a');
    CHECK_REQ_LIM("GET /" + pad + " HTTP/1.1\r\nHost: a\r\n\r\n", kHead, lim);
    CHECK_REQ_LIM("GET /" + pad + "b HTTP/1.1\r\nHost: a\r\n\r\n", WEIR_E_REQUEST_LINE_TOO_LONG, lim);
    // Known as soon as byte 33 is not the CR: no CRLF needed.
    CHECK_REQ_LIM("GET /" + std::string(100, 'a'), WEIR_E_REQUEST_LINE_TOO_LONG, lim);
    // Leading empty lines do not count.
    CHECK_REQ_LIM("\r\n\r\nGET /" + pad + " HTTP/1.1\r\nHost: a\r\n\r\n", kHead, lim);
    // An error left of the limit wins, being first.
    CHECK_REQ_LIM("G@T /" + std::string(100, 'a'), WEIR_E_BAD_METHOD, lim);
    // The default 8192 and its status.
    CHECK_REQ_LIM("GET /" + std::string(8192, 'a') + " HTTP/1.1\r\n", WEIR_E_REQUEST_LINE_TOO_LONG, defaults());
    CHECK_REQ_LIM("GET /" + std::string(8192 - 14, 'a') + " HTTP/1.1\r\nHost: a\r\n\r\n", kHead, defaults());
    assert_int_equal(weir_http1_status(WEIR_E_REQUEST_LINE_TOO_LONG), 414);
}

static void test_request_capi_arguments(void **) {
    weir_http1_request req{};
    req.size = sizeof req;
    weir_header_t h[4];
    const char *s = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    size_t n = strlen(s);
    assert_int_equal(weir_http1_parse_request(s, n, nullptr, nullptr, h, 4), -EINVAL);
    assert_int_equal(weir_http1_parse_request(s, n, nullptr, &req, nullptr, 4), -EINVAL);
    assert_int_equal(weir_http1_parse_request(nullptr, 3, nullptr, &req, h, 4), -EINVAL);
    assert_int_equal(weir_http1_parse_request(nullptr, 0, nullptr, &req, h, 4), WEIR_E_INCOMPLETE);
    weir_http1_limits bad{};
    assert_int_equal(weir_http1_parse_request(s, n, &bad, &req, h, 4), -EINVAL);
    req.size = 4;
    assert_int_equal(weir_http1_parse_request(s, n, nullptr, &req, h, 4), -EINVAL);
    req.size = sizeof req;
    assert_int_equal(weir_http1_parse_request(s, n, nullptr, &req, h, 4), static_cast<int>(n));
    // A limits struct shorter than the 0.2 layout (the first size weir
    // accepts) is refused, never read in part (tests/capi/test_sizes.c has
    // the whole size rule).
    weir_http1_limits old = defaults();
    old.size = offsetof(weir_http1_limits, max_header_bytes);
    assert_int_equal(weir_http1_parse_request(s, n, &old, &req, h, 4), -EINVAL);
    old.size = sizeof old;
    old.max_request_line = 10;
    assert_int_equal(weir_http1_parse_request(s, n, &old, &req, h, 4), WEIR_E_REQUEST_LINE_TOO_LONG);
    old.max_request_line = 100;
    assert_int_equal(weir_http1_parse_request(s, n, &old, &req, h, 4), static_cast<int>(n));
    weir_http1_limits_init(nullptr); // no crash
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_minimal_get),      cmocka_unit_test(test_request_method_token),
        cmocka_unit_test(test_request_separators),       cmocka_unit_test(test_request_target_bytes),
        cmocka_unit_test(test_request_absolute_form),    cmocka_unit_test(test_request_authority_form),
        cmocka_unit_test(test_request_asterisk_form),    cmocka_unit_test(test_request_version),
        cmocka_unit_test(test_request_leading_empty_lines), cmocka_unit_test(test_request_line_too_long),
        cmocka_unit_test(test_request_capi_arguments),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
