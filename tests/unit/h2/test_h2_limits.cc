// lib/h2 unit tests, limits and abuse: each bound holds (positive arm), and
// where a test hook can switch it off, the negative arm shows what it guards
// against. Frames a well-behaved client never sends are hand-made
// (h2_peer.h frame()); everything else comes from a real nghttp2 client.
#include "cmocka_cxx.h"

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
    Fixture(ConnSettings c = settings(), H2Settings h = H2Settings(), std::vector<nghttp2_settings_entry> iv = {})
        : cs(c), hs(h), pool(cs), s(cs, hs, pool, 1), peer(iv) {}
};

// A GET as one HPACK block: :method GET, :scheme http, :path /, and
// :authority x (static-table indices, one literal).
const std::string kGetBlock = std::string("\x82\x86\x84\x41\x01x", 6);

std::string drain(H2Session &s) {
    std::string out;
    iovec iov[16];
    size_t k;
    while ((k = s.output_iov(iov, 16)) > 0) {
        size_t n = 0;
        for (size_t i = 0; i < k; i++) {
            out.append(static_cast<char *>(iov[i].iov_base), iov[i].iov_len);
            n += iov[i].iov_len;
        }
        s.on_written(n);
    }
    return out;
}

// The client's preface and SETTINGS, nothing acknowledged yet.
std::string preface() { return std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n") + frame(NGHTTP2_SETTINGS, 0, 0, ""); }

void test_concurrent_streams_refused(void **) {
    H2Settings hs;
    hs.max_concurrent_streams = 2;
    Fixture f(settings(), hs);
    std::string in = preface();
    for (int32_t id = 1; id <= 5; id += 2)
        in += frame(NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, id, kGetBlock);
    Peer::feed(f.s, in);
    drain(f.s);
    assert_non_null(f.s.take_request());
    assert_non_null(f.s.take_request());
    assert_null(f.s.take_request()); // the third was refused, not queued
    assert_int_equal(f.s.h2_counters().refused, 1);
    assert_false(f.s.wants_close());
}

// A header list over limits.max_header_bytes: answered 431 on its stream
// (the block is decoded to keep HPACK in step, its fields not kept); the
// connection goes on.
void test_header_list_431(void **) {
    ConnSettings cs = settings();
    cs.limits.max_header_bytes = 1000;
    Fixture f(cs);
    int32_t big = f.peer.request("GET", "/", {{"x-big", std::string(2000, 'b')}});
    int32_t ok = f.peer.get("/ok");
    f.peer.pump(f.s);
    Exchange *x = f.s.take_request();
    assert_non_null(x);
    assert_string_equal(sv(x->req.path).c_str(), "/ok");
    assert_null(f.s.take_request());
    assert_int_equal(f.peer.got[big].status, 431);
    assert_int_equal(f.s.h2_counters().headers_too_large, 1);
    assert_int_equal(f.s.respond(x, 200, nullptr, 0, nullptr, 0, 0), 0);
    f.peer.pump(f.s);
    assert_int_equal(f.peer.got[ok].status, 200);
    assert_false(f.s.wants_close());
}

void test_body_over_max_413(void **) {
    Fixture f(settings(0, 100));
    std::string body(500, 'x');
    int32_t id = f.peer.request("POST", "/", {}, &body);
    f.peer.pump(f.s);
    assert_null(f.s.take_request());
    assert_int_equal(f.peer.got[id].status, 413);
    assert_int_equal(f.s.h2_counters().bodies_too_large, 1);
    // Without a content-length: the bytes past the bound decide.
    int32_t id2 = f.peer.request("POST", "/", {}, nullptr, true);
    f.peer.pump(f.s);
    std::string chunk(300, 'y');
    f.peer.raw = frame(NGHTTP2_DATA, 0, id2, chunk);
    f.peer.pump(f.s);
    assert_int_equal(f.peer.got[id2].status, 413);
    assert_false(f.s.wants_close());
}

// HPACK: the peer offers a 1 MiB table; our encoder keeps to ours.
void test_hpack_table_bounded(void **) {
    H2Settings hs;
    hs.header_table = 4096;
    Fixture f(settings(), hs, {{NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, 1u << 20}});
    for (int i = 0; i < 50; i++) {
        int32_t id = f.peer.request("GET", "/" + std::to_string(i), {{"x-r" + std::to_string(i), std::string(200, 'v')}});
        f.peer.pump(f.s);
        Exchange *x = f.s.take_request();
        assert_non_null(x);
        std::string n = "x-a" + std::to_string(i);
        std::string v(300, char('a' + i % 26));
        weir_header_t h[] = {{{n.data(), n.size()}, {v.data(), v.size()}}};
        assert_int_equal(f.s.respond(x, 200, h, 1, nullptr, 0, 0), 0);
        f.peer.pump(f.s);
        assert_int_equal(f.peer.got[id].status, 200);
    }
    assert_true(nghttp2_session_get_hd_deflate_dynamic_table_size(f.s.ng_) <= 4096);
    assert_true(nghttp2_session_get_hd_inflate_dynamic_table_size(f.s.ng_) <= 4096);
}

// Rapid reset (CVE-2023-44487): streams opened and reset before their
// answer, max_resets of the last reset_window.
size_t rapid_reset(Fixture &f, int n) {
    int i = 0;
    for (; i < n && !f.s.wants_close(); i++) {
        int32_t id = f.peer.get("/r");
        f.peer.to_server(f.s); // the HEADERS leave (a reset of a queued one would cancel it)
        nghttp2_submit_rst_stream(f.peer.ng, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
        f.peer.pump(f.s);
    }
    return static_cast<size_t>(i);
}

void test_rapid_reset(void **) {
    H2Settings hs;
    hs.max_resets = 100;
    hs.reset_window = 200;
    {
        // Positive arm: the 101st reset closes with ENHANCE_YOUR_CALM.
        Fixture f(settings(), hs);
        size_t done = rapid_reset(f, 1000);
        assert_int_equal(done, 101);
        assert_int_equal(f.s.close_reason(), WEIR_CLOSE_H2_ABUSE);
        assert_int_equal(f.s.h2_counters().rapid_resets, 1);
        assert_int_equal(f.peer.goaway_code, NGHTTP2_ENHANCE_YOUR_CALM);
        assert_int_equal(static_cast<int>(f.s.wait()), static_cast<int>(ConnWait::Done));
    }
    {
        // A client that resets some of its streams is not an attacker.
        Fixture f(settings(), hs);
        for (int i = 0; i < 1000; i++) {
            int32_t id = f.peer.get("/r");
            f.peer.to_server(f.s);
            if (i % 4 == 0)
                nghttp2_submit_rst_stream(f.peer.ng, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
            f.peer.pump(f.s);
            while (Exchange *x = f.s.take_request())
                f.s.respond(x, 200, nullptr, 0, nullptr, 0, 0);
            f.peer.pump(f.s);
        }
        assert_false(f.s.wants_close());
    }
    {
        // Negative arm (bound off): 1000 streams opened and reset, each
        // costing a stream's work, and the connection never closes.
        H2Session::hooks().no_rapid_reset = true;
        Fixture f(settings(), hs);
        size_t done = rapid_reset(f, 1000);
        H2Session::hooks().no_rapid_reset = false;
        assert_int_equal(done, 1000);
        assert_int_equal(f.s.h2_counters().resets_by_peer, 1000);
        assert_false(f.s.wants_close());
    }
}

// CONTINUATION flood (CVE-2024-27316): a header block of too many frames,
// or too many bytes, closes the connection before it is decoded whole.
std::string continuation_flood(int frames, size_t each) {
    std::string lit = std::string("\x40\x01x", 3); // literal, new name "x"
    std::string v(each, 'c');
    std::string in = frame(NGHTTP2_HEADERS, 0, 1, kGetBlock);
    for (int i = 0; i < frames; i++) {
        std::string field = lit;
        if (each < 127) {
            field.push_back(char(each));
        } else { // HPACK integer, 7-bit prefix
            size_t left = each - 127;
            field.push_back(char(0x7f));
            while (left >= 128) {
                field.push_back(char(0x80 | (left & 0x7f)));
                left >>= 7;
            }
            field.push_back(char(left));
        }
        in += frame(NGHTTP2_CONTINUATION, 0, 1, field + v);
    }
    return in;
}

void test_continuation_flood(void **) {
    H2Settings hs;
    hs.max_continuations = 32;
    {
        // Positive arm, count: 40 small frames, closed at the 33rd.
        Fixture f(settings(), hs);
        f.peer.pump(f.s);
        Peer::feed(f.s, continuation_flood(40, 1));
        assert_int_equal(f.s.close_reason(), WEIR_CLOSE_H2_ABUSE);
        assert_int_equal(f.s.h2_counters().continuation_floods, 1);
        f.peer.from_server(f.s);
        assert_int_equal(f.peer.goaway_code, NGHTTP2_ENHANCE_YOUR_CALM);
    }
    {
        // Positive arm, bytes: 3 frames of 16000 bytes (past 2 x 16384).
        Fixture f(settings(), hs);
        f.peer.pump(f.s);
        Peer::feed(f.s, continuation_flood(3, 16000));
        assert_int_equal(f.s.close_reason(), WEIR_CLOSE_H2_ABUSE);
        assert_int_equal(f.s.h2_counters().continuation_floods, 1);
    }
    {
        // Negative arm (bound off): the same 3 x 16000 bytes are decoded to
        // the end (the list bound then answers 431): work and memory for
        // a block no bound stopped.
        H2Session::hooks().no_continuation_bound = true;
        Fixture f(settings(), hs);
        f.peer.pump(f.s);
        std::string in = continuation_flood(3, 16000);
        in += frame(NGHTTP2_CONTINUATION, NGHTTP2_FLAG_END_HEADERS | NGHTTP2_FLAG_END_STREAM, 1, "");
        Peer::feed(f.s, in);
        H2Session::hooks().no_continuation_bound = false;
        assert_false(f.s.wants_close());
        assert_int_equal(f.s.h2_counters().continuation_floods, 0);
        assert_int_equal(f.s.h2_counters().headers_too_large, 1);
    }
}

// SETTINGS, PING, WINDOW_UPDATE, empty DATA: max_control_frames between
// answers.
std::string flood_of(int kind, int n) {
    std::string in;
    for (int i = 0; i < n; i++) {
        switch (kind) {
        case 0:
            in += frame(NGHTTP2_PING, 0, 0, std::string(8, char(i)));
            break;
        case 1:
            in += frame(NGHTTP2_SETTINGS, 0, 0, "");
            break;
        case 2:
            in += frame(NGHTTP2_WINDOW_UPDATE, 0, 0, std::string("\0\0\0\1", 4));
            break;
        default:
            in += frame(NGHTTP2_DATA, 0, 1, "");
            break;
        }
    }
    return in;
}

void test_control_floods(void **) {
    H2Settings hs;
    hs.max_control_frames = 1000;
    for (int kind = 0; kind < 4; kind++) {
        Fixture f(settings(), hs);
        f.peer.pump(f.s);
        if (kind == 3) { // an open stream for the DATA frames
            f.peer.request("POST", "/", {}, nullptr, true);
            f.peer.to_server(f.s);
        }
        // 1000 in batches with the output drained: allowed.
        for (int b = 0; b < 10; b++) {
            Peer::feed(f.s, flood_of(kind, 100 - (b == 0 ? 1 : 0)) /* the client's SETTINGS counted */);
            drain(f.s);
        }
        assert_false(f.s.wants_close());
        Peer::feed(f.s, flood_of(kind, 2));
        assert_int_equal(f.s.close_reason(), WEIR_CLOSE_H2_ABUSE);
        assert_true(f.s.h2_counters().floods >= 1);
    }
    {
        // Negative arm (bound off): 5000 PINGs, 5000 ACKs written for them,
        // the connection never closes.
        H2Session::hooks().no_control_bound = true;
        Fixture f(settings(), hs);
        f.peer.pump(f.s);
        size_t out = 0;
        for (int b = 0; b < 50; b++) {
            Peer::feed(f.s, flood_of(0, 100));
            out += drain(f.s).size();
        }
        H2Session::hooks().no_control_bound = false;
        assert_false(f.s.wants_close());
        assert_int_equal(out, 5000 * 17);
    }
}

// A peer that never reads: unsent output past max_output_bytes closes.
void test_output_limit(void **) {
    ConnSettings cs = settings();
    cs.max_output_bytes = 100000;
    Fixture f(cs);
    f.peer.pump(f.s);
    for (int i = 0; i < 20; i++)
        f.peer.get("/" + std::to_string(i));
    f.peer.to_server(f.s);
    std::string body(10000, 'o');
    Exchange *x;
    int answered = 0;
    while ((x = f.s.take_request()) != nullptr)
        if (f.s.respond(x, 200, nullptr, 0, body.data(), body.size(), 0) == 0)
            answered++;
    // Nothing was written; 20 x 10000 bytes are more than the bound.
    assert_true(f.s.wants_close());
    assert_int_equal(f.s.close_reason(), WEIR_CLOSE_OUTPUT_LIMIT);
    assert_int_equal(static_cast<int>(f.s.wait()), static_cast<int>(ConnWait::Done));
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_streams_refused), cmocka_unit_test(test_header_list_431),
        cmocka_unit_test(test_body_over_max_413),          cmocka_unit_test(test_hpack_table_bounded),
        cmocka_unit_test(test_rapid_reset),                cmocka_unit_test(test_continuation_flood),
        cmocka_unit_test(test_control_floods),             cmocka_unit_test(test_output_limit),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
