// weir_serve_file over real sockets (capi/files.cc, lib/files/): statuses,
// fields and exact bytes of 200, 206, 304, 412, 416 and 405 answers, HEAD,
// keep-alive after each bodiless answer, an empty file, a sparse file past
// 4 GiB, a large file and a range of it sent from the file
// (LoopHooks::file_range_sends), and the answer given from another thread
// after weir_defer.
// The negative arm: the same conditional checks against /plain/, which
// answers as weir-demo did before weir_serve_file (weir_respond_file, 200
// and the whole file whatever the request says, like a helper that ignores
// If-None-Match and Range): they must fail there, so a helper that lost a
// rule would fail them too.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "loop/hooks.h"
#include "support/net.h"

using namespace testnet;

namespace {

constexpr size_t kSmall = 1000;
constexpr size_t kBig = 8u << 20;
constexpr uint64_t kHuge = (5ull << 30) + 100; // sparse
constexpr uint64_t kMarkAt = 5ull << 30;        // "far-marker" written here
std::string g_dir, g_small, g_big;
std::mutex g_mu;
std::vector<std::thread> g_threads;
std::atomic<int> g_thread_failures{0}; // cmocka's asserts belong to the test's thread

std::string pattern(size_t n, int seed) {
    std::string s(n, 0);
    for (size_t i = 0; i < n; i++)
        s[i] = static_cast<char>('a' + (i * 7 + i / 251 + seed) % 26);
    return s;
}

void put(const std::string &name, const std::string &bytes) {
    int fd = ::open((g_dir + "/" + name).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    ::close(fd);
}

int setup(void **) {
    char tmpl[] = "/tmp/weir-serve-XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    g_dir = tmpl;
    g_small = pattern(kSmall, 1);
    g_big = pattern(kBig, 2);
    put("small.txt", g_small);
    put("big.bin", g_big);
    put("empty", "");
    int fd = ::open((g_dir + "/huge").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(::ftruncate(fd, static_cast<off_t>(kHuge)), 0);
    assert_int_equal(::pwrite(fd, "far-marker", 10, static_cast<off_t>(kMarkAt)), 10);
    ::close(fd);
    weir::loop_hooks().file_range_sends = 0;
    return 0;
}

int teardown(void **) {
    for (const char *n : {"small.txt", "big.bin", "empty", "huge"})
        ::unlink((g_dir + "/" + n).c_str());
    ::rmdir(g_dir.c_str());
    return 0;
}

const weir_header_t kCache = {{"Cache-Control", 13}, {"max-age=60", 10}};

int serve(weir_exchange *ex, const std::string &name) {
    int fd = ::open((g_dir + "/" + name).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return answer(ex, 404, "none");
    weir_file_options o;
    weir_file_options_init(&o);
    o.content_type = weir_content_type(name.data(), name.size());
    o.headers = &kCache;
    o.num_headers = 1;
    int rc = weir_serve_file(ex, fd, &o);
    ::close(fd); // weir sends through its own dup
    return rc;
}

void handler(void *, weir_exchange *ex) {
    std::string path = str(weir_exchange_request(ex)->path);
    if (path.rfind("/f/", 0) == 0) {
        assert_true(serve(ex, path.substr(3)) > 0);
    } else if (path.rfind("/t/", 0) == 0) { // answered from another thread
        assert_int_equal(weir_defer(ex), 0);
        std::lock_guard<std::mutex> l(g_mu);
        g_threads.emplace_back([ex, name = path.substr(3)] {
            if (serve(ex, name) <= 0)
                g_thread_failures++;
        });
    } else if (path.rfind("/plain/", 0) == 0) { // the negative arm: no validators
        int fd = ::open((g_dir + "/" + path.substr(7)).c_str(), O_RDONLY | O_CLOEXEC);
        struct stat st;
        assert_int_equal(::fstat(fd, &st), 0);
        assert_int_equal(weir_respond_file(ex, 200, nullptr, 0, fd, 0, static_cast<uint64_t>(st.st_size), 0), 0);
        ::close(fd);
    } else {
        answer(ex, 404, "none");
    }
}

void join_threads() {
    std::lock_guard<std::mutex> l(g_mu);
    for (auto &t : g_threads)
        t.join();
    g_threads.clear();
}

std::string req(const char *method, const std::string &path, const std::string &extra = "") {
    return std::string(method) + " " + path + " HTTP/1.1\r\nHost: t\r\n" + extra + "\r\n";
}

// A HEAD answer's head alone (its Content-Length announces a body that never comes).
Response read_head(Client &c) {
    int64_t until = now_ms() + bound_ms(5000);
    while (c.buf.find("\r\n\r\n") == std::string::npos && now_ms() < until) {
        if (!read_some(c))
            return Response{};
        sleep_ms(1);
    }
    size_t end = c.buf.find("\r\n\r\n");
    if (end == std::string::npos)
        return Response{};
    Response r;
    r.head = c.buf.substr(0, end + 4);
    c.buf.erase(0, end + 4);
    r.status = std::atoi(r.head.c_str() + 9);
    return r;
}

// One exchange on a connection of its own, then one more GET on it: every
// answer, bodiless or not, must leave the connection framed right.
Response exchange(uint16_t port, const char *method, const std::string &path, const std::string &extra = "") {
    Client c = connect_to(port);
    assert_true(send_all(c, req(method, path, extra) + get("/none")));
    Response r = std::string(method) == "HEAD" ? read_head(c) : read_response(c, bound_ms(20000));
    Response after = read_response(c);
    if (after.status != 404 || after.body != "none")
        fail_msg("%s %s: the next answer on the connection is garbled", method, path.c_str());
    return r;
}

bool has(const Response &r, const char *name) { return r.head.find(std::string("\r\n") + name + ":") != std::string::npos; }

// The conditional and range checks, as a list of what failed (empty: all
// held). Run against weir_serve_file (must hold) and /plain/ (must not).
std::vector<std::string> conditionals(uint16_t port, const std::string &prefix) {
    std::vector<std::string> bad;
    auto want = [&](bool ok, const char *what) {
        if (!ok)
            bad.push_back(what);
    };
    const std::string f = prefix + "small.txt";
    Response r = exchange(port, "GET", f);
    std::string etag = r.header("ETag"), lm = r.header("Last-Modified");
    want(r.status == 200 && r.body == g_small, "GET: 200 and the bytes");
    want(etag.size() > 2 && etag.front() == '"' && etag.back() == '"', "GET: a strong ETag");
    want(lm.size() == 29 && lm.compare(26, 3, "GMT") == 0, "GET: Last-Modified");
    want(r.header("Accept-Ranges") == "bytes", "GET: Accept-Ranges");
    want(r.header("Content-Type") == "text/plain; charset=utf-8", "GET: Content-Type by extension");
    want(r.header("Cache-Control") == "max-age=60", "GET: the host's fields");

    r = exchange(port, "GET", f, "If-None-Match: \"x\", " + etag + "\r\n");
    want(r.status == 304 && r.body.empty(), "If-None-Match: 304");
    want(r.header("ETag") == etag && r.header("Last-Modified") == lm, "304: ETag and Last-Modified");
    want(!has(r, "Content-Type") && !has(r, "Content-Length"), "304: no body fields");
    want(r.header("Cache-Control") == "max-age=60", "304: the host's fields");
    r = exchange(port, "GET", f, "If-None-Match: W/" + etag + "\r\n");
    want(r.status == 304, "If-None-Match weak: 304");
    r = exchange(port, "GET", f, "If-None-Match: \"other\"\r\nIf-Modified-Since: " + lm + "\r\n");
    want(r.status == 200 && r.body == g_small, "If-None-Match other (If-Modified-Since not read): 200");
    r = exchange(port, "GET", f, "If-Modified-Since: " + lm + "\r\n");
    want(r.status == 304 && r.body.empty(), "If-Modified-Since: 304");
    r = exchange(port, "HEAD", f, "If-Modified-Since: " + lm + "\r\n");
    want(r.status == 304, "HEAD If-Modified-Since: 304");
    r = exchange(port, "GET", f, "If-Modified-Since: Thu, 01 Jan 1970 00:00:00 GMT\r\n");
    want(r.status == 200 && r.body == g_small, "If-Modified-Since old: 200");

    r = exchange(port, "GET", f, "If-Match: \"x\"\r\n");
    want(r.status == 412, "If-Match other: 412");
    r = exchange(port, "GET", f, "If-Match: " + etag + "\r\n");
    want(r.status == 200 && r.body == g_small, "If-Match: 200");
    r = exchange(port, "GET", f, "If-Unmodified-Since: Thu, 01 Jan 1970 00:00:00 GMT\r\n");
    want(r.status == 412, "If-Unmodified-Since old: 412");

    r = exchange(port, "GET", f, "Range: bytes=10-19\r\n");
    want(r.status == 206 && r.body == g_small.substr(10, 10), "Range: 206 and the bytes");
    want(r.header("Content-Range") == "bytes 10-19/1000" && r.header("Content-Length") == "10",
         "206: Content-Range and Content-Length");
    want(r.header("ETag") == etag && r.header("Content-Type") == "text/plain; charset=utf-8", "206: the fields");
    r = exchange(port, "GET", f, "Range: bytes=-5\r\n");
    want(r.status == 206 && r.body == g_small.substr(995) && r.header("Content-Range") == "bytes 995-999/1000",
         "suffix Range: 206");
    r = exchange(port, "GET", f, "Range: bytes=990-\r\n");
    want(r.status == 206 && r.body == g_small.substr(990), "open Range: 206");
    r = exchange(port, "GET", f, "Range: bytes=1000-\r\n");
    want(r.status == 416 && r.header("Content-Range") == "bytes */1000", "Range past the end: 416");
    r = exchange(port, "GET", f, "Range: bytes=0-1\r\nIf-Range: " + etag + "\r\n");
    want(r.status == 206 && r.body == g_small.substr(0, 2), "If-Range matching: 206");
    r = exchange(port, "GET", f, "Range: bytes=0-1\r\nIf-Range: " + lm + "\r\n");
    want(r.status == 206 && r.body == g_small.substr(0, 2), "If-Range date: 206");
    r = exchange(port, "GET", f, "Range: bytes=0-1\r\nIf-Range: \"old\"\r\n");
    want(r.status == 200 && r.body == g_small, "If-Range other: 200");
    r = exchange(port, "GET", f, "Range: bytes=0-1,5-6\r\n");
    want(r.status == 200 && r.body == g_small, "several ranges: 200 and the whole file");
    r = exchange(port, "GET", f, "Range: bytes=5-4\r\n");
    want(r.status == 200 && r.body == g_small, "invalid Range: ignored");

    r = exchange(port, "HEAD", f);
    want(r.status == 200 && r.header("Content-Length") == "1000" && r.header("ETag") == etag, "HEAD: 200");
    r = exchange(port, "HEAD", f, "Range: bytes=0-1\r\n");
    want(r.status == 200 && r.header("Content-Length") == "1000", "HEAD with Range: 200");
    r = exchange(port, "POST", f, "Content-Length: 0\r\n");
    want(r.status == 405 && r.header("Allow") == "GET, HEAD", "POST: 405 with Allow");

    r = exchange(port, "GET", prefix + "empty");
    want(r.status == 200 && r.body.empty() && r.header("Content-Length") == "0", "empty: 200");
    r = exchange(port, "GET", prefix + "empty", "Range: bytes=0-\r\n");
    want(r.status == 416 && r.header("Content-Range") == "bytes */0", "empty with Range: 416");
    return bad;
}

void check_all_hold(uint16_t port, const std::string &prefix) {
    std::vector<std::string> bad = conditionals(port, prefix);
    for (const std::string &b : bad)
        print_error("%s%s: failed\n", prefix.c_str(), b.c_str());
    assert_int_equal(bad.size(), 0);
}

void test_serve_file_conditionals(void **) {
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_INLINE, handler, nullptr)), 0);
    check_all_hold(s.port, "/f/");
}

// Answered from another thread after weir_defer: the posted paths of
// weir_respond_file and weir_respond give the same answers.
void test_serve_file_from_another_thread(void **) {
    Server s;
    assert_int_equal(s.start(config(2, WEIR_MODE_INLINE, handler, nullptr)), 0);
    check_all_hold(s.port, "/t/");
    join_threads();
    assert_int_equal(g_thread_failures.load(), 0);
}

// The negative arm: a file answer without validators fails the checks
// that need them (304, 412, 206, 416, 405), so the checks do check.
void test_serve_file_checks_catch_a_plain_answer(void **) {
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_INLINE, handler, nullptr)), 0);
    std::vector<std::string> bad = conditionals(s.port, "/plain/");
    auto failed = [&](const char *what) {
        for (const std::string &b : bad)
            if (b == what)
                return true;
        return false;
    };
    assert_true(failed("If-None-Match: 304"));
    assert_true(failed("If-Modified-Since: 304"));
    assert_true(failed("If-Match other: 412"));
    assert_true(failed("Range: 206 and the bytes"));
    assert_true(failed("Range past the end: 416"));
    assert_true(failed("POST: 405 with Allow"));
    assert_true(failed("GET: a strong ETag"));
}

// A large file and a range of it leave from the file (sendfile/splice),
// not copied; a sparse file's bytes past 4 GiB, by a 64-bit range.
void test_serve_file_large_and_far(void **) {
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_INLINE, handler, nullptr)), 0);
    uint64_t before = weir::loop_hooks().file_range_sends.load();
    Response r = exchange(s.port, "GET", "/f/big.bin");
    assert_int_equal(r.status, 200);
    assert_true(r.body == g_big);
    assert_string_equal(r.header("Content-Type").c_str(), "application/octet-stream");
    uint64_t after_whole = weir::loop_hooks().file_range_sends.load();
    assert_true(after_whole > before);
    r = exchange(s.port, "GET", "/f/big.bin", "Range: bytes=4097-3149824\r\n");
    assert_int_equal(r.status, 206);
    assert_true(r.body == g_big.substr(4097, 3149824 - 4097 + 1));
    assert_string_equal(r.header("Content-Range").c_str(), "bytes 4097-3149824/8388608");
    assert_true(weir::loop_hooks().file_range_sends.load() > after_whole);

    r = exchange(s.port, "GET", "/f/huge", "Range: bytes=5368709120-5368709129\r\n");
    assert_int_equal(r.status, 206);
    assert_string_equal(r.body.c_str(), "far-marker");
    assert_string_equal(r.header("Content-Range").c_str(), "bytes 5368709120-5368709129/5368709220");
    r = exchange(s.port, "GET", "/f/huge", "Range: bytes=-100\r\n");
    assert_int_equal(r.status, 206);
    assert_true(r.body.size() == 100 && r.body.compare(0, 10, "far-marker") == 0);
    r = exchange(s.port, "HEAD", "/f/huge");
    assert_int_equal(r.status, 200);
    assert_string_equal(r.header("Content-Length").c_str(), "5368709220");
    r = exchange(s.port, "GET", "/f/huge", "Range: bytes=5368709220-\r\n");
    assert_int_equal(r.status, 416);
    assert_string_equal(r.header("Content-Range").c_str(), "bytes */5368709220");
}

// What the C face refuses, each leaving the exchange the host's.
void api_handler(void *, weir_exchange *ex) {
    int fd = ::open(g_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int bad = 0;
    bad += weir_serve_file(ex, fd, nullptr) != -EINVAL; // a directory
    ::close(fd);
    bad += weir_serve_file(ex, -1, nullptr) != -EBADF;
    fd = ::open((g_dir + "/small.txt").c_str(), O_RDONLY | O_CLOEXEC);
    weir_file_options o;
    weir_file_options_init(&o);
    o.size = 4;
    bad += weir_serve_file(ex, fd, &o) != -EINVAL;
    weir_file_options_init(&o);
    o.flags = 0x80;
    bad += weir_serve_file(ex, fd, &o) != -EINVAL;
    weir_file_options_init(&o);
    const weir_header_t etag = {{"etag", 4}, {"\"x\"", 3}};
    o.headers = &etag;
    o.num_headers = 1;
    bad += weir_serve_file(ex, fd, &o) != -EINVAL;
    weir_file_options_init(&o);
    const weir_header_t cl = {{"Content-Length", 14}, {"1", 1}};
    o.headers = &cl;
    o.num_headers = 1;
    bad += weir_serve_file(ex, fd, &o) != -EINVAL;
    weir_file_options_init(&o);
    o.respond_flags = WEIR_RESPOND_CLOSE;
    int rc = weir_serve_file(ex, fd, &o);
    bad += rc != 200;
    ::close(fd);
    assert_int_equal(bad, 0);
}

void test_serve_file_refusals(void **) {
    assert_int_equal(weir_serve_file(nullptr, 0, nullptr), -EINVAL);
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_INLINE, api_handler, nullptr)), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/x")));
    Response r = read_response(c);
    assert_int_equal(r.status, 200);
    assert_true(r.body == g_small);
    assert_string_equal(r.header("Connection").c_str(), "close"); // respond_flags reached it
    assert_true(wait_closed(c));
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_serve_file_conditionals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_serve_file_from_another_thread, setup, teardown),
        cmocka_unit_test_setup_teardown(test_serve_file_checks_catch_a_plain_answer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_serve_file_large_and_far, setup, teardown),
        cmocka_unit_test_setup_teardown(test_serve_file_refusals, setup, teardown),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
