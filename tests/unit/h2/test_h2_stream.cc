// lib/h2 unit tests, streams: streamed answers (DATA under the peer's
// windows, trailers, abort of one stream), file answers, streamed request
// bodies whose window opens only as the host reads, and exchanges whose
// stream the peer reset (gone). The peer is a real nghttp2 client.
#include "cmocka_cxx.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "h2_peer.h"

using namespace h2_peer;
using weir::ConnPool;
using weir::ConnSettings;
using weir::ConnWait;
using weir::Exchange;
using weir::H2Session;
using weir::H2Settings;

namespace {

struct Fixture {
    ConnSettings cs;
    H2Settings hs;
    ConnPool pool;
    H2Session s;
    Peer peer;
    Fixture(ConnSettings c = settings(), H2Settings h = H2Settings(), std::vector<nghttp2_settings_entry> iv = {},
            bool auto_window = true)
        : cs(c), hs(h), pool(cs), s(cs, hs, pool, 1), peer(iv, auto_window) {}
};

void test_streamed_answer_with_trailers(void **) {
    Fixture f;
    int32_t id = f.peer.get("/s");
    f.peer.pump(f.s);
    Exchange *x = f.s.take_request();
    weir_header_t h[] = {{{"Content-Type", 12}, {"text/plain", 10}}};
    assert_int_equal(f.s.stream_start(x, 200, h, 1, UINT64_MAX, 0), 0);
    assert_true(f.s.streaming(x));
    assert_int_equal(f.s.streams(), 1);
    int n = 0;
    f.s.each_stream([&](Exchange *e) { n += e == x; });
    assert_int_equal(n, 1);
    f.peer.pump(f.s);
    assert_int_equal(f.peer.got[id].status, 200);
    assert_false(f.peer.got[id].closed);
    assert_int_equal(f.s.stream_write(x, "abc", 3), 0);
    f.peer.pump(f.s);
    assert_string_equal(f.peer.got[id].body.c_str(), "abc");
    assert_int_equal(f.s.stream_write(x, "def", 3), 0);
    weir_header_t t[] = {{{"Grpc-Status", 11}, {"0", 1}}};
    assert_int_equal(f.s.stream_end(x, t, 1), 0);
    assert_int_equal(f.s.streams(), 0);
    assert_int_equal(f.s.outstanding(), 0);
    f.peer.pump(f.s);
    Answer &a = f.peer.got[id];
    assert_string_equal(a.body.c_str(), "abcdef");
    assert_string_equal(a.trailers["grpc-status"].c_str(), "0");
    assert_int_equal(a.headers_frames, 2);
    assert_true(a.closed);
    assert_string_equal(a.headers["content-type"].c_str(), "text/plain");
}

void test_stream_length_rules(void **) {
    Fixture f;
    f.peer.get("/");
    f.peer.pump(f.s);
    Exchange *x = f.s.take_request();
    assert_int_equal(f.s.stream_write(x, "a", 1), -EINVAL); // not streaming
    assert_int_equal(f.s.stream_start(x, 200, nullptr, 0, 4, 0), 0);
    assert_int_equal(f.s.stream_write(x, "abcde", 5), -EINVAL); // past the length
    assert_int_equal(f.s.stream_write(x, "ab", 2), 0);
    assert_int_equal(f.s.stream_end(x, nullptr, 0), -EINVAL); // bytes owed
    assert_int_equal(f.s.stream_write(x, "cd", 2), 0);
    assert_int_equal(f.s.stream_end(x, nullptr, 0), 0);
    f.peer.pump(f.s);
    assert_string_equal(f.peer.got[1].body.c_str(), "abcd");
    assert_string_equal(f.peer.got[1].headers["content-length"].c_str(), "4");
}

// DATA leaves only within the peer's window; the rest is the stream's
// backlog (what the loop's stream-window hand-back reads).
void test_flow_control_backlog(void **) {
    Fixture f(settings(), H2Settings(), {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 100}}, false);
    int32_t id = f.peer.get("/big");
    f.peer.pump(f.s);
    Exchange *x = f.s.take_request();
    assert_int_equal(f.s.stream_start(x, 200, nullptr, 0, UINT64_MAX, 0), 0);
    std::string chunk(1000, 'q');
    assert_int_equal(f.s.stream_write(x, chunk.data(), chunk.size()), 0);
    f.peer.pump(f.s);
    assert_int_equal(f.peer.got[id].body.size(), 100);
    assert_int_equal(f.s.stream_backlog(x), 900);
    // Held back by the window: nothing to write now, but the write deadline
    // is the one that bounds a peer that never opens it.
    assert_int_equal(f.s.output_pending(), 0);
    assert_int_equal(static_cast<int>(f.s.wait()), static_cast<int>(ConnWait::Output));
    // The client reads: its window opens, the rest flows.
    nghttp2_session_consume(f.peer.ng, id, 100);
    nghttp2_submit_window_update(f.peer.ng, NGHTTP2_FLAG_NONE, id, 900);
    f.peer.pump(f.s);
    assert_int_equal(f.peer.got[id].body.size(), 1000);
    assert_int_equal(f.s.stream_backlog(x), 0);
    assert_int_equal(f.s.stream_end(x, nullptr, 0), 0);
    f.peer.pump(f.s);
    assert_true(f.peer.got[id].closed);
}

// The host's bytes are lent to the session only for the call (respond,
// stream_write): what the window holds back is copied before the call
// returns, and the stream's kept bytes go before a later call's. The host's
// buffers are scribbled over right after each call. Mutant tried: without
// keep_lent() the held-back bytes point into the scribbled buffers and the
// bodies read 'X' (this test fails, and so do the two above and
// test_file_answer).
void test_lent_bytes_kept_past_the_call(void **) {
    Fixture f(settings(), H2Settings(), {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 100}}, false);
    int32_t a = f.peer.get("/a");
    int32_t b = f.peer.get("/b");
    f.peer.pump(f.s);
    Exchange *xa = f.s.take_request();
    Exchange *xb = f.s.take_request();
    std::string body(1000, 'q');
    assert_int_equal(f.s.respond(xa, 200, nullptr, 0, body.data(), body.size(), 0), 0);
    body.assign(body.size(), 'X');
    assert_int_equal(f.s.stream_start(xb, 200, nullptr, 0, UINT64_MAX, 0), 0);
    std::string c1(300, 'r'), c2(50, 's');
    assert_int_equal(f.s.stream_write(xb, c1.data(), c1.size()), 0);
    c1.assign(c1.size(), 'X');
    f.peer.pump(f.s);
    assert_int_equal(f.s.stream_backlog(xb), 200);
    assert_int_equal(f.s.stream_write(xb, c2.data(), c2.size()), 0);
    c2.assign(c2.size(), 'X');
    assert_int_equal(f.s.stream_backlog(xb), 250);
    assert_true(f.peer.got[a].body == std::string(100, 'q'));
    for (int32_t id : {a, b}) {
        nghttp2_session_consume(f.peer.ng, id, 100);
        nghttp2_submit_window_update(f.peer.ng, NGHTTP2_FLAG_NONE, id, 1000);
    }
    f.peer.pump(f.s);
    assert_int_equal(f.s.stream_end(xb, nullptr, 0), 0);
    f.peer.pump(f.s);
    assert_true(f.peer.got[a].body == std::string(1000, 'q'));
    assert_true(f.peer.got[b].body == std::string(300, 'r') + std::string(50, 's'));
    assert_true(f.peer.got[a].closed && f.peer.got[b].closed);
}

void test_stream_abort_one_stream(void **) {
    Fixture f;
    int32_t a = f.peer.get("/a");
    int32_t b = f.peer.get("/b");
    f.peer.pump(f.s);
    Exchange *xa = f.s.take_request();
    Exchange *xb = f.s.take_request();
    assert_int_equal(f.s.stream_abort(xa), -EINVAL); // not streaming
    assert_int_equal(f.s.stream_start(xa, 200, nullptr, 0, 10, 0), 0);
    assert_int_equal(f.s.stream_write(xa, "12345", 5), 0);
    assert_int_equal(f.s.stream_abort(xa), 0);
    assert_int_equal(f.s.respond(xb, 200, nullptr, 0, "b", 1, 0), 0);
    f.peer.pump(f.s);
    assert_int_equal(f.peer.got[a].rst, NGHTTP2_INTERNAL_ERROR);
    assert_string_equal(f.peer.got[b].body.c_str(), "b");
    assert_false(f.s.wants_close());
    assert_int_equal(f.s.outstanding(), 0);
}

void test_file_answer(void **) {
    Fixture f;
    char path[] = "/tmp/weir-h2-fileXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    std::string content(200000, 'f');
    for (size_t i = 0; i < content.size(); i += 1000)
        content[i] = char('a' + (i / 1000) % 26);
    assert_int_equal(write(fd, content.data(), content.size()), (ssize_t)content.size());
    unlink(path);
    int32_t id = f.peer.get("/file");
    f.peer.pump(f.s);
    Exchange *x = f.s.take_request();
    assert_int_equal(f.s.stream_start(x, 200, nullptr, 0, content.size(), 0), 0);
    f.s.attach_file(x, fd, 0, true); // ranged is ignored: read into DATA
    assert_true(f.s.file_stream(x));
    weir::FileRange r;
    assert_false(f.s.output_file(r));
    for (int i = 0; i < 100 && f.s.feed_files(64 * 1024); i++)
        f.peer.pump(f.s);
    f.peer.pump(f.s);
    assert_int_equal(f.peer.got[id].body.size(), content.size());
    assert_true(f.peer.got[id].body == content);
    assert_true(f.peer.got[id].closed);
    assert_int_equal(f.s.outstanding(), 0);
}

// A streamed request body: the client may send only what the stream window
// allows until the host reads (then WINDOW_UPDATE opens it again).
void test_request_body_flow_bounded(void **) {
    H2Settings hs;
    hs.stream_window = 16384;
    Fixture f(settings(1), hs);
    std::string body(100000, 'u');
    int32_t id = f.peer.request("POST", "/up", {}, &body);
    f.peer.pump(f.s);
    Exchange *x = f.s.take_request();
    assert_non_null(x);
    assert_int_equal(x->req.flags & WEIR_REQ_BODY_STREAM, WEIR_REQ_BODY_STREAM);
    assert_int_equal(x->req.body_length, WEIR_LENGTH_UNKNOWN);
    // Positive arm: the client stopped at the window.
    int32_t sent = nghttp2_session_get_stream_remote_window_size(f.peer.ng, id);
    assert_int_equal(sent, 0);
    assert_true(f.s.body_ready(x));
    char buf[4096];
    std::string got;
    for (int i = 0; i < 10000; i++) {
        int64_t n = f.s.body_read(x, buf, sizeof buf);
        if (n == -EAGAIN) {
            f.peer.pump(f.s);
            continue;
        }
        assert_true(n >= 0);
        if (n == 0)
            break;
        got.append(buf, static_cast<size_t>(n));
    }
    assert_int_equal(got.size(), body.size());
    assert_int_equal(f.s.body_read(x, buf, sizeof buf), 0);
    assert_int_equal(f.s.respond(x, 200, nullptr, 0, nullptr, 0, 0), 0);
    f.peer.pump(f.s);
    assert_int_equal(f.peer.got[id].status, 200);
}

// What the loop's per-stream handler deadline asks (Worker::expire_held):
// a stream waits for the peer while its request body is still arriving or
// its answer's bytes wait for the peer's window; a host sitting on a whole
// request does not. Mutant tried: waits_for_peer always false (the loop
// would cut a slow upload or a reader that opens its window late as if its
// host were stuck): the first and third checks fail.
void test_waits_for_peer(void **) {
    H2Settings hs;
    hs.stream_window = 16384;
    Fixture f(settings(1), hs, {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 100}}, false);
    std::string body(200000, 'u'); // past the 65535 a client may send before our SETTINGS
    int32_t up = f.peer.request("POST", "/up", {}, &body);
    int32_t get = f.peer.get("/get");
    f.peer.pump(f.s);
    Exchange *x = f.s.take_request();
    Exchange *g = f.s.take_request();
    assert_non_null(x);
    assert_non_null(g);
    assert_true(f.s.waits_for_peer(x));  // its body: stopped at the window
    assert_false(f.s.waits_for_peer(g)); // a whole request: the host's
    char buf[4096];
    for (int i = 0; i < 10000; i++) {
        int64_t n = f.s.body_read(x, buf, sizeof buf);
        if (n == -EAGAIN) {
            f.peer.pump(f.s);
            continue;
        }
        if (n == 0)
            break;
    }
    assert_false(f.s.waits_for_peer(x)); // the whole body read: the host's again
    assert_int_equal(f.s.respond(x, 200, nullptr, 0, nullptr, 0, 0), 0);
    // g's answer, 1000 bytes against a window of 100: the rest waits for the peer.
    assert_int_equal(f.s.stream_start(g, 200, nullptr, 0, UINT64_MAX, 0), 0);
    std::string chunk(1000, 'q');
    assert_int_equal(f.s.stream_write(g, chunk.data(), chunk.size()), 0);
    f.peer.pump(f.s);
    assert_true(f.s.waits_for_peer(g));
    nghttp2_session_consume(f.peer.ng, get, 100);
    nghttp2_submit_window_update(f.peer.ng, NGHTTP2_FLAG_NONE, get, 900);
    f.peer.pump(f.s);
    assert_int_equal(f.s.stream_backlog(g), 0);
    assert_false(f.s.waits_for_peer(g)); // all sent: the host owes the end
    assert_int_equal(f.s.stream_end(g, nullptr, 0), 0);
    f.peer.pump(f.s);
    assert_int_equal(f.peer.got[up].status, 200);
    assert_true(f.peer.got[get].closed);
}

// Negative arm of the above: with the window consumed as data comes (the
// hold switched off), a host that reads nothing still has the whole body
// pushed at it — memory bounded by nothing but max_body.
void test_request_body_flow_negative_arm(void **) {
    H2Settings hs;
    hs.stream_window = 16384;
    H2Session::hooks().no_flow_hold = true;
    {
        Fixture f(settings(1), hs);
        std::string body(100000, 'u');
        f.peer.request("POST", "/up", {}, &body);
        f.peer.pump(f.s);
        Exchange *x = f.s.take_request();
        assert_non_null(x);
        f.peer.pump(f.s);
        char buf[200000];
        int64_t n = f.s.body_read(x, buf, sizeof buf);
        assert_int_equal(n, 100000); // all of it arrived unread: the loss
        assert_int_equal(f.s.respond(x, 200, nullptr, 0, nullptr, 0, 0), 0);
    }
    H2Session::hooks().no_flow_hold = false;
}

void test_body_read_states(void **) {
    Fixture f(settings(1));
    f.peer.get("/nobody");
    std::string small = "hi";
    H2Settings hs;
    f.peer.pump(f.s);
    Exchange *x = f.s.take_request();
    char b[8];
    assert_int_equal(f.s.body_read(x, b, sizeof b), WEIR_E_STATE); // no body streamed
    assert_int_equal(f.s.body_read(x, nullptr, 8), -EINVAL);
    assert_int_equal(f.s.respond(x, 204, nullptr, 0, nullptr, 0, 0), 0);
}

// The peer resets a stream whose exchange is out: take_reset() reports it
// once, and its answer says WEIR_E_GONE and releases it.
void test_reset_stream_is_gone(void **) {
    Fixture f;
    int32_t a = f.peer.get("/a");
    f.peer.get("/b");
    f.peer.pump(f.s);
    Exchange *xa = f.s.take_request();
    Exchange *xb = f.s.take_request();
    assert_null(f.s.take_reset());
    nghttp2_submit_rst_stream(f.peer.ng, NGHTTP2_FLAG_NONE, a, NGHTTP2_CANCEL);
    f.peer.pump(f.s);
    assert_ptr_equal(f.s.take_reset(), xa);
    assert_null(f.s.take_reset());
    assert_int_equal(f.s.h2_counters().resets_by_peer, 1);
    assert_int_equal(f.s.outstanding(), 2); // still out until answered
    assert_int_equal(f.s.respond(xa, 200, nullptr, 0, "x", 1, 0), WEIR_E_GONE);
    assert_int_equal(f.s.outstanding(), 1);
    assert_int_equal(f.s.respond(xb, 200, nullptr, 0, "b", 1, 0), 0);
    f.peer.pump(f.s);
    assert_string_equal(f.peer.got[3].body.c_str(), "b");
    assert_false(f.s.wants_close());
}

// Closed with exchanges out: a zombie until each is answered (GONE).
void test_zombie_until_answered(void **) {
    Fixture f;
    f.peer.get("/a");
    f.peer.pump(f.s);
    Exchange *x = f.s.take_request();
    f.s.close(WEIR_CLOSE_IO_ERROR);
    f.s.on_closed();
    assert_int_equal(static_cast<int>(f.s.wait()), static_cast<int>(ConnWait::Done));
    assert_int_equal(f.s.outstanding(), 1);
    int seen = 0;
    f.s.each_taken([&](Exchange *e) {
        seen++;
        assert_int_equal(f.s.respond(e, 200, nullptr, 0, nullptr, 0, 0), WEIR_E_GONE);
    });
    assert_int_equal(seen, 1);
    assert_int_equal(f.s.outstanding(), 0);
    (void)x;
}

// expect: 100-continue: a 100 goes at once; the body is streamed (as
// HTTP/1's Conn streams bodies that expect 100-continue).
void test_expect_continue(void **) {
    Fixture f(settings(1 << 20));
    int32_t id = f.peer.request("POST", "/e", {{"expect", "100-continue"}, {"content-length", "3"}}, nullptr, true);
    f.peer.pump(f.s);
    assert_int_equal(f.peer.got[id].status, 100);
    assert_int_equal(f.s.counters().continues_sent, 1);
    Exchange *x = f.s.take_request();
    assert_non_null(x);
    assert_int_equal(x->req.flags & (WEIR_REQ_EXPECT_CONTINUE | WEIR_REQ_BODY_STREAM),
                     WEIR_REQ_EXPECT_CONTINUE | WEIR_REQ_BODY_STREAM);
    f.peer.raw = frame(NGHTTP2_DATA, NGHTTP2_FLAG_END_STREAM, id, "abc");
    f.peer.pump(f.s);
    char b[8];
    assert_int_equal(f.s.body_read(x, b, sizeof b), 3);
    assert_int_equal(f.s.body_read(x, b, sizeof b), 0);
    assert_int_equal(f.s.respond(x, 200, nullptr, 0, nullptr, 0, 0), 0);
    f.peer.pump(f.s);
    assert_int_equal(f.peer.got[id].status, 200);
}

// A 1xx HEADERS (103 Early Hints) before the final answer; x stays out.
void test_interim_then_final(void **) {
    Fixture f;
    int32_t id = f.peer.get("/e");
    f.peer.pump(f.s);
    Exchange *x = f.s.take_request();
    weir_header_t link[] = {{{"Link", 4}, {"</s.css>; rel=preload", 21}}};
    assert_int_equal(f.s.interim(x, 101, nullptr, 0), -EINVAL); // never on HTTP/2
    assert_int_equal(f.s.interim(x, 200, nullptr, 0), -EINVAL);
    assert_int_equal(f.s.interim(x, 103, link, 1), 0);
    assert_int_equal(f.s.outstanding(), 1);
    f.peer.pump(f.s);
    assert_int_equal(f.peer.got[id].status, 103);
    assert_false(f.peer.got[id].closed);
    assert_int_equal(f.s.respond(x, 200, nullptr, 0, "ok", 2, 0), 0);
    f.peer.pump(f.s);
    assert_int_equal(f.peer.got[id].status, 200);
    assert_int_equal(f.peer.got[id].headers_frames, 2);
    assert_string_equal(f.peer.got[id].body.c_str(), "ok");
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_streamed_answer_with_trailers),
        cmocka_unit_test(test_stream_length_rules),
        cmocka_unit_test(test_flow_control_backlog), cmocka_unit_test(test_lent_bytes_kept_past_the_call),
        cmocka_unit_test(test_stream_abort_one_stream),
        cmocka_unit_test(test_file_answer),
        cmocka_unit_test(test_request_body_flow_bounded),
        cmocka_unit_test(test_request_body_flow_negative_arm),
        cmocka_unit_test(test_body_read_states),
        cmocka_unit_test(test_waits_for_peer),
        cmocka_unit_test(test_reset_stream_is_gone),
        cmocka_unit_test(test_zombie_until_answered),
        cmocka_unit_test(test_interim_then_final),
        cmocka_unit_test(test_expect_continue),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
