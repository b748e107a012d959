// The chunked decoder (lib/http1/chunked.cc). Every case runs whole, in
// place, split at every 2-way boundary and in 1-byte pieces (http1_check.h).
#include "http1_check.h"

static void test_chunked_basic(void **) {
    CHECK_CHUNKED("5\r\nhello\r\n0\r\n\r\n", 0, "hello");
    CHECK_CHUNKED("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", 0, "hello world");
    CHECK_CHUNKED("1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n", 0, "abcdefghijklmnopqrstuvwxyz");
    CHECK_CHUNKED("a\r\n0123456789\r\n000\r\n\r\n", 0, "0123456789");
    CHECK_CHUNKED("0\r\n\r\n", 0, "");
    CHECK_CHUNKED("5\r\nhel", WEIR_E_INCOMPLETE, "hel");
    CHECK_CHUNKED("", WEIR_E_INCOMPLETE, "");
}

static void test_chunked_stops_at_message_end(void **) {
    chunked_fuzz::Outcome o;
    check_chunked_at(__FILE__, __LINE__, "2\r\nhi\r\n0\r\n\r\nGET / HTTP/1.1\r\n", 0, "hi", defaults(), &o);
    assert_int_equal(o.used, 12);
    assert_int_equal(o.trailer_off, 10);
    assert_int_equal(o.trailer_len, 2);
    assert_int_equal(o.num_trailers, 0);
    // Done is done: more calls consume nothing and answer 0.
    weir_http1_chunked d;
    d.size = sizeof d;
    assert_int_equal(weir_http1_chunked_init(&d, nullptr), 0);
    char out[32];
    size_t used, olen;
    assert_int_equal(weir_http1_chunked_decode(&d, "0\r\n\r\n", 5, &used, out, &olen), 0);
    assert_int_equal(weir_http1_chunked_decode(&d, "1\r\n", 3, &used, out, &olen), 0);
    assert_int_equal(used, 0);
}

static void test_chunked_size_line(void **) {
    CHECK_CHUNKED("\r\nabc\r\n0\r\n\r\n", WEIR_E_BAD_CHUNK, "");
    CHECK_CHUNKED("x\r\n", WEIR_E_BAD_CHUNK, "");
    CHECK_CHUNKED("-1\r\nx\r\n", WEIR_E_BAD_CHUNK, "");
    CHECK_CHUNKED("+1\r\nx\r\n", WEIR_E_BAD_CHUNK, "");
    CHECK_CHUNKED("0x1\r\nx\r\n", WEIR_E_BAD_CHUNK, "");
    CHECK_CHUNKED("3\nabc\r\n0\r\n\r\n", WEIR_E_BAD_CHUNK, "");
    CHECK_CHUNKED("3\rabc\r\n0\r\n\r\n", WEIR_E_BAD_CHUNK, "");
    CHECK_CHUNKED("3 \r\nabc\r\n0\r\n\r\n", WEIR_E_BAD_CHUNK, ""); // BWS only before ';'
    CHECK_CHUNKED(" 3\r\nabc\r\n0\r\n\r\n", WEIR_E_BAD_CHUNK, "");
}

static void test_chunked_size_overflow(void **) {
    weir_http1_limits lim = defaults();
    lim.max_body = UINT64_MAX;
    // 16 digits are fine (leading zeros included), 17 are refused whatever they say.
    CHECK_CHUNKED_LIM("0000000000000001\r\nx\r\n0\r\n\r\n", 0, "x", lim);
    CHECK_CHUNKED_LIM("00000000000000001\r\nx\r\n0\r\n\r\n", WEIR_E_BAD_CHUNK, "", lim);
    CHECK_CHUNKED_LIM("10000000000000000\r\n", WEIR_E_BAD_CHUNK, "", lim);
    CHECK_CHUNKED_LIM("ffffffffffffffff\r\nabc", WEIR_E_INCOMPLETE, "abc", lim);
    // With the default 1 MiB limit the same size is a 413, before any data.
    CHECK_CHUNKED("ffffffffffffffff\r\nabc", WEIR_E_BODY_TOO_LARGE, "");
}

static void test_chunked_extensions(void **) {
    CHECK_CHUNKED("3;name\r\nabc\r\n0\r\n\r\n", 0, "abc");
    CHECK_CHUNKED("3;name=value\r\nabc\r\n0\r\n\r\n", 0, "abc");
    CHECK_CHUNKED("3 ; a = b ; c\r\nabc\r\n0;x=\"y\"\r\n\r\n", 0, "abc");
    CHECK_CHUNKED("3;a=\"q \\\" ; x\"\r\nabc\r\n0\r\n\r\n", 0, "abc");
    CHECK_CHUNKED("3;a=\"\xff\"\r\nabc\r\n0\r\n\r\n", 0, "abc");
    CHECK_CHUNKED("3;\r\nabc\r\n0\r\n\r\n", WEIR_E_BAD_CHUNK, "");
    CHECK_CHUNKED("3;=v\r\nabc\r\n0\r\n\r\n", WEIR_E_BAD_CHUNK, "");
    CHECK_CHUNKED("3;a=\r\nabc\r\n0\r\n\r\n", WEIR_E_BAD_CHUNK, "");
    CHECK_CHUNKED("3;a=\"x\r\nabc\r\n0\r\n\r\n", WEIR_E_BAD_CHUNK, "");
    CHECK_CHUNKED("3;a=\"x\"y\r\nabc\r\n0\r\n\r\n", WEIR_E_BAD_CHUNK, "");
    CHECK_CHUNKED("3;a\x01\r\nabc\r\n0\r\n\r\n", WEIR_E_BAD_CHUNK, "");
    CHECK_CHUNKED("3;a=b c\r\nabc\r\n0\r\n\r\n", WEIR_E_BAD_CHUNK, "");
    CHECK_CHUNKED("3;a \r\nabc\r\n0\r\n\r\n", WEIR_E_BAD_CHUNK, "");
}

static void test_chunked_extension_limit(void **) {
    weir_http1_limits lim = defaults();
    lim.max_chunk_ext = 6;
    CHECK_CHUNKED_LIM("3;a=bcd\r\nabc\r\n0\r\n\r\n", 0, "abc", lim); // ";a=bcd" is 6
    CHECK_CHUNKED_LIM("3;a=bcde\r\nabc\r\n0\r\n\r\n", WEIR_E_CHUNK_EXT_TOO_LONG, "", lim);
    CHECK_CHUNKED_LIM("3;" + std::string(1000, 'a'), WEIR_E_CHUNK_EXT_TOO_LONG, "", lim); // no CRLF needed
    CHECK_CHUNKED_LIM("3;a=bcd\r\nabc\r\n0;a=bcde\r\n\r\n", WEIR_E_CHUNK_EXT_TOO_LONG, "abc", lim); // per line
    CHECK_CHUNKED_LIM("3;a=bcd\r\nabc\r\n3;a=bcd\r\nabc\r\n0\r\n\r\n", 0, "abcabc", lim);
    CHECK_CHUNKED_LIM("3;" + std::string(255, 'a') + "\r\nabc\r\n0\r\n\r\n", 0, "abc", defaults());
    CHECK_CHUNKED_LIM("3;" + std::string(256, 'a') + "\r\nabc\r\n0\r\n\r\n", WEIR_E_CHUNK_EXT_TOO_LONG, "",
                      defaults());
    assert_int_equal(weir_http1_status(WEIR_E_CHUNK_EXT_TOO_LONG), 400);
}

static void test_chunked_data_crlf(void **) {
    CHECK_CHUNKED("3\r\nabcX\r\n0\r\n\r\n", WEIR_E_BAD_CHUNK, "abc");
    CHECK_CHUNKED("3\r\nabc\n0\r\n\r\n", WEIR_E_BAD_CHUNK, "abc");
    CHECK_CHUNKED("3\r\nabc\rX0\r\n\r\n", WEIR_E_BAD_CHUNK, "abc");
    CHECK_CHUNKED("3\r\nabc0\r\n\r\n", WEIR_E_BAD_CHUNK, "abc");
}

static void test_chunked_body_limit(void **) {
    weir_http1_limits lim = defaults();
    lim.max_body = 8;
    CHECK_CHUNKED_LIM("4\r\nabcd\r\n4\r\nefgh\r\n0\r\n\r\n", 0, "abcdefgh", lim);
    // The second size already says 9 > 8: refused before its data is read.
    CHECK_CHUNKED_LIM("4\r\nabcd\r\n5\r\nefghi\r\n0\r\n\r\n", WEIR_E_BODY_TOO_LARGE, "abcd", lim);
    CHECK_CHUNKED_LIM("9\r\n", WEIR_E_BODY_TOO_LARGE, "", lim);
    CHECK_CHUNKED_LIM("100000\r\n", WEIR_E_INCOMPLETE, "", defaults()); // 1 MiB exactly is fine
    CHECK_CHUNKED_LIM("100001\r\n", WEIR_E_BODY_TOO_LARGE, "", defaults());
}

static void test_chunked_trailers(void **) {
    chunked_fuzz::Outcome o;
    std::string raw = "4\r\nwiki\r\n0\r\nExpires: never\r\nX-Sum:  12 \r\n\r\n";
    check_chunked_at(__FILE__, __LINE__, raw, 0, "wiki", defaults(), &o);
    assert_int_equal(o.num_trailers, 2);
    assert_int_equal(o.trailer_off, 12);
    assert_int_equal(o.trailer_len, raw.size() - 12);
    weir_header_t h[4];
    assert_int_equal(weir_http1_parse_trailers(raw.data() + o.trailer_off, o.trailer_len, nullptr, h, 4), 2);
    assert_string_equal(str(h[0].name).c_str(), "Expires");
    assert_string_equal(str(h[1].value).c_str(), "12");
    CHECK_CHUNKED("0\r\nA: b\r\n c\r\n\r\n", WEIR_E_OBS_FOLD, "");
    CHECK_CHUNKED("0\r\n A: b\r\n\r\n", WEIR_E_OBS_FOLD, "");
    CHECK_CHUNKED("0\r\nA : b\r\n\r\n", WEIR_E_WS_BEFORE_COLON, "");
    CHECK_CHUNKED("0\r\nA: b\x00\r\n\r\n", WEIR_E_BAD_HEADER_VALUE, "");
    CHECK_CHUNKED("0\r\nA: b\x7f\r\n\r\n", WEIR_E_BAD_HEADER_VALUE, "");
    CHECK_CHUNKED("0\r\nA: b\n\r\n", WEIR_E_BAD_LINE_ENDING, "");
    CHECK_CHUNKED("0\r\nA: b\rX\r\n", WEIR_E_BAD_LINE_ENDING, "");
    CHECK_CHUNKED("0\r\n\n", WEIR_E_BAD_LINE_ENDING, "");
    CHECK_CHUNKED("0\r\n\rX", WEIR_E_BAD_LINE_ENDING, "");
    CHECK_CHUNKED("0\r\n: b\r\n\r\n", WEIR_E_BAD_HEADER_NAME, "");
    CHECK_CHUNKED("0\r\nA\r\n\r\n", WEIR_E_BAD_HEADER_NAME, "");
    CHECK_CHUNKED("0\r\nA(: b\r\n\r\n", WEIR_E_BAD_HEADER_NAME, "");
    // Trailers are never framing: a Content-Length there is just a field.
    CHECK_CHUNKED("1\r\nx\r\n0\r\nContent-Length: 100\r\nTransfer-Encoding: gzip\r\n\r\n", 0, "x");
}

static void test_chunked_trailer_limits(void **) {
    weir_http1_limits lim = defaults();
    lim.max_trailer_bytes = 12; // "A: 12345\r\n" and the final CRLF
    CHECK_CHUNKED_LIM("0\r\nA: 12345\r\n\r\n", 0, "", lim);
    CHECK_CHUNKED_LIM("0\r\nA: 123456\r\n\r\n", WEIR_E_TRAILERS_TOO_LARGE, "", lim);
    CHECK_CHUNKED_LIM("0\r\nA: " + std::string(100, 'x'), WEIR_E_TRAILERS_TOO_LARGE, "", lim);
    lim = defaults();
    lim.max_trailers = 2;
    CHECK_CHUNKED_LIM("0\r\nA: 1\r\nB: 2\r\n\r\n", 0, "", lim);
    CHECK_CHUNKED_LIM("0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", WEIR_E_TOO_MANY_HEADERS, "", lim);
    // Defaults: 4096 bytes, 32 fields.
    std::string many = "0\r\n";
    for (int i = 0; i < 32; i++)
        many += "T: " + std::to_string(i) + "\r\n";
    CHECK_CHUNKED_LIM(many + "\r\n", 0, "", defaults());
    CHECK_CHUNKED_LIM(many + "U: x\r\n\r\n", WEIR_E_TOO_MANY_HEADERS, "", defaults());
    CHECK_CHUNKED_LIM("0\r\nT: " + std::string(4096 - 7, 'x') + "\r\n\r\n", 0, "", defaults());
    CHECK_CHUNKED_LIM("0\r\nT: " + std::string(4096 - 6, 'x') + "\r\n\r\n", WEIR_E_TRAILERS_TOO_LARGE, "",
                      defaults());
    assert_int_equal(weir_http1_status(WEIR_E_TRAILERS_TOO_LARGE), 431);
}

static void test_chunked_error_is_sticky(void **) {
    weir_http1_chunked d;
    d.size = sizeof d;
    weir_http1_chunked_init(&d, nullptr);
    char out[16];
    size_t used, olen;
    assert_int_equal(weir_http1_chunked_decode(&d, "3\r\nabcX", 7, &used, out, &olen), WEIR_E_BAD_CHUNK);
    assert_int_equal(used, 6);
    assert_int_equal(olen, 3);
    assert_int_equal(weir_http1_chunked_decode(&d, "\r\n0\r\n\r\n", 7, &used, out, &olen), WEIR_E_BAD_CHUNK);
    assert_int_equal(used, 0);
}

static void test_chunked_capi_arguments(void **) {
    weir_http1_chunked d;
    char out[8];
    size_t used, olen;
    assert_int_equal(weir_http1_chunked_init(nullptr, nullptr), -EINVAL);
    weir_http1_limits bad{};
    d.size = sizeof d;
    assert_int_equal(weir_http1_chunked_init(&d, &bad), -EINVAL);
    d.size = 0; // init writes only d->size bytes, so it must be set
    assert_int_equal(weir_http1_chunked_init(&d, nullptr), -EINVAL);
    d.size = sizeof d + 1;
    assert_int_equal(weir_http1_chunked_init(&d, nullptr), -EINVAL);
    d.size = sizeof d;
    assert_int_equal(weir_http1_chunked_init(&d, nullptr), 0);
    assert_int_equal(weir_http1_chunked_decode(nullptr, "0", 1, &used, out, &olen), -EINVAL);
    assert_int_equal(weir_http1_chunked_decode(&d, nullptr, 1, &used, out, &olen), -EINVAL);
    assert_int_equal(weir_http1_chunked_decode(&d, "0", 1, nullptr, out, &olen), -EINVAL);
    assert_int_equal(weir_http1_chunked_decode(&d, "0", 1, &used, nullptr, &olen), -EINVAL);
    assert_int_equal(weir_http1_chunked_decode(&d, "0", 1, &used, out, nullptr), -EINVAL);
    assert_int_equal(weir_http1_chunked_decode(&d, nullptr, 0, &used, nullptr, &olen), WEIR_E_INCOMPLETE);
    weir_http1_chunked junk = d;
    junk.size = 0;
    assert_int_equal(weir_http1_chunked_decode(&junk, "0", 1, &used, out, &olen), -EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunked_basic),           cmocka_unit_test(test_chunked_stops_at_message_end),
        cmocka_unit_test(test_chunked_size_line),       cmocka_unit_test(test_chunked_size_overflow),
        cmocka_unit_test(test_chunked_extensions),      cmocka_unit_test(test_chunked_extension_limit),
        cmocka_unit_test(test_chunked_data_crlf),       cmocka_unit_test(test_chunked_body_limit),
        cmocka_unit_test(test_chunked_trailers),        cmocka_unit_test(test_chunked_trailer_limits),
        cmocka_unit_test(test_chunked_error_is_sticky), cmocka_unit_test(test_chunked_capi_arguments),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
