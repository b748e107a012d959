// Unit tests of a file answer's ranges (Conn::output_file / on_file_sent,
// lib/conn/conn_file.cc): the head's bytes first, then the file range, then
// the answers pipelined after it; the range's fd stays open while it is lent
// even when the connection dies (a kernel splice may still resolve it: the
// arm that must lose is drop_unanswered closing the lent fd, which fails
// test_conn_file_lend_outlives_close's first check); a file that ended
// early aborts (WEIR_CLOSE_IO_ERROR); a refused range continues on the read
// path from where the ranges stopped.
#include "cmocka_cxx.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "conn/conn.h"
#include "conn_check.h"

using weir::Conn;
using weir::ConnPool;
using weir::ConnSettings;
using weir::Exchange;
using weir::FileRange;
using namespace conn_check;

namespace {

const std::string kBody = "0123456789";

int body_file() {
    char tmpl[] = "/tmp/weir-conn-file-XXXXXX";
    int fd = mkstemp(tmpl);
    assert_true(fd >= 0);
    ::unlink(tmpl);
    assert_int_equal(::write(fd, kBody.data(), kBody.size()), static_cast<ssize_t>(kBody.size()));
    return fd;
}

bool fd_open(int fd) { return ::fcntl(fd, F_GETFD) >= 0; }

std::string req(const char *path) { return std::string("GET ") + path + " HTTP/1.1\r\nHost: t\r\n\r\n"; }

// Two pipelined requests; the second is answered first, the first from a file.
struct Pair {
    ConnSettings s = settings();
    ConnPool pool{s};
    Conn c{s, pool, 1};
    Exchange *file = nullptr, *later = nullptr;
    int fd = -1;
    Pair() {
        std::string in = req("/f") + req("/later");
        assert_int_equal(feed(c, in), in.size());
        file = c.take_request();
        later = c.take_request();
        assert_non_null(file);
        assert_non_null(later);
        assert_int_equal(answer(c, later, "after"), 0);
        fd = body_file();
        assert_int_equal(c.stream_start(file, 200, nullptr, 0, kBody.size(), 0), 0);
        c.attach_file(file, fd, 0, true);
    }
};

void test_conn_file_ranges_in_order(void **) {
    Pair p;
    FileRange r;
    assert_false(p.c.output_file(r)); // the head's bytes go first
    std::string head = drain(p.c);
    assert_true(head.find("Content-Length: 10\r\n") != std::string::npos);
    assert_true(head.size() >= 4 && head.compare(head.size() - 4, 4, "\r\n\r\n") == 0);
    assert_int_equal(p.c.output_pending(), kBody.size()); // the range counts as output (the write timer)
    assert_true(p.c.output_file(r));
    assert_int_equal(r.fd, p.fd);
    assert_int_equal(r.off, 0);
    assert_int_equal(r.len, kBody.size());
    assert_true(p.c.lent());
    iovec v[4];
    assert_int_equal(p.c.output_iov(v, 4), 0); // one lend at a time
    p.c.on_file_sent(4, 0);
    assert_true(p.c.output_file(r));
    assert_int_equal(r.off, 4);
    assert_int_equal(r.len, 6);
    p.c.on_file_sent(6, 0);
    assert_false(fd_open(p.fd)); // the answer ended: its fd is closed
    assert_string_equal(drain(p.c).substr(0, 15).c_str(), "HTTP/1.1 200 OK"); // the later answer, only now
    assert_int_equal(p.c.output_pending(), 0);
}

void test_conn_file_lend_outlives_close(void **) {
    Pair p;
    drain(p.c);
    FileRange r;
    assert_true(p.c.output_file(r));
    p.c.close(WEIR_CLOSE_PEER);
    p.c.on_closed();
    assert_true(fd_open(p.fd)); // lent: a splice in flight may still name it
    p.c.on_file_sent(0, 0);
    assert_false(fd_open(p.fd)); // the lend came back: now it goes
    assert_int_equal(p.c.outstanding(), 0); // the file answer is the engine's: released with the connection
}

void test_conn_file_short_aborts(void **) {
    Pair p;
    drain(p.c);
    FileRange r;
    assert_true(p.c.output_file(r));
    p.c.on_file_sent(3, ENODATA);
    assert_true(p.c.wants_close());
    assert_int_equal(p.c.close_reason(), WEIR_CLOSE_IO_ERROR);
    assert_false(fd_open(p.fd));
    assert_int_equal(p.c.output_pending(), 0); // aborted: nothing more leaves
}

void test_conn_file_refused_reads_on(void **) {
    Pair p;
    std::string head = drain(p.c);
    FileRange r;
    assert_true(p.c.output_file(r));
    p.c.on_file_sent(2, EINVAL); // two bytes went as a range, then the kernel refused
    assert_true(p.c.file_stream(p.file)); // on the read path now
    assert_false(p.c.output_file(r));
    p.c.feed_files(256 * 1024);
    std::string rest = drain(p.c);
    assert_true(rest.compare(0, 8, kBody.substr(2)) == 0); // from where the range stopped
    assert_true(rest.find("after") != std::string::npos);  // then the later answer
    assert_false(fd_open(p.fd));
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conn_file_ranges_in_order),
        cmocka_unit_test(test_conn_file_lend_outlives_close),
        cmocka_unit_test(test_conn_file_short_aborts),
        cmocka_unit_test(test_conn_file_refused_reads_on),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
