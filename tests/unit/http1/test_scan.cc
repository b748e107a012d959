// Vector scans (lib/http1/scan.cc) against the scalar one, and the parser on
// input that ends exactly at a guard page, for every prefix and scan level.
#include <sys/mman.h>
#include <unistd.h>

#include <random>

#include "http1_check.h"

using weir::http1::scan_force;
using weir::http1::scan_target;
using weir::http1::scan_value;

static const int kLevels[] = {weir::http1::kScanScalar, weir::http1::kScanSse42, weir::http1::kScanAvx2};

static void test_scan_levels_pin_and_fall_back(void **) {
    assert_int_equal(scan_force(weir::http1::kScanScalar), weir::http1::kScanScalar);
    assert_int_equal(weir::http1::scan_level(), weir::http1::kScanScalar);
    int best = scan_force(weir::http1::kScanAuto);
    assert_true(best >= weir::http1::kScanScalar && best <= weir::http1::kScanAvx2);
    assert_true(scan_force(weir::http1::kScanAvx2) <= best);
    if (__builtin_cpu_supports("avx2"))
        assert_int_equal(scan_force(weir::http1::kScanAvx2), weir::http1::kScanAvx2);
    if (__builtin_cpu_supports("sse4.2"))
        assert_int_equal(scan_force(weir::http1::kScanSse42), weir::http1::kScanSse42);
    scan_force(weir::http1::kScanAuto);
}

// Every byte value at every position of buffers up to 70 bytes long, each
// level against the scalar scan.
static void test_scan_vector_matches_scalar(void **) {
    std::mt19937 rng(12345);
    char buf[80];
    for (size_t len = 0; len <= 70; len++) {
        for (int bad = 0; bad < 256; bad++) {
            for (size_t i = 0; i < len; i++)
                buf[i] = static_cast<char>(0x21 + rng() % 0x5e);
            size_t at = len ? rng() % len : 0;
            if (len)
                buf[at] = static_cast<char>(bad);
            scan_force(weir::http1::kScanScalar);
            const char *v0 = scan_value(buf, buf + len), *t0 = scan_target(buf, buf + len);
            for (int level : kLevels) {
                scan_force(level);
                assert_ptr_equal(scan_value(buf, buf + len), v0);
                assert_ptr_equal(scan_target(buf, buf + len), t0);
            }
        }
    }
    // The classes themselves, byte by byte.
    scan_force(weir::http1::kScanScalar);
    for (int c = 0; c < 256; c++) {
        char one = static_cast<char>(c);
        bool value_ok = c == '\t' || (c >= 0x20 && c != 0x7f);
        bool target_ok = c >= 0x21 && c <= 0x7e;
        assert_int_equal(scan_value(&one, &one + 1) == &one + 1, value_ok);
        assert_int_equal(scan_target(&one, &one + 1) == &one + 1, target_ok);
    }
    scan_force(weir::http1::kScanAuto);
}

// scan_target_query: the '?' it reports is the first one before the end it
// returns, at every level, for '?' and a stop byte at every pair of positions.
static void test_scan_target_query_matches_scalar(void **) {
    for (size_t len = 0; len <= 80; len++) {
        for (size_t qpos = 0; qpos <= len; qpos += (len > 40 ? 3 : 1)) {
            for (size_t stop = 0; stop <= len; stop += (len > 40 ? 5 : 1)) {
                std::string buf(len, 'a');
                if (qpos < len)
                    buf[qpos] = '?';
                if (stop < len)
                    buf[stop] = static_cast<char>(stop % 2 ? 0x20 : 0x80);
                const char *b = buf.data(), *e = b + len;
                const char *want_end = b;
                while (want_end < e && static_cast<unsigned char>(*want_end) >= 0x21 &&
                       static_cast<unsigned char>(*want_end) <= 0x7E)
                    want_end++;
                const char *want_q = want_end;
                for (const char *x = b; x < want_end; x++)
                    if (*x == '?') {
                        want_q = x;
                        break;
                    }
                for (int level : kLevels) {
                    scan_force(level);
                    const char *q = nullptr;
                    assert_ptr_equal(weir::http1::scan_target_query(b, e, &q), want_end);
                    assert_ptr_equal(q, want_q);
                }
            }
        }
    }
    scan_force(weir::http1::kScanAuto);
}

// The parser's inline vector blocks (field names, values, the target and its
// '?') against the scalar level: every byte value at positions around the
// 8-, 16- and 32-byte steps, the answer and every view compared.
static void test_scan_parser_blocks_match_scalar(void **) {
    const size_t positions[] = {0, 1, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 39};
    const weir_http1_limits lim = defaults();
    for (int c = 0; c < 256; c++) {
        for (size_t k : positions) {
            std::string name(40, 'n'), value(40, 'v'), target = "/" + std::string(39, 't');
            name[k] = static_cast<char>(c);
            value[k] = static_cast<char>(c);
            target[k] = static_cast<char>(c);
            const std::string reqs[] = {
                "GET / HTTP/1.1\r\nHost: a\r\n" + name + ": v\r\n\r\n",
                "GET / HTTP/1.1\r\nHost: a\r\nX: " + value + "\r\n\r\n",
                "GET " + target + " HTTP/1.1\r\nHost: a\r\n\r\n",
                "GET / HTTP/1.1\r\nHost: a\r\n" + name.substr(0, k + 1), // ends inside the name
                "GET / HTTP/1.1\r\nHost: a\r\nX: " + value.substr(0, k + 1),
            };
            for (const std::string &in : reqs) {
                scan_force(weir::http1::kScanScalar);
                const Result want = parser_fuzz::run(in.data(), in.size(), lim);
                for (int level : kLevels) {
                    scan_force(level);
                    const Result got = parser_fuzz::run(in.data(), in.size(), lim);
                    if (!parser_fuzz::same(got, want)) {
                        print_error("byte 0x%02x at %zu, level %d: %d, scalar %d\n", c, k, level, got.rc, want.rc);
                        scan_force(weir::http1::kScanAuto);
                        fail();
                    }
                }
            }
        }
    }
    // The one-load line: every name length around 16 with a colon, a space
    // or a bad byte where the name ends, and a bad value byte at each place.
    const char ends[] = {':', ' ', '\t', '(', '\x80', '\r', '\n'};
    const char bad[] = {'\0', '\x01', '\t', '\n', '\r', '\x7f', '\x80', ' '};
    for (size_t nl = 0; nl <= 17; nl++) {
        for (char end : ends) {
            for (char b : bad) {
                for (size_t j = 0; j <= 20; j++) {
                    std::string value(20, 'v');
                    if (j < value.size())
                        value[j] = b;
                    const std::string in =
                        "GET / HTTP/1.1\r\nHost: a\r\n" + std::string(nl, 'n') + end + value + "\r\n\r\n";
                    for (size_t cut : {in.size(), in.size() - 3, in.size() - 20}) {
                        scan_force(weir::http1::kScanScalar);
                        const Result want = parser_fuzz::run(in.data(), cut, lim);
                        for (int level : kLevels) {
                            scan_force(level);
                            if (!parser_fuzz::same(parser_fuzz::run(in.data(), cut, lim), want)) {
                                print_error("name %zu end 0x%02x bad 0x%02x at %zu cut %zu, level %d\n", nl,
                                            static_cast<unsigned char>(end), static_cast<unsigned char>(b), j, cut,
                                            level);
                                scan_force(weir::http1::kScanAuto);
                                fail();
                            }
                        }
                    }
                }
            }
        }
    }
    scan_force(weir::http1::kScanAuto);
}

// Places s so its last byte is the last one before a PROT_NONE page.
struct Guarded {
    size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    size_t pages = 4;
    char *base = nullptr;
    Guarded() {
        void *m = mmap(nullptr, page * (pages + 1), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        assert_true(m != MAP_FAILED);
        base = static_cast<char *>(m);
        assert_int_equal(mprotect(base + page * pages, page, PROT_NONE), 0);
    }
    ~Guarded() { munmap(base, page * (pages + 1)); }
    char *place(const std::string &s, size_t n) {
        assert_true(n <= page * pages);
        char *p = base + page * pages - n;
        memcpy(p, s.data(), n);
        return p;
    }
};

static void test_scan_guard_page_every_prefix(void **) {
    Guarded g;
    const std::string cases[] = {
        "GET /" + std::string(100, 'a') + "?q=" + std::string(50, 'b') + " HTTP/1.1\r\nHost: example.com\r\n"
        "User-Agent: " + std::string(90, 'u') + "\r\nX-Obs: \xe6\x97\xa5\xe6\x9c\xac\r\n\r\n",
        "POST http://h:1/x HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nX: " + std::string(70, 'v') + "\x01\r\n\r\n",
        "GET /" + std::string(70, 't') + "\x80 HTTP/1.1\r\n",
    };
    for (const std::string &s : cases) {
        for (int level : kLevels) {
            scan_force(level);
            weir_header_t h[16];
            weir_http1_request whole{};
            whole.size = sizeof whole;
            int want = weir_http1_parse_request(g.place(s, s.size()), s.size(), nullptr, &whole, h, 16);
            assert_true(want != WEIR_E_INCOMPLETE);
            for (size_t k = 0; k <= s.size(); k++) {
                weir_http1_request req{};
                req.size = sizeof req;
                int rc = weir_http1_parse_request(g.place(s, k), k, nullptr, &req, h, 16);
                assert_true(rc == WEIR_E_INCOMPLETE || rc == want);
                if (k < s.size() && rc > 0)
                    assert_int_equal(rc, want);
            }
        }
    }
    scan_force(weir::http1::kScanAuto);
}

static void test_scan_guard_page_chunked(void **) {
    Guarded g;
    const std::string raw = "5;a=\"b\"\r\nhello\r\n1a\r\n" + std::string(26, 'z') + "\r\n0\r\nT: v\r\n\r\n";
    for (size_t k = 0; k <= raw.size(); k++) {
        weir_http1_chunked d;
        d.size = sizeof d;
        weir_http1_chunked_init(&d, nullptr);
        char *in = g.place(raw, k);
        size_t used, olen;
        int rc = weir_http1_chunked_decode(&d, in, k, &used, in, &olen); // in place, at the guard
        assert_int_equal(rc, k == raw.size() ? 0 : WEIR_E_INCOMPLETE);
        assert_int_equal(used, k);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_levels_pin_and_fall_back),
        cmocka_unit_test(test_scan_vector_matches_scalar),
        cmocka_unit_test(test_scan_target_query_matches_scalar),
        cmocka_unit_test(test_scan_parser_blocks_match_scalar),
        cmocka_unit_test(test_scan_guard_page_every_prefix),
        cmocka_unit_test(test_scan_guard_page_chunked),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
