// File answers sent from the file (Port::file_ranges): sendfile on epoll,
// splice on io_uring. The body leaves without being copied into the output
// (LoopHooks::file_range_sends counts the sends), in order between the head
// and the answers pipelined after it; a file the kernel will not send so
// (the arm LoopHooks::file_range_errno = EINVAL, as a filesystem that cannot
// splice) is read instead, from where the ranges stopped, and the same bytes
// arrive; a slow reader gets every byte (the socket's EAGAIN and its wait).
// The arm that must lose for the counter itself: WEIR_FILE_RANGES=0, the
// read path everywhere, counts no range.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "loop/hooks.h"
#include "support/net.h"

using namespace testnet;

namespace {

constexpr size_t kFileBytes = 32u << 20; // far above what the socket buffers hold
std::string g_path;
std::string g_content;

void write_file() {
    char tmpl[] = "/tmp/weir-ranges-XXXXXX";
    int fd = mkstemp(tmpl);
    assert_true(fd >= 0);
    g_path = tmpl;
    g_content.resize(kFileBytes);
    for (size_t i = 0; i < kFileBytes; i++)
        g_content[i] = static_cast<char>('a' + (i / 4096 + i * 7) % 26);
    assert_int_equal(::write(fd, g_content.data(), kFileBytes), static_cast<ssize_t>(kFileBytes));
    ::close(fd);
}

int setup(void **) {
    weir::loop_hooks().file_range_sends = 0;
    weir::loop_hooks().file_fallbacks = 0;
    weir::loop_hooks().file_range_errno = 0;
    unsetenv("WEIR_FILE_RANGES");
    write_file();
    return 0;
}

int teardown(void **) {
    weir::loop_hooks().file_range_errno = 0;
    unsetenv("WEIR_FILE_RANGES");
    ::unlink(g_path.c_str());
    return 0;
}

int answer_file(weir_exchange *ex, uint64_t off, uint64_t len) {
    int fd = ::open(g_path.c_str(), O_RDONLY | O_CLOEXEC);
    int rc = weir_respond_file(ex, 200, nullptr, 0, fd, off, len, 0);
    ::close(fd);
    return rc;
}

void handler(void *, weir_exchange *ex) {
    std::string path = str(weir_exchange_request(ex)->path);
    if (path == "/file")
        assert_int_equal(answer_file(ex, 0, kFileBytes), 0);
    else if (path == "/range") // an odd offset and length: pages are not what a range is cut by
        assert_int_equal(answer_file(ex, 4097, 3u << 20), 0);
    else
        answer(ex, 404, "none");
}

uint64_t sends() { return weir::loop_hooks().file_range_sends.load(); }
uint64_t fallbacks() { return weir::loop_hooks().file_fallbacks.load(); }

// Pipelined: a range, the whole file, the range again, a plain answer. Each
// arrives whole and in its place: the head before the file's bytes, the
// next answer after the last of them.
void fetch_in_order(uint16_t port) {
    Client c = connect_to(port);
    assert_true(send_all(c, get("/range") + get("/file") + get("/range") + get("/nope")));
    std::string range = g_content.substr(4097, 3u << 20);
    Response a = read_response(c, bound_ms(20000));
    assert_int_equal(a.status, 200);
    assert_true(a.body == range);
    Response b = read_response(c, bound_ms(20000));
    assert_int_equal(b.status, 200);
    assert_true(b.body == g_content);
    Response d = read_response(c, bound_ms(20000));
    assert_true(d.body == range);
    Response e = read_response(c);
    assert_int_equal(e.status, 404);
    assert_true(e.body == "none");
}

void test_file_ranges_sent_from_the_file(void **) {
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_INLINE, handler, nullptr)), 0);
    fetch_in_order(s.port);
    assert_true(sends() > 0);
    assert_int_equal(fallbacks(), 0);
}

// The counter's own arm: with the read path everywhere, no range is sent.
void test_file_ranges_off_reads(void **) {
    setenv("WEIR_FILE_RANGES", "0", 1);
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_INLINE, handler, nullptr)), 0);
    fetch_in_order(s.port);
    assert_int_equal(sends(), 0);
    assert_int_equal(fallbacks(), 0);
}

// The kernel refuses every file range: each file answer falls back to the
// read path once (three here), and the same bytes arrive in the same order.
void test_file_ranges_refused_fall_back(void **) {
    weir::loop_hooks().file_range_errno = EINVAL;
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_INLINE, handler, nullptr)), 0);
    fetch_in_order(s.port);
    assert_int_equal(sends(), 0);
    assert_int_equal(fallbacks(), 3);
}

// Refused midway: the first MiBs went as ranges, the rest is read from
// where they stopped (not from the start, not past a byte still in flight).
void test_file_ranges_refused_midway(void **) {
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_INLINE, handler, nullptr)), 0);
    Client c = connect_to(s.port, 64 * 1024);
    assert_true(send_all(c, get("/file")));
    int64_t until = now_ms() + bound_ms(10000);
    while (c.buf.size() < (1u << 20) && now_ms() < until)
        read_some(c);
    assert_true(c.buf.size() >= (1u << 20));
    // A send is counted when sendfile returns (or the splice's CQE is
    // reaped), which may be after its bytes reached this client.
    while (sends() == 0 && now_ms() < until)
        sleep_ms(1);
    assert_true(sends() > 0);
    weir::loop_hooks().file_range_errno = EINVAL;
    Response r = read_response(c, bound_ms(20000));
    assert_int_equal(r.status, 200);
    assert_true(r.body == g_content);
    assert_int_equal(fallbacks(), 1);
}

// A reader slower than the socket: the sender meets a full socket again and
// again (epoll: EAGAIN and EPOLLOUT; io_uring: a short splice, a poll for
// room) and every byte still arrives, once.
void test_file_ranges_slow_reader(void **) {
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_INLINE, handler, nullptr)), 0);
    Client c = connect_to(s.port, 32 * 1024);
    assert_true(send_all(c, get("/file") + get("/nope")));
    int64_t until = now_ms() + bound_ms(30000);
    Response r;
    while (r.status == 0 && now_ms() < until) {
        sleep_ms(1);
        read_some(c);
        r = take_response(c);
    }
    assert_int_equal(r.status, 200);
    assert_true(r.body == g_content);
    Response e = read_response(c);
    assert_true(e.body == "none");
    assert_true(sends() > 1); // the socket filled: the range went in many sends
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_file_ranges_sent_from_the_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_ranges_off_reads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_ranges_refused_fall_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_ranges_refused_midway, setup, teardown),
        cmocka_unit_test_setup_teardown(test_file_ranges_slow_reader, setup, teardown),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
