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
        cmocka_unit_test(test_scan_guard_page_every_prefix),
        cmocka_unit_test(test_scan_guard_page_chunked),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
