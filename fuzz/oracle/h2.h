// The HTTP/2 session's fuzz oracle (fuzz/h2_session.cc; replayed by
// tests/unit/h2/test_h2_corpus.cc): frames in, actions out. After a valid
// client preface, the input is a program of operations: feed bytes (whole
// or through the read lend), take requests and answer them in varied ways
// (whole, HEAD-like, streamed with trailers, aborted, closing, held back),
// read streamed bodies, drain output with short writes, take resets, drain
// or close the session, the peer's EOF, timeouts. It must never crash or
// leak (ASan), and its books must balance: outstanding() counts exactly the
// exchanges we hold, lends are single, a Done session writes nothing, and
// at the end every exchange answered leaves outstanding() at 0.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "conn/conn.h"
#include "h2/h2_session.h"
#include "http1/parser.h"

namespace h2_fuzz {

struct Reader {
    const uint8_t *p;
    size_t n;
    uint8_t byte() {
        if (!n)
            return 0;
        n--;
        return *p++;
    }
};

inline const char *one(const uint8_t *data, size_t size) {
    using namespace weir;
    Reader in{data, size};
    uint8_t cfg = in.byte();
    ConnSettings cs;
    http1::limits_default(&cs.limits);
    cs.read_buffer_size = (cfg & 1) ? 512 : 16384;
    cs.stream_body_bytes = (cfg & 2) ? 64 : 0;
    cs.limits.max_body = (cfg & 4) ? 4096 : (1u << 20);
    cs.limits.max_header_bytes = (cfg & 8) ? 1024 : 16384;
    cs.max_output_bytes = (cfg & 16) ? 65536 : (4u << 20);
    H2Settings hs;
    hs.max_concurrent_streams = (cfg & 32) ? 4 : 100;
    hs.max_resets = 20;
    hs.reset_window = 40;
    hs.max_control_frames = 200;
    ConnPool pool(cs);
    std::vector<Exchange *> held;
    const char *why = nullptr;
    {
        H2Session s(cs, hs, pool, 1);
        static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\4\0\0\0\0\0";
        s.take_bytes(preface, sizeof preface - 1);
        auto forget = [&held](Exchange *x) {
            for (size_t i = 0; i < held.size(); i++)
                if (held[i] == x) {
                    held[i] = held.back();
                    held.pop_back();
                    return;
                }
        };
        auto answer = [&](Exchange *x, uint8_t how) {
            static const char body[] = "0123456789abcdefghijklmnopqrstuvwxyz";
            weir_header_t h[] = {{{"X-Fuzz", 6}, {"1", 1}}, {{"Connection", 10}, {"close", 5}}};
            weir_header_t t[] = {{{"grpc-status", 11}, {"0", 1}}};
            int rc;
            switch (how % 7) {
            case 0:
                rc = s.respond(x, 200, h, 2, body, how % 37, 0);
                break;
            case 1:
                rc = s.respond(x, 204, nullptr, 0, nullptr, 0, 0);
                break;
            case 2:
                rc = s.respond(x, 500, h, 1, body, 5, WEIR_RESPOND_ABORT);
                break;
            case 3:
                rc = s.respond(x, 200, nullptr, 0, body, 3, WEIR_RESPOND_CLOSE);
                break;
            case 4:
            case 5: {
                bool sized = how & 8;
                rc = s.stream_start(x, 200, h, 1, sized ? 20 : UINT64_MAX, 0);
                for (int i = 0; rc == 0 && i < 2; i++)
                    rc = s.stream_write(x, body, 10);
                if (rc == 0 && how & 16) {
                    rc = s.stream_abort(x);
                } else if (rc == 0) {
                    rc = s.stream_end(x, t, sized ? 0 : 1);
                }
                if (rc == -EINVAL) // cannot be: the calls above are in order
                    return "stream calls refused";
                break;
            }
            default:
                return "keep"; // held back, answered later
            }
            if (rc != 0 && rc != WEIR_E_GONE && rc != -ENOMEM)
                return "an answer was refused";
            return (const char *)nullptr;
        };
        char rbuf[300];
        while (in.n && !why) {
            uint8_t op = in.byte();
            switch (op % 12) {
            case 0:
            case 1:
            case 2: { // bytes from the peer
                size_t len = in.byte();
                len = len > in.n ? in.n : len;
                if (op % 2 == 0) {
                    s.take_bytes(reinterpret_cast<const char *>(in.p), len);
                } else {
                    iovec sp = s.read_space();
                    size_t k = len < sp.iov_len ? len : sp.iov_len;
                    if (k)
                        std::memcpy(sp.iov_base, in.p, k);
                    if (sp.iov_len)
                        s.on_read(k);
                }
                in.p += len;
                in.n -= len;
                break;
            }
            case 3:
            case 4: // take requests and answer them
                while (Exchange *x = s.take_request()) {
                    if (x->owner != &s)
                        why = "foreign exchange";
                    const char *r = answer(x, in.byte());
                    if (r && std::strcmp(r, "keep") == 0)
                        held.push_back(x);
                    else if (r)
                        why = r;
                }
                break;
            case 5: { // answer one held
                if (held.empty())
                    break;
                Exchange *x = held[in.byte() % held.size()];
                forget(x);
                const char *r = answer(x, static_cast<uint8_t>(in.byte() % 6));
                if (r && std::strcmp(r, "keep") != 0)
                    why = r;
                break;
            }
            case 6: { // write: short writes
                iovec iov[4];
                size_t k = s.output_iov(iov, 4);
                if (k && s.output_iov(iov, 4) != 0)
                    why = "two write lends";
                size_t want = static_cast<size_t>(in.byte()) * 16, done = 0;
                for (size_t i = 0; i < k; i++)
                    done += iov[i].iov_len;
                if (k)
                    s.on_written(want < done ? want : done);
                break;
            }
            case 7: { // read held streamed bodies (WEIR_E_GONE releases the exchange)
                std::vector<Exchange *> now = held;
                for (Exchange *x : now)
                    if ((x->req.flags & WEIR_REQ_BODY_STREAM) && s.body_read(x, rbuf, 1 + in.byte()) == WEIR_E_GONE)
                        forget(x);
                break;
            }
            case 8:
                while (Exchange *x = s.take_reset()) {
                    bool ours = false;
                    for (Exchange *h : held)
                        ours |= h == x;
                    if (!ours)
                        why = "reset of an exchange not held";
                }
                break;
            case 9:
                s.close(in.byte() & 1 ? WEIR_CLOSE_SHUTDOWN : WEIR_CLOSE_IDLE_TIMEOUT);
                break;
            case 10:
                if (in.byte() & 1)
                    s.on_eof();
                else
                    s.expire_input(WEIR_CLOSE_HEADER_TIMEOUT);
                break;
            default:
                s.feed_files(1 << 16);
                s.hold();
                break;
            }
            if (!why && s.outstanding() != held.size())
                why = "outstanding() is not what we hold";
            if (!why) {
                size_t n = 0;
                s.each_taken([&](Exchange *) { n++; });
                if (n != s.outstanding())
                    why = "each_taken disagrees with outstanding";
            }
            if (s.wait() == ConnWait::Done && !s.lent()) {
                iovec iov[1];
                if (s.output_iov(iov, 1) != 0)
                    why = "Done with output";
            }
        }
        // The end: the fd closes; the zombie is answered down to nothing.
        iovec iov[4];
        size_t k = s.output_iov(iov, 4);
        if (k)
            s.on_written(0);
        s.on_closed();
        s.each_taken([&](Exchange *x) {
            int rc = s.respond(x, 200, nullptr, 0, nullptr, 0, 0);
            if (rc != WEIR_E_GONE && !why)
                why = "a dead session took an answer";
        });
        if (!why && s.outstanding() != 0)
            why = "exchanges left after on_closed";
        if (!why && s.lent())
            why = "lent after the end";
    }
    return why;
}

} // namespace h2_fuzz
