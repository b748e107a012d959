// Entity tags and byte ranges (lib/files/validators.cc): the ETag's form,
// If-Match/If-None-Match lists under the strong and the weak comparison
// (RFC 9110 8.8.3.2), and Range's grammar and satisfiability (14.1.1-2).
#include <string>

#include "cmocka_cxx.h"
#include "files/validators.h"

using namespace weir::files;

namespace {

const char *kTag = "\"1.2-3\"";

void test_validators_etag_form(void **) {
    char b[kEtagMax];
    size_t n = format_etag(0x400, 0x6581c3a2, 500000000, b);
    assert_string_equal(std::string(b, n).c_str(), "\"6581c3a2.1dcd6500-400\"");
    n = format_etag(0, 0, 0, b);
    assert_string_equal(std::string(b, n).c_str(), "\"0.0-0\"");
    // Every bit of each part shows: the longest fits kEtagMax.
    n = format_etag(UINT64_MAX, -1, 999999999, b);
    assert_string_equal(std::string(b, n).c_str(), "\"ffffffffffffffff.3b9ac9ff-ffffffffffffffff\"");
    assert_true(n <= kEtagMax);
    // Same size and second, another nanosecond: another tag (nginx's would not change).
    char c[kEtagMax];
    size_t m = format_etag(0x400, 0x6581c3a2, 500000001, c);
    assert_false(std::string(b, n) == std::string(c, m));
}

ListMatch strong(const char *v) { return match_etag_list(v, kTag, Compare::Strong); }
ListMatch weak(const char *v) { return match_etag_list(v, kTag, Compare::Weak); }

void test_validators_etag_lists(void **) {
    assert_true(strong("\"1.2-3\"") == ListMatch::Match);
    assert_true(weak("\"1.2-3\"") == ListMatch::Match);
    // W/ of our tag: the weak comparison matches, the strong one does not.
    assert_true(strong("W/\"1.2-3\"") == ListMatch::NoMatch);
    assert_true(weak("W/\"1.2-3\"") == ListMatch::Match);
    assert_true(strong("\"x\", \"1.2-3\"") == ListMatch::Match);
    assert_true(weak("\"x\",W/\"1.2-3\" , \"y\"") == ListMatch::Match);
    assert_true(strong("\"x\", \"y\"") == ListMatch::NoMatch);
    assert_true(strong("\"1.2-4\"") == ListMatch::NoMatch);
    assert_true(strong("\"1.2-3 \"") == ListMatch::Malformed); // SP is not etagc
    assert_true(strong("\"\"") == ListMatch::NoMatch);
    assert_true(strong("*") == ListMatch::Any);
    assert_true(weak("*") == ListMatch::Any);
    // Empty members are allowed in a #list.
    assert_true(strong(", ,\"1.2-3\",") == ListMatch::Match);
    // Not the grammar.
    for (const char *m : {"", " , ", "1.2-3", "\"1.2-3", "\"1.2-3\" \"x\"", "w/\"1.2-3\"", "W/ \"1.2-3\"",
                          "\"a\"b", "\"a b\"", "\"a\"\"b\"", "**"}) {
        if (strong(m) != ListMatch::Malformed)
            fail_msg("\"%s\" read as a list", m);
    }
    assert_true(match_combine(ListMatch::NoMatch, ListMatch::Match) == ListMatch::Match);
    assert_true(match_combine(ListMatch::Any, ListMatch::NoMatch) == ListMatch::Any);
    assert_true(match_combine(ListMatch::Match, ListMatch::Malformed) == ListMatch::Malformed);
    assert_true(match_combine(ListMatch::NoMatch, ListMatch::NoMatch) == ListMatch::NoMatch);
    // If-Range: one strong tag, equal.
    assert_true(etag_strong_equal("\"1.2-3\"", kTag));
    assert_false(etag_strong_equal("W/\"1.2-3\"", kTag));
    assert_false(etag_strong_equal("\"1.2-3\", \"1.2-3\"", kTag));
    assert_false(etag_strong_equal("\"1.2-4\"", kTag));
    assert_false(etag_strong_equal("*", kTag));
}

void range_is(const char *v, uint64_t size, RangeKind kind, uint64_t first = 0, uint64_t length = 0) {
    RangeResult r = parse_range(v, size);
    if (r.kind != kind || r.first != first || r.length != length)
        fail_msg("Range \"%s\" on %llu bytes: kind %d [%llu +%llu], want %d [%llu +%llu]", v,
                 (unsigned long long)size, (int)r.kind, (unsigned long long)r.first, (unsigned long long)r.length,
                 (int)kind, (unsigned long long)first, (unsigned long long)length);
}

void test_validators_range_single(void **) {
    range_is("bytes=0-0", 10, RangeKind::Single, 0, 1);
    range_is("bytes=0-9", 10, RangeKind::Single, 0, 10);
    range_is("bytes=2-5", 10, RangeKind::Single, 2, 4);
    range_is("bytes=5-", 10, RangeKind::Single, 5, 5);
    range_is("bytes=9-", 10, RangeKind::Single, 9, 1);
    range_is("bytes=5-100", 10, RangeKind::Single, 5, 5); // last-pos past the end: to the end
    range_is("bytes=-3", 10, RangeKind::Single, 7, 3);
    range_is("bytes=-10", 10, RangeKind::Single, 0, 10);
    range_is("bytes=-100", 10, RangeKind::Single, 0, 10); // longer than the file: all of it
    range_is("BYTES=1-1", 10, RangeKind::Single, 1, 1);   // the unit is case-insensitive
    range_is("Bytes=1-1", 10, RangeKind::Single, 1, 1);
    range_is("bytes= 1-2 ", 10, RangeKind::Single, 1, 2);
    range_is("bytes=, 1-2,", 10, RangeKind::Single, 1, 2);
    // Beyond 4 GiB: 64-bit offsets.
    const uint64_t big = (5ull << 30) + 7;
    range_is("bytes=4294967296-4294967299", big, RangeKind::Single, 1ull << 32, 4);
    range_is("bytes=-4294967297", big, RangeKind::Single, big - 4294967297ull, 4294967297ull);
    range_is("bytes=5368709120-", big, RangeKind::Single, 5ull << 30, 7);
    // Overflowing numbers saturate.
    range_is("bytes=0-99999999999999999999999999", 10, RangeKind::Single, 0, 10);
    range_is("bytes=-99999999999999999999999999", 10, RangeKind::Single, 0, 10);
    range_is("bytes=18446744073709551615-18446744073709551615", 10, RangeKind::Unsatisfiable);
    range_is("bytes=99999999999999999999999999-", 10, RangeKind::Unsatisfiable);
    range_is("bytes=99999999999999999999999999-99999999999999999999999999", UINT64_MAX, RangeKind::Unsatisfiable);
    range_is("bytes=0-", UINT64_MAX, RangeKind::Single, 0, UINT64_MAX);
}

void test_validators_range_unsatisfiable(void **) {
    range_is("bytes=10-", 10, RangeKind::Unsatisfiable);
    range_is("bytes=10-20", 10, RangeKind::Unsatisfiable);
    range_is("bytes=-0", 10, RangeKind::Unsatisfiable);
    range_is("bytes=10-, 20-30, -0", 10, RangeKind::Unsatisfiable);
    // An empty file has no byte to give: every range is unsatisfiable.
    range_is("bytes=0-", 0, RangeKind::Unsatisfiable);
    range_is("bytes=0-0", 0, RangeKind::Unsatisfiable);
    range_is("bytes=-1", 0, RangeKind::Unsatisfiable);
}

void test_validators_range_multiple(void **) {
    range_is("bytes=0-1,3-4", 10, RangeKind::Multiple);
    range_is("bytes=0-1, -2", 10, RangeKind::Multiple);
    range_is("bytes=0-1,0-1", 10, RangeKind::Multiple);
    // One satisfiable among unsatisfiable ones: that one (never multipart
    // for a single part, RFC 9110 15.3.7.2).
    range_is("bytes=50-60, 2-3, -0", 10, RangeKind::Single, 2, 2);
}

void test_validators_range_ignored(void **) {
    for (const char *v : {"", "bytes", "bytes=", "bytes=,", "bytes = 0-1", "bytes =0-1", "items=0-1", "0-1",
                          "bytes=a-b", "bytes=1", "bytes=-", "bytes=--1", "bytes=1-2-3", "bytes=5-4",
                          "bytes=0-1, 5-4", "bytes=0-1;2-3", "bytes=0-1 2-3", "bytes=-1-2", "bytes=+1-2",
                          "bytes=0x1-2", "bytes=1-+2", "bytes=1 -2", "bytes=0-1,bytes=2-3"}) {
        range_is(v, 10, RangeKind::Ignored);
    }
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validators_etag_form),          cmocka_unit_test(test_validators_etag_lists),
        cmocka_unit_test(test_validators_range_single),       cmocka_unit_test(test_validators_range_unsatisfiable),
        cmocka_unit_test(test_validators_range_multiple),     cmocka_unit_test(test_validators_range_ignored),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
