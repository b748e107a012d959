// Field lines (lib/http1/fields.cc): names, values, line endings, obs-fold,
// the header section limits, and parse_trailers which shares the code.
#include "http1_check.h"

static void test_fields_views_and_ows(void **) {
    std::string s = "GET / HTTP/1.1\r\nHost:a\r\nX-A: \t v a l \t \r\nEmpty:\r\nSp:   \r\n"
                    "X-Obs: \xe6\x97\xa5\x80\xff\r\n\r\n";
    weir_http1_request req;
    weir_header_t h[8];
    assert_int_equal(parse(s, &req, h), static_cast<int>(s.size()));
    assert_int_equal(req.num_headers, 5);
    assert_string_equal(str(h[0].name).c_str(), "Host");
    assert_string_equal(str(h[0].value).c_str(), "a");
    assert_string_equal(str(h[1].value).c_str(), "v a l");
    assert_int_equal(h[2].value.len, 0);
    assert_int_equal(h[3].value.len, 0);
    assert_string_equal(str(h[4].value).c_str(), "\xe6\x97\xa5\x80\xff");
    CHECK_REQ("GET / HTTP/1.1\r\nHost:a\r\nX-A: \t v a l \t \r\nEmpty:\r\nSp:   \r\n\r\n", kHead);
}

static void test_fields_name_token(void **) {
    CHECK_REQ("GET / HTTP/1.1\r\nHost: a\r\n!#$%&'*+-.^_`|~: v\r\n\r\n", kHead);
    CHECK_REQ("GET / HTTP/1.1\r\nHost: a\r\nX(y): v\r\n\r\n", WEIR_E_BAD_HEADER_NAME);
    CHECK_REQ("GET / HTTP/1.1\r\nHost: a\r\n: v\r\n\r\n", WEIR_E_BAD_HEADER_NAME);
    CHECK_REQ("GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n", WEIR_E_BAD_HEADER_NAME);
    CHECK_REQ("GET / HTTP/1.1\r\nHost: a\r\nX\xc3\xa9: v\r\n\r\n", WEIR_E_BAD_HEADER_NAME);
}

static void test_fields_ws_before_colon(void **) {
    CHECK_REQ("GET / HTTP/1.1\r\nHost : a\r\n\r\n", WEIR_E_WS_BEFORE_COLON);
    CHECK_REQ("GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", WEIR_E_WS_BEFORE_COLON);
    CHECK_REQ("GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n", WEIR_E_WS_BEFORE_COLON);
}

static void test_fields_value_bytes(void **) {
    CHECK_REQ("GET / HTTP/1.1\r\nHost: a\r\nX: a\x00 b\r\n\r\n", WEIR_E_BAD_HEADER_VALUE);
    CHECK_REQ("GET / HTTP/1.1\r\nHost: a\r\nX: a\x01\r\n\r\n", WEIR_E_BAD_HEADER_VALUE);
    CHECK_REQ("GET / HTTP/1.1\r\nHost: a\r\nX: a\x1f\r\n\r\n", WEIR_E_BAD_HEADER_VALUE);
    CHECK_REQ("GET / HTTP/1.1\r\nHost: a\r\nX: a\x7f\r\n\r\n", WEIR_E_BAD_HEADER_VALUE);
    CHECK_REQ("GET / HTTP/1.1\r\nHost: a\r\nX: a\x0b\r\n\r\n", WEIR_E_BAD_HEADER_VALUE);
    // The bad byte at every offset of a long value (vector body and tails).
    for (size_t at = 0; at < 80; at++)
        for (char bad : {'\0', '\x7f', '\x1b'}) {
            std::string v(80, 'v');
            v[at] = bad;
            CHECK_REQ_LIM("GET / HTTP/1.1\r\nHost: a\r\nX: " + v + "\r\n\r\n", WEIR_E_BAD_HEADER_VALUE, defaults());
        }
}

static void test_fields_line_endings(void **) {
    CHECK_REQ("GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n", WEIR_E_BAD_LINE_ENDING);
    CHECK_REQ("GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", WEIR_E_BAD_LINE_ENDING);
    CHECK_REQ("GET / HTTP/1.1\r\nHost: a\r\n\n", WEIR_E_BAD_LINE_ENDING);
    CHECK_REQ("GET / HTTP/1.1\r\nHost: a\r\n\r\r", WEIR_E_BAD_LINE_ENDING);
    CHECK_REQ("GET / HTTP/1.1\r\nHost: a\r\nX: b\r\r\n\r\n", WEIR_E_BAD_LINE_ENDING);
}

static void test_fields_obs_fold(void **) {
    CHECK_REQ("GET / HTTP/1.1\r\nHost: a\r\nX: b\r\n c\r\n\r\n", WEIR_E_OBS_FOLD);
    CHECK_REQ("GET / HTTP/1.1\r\nHost: a\r\nX: b\r\n\tc\r\n\r\n", WEIR_E_OBS_FOLD);
    CHECK_REQ("GET / HTTP/1.1\r\n Host: a\r\n\r\n", WEIR_E_OBS_FOLD); // space after the start line
}

static void test_fields_section_too_large(void **) {
    weir_http1_limits lim = defaults();
    lim.max_header_bytes = 20;
    CHECK_REQ_LIM("GET / HTTP/1.1\r\nHost: a\r\nX: 1234\r\n\r\n", kHead, lim); // 9 + 9 + 2 = 20
    CHECK_REQ_LIM("GET / HTTP/1.1\r\nHost: a\r\nX: 12345\r\n\r\n", WEIR_E_HEADERS_TOO_LARGE, lim);
    // No end of line needed to know it.
    CHECK_REQ_LIM("GET / HTTP/1.1\r\nX: " + std::string(100, 'v'), WEIR_E_HEADERS_TOO_LARGE, lim);
    // An error before the limit is answered first.
    CHECK_REQ_LIM("GET / HTTP/1.1\r\nX : " + std::string(100, 'v'), WEIR_E_WS_BEFORE_COLON, lim);
    // Defaults: 16384.
    std::string big = "GET / HTTP/1.1\r\nHost: a\r\nX: " + std::string(16384, 'v') + "\r\n\r\n";
    CHECK_REQ_LIM(big, WEIR_E_HEADERS_TOO_LARGE, defaults());
    std::string fits = "GET / HTTP/1.1\r\nHost: a\r\nX: " + std::string(16384 - 9 - 5 - 2, 'v') + "\r\n\r\n";
    CHECK_REQ_LIM(fits, kHead, defaults());
    assert_int_equal(weir_http1_status(WEIR_E_HEADERS_TOO_LARGE), 431);
}

static void test_fields_too_many(void **) {
    weir_http1_limits lim = defaults();
    lim.max_headers = 3;
    CHECK_REQ_LIM("GET / HTTP/1.1\r\nHost: a\r\nB: 1\r\nC: 2\r\n\r\n", kHead, lim);
    CHECK_REQ_LIM("GET / HTTP/1.1\r\nHost: a\r\nB: 1\r\nC: 2\r\nD: 3\r\n\r\n", WEIR_E_TOO_MANY_HEADERS, lim);
    // headers_cap bounds it too.
    std::string s = "GET / HTTP/1.1\r\nHost: a\r\nB: 1\r\n\r\n";
    weir_http1_request req;
    weir_header_t h[2];
    assert_int_equal(parse(s, &req, h, 2), static_cast<int>(s.size()));
    assert_int_equal(parse(s, &req, h, 1), WEIR_E_TOO_MANY_HEADERS);
    assert_int_equal(parse(s, &req, h, 0), WEIR_E_TOO_MANY_HEADERS);
    // The default of 100.
    std::string many = "GET / HTTP/1.1\r\nHost: a\r\n";
    for (int i = 0; i < 99; i++)
        many += "X: " + std::to_string(i) + "\r\n";
    weir_header_t hh[128];
    assert_int_equal(parse(many + "\r\n", &req, hh, 128), static_cast<int>(many.size() + 2));
    assert_int_equal(parse(many + "Y: z\r\n\r\n", &req, hh, 128), WEIR_E_TOO_MANY_HEADERS);
    assert_int_equal(weir_http1_status(WEIR_E_TOO_MANY_HEADERS), 431);
}

static void test_fields_trailers_parse(void **) {
    weir_header_t h[4];
    const char ok[] = "Expires: never\r\nX-Sum:  12 \r\n\r\n";
    assert_int_equal(weir_http1_parse_trailers(ok, sizeof ok - 1, nullptr, h, 4), 2);
    assert_string_equal(str(h[1].value).c_str(), "12");
    assert_int_equal(weir_http1_parse_trailers("\r\n", 2, nullptr, h, 4), 0);
    assert_int_equal(weir_http1_parse_trailers("A: b\r\n", 6, nullptr, h, 4), WEIR_E_INCOMPLETE);
    assert_int_equal(weir_http1_parse_trailers("A : b\r\n\r\n", 9, nullptr, h, 4), WEIR_E_WS_BEFORE_COLON);
    assert_int_equal(weir_http1_parse_trailers(ok, sizeof ok - 1, nullptr, h, 1), WEIR_E_TOO_MANY_HEADERS);
    weir_http1_limits lim = defaults();
    lim.max_trailer_bytes = 10;
    assert_int_equal(weir_http1_parse_trailers(ok, sizeof ok - 1, &lim, h, 4), WEIR_E_TRAILERS_TOO_LARGE);
    assert_int_equal(weir_http1_parse_trailers(nullptr, 0, nullptr, h, 4), WEIR_E_INCOMPLETE);
    assert_int_equal(weir_http1_parse_trailers(nullptr, 1, nullptr, h, 4), -EINVAL);
    assert_int_equal(weir_http1_parse_trailers(ok, 2, nullptr, nullptr, 4), -EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields_views_and_ows),     cmocka_unit_test(test_fields_name_token),
        cmocka_unit_test(test_fields_ws_before_colon),   cmocka_unit_test(test_fields_value_bytes),
        cmocka_unit_test(test_fields_line_endings),      cmocka_unit_test(test_fields_obs_fold),
        cmocka_unit_test(test_fields_section_too_large), cmocka_unit_test(test_fields_too_many),
        cmocka_unit_test(test_fields_trailers_parse),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
