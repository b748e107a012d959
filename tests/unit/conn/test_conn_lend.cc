// Unit tests of what a completion backend relies on in lib/conn: output
// segments that never move, lends that nothing frees, buffers given back
// when nothing came, the first-byte and head deadlines, allocation failure
// as an answer (not an exception), and detach/adopt at a request boundary.
#include "cmocka_cxx.h"

#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "conn/conn.h"
#include "conn/out_queue.h"
#include "conn_check.h"

using weir::Conn;
using weir::ConnImage;
using weir::ConnPool;
using weir::ConnSettings;
using weir::ConnWait;
using weir::Exchange;
using weir::OutQueue;
using weir::SegPool;
using namespace conn_check;

namespace {

std::string iov_bytes(const iovec *v, size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i)
        s.append(static_cast<const char *>(v[i].iov_base), v[i].iov_len);
    return s;
}

void test_out_queue_segments_never_move(void **) {
    SegPool pool;
    OutQueue q(pool);
    std::string first(1000, 'a');
    assert_true(q.append(first.data(), first.size()));
    iovec v[64];
    size_t k = q.iov(v, 64);
    assert_int_equal(k, 1);
    const char *base = static_cast<const char *>(v[0].iov_base);
    // Appending during a write (the kernel holds v[0]) adds after it or in
    // new pooled segments; past kExactMin an append gets one exact segment.
    std::string more(3 * SegPool::kSegCap, 'b');
    assert_true(q.append(more.data(), more.size()));
    std::string big(1 << 20, 'c');
    assert_true(q.append(big.data(), big.size()));
    assert_ptr_equal(base, q.iov(v, 64) ? v[0].iov_base : nullptr);
    assert_memory_equal(base, first.data(), first.size());
    assert_int_equal(q.pending(), first.size() + more.size() + big.size());
    k = q.iov(v, 64);
    assert_int_equal(k, 5); // 4 pooled segments, then one for the large append
    assert_true(v[k - 1].iov_len + SegPool::kSegCap >= big.size());
    assert_string_equal(iov_bytes(v, k).c_str(), (first + more + big).c_str());
    // A partial write leaves the rest where it was.
    q.consume(600);
    assert_int_equal(q.iov(v, 1), 1);
    assert_ptr_equal(v[0].iov_base, base + 600);
    q.consume(q.pending());
    assert_int_equal(q.pending(), 0);
    assert_int_equal(q.iov(v, 64), 0);
    assert_true(pool.cached() >= 3); // drained pooled segments went back
}

void test_conn_read_lend_survives_close(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    iovec sp = c.read_space();
    assert_true(sp.iov_len > 0);
    assert_true(c.lent());
    // A second lend while one is out is refused.
    assert_int_equal(c.read_space().iov_len, 0);
    // The loop closes while the read is out: the buffer must stay.
    c.close(WEIR_CLOSE_SHUTDOWN);
    c.on_closed();
    assert_true(c.holds_buffers());
    std::memcpy(sp.iov_base, "late", 4); // the kernel writes into it: still ours
    c.on_read(4);
    assert_false(c.lent());
    assert_false(c.holds_buffers()); // given back once returned
    assert_int_equal(pool.cached(), 1);
}

void test_conn_write_lend_survives_abort(void **) {
    ConnSettings s = settings();
    s.max_output_bytes = 4096;
    ConnPool pool(s);
    Conn c(s, pool, 1);
    feed(c, "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n");
    Exchange *a = c.take_request(), *b = c.take_request();
    assert_int_equal(answer(c, a, "first"), 0);
    iovec v[4];
    size_t k = c.output_iov(v, 4);
    assert_int_equal(k, 1);
    std::string lent = iov_bytes(v, k);
    const char *base = static_cast<const char *>(v[0].iov_base);
    // While the write is out, an answer past the output limit aborts the
    // connection: the lent bytes must not be cleared or reused.
    std::string huge(8192, 'x');
    assert_int_equal(answer(c, b, huge), 0);
    assert_int_equal(c.output_pending(), 0);
    assert_true(c.wants_close());
    assert_int_equal(c.close_reason(), WEIR_CLOSE_OUTPUT_LIMIT);
    assert_memory_equal(base, lent.data(), lent.size());
    assert_int_equal(c.output_iov(v, 4), 0); // no second lend
    c.on_closed();
    assert_memory_equal(base, lent.data(), lent.size());
    assert_true(c.holds_buffers());
    c.on_written(10);
    assert_false(c.holds_buffers());
}

void test_conn_nothing_read_gives_buffers_back(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    assert_true(c.read_space().iov_len > 0);
    assert_true(c.holds_buffers());
    c.on_read(0); // EAGAIN before any byte
    assert_false(c.holds_buffers());
    assert_int_equal(c.wait(), (int)ConnWait::FirstByte);
    // A keep-alive connection between requests: the same.
    feed(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(answer(c, c.take_request(), "ok"), 0);
    drain(c);
    assert_true(c.read_space().iov_len > 0);
    c.on_read(0);
    assert_false(c.holds_buffers());
    assert_int_equal(c.wait(), (int)ConnWait::Idle);
}

void test_conn_head_deadline_408_or_silent(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    {
        Conn c(s, pool, 1);
        assert_int_equal(c.wait(), (int)ConnWait::FirstByte);
        c.expire_input(WEIR_CLOSE_HEADER_TIMEOUT); // never sent a byte: closed, nothing written
        assert_int_equal(c.wait(), (int)ConnWait::Done);
        assert_int_equal(c.close_reason(), WEIR_CLOSE_SILENT);
        assert_int_equal(c.output_pending(), 0);
    }
    {
        Conn c(s, pool, 2);
        feed(c, "GET /slow HTTP/1.1\r\nHos");
        assert_int_equal(c.wait(), (int)ConnWait::Head);
        c.expire_input(WEIR_CLOSE_HEADER_TIMEOUT); // a head that started: 408, then close
        std::string out = drain(c);
        assert_true(out.rfind("HTTP/1.1 408 Request Timeout\r\n", 0) == 0);
        assert_true(out.find("Connection: close\r\n") != std::string::npos);
        assert_int_equal(c.wait(), (int)ConnWait::Done);
        assert_int_equal(c.close_reason(), WEIR_CLOSE_HEADER_TIMEOUT);
        assert_int_equal(c.counters().parse_errors, 0);
        assert_int_equal(c.counters().responses, 1);
    }
    {
        // Served once, then part of the next head: 408 as well.
        Conn c(s, pool, 3);
        feed(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HT");
        assert_int_equal(answer(c, c.take_request(), "ok"), 0);
        drain(c);
        assert_int_equal(c.wait(), (int)ConnWait::Head);
        c.expire_input(WEIR_CLOSE_HEADER_TIMEOUT);
        assert_true(drain(c).rfind("HTTP/1.1 408 ", 0) == 0);
    }
}

void test_conn_allocation_failure_closes(void **) {
    // An exchange ring no allocator can give: the state cannot be made.
    ConnSettings s = settings(16384, 0xFFFFFFFFu);
    ConnPool pool(s);
    {
        Conn c(s, pool, 1);
        assert_int_equal(c.read_space().iov_len, 0);
        assert_true(c.wants_close());
        assert_int_equal(c.close_reason(), WEIR_CLOSE_RESOURCE);
        assert_int_equal(c.wait(), (int)ConnWait::Done);
    }
    // The arm that must lose: with the hook, the failure is thrown as the
    // code did before (through the loop it would abort the process).
    weir::conn_hooks().alloc_throws = true;
    bool thrown = false;
    try {
        Conn c(s, pool, 2);
        c.read_space();
    } catch (const std::bad_alloc &) {
        thrown = true;
    }
    weir::conn_hooks().alloc_throws = false;
    assert_true(thrown);
}

// The reference: one Conn fed everything, answering each request with its path.
std::string serve_all(const ConnSettings &s, const std::vector<std::string> &reads) {
    ConnPool pool(s);
    Conn c(s, pool, 9);
    std::string out;
    for (const std::string &r : reads) {
        feed(c, r);
        while (Exchange *x = c.take_request())
            assert_int_equal(answer(c, x, sv(x->req.path)), 0);
        out += drain(c);
    }
    return out;
}

void test_conn_detach_adopt_is_invisible(void **) {
    ConnSettings s = settings();
    const std::vector<std::string> reads = {
        "GET /a HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET /b HTTP/1.1\r\nHost: x\r\n\r\nPOST /c HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nab",
        "cGET /d HTTP/1.1\r\nHost: x\r\n\r\n",
    };
    std::string want = serve_all(s, reads);

    ConnPool pool_a(s);
    std::string out;
    ConnImage img;
    {
        Conn a(s, pool_a, 9);
        feed(a, reads[0]);
        Exchange *x = a.take_request();
        assert_non_null(x);
        // A move is asked for while /a is in flight: parse nothing new.
        a.hold();
        assert_false(a.detachable());
        feed(a, reads[1]); // read, not parsed: it travels in the image
        assert_null(a.take_request());
        assert_int_equal(answer(a, x, "/a"), 0);
        assert_false(a.detachable()); // its answer is not written yet
        out += drain(a);
        assert_true(a.detachable());
        assert_true(a.detach(img));
        assert_int_equal(a.wait(), (int)ConnWait::Done);
        assert_false(a.holds_buffers());
    }
    assert_int_equal(img.id, 9);
    assert_int_equal(img.requests, 1);
    assert_int_equal(img.responses, 1);
    assert_true(img.served);
    assert_int_equal(img.unread_len, reads[1].size());

    // Another pool (another worker, engine or backend) takes it over.
    ConnSettings s2 = settings(4096, 8);
    ConnPool pool_b(s2);
    Conn b(s2, pool_b, img.id);
    assert_true(b.adopt(img));
    while (Exchange *x = b.take_request())
        assert_int_equal(answer(b, x, sv(x->req.path)), 0);
    out += drain(b);
    feed(b, reads[2]);
    while (Exchange *x = b.take_request())
        assert_int_equal(answer(b, x, sv(x->req.path)), 0);
    out += drain(b);
    assert_string_equal(out.c_str(), want.c_str());
    assert_int_equal(b.counters().requests, 4);
    assert_int_equal(b.counters().responses, 4);
    assert_int_equal(b.wait(), (int)ConnWait::Idle);
}

void test_conn_detach_refused_mid_request(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    ConnImage img;
    // A body in progress is not a boundary, even when held.
    feed(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nab");
    c.hold();
    assert_false(c.detachable());
    assert_false(c.detach(img));
    feed(c, "cde"); // the body completes even though the connection is held
    Exchange *x = c.take_request();
    assert_non_null(x);
    assert_string_equal(sv(x->req.body).c_str(), "abcde");
    assert_int_equal(answer(c, x, "ok"), 0);
    drain(c);
    assert_true(c.detach(img));
    assert_int_equal(img.unread_len, 0);
    // A fresh connection that never sent a byte moves as one.
    Conn fresh(s, pool, 2);
    ConnImage img2;
    assert_true(fresh.detach(img2));
    assert_false(img2.served);
    Conn again(s, pool, img2.id);
    assert_true(again.adopt(img2));
    assert_int_equal(again.wait(), (int)ConnWait::FirstByte);
}

// The loop resumes a paused read only when can_read() says so: a "yes" that
// read_space() then refuses would spin the loop. Probed in every state.
bool can_read_agrees(Conn &c) {
    bool said = c.can_read();
    iovec sp = c.read_space();
    if (sp.iov_len)
        c.on_read(0);
    return said == (sp.iov_len > 0);
}

void test_conn_can_read_matches_read_space(void **) {
    ConnSettings s = settings(1024, 2);
    ConnPool pool(s);
    {
        Conn c(s, pool, 1);
        assert_true(can_read_agrees(c)); // fresh
        feed(c, "GET /a HTTP/1.1\r\nHo");
        assert_true(can_read_agrees(c)); // part of a head
        feed(c, "st: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n");
        Exchange *a = c.take_request(), *b = c.take_request();
        assert_non_null(b);
        assert_false(c.can_read()); // the pipeline is full
        assert_true(can_read_agrees(c));
        assert_int_equal(answer(c, a, "a"), 0);
        assert_int_equal(answer(c, b, "b"), 0);
        drain(c);
        assert_true(can_read_agrees(c));
    }
    {
        // Held, and its buffer full of bytes for the adopter: no room, and
        // can_read() must say so.
        Conn c(s, pool, 2);
        feed(c, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
        Exchange *a = c.take_request();
        c.hold();
        feed(c, std::string(4096, 'G'));
        assert_false(c.can_read());
        assert_true(can_read_agrees(c));
        assert_int_equal(answer(c, a, "a"), 0);
        drain(c);
        assert_false(c.can_read()); // still held, still full
        assert_true(can_read_agrees(c));
        c.close(WEIR_CLOSE_SHUTDOWN);
        assert_true(can_read_agrees(c));
    }
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_out_queue_segments_never_move),
        cmocka_unit_test(test_conn_read_lend_survives_close),
        cmocka_unit_test(test_conn_write_lend_survives_abort),
        cmocka_unit_test(test_conn_nothing_read_gives_buffers_back),
        cmocka_unit_test(test_conn_head_deadline_408_or_silent),
        cmocka_unit_test(test_conn_allocation_failure_closes),
        cmocka_unit_test(test_conn_detach_adopt_is_invisible),
        cmocka_unit_test(test_conn_detach_refused_mid_request),
        cmocka_unit_test(test_conn_can_read_matches_read_space),
    };
    return cmocka_run_group_tests_name("conn_lend", tests, nullptr, nullptr);
}
