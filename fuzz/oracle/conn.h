// The conn fuzz target's oracle: the connection state machine fed one byte stream under a
// random split schedule must write exactly what it writes when fed whole
// (100 Continue aside: it is owed only while a body has not yet arrived), and
// so must a run that moves the connection (detach, adopt by a Conn of
// another pool) at the request boundaries its schedule asks for.
// Input: byte 0 = number of schedule bytes (mod 32), then the schedule (each
// byte a piece length 1..256), then the stream. Answers go out in reverse
// order within each batch on the split side, to exercise reordering. On the
// split and moved sides the transport also takes short writes: each round it
// accepts at most the next schedule length (1..256 bytes) of output, then
// says EAGAIN (a lend returned with 0), so output stays queued across reads,
// answers and moves and must still come out byte for byte.
// With streaming, bodies of 64 bytes or more (and chunked ones) are handed
// out at their heads and read with body_read in 97-byte gulps, a round at a
// time, as they arrive; the whole, split and moved runs of that must agree too.
// The oracle lives in this header so fuzz/conn.cc (the libFuzzer entry) and
// tests/unit/conn/test_conn_corpus.cc (which replays fuzz/corpus/conn) share it.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "conn/conn.h"
#include "http1/parser.h"

namespace conn_fuzz {

// Dates may tick between two runs, so each Date header's value is erased,
// and only a value shaped as an IMF-fixdate ("Sun, 06 Dec 2026 22:17:43
// GMT", 29 bytes): an echoed body may hold "\r\nDate: " followed by
// anything, and erasing 29 bytes there would eat the next answer's status
// line and its real Date's "\r\nD", leaving that date unmasked (a run that
// crossed a second then differed: the oracle's fault, not weir's).
inline std::string mask_dates(std::string out) {
    size_t p = 0;
    while ((p = out.find("\r\nDate: ", p)) != std::string::npos) {
        size_t v = p + 8;
        if (v + 29 <= out.size() && out[v + 3] == ',' && out.compare(v + 25, 4, " GMT") == 0)
            out.erase(v, 29);
        p = v;
    }
    return out;
}

// moves: a piece whose length is odd asks for a move: the connection is held
// and, at its next request boundary, detached and adopted by a Conn of
// another pool with another buffer size, which must change nothing.
inline std::string run(const uint8_t *data, size_t size, const std::vector<size_t> &cuts, bool reverse,
                       const char **err, bool moves = false, bool short_writes = false, bool streaming = false) {
    weir::ConnSettings s[2];
    for (int i = 0; i < 2; ++i) {
        weir::http1::limits_default(&s[i].limits);
        s[i].limits.max_body = 4096;
        s[i].read_buffer_size = i ? 512 : 256;
        s[i].max_pipeline = 4;
        s[i].max_output_bytes = 1 << 20;
        if (streaming)
            s[i].stream_body_bytes = 64;
    }
    struct Reading {
        weir::Exchange *x;
        std::string body;
    };
    std::vector<Reading> reading; // streamed bodies not yet read to their end
    weir::ConnPool pools[2] = {weir::ConnPool(s[0]), weir::ConnPool(s[1])};
    int side = 0;
    std::unique_ptr<weir::Conn> conn(new weir::Conn(s[0], pools[0], 1));
    bool move_asked = false;
    std::string out;
    size_t off = 0, ci = 0, wi = 0;
    for (int rounds = 0; rounds < 100000; ++rounds) {
        weir::Conn &c = *conn;
        size_t piece = ci < cuts.size() ? cuts[ci++] : size - off;
        if (moves && (piece & 1) && !move_asked) {
            c.hold();
            move_asked = true;
        }
        size_t stop = off + piece > size ? size : off + piece;
        while (off < stop) {
            iovec sp = c.read_space();
            if (sp.iov_len == 0)
                break;
            size_t n = stop - off < sp.iov_len ? stop - off : sp.iov_len;
            std::memcpy(sp.iov_base, data + off, n);
            c.on_read(n);
            off += n;
        }
        std::vector<weir::Exchange *> batch;
        while (weir::Exchange *x = c.take_request())
            batch.push_back(x);
        if (reverse)
            std::reverse(batch.begin(), batch.end());
        auto answer = [&](weir::Exchange *x, const std::string &got) {
            std::string body = std::string(x->req.method.ptr, x->req.method.len) + " " +
                               std::string(x->req.target.ptr, x->req.target.len) + " " + got;
            for (uint32_t i = 0; i < x->req.num_trailers; ++i)
                body.append(x->req.trailers[i].value.ptr, x->req.trailers[i].value.len);
            if (c.respond(x, 200, nullptr, 0, body.data(), body.size(), 0) != 0)
                *err = "respond refused a valid answer";
        };
        for (weir::Exchange *x : batch) {
            if (x->req.flags & WEIR_REQ_BODY_STREAM)
                reading.push_back({x, {}});
            else
                answer(x, std::string(x->req.body.ptr, x->req.body.len));
        }
        bool progress = false; // a body moved on: the requests behind it may be parsed now
        for (size_t i = 0; i < reading.size();) {
            char gulp[97];
            int64_t n;
            while ((n = c.body_read(reading[i].x, gulp, sizeof gulp)) > 0)
                reading[i].body.append(gulp, static_cast<size_t>(n));
            if (n == -EAGAIN) {
                ++i;
                continue;
            }
            progress = true;
            if (n == 0)
                answer(reading[i].x, reading[i].body);
            else if (n != WEIR_E_GONE)
                answer(reading[i].x, "error " + std::to_string(n) + " after " + reading[i].body);
            reading.erase(reading.begin() + static_cast<long>(i));
        }
        iovec iov[2];
        // The socket's room this round: all of it, or a schedule length.
        size_t room = short_writes && !cuts.empty() ? cuts[wi++ % cuts.size()] : SIZE_MAX;
        while (room > 0) {
            size_t k = c.output_iov(iov, 2);
            if (k == 0)
                break;
            size_t t = 0;
            for (size_t i = 0; i < k && t < room; ++i) {
                size_t n = std::min(iov[i].iov_len, room - t);
                out.append(static_cast<char *>(iov[i].iov_base), n);
                t += n;
            }
            c.on_written(t);
            room -= t;
        }
        if (room == 0 && c.output_iov(iov, 2))
            c.on_written(0); // EAGAIN: the lend comes back with nothing written
        if (move_asked && c.detachable()) {
            weir::ConnImage img;
            if (!c.detach(img)) {
                *err = "detach refused at a request boundary";
                break;
            }
            side ^= 1;
            conn.reset(new weir::Conn(s[side], pools[side], img.id));
            if (!conn->adopt(img))
                *err = "adopt failed";
            move_asked = false;
            continue; // the adopter parses what waited
        }
        // Done once no more will be read and everything queued is out.
        if ((c.wants_close() || (off >= size && batch.empty() && !progress)) && c.output_pending() == 0)
            break;
    }
    size_t p;
    while ((p = out.find("HTTP/1.1 100 Continue\r\n\r\n")) != std::string::npos)
        out.erase(p, 25);
    return mask_dates(out);
}

// nullptr when whole and split runs agree, else what went wrong.
inline const char *one(const uint8_t *data, size_t size) {
    if (size < 1)
        return nullptr;
    size_t k = data[0] % 32;
    if (size < 1 + k)
        return nullptr;
    std::vector<size_t> cuts;
    for (size_t i = 0; i < k; ++i)
        cuts.push_back(size_t{data[1 + i]} + 1);
    const uint8_t *stream = data + 1 + k;
    size_t n = size - 1 - k;
    const char *err = nullptr;
    std::string whole = run(stream, n, {}, false, &err);
    std::string split = run(stream, n, cuts, true, &err, false, true);
    std::string moved = run(stream, n, cuts, false, &err, true, true);
    if (err)
        return err;
    if (whole != split)
        return "split schedule changed the output";
    if (whole != moved)
        return "moving the connection changed the output";
    std::string swhole = run(stream, n, {}, false, &err, false, false, true);
    std::string ssplit = run(stream, n, cuts, true, &err, false, true, true);
    std::string smoved = run(stream, n, cuts, false, &err, true, true, true);
    if (err)
        return err;
    if (swhole != ssplit)
        return "split schedule changed the output of streamed bodies";
    if (swhole != smoved)
        return "moving the connection changed the output of streamed bodies";
    return nullptr;
}

} // namespace conn_fuzz
