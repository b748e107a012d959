// The decision of a file answer (lib/files/file_answer.cc) against every
// conditional and range case of RFC 9110 §13-14: each precondition alone,
// their order of evaluation (13.2.2), the ones that must be ignored, and
// Range with If-Range. The negative arms are the pairs where one field
// changes the answer: a decision that ignored that field would give the
// other pair's status.
#include <initializer_list>
#include <string>
#include <vector>

#include "cmocka_cxx.h"
#include "files/file_answer.h"
#include "files/http_date.h"

using namespace weir::files;

namespace {

constexpr int64_t kMtime = 1600000000; // Sun, 13 Sep 2020 12:26:40 GMT
constexpr int64_t kNow = 1700000000;
const char *kLm = "Sun, 13 Sep 2020 12:26:40 GMT";
const char *kBefore = "Sun, 13 Sep 2020 12:26:39 GMT";
const char *kAfter = "Sun, 13 Sep 2020 12:26:41 GMT";
const char *kLmRfc850 = "Sunday, 13-Sep-20 12:26:40 GMT";
const char *kLmAsctime = "Sun Sep 13 12:26:40 2020";

FileFacts facts(uint64_t size = 1000) {
    FileFacts f;
    f.size = size;
    f.mtime_sec = kMtime;
    f.mtime_nsec = 123;
    f.now = kNow;
    return f;
}

std::string etag_of(const FileFacts &f) {
    char b[kEtagMax];
    return std::string(b, format_etag(f.size, f.mtime_sec, f.mtime_nsec, b));
}

using Fields = std::initializer_list<std::pair<const char *, std::string>>;

FileDecision decide(const char *method, Fields fields, const FileFacts &f = facts()) {
    static std::vector<std::string> keep; // the views must outlive the call
    keep.clear();
    std::vector<weir_header_t> h;
    keep.reserve(fields.size() * 2);
    for (const auto &[n, v] : fields) {
        keep.push_back(n);
        const std::string &name = keep.back();
        keep.push_back(v);
        const std::string &value = keep.back();
        h.push_back({{name.data(), name.size()}, {value.data(), value.size()}});
    }
    return decide_file(method, h.data(), h.size(), f);
}

int status(const char *method, Fields fields, const FileFacts &f = facts()) {
    return decide(method, fields, f).status;
}

std::string E() { return etag_of(facts()); }
std::string W() { return "W/" + etag_of(facts()); }

void test_file_answer_plain(void **) {
    FileDecision d = decide("GET", {});
    assert_int_equal(d.status, 200);
    assert_false(d.head);
    assert_int_equal(d.offset, 0);
    assert_int_equal(d.length, 1000);
    assert_int_equal(d.last_modified, kMtime);
    assert_string_equal(std::string(d.etag, d.etag_len).c_str(), "\"5f5e1000.7b-3e8\"");
    d = decide("HEAD", {});
    assert_int_equal(d.status, 200);
    assert_true(d.head);
    assert_int_equal(d.length, 1000);
    // Methods: GET and HEAD only (case-sensitive, RFC 9110 9.1).
    for (const char *m : {"POST", "PUT", "DELETE", "OPTIONS", "get", "head", "PATCH"})
        assert_int_equal(status(m, {}), 405);
    // 405 before any precondition: they apply only to a 2xx answer (13.2.1).
    assert_int_equal(status("POST", {{"If-Match", "\"nope\""}}), 405);
}

// 8.8.2.1: an mtime in the future is sent (and compared) as now.
void test_file_answer_future_mtime(void **) {
    FileFacts f = facts();
    f.mtime_sec = kNow + 3600;
    FileDecision d = decide("GET", {}, f);
    assert_int_equal(d.last_modified, kNow);
    char now[kImfFixdateLen];
    format_imf_fixdate(kNow, now);
    assert_int_equal(status("GET", {{"If-Modified-Since", std::string(now, sizeof now)}}, f), 304);
    // An If-Modified-Since in the future is taken as it comes.
    assert_int_equal(status("GET", {{"If-Modified-Since", "Fri, 01 Jan 2100 00:00:00 GMT"}}), 304);
}

void test_file_answer_if_match(void **) {
    assert_int_equal(status("GET", {{"If-Match", E()}}), 200);
    assert_int_equal(status("GET", {{"If-Match", "*"}}), 200);
    assert_int_equal(status("GET", {{"If-Match", "\"a\", " + E()}}), 200);
    assert_int_equal(status("GET", {{"If-Match", "\"a\""}, {"if-match", E()}}), 200); // two lines, one list
    assert_int_equal(status("GET", {{"If-Match", "\"a\""}}), 412);
    assert_int_equal(status("GET", {{"If-Match", W()}}), 412); // strong comparison
    assert_int_equal(status("GET", {{"If-Match", "garbage"}}), 412);
    assert_int_equal(status("GET", {{"If-Match", ""}}), 412);
    assert_int_equal(status("HEAD", {{"IF-MATCH", "\"a\""}}), 412);
    assert_int_equal(status("GET", {{"If-Match", E()}, {"If-Match", "garbage"}}), 412);
}

void test_file_answer_if_unmodified_since(void **) {
    assert_int_equal(status("GET", {{"If-Unmodified-Since", kLm}}), 200);
    assert_int_equal(status("GET", {{"If-Unmodified-Since", kAfter}}), 200);
    assert_int_equal(status("GET", {{"If-Unmodified-Since", kBefore}}), 412);
    assert_int_equal(status("GET", {{"If-Unmodified-Since", kLmRfc850}}), 200);
    assert_int_equal(status("GET", {{"If-Unmodified-Since", "Sunday, 13-Sep-20 12:26:39 GMT"}}), 412);
    assert_int_equal(status("GET", {{"If-Unmodified-Since", "Sun Sep 13 12:26:39 2020"}}), 412);
    // Not a valid date, a list of dates, the field twice: ignored (13.1.4).
    assert_int_equal(status("GET", {{"If-Unmodified-Since", "yesterday"}}), 200);
    assert_int_equal(status("GET", {{"If-Unmodified-Since", std::string(kBefore) + ", " + kBefore}}), 200);
    assert_int_equal(status("GET", {{"If-Unmodified-Since", kBefore}, {"If-Unmodified-Since", kBefore}}), 200);
    // With If-Match, If-Unmodified-Since is not evaluated (13.2.2 step 2).
    assert_int_equal(status("GET", {{"If-Match", E()}, {"If-Unmodified-Since", kBefore}}), 200);
    assert_int_equal(status("GET", {{"If-Match", "\"a\""}, {"If-Unmodified-Since", kAfter}}), 412);
}

void test_file_answer_if_none_match(void **) {
    assert_int_equal(status("GET", {{"If-None-Match", E()}}), 304);
    assert_int_equal(status("HEAD", {{"If-None-Match", E()}}), 304);
    assert_int_equal(status("GET", {{"If-None-Match", W()}}), 304); // weak comparison
    assert_int_equal(status("GET", {{"If-None-Match", "*"}}), 304);
    assert_int_equal(status("GET", {{"If-None-Match", "\"a\", \"b\", " + E()}}), 304);
    assert_int_equal(status("GET", {{"If-None-Match", "\"a\""}, {"If-None-Match", E()}}), 304);
    assert_int_equal(status("GET", {{"If-None-Match", "\"a\", \"b\""}}), 200);
    // Another nanosecond is another version.
    FileFacts f = facts();
    f.mtime_nsec = 124;
    assert_int_equal(status("GET", {{"If-None-Match", E()}}, f), 200);
    f = facts(1001); // another size
    assert_int_equal(status("GET", {{"If-None-Match", E()}}, f), 200);
    // Malformed: ignored, the whole answer.
    assert_int_equal(status("GET", {{"If-None-Match", "garbage"}}), 200);
    assert_int_equal(status("GET", {{"If-None-Match", E() + " x"}}), 200);
    // 304 keeps the validators the decision made.
    FileDecision d = decide("GET", {{"If-None-Match", E()}});
    assert_string_equal(std::string(d.etag, d.etag_len).c_str(), E().c_str());
    assert_int_equal(d.last_modified, kMtime);
}

void test_file_answer_if_modified_since(void **) {
    assert_int_equal(status("GET", {{"If-Modified-Since", kLm}}), 304);
    assert_int_equal(status("GET", {{"If-Modified-Since", kAfter}}), 304);
    assert_int_equal(status("HEAD", {{"If-Modified-Since", kLm}}), 304);
    assert_int_equal(status("GET", {{"If-Modified-Since", kBefore}}), 200);
    assert_int_equal(status("GET", {{"If-Modified-Since", kLmRfc850}}), 304);
    assert_int_equal(status("GET", {{"If-Modified-Since", kLmAsctime}}), 304);
    assert_int_equal(status("GET", {{"if-modified-since", kLm}}), 304);
    // Ignored: not a date, more than one member, the field twice (13.1.3).
    assert_int_equal(status("GET", {{"If-Modified-Since", "Sun, 13 Sep 2020 12:26:40 UTC"}}), 200);
    assert_int_equal(status("GET", {{"If-Modified-Since", std::string(kLm) + ", " + kLm}}), 200);
    assert_int_equal(status("GET", {{"If-Modified-Since", kLm}, {"If-Modified-Since", kLm}}), 200);
}

// 13.2.2: the order, pair by pair.
void test_file_answer_order(void **) {
    // If-None-Match present: If-Modified-Since is not evaluated (either way).
    assert_int_equal(status("GET", {{"If-None-Match", "\"a\""}, {"If-Modified-Since", kLm}}), 200);
    assert_int_equal(status("GET", {{"If-None-Match", E()}, {"If-Modified-Since", kBefore}}), 304);
    // A failing If-Match wins over a matching If-None-Match (412 before 304).
    assert_int_equal(status("GET", {{"If-None-Match", E()}, {"If-Match", "\"a\""}}), 412);
    assert_int_equal(status("GET", {{"If-Modified-Since", kLm}, {"If-Unmodified-Since", kBefore}}), 412);
    // Both hold: the 304.
    assert_int_equal(status("GET", {{"If-Match", E()}, {"If-None-Match", E()}}), 304);
    assert_int_equal(status("GET", {{"If-Unmodified-Since", kLm}, {"If-Modified-Since", kLm}}), 304);
    // Conditions before Range: a 304 wins over a range, a 412 too.
    assert_int_equal(status("GET", {{"Range", "bytes=0-1"}, {"If-None-Match", E()}}), 304);
    assert_int_equal(status("GET", {{"Range", "bytes=0-1"}, {"If-Match", "\"a\""}}), 412);
    assert_int_equal(status("GET", {{"Range", "bytes=5000-"}, {"If-Modified-Since", kLm}}), 304);
    assert_int_equal(status("GET", {{"Range", "bytes=0-1"}, {"If-None-Match", "\"a\""}}), 206);
}

void test_file_answer_range(void **) {
    FileDecision d = decide("GET", {{"Range", "bytes=10-19"}});
    assert_int_equal(d.status, 206);
    assert_int_equal(d.offset, 10);
    assert_int_equal(d.length, 10);
    d = decide("GET", {{"range", "bytes=-100"}});
    assert_int_equal(d.status, 206);
    assert_int_equal(d.offset, 900);
    assert_int_equal(d.length, 100);
    d = decide("GET", {{"Range", "bytes=1000-"}});
    assert_int_equal(d.status, 416);
    assert_int_equal(d.length, 0);
    assert_int_equal(status("GET", {{"Range", "bytes=0-0"}}, facts(0)), 416);
    assert_int_equal(status("GET", {{"Range", "bytes=-5"}}, facts(0)), 416);
    assert_int_equal(status("GET", {}, facts(0)), 200);
    // Invalid or another unit: ignored, the whole file.
    d = decide("GET", {{"Range", "bytes=5-4"}});
    assert_int_equal(d.status, 200);
    assert_int_equal(d.length, 1000);
    assert_int_equal(status("GET", {{"Range", "pages=1-2"}}), 200);
    // Several: the whole file, said so.
    d = decide("GET", {{"Range", "bytes=0-1,5-6"}});
    assert_int_equal(d.status, 200);
    assert_true(d.multiple_ranges);
    assert_int_equal(d.length, 1000);
    // Two Range lines: not one range-set; ignored.
    assert_int_equal(status("GET", {{"Range", "bytes=0-1"}, {"Range", "bytes=0-1"}}), 200);
    // HEAD: Range is GET's (14.2).
    d = decide("HEAD", {{"Range", "bytes=0-1"}});
    assert_int_equal(d.status, 200);
    assert_int_equal(d.length, 1000);
    assert_int_equal(status("HEAD", {{"Range", "bytes=5000-"}}), 200);
    // WEIR_FILE_NO_RANGES.
    FileFacts f = facts();
    f.ranges = false;
    assert_int_equal(status("GET", {{"Range", "bytes=0-1"}}, f), 200);
    assert_int_equal(status("GET", {{"Range", "bytes=5000-"}}, f), 200);
    // Beyond 4 GiB.
    FileFacts big = facts((6ull << 30) + 1);
    d = decide("GET", {{"Range", "bytes=6442450944-"}}, big);
    assert_int_equal(d.status, 206);
    assert_int_equal(d.offset, 6ull << 30);
    assert_int_equal(d.length, 1);
    d = decide("GET", {}, big);
    assert_int_equal(d.length, (6ull << 30) + 1);
}

void test_file_answer_if_range(void **) {
    assert_int_equal(status("GET", {{"Range", "bytes=0-1"}, {"If-Range", E()}}), 206);
    assert_int_equal(status("GET", {{"Range", "bytes=0-1"}, {"If-Range", kLm}}), 206);
    assert_int_equal(status("GET", {{"Range", "bytes=0-1"}, {"If-Range", kLmRfc850}}), 206);
    // Not holding: the whole file (never a 412).
    assert_int_equal(status("GET", {{"Range", "bytes=0-1"}, {"If-Range", "\"a\""}}), 200);
    assert_int_equal(status("GET", {{"Range", "bytes=0-1"}, {"If-Range", W()}}), 200);  // weak: never
    assert_int_equal(status("GET", {{"Range", "bytes=0-1"}, {"If-Range", kAfter}}), 200); // exact date only
    assert_int_equal(status("GET", {{"Range", "bytes=0-1"}, {"If-Range", kBefore}}), 200);
    assert_int_equal(status("GET", {{"Range", "bytes=0-1"}, {"If-Range", "garbage"}}), 200);
    assert_int_equal(status("GET", {{"Range", "bytes=0-1"}, {"If-Range", E() + ", " + E()}}), 200);
    assert_int_equal(status("GET", {{"Range", "bytes=0-1"}, {"If-Range", E()}, {"If-Range", E()}}), 200);
    // A failing If-Range also lifts a 416: the whole file.
    assert_int_equal(status("GET", {{"Range", "bytes=5000-"}, {"If-Range", "\"a\""}}), 200);
    assert_int_equal(status("GET", {{"Range", "bytes=5000-"}, {"If-Range", E()}}), 416);
    // Without Range, If-Range is nothing.
    assert_int_equal(status("GET", {{"If-Range", "\"a\""}}), 200);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_answer_plain),
        cmocka_unit_test(test_file_answer_future_mtime),
        cmocka_unit_test(test_file_answer_if_match),
        cmocka_unit_test(test_file_answer_if_unmodified_since),
        cmocka_unit_test(test_file_answer_if_none_match),
        cmocka_unit_test(test_file_answer_if_modified_since),
        cmocka_unit_test(test_file_answer_order),
        cmocka_unit_test(test_file_answer_range),
        cmocka_unit_test(test_file_answer_if_range),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
