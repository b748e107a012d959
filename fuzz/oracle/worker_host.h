// The worker fuzz target's host: a driven-mode host (as the Go binding is)
// that holds the exchanges weir_worker_poll hands out and acts on them as
// the schedule says — whole answers, streamed answers within the window,
// streamed request bodies, upgrades and their take, file answers, interim
// answers, aborts — through the lib/loop entry points capi/ calls. It keeps
// what it answered for each request, so the client side can be checked
// against it, and checks every call's result against weir.h's rules: a
// handle once consumed is refused stale by every call (after weir_upgrade,
// by every call but the take: stale, or WEIR_E_STATE, "its answer began").
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "loop/worker.h"
#include "util/codes.h"
#include "weir.h"
#include "worker_port.h"

namespace worker_fuzz {

// What the host answered for one request (by its place on its connection).
struct Expect {
    enum Kind { None, Whole, Stream, File, Upgrade, RawUpgrade, Abort };
    Kind kind = None;
    int status = 0;
    std::string body;     // a stream's: what was written so far
    bool ended = false;   // whole, file, or a stream that ended (not aborted)
    bool cut = false;     // stream_abort: the body stops short
    std::vector<int> interims;
    int engine_status = 0; // weir answered it itself (413 for a streamed body past max_body)
};

struct Held {
    weir_exchange *x = nullptr;
    size_t client = 0;
    size_t index = 0; // the request's place on its connection
    enum State { Fresh, Streaming, Upgrading, Done } st = Fresh;
    bool head = false, body_stream = false, upgrade_asked = false;
    bool body_over = false;   // body_read said it is over (0 or an error)
    bool handed_back = false; // came back in a poll after an upgrade
    uint64_t length = 0;      // a stream's announced length (WEIR_LENGTH_UNKNOWN)
    uint64_t written = 0;
    size_t take_room = 0;     // what the last -ENOBUFS said the take needs
};

// One small regular file for file answers, made once per process.
inline int temp_file(std::string *content) {
    static std::string data;
    static int fd = -1;
    if (fd < 0) {
        char path[] = "/tmp/weir-fuzz-worker-XXXXXX";
        fd = ::mkstemp(path);
        if (fd < 0)
            return -1;
        ::unlink(path);
        for (int i = 0; i < 3000; i++)
            data.push_back(static_cast<char>('a' + i % 26));
        if (::write(fd, data.data(), data.size()) != static_cast<ssize_t>(data.size()))
            return -1;
    }
    *content = data;
    return fd;
}

class Host {
  public:
    weir::Worker *w = nullptr;
    FuzzPort *port = nullptr;
    std::vector<Held> held;
    std::vector<std::vector<Expect>> expects; // by client, by request index
    const char *why = nullptr;

    // One poll: new exchanges join held; ones it holds already come back
    // (a stream's room, a body's bytes, an upgrade's hand-back, a report).
    // The exchanges it handed out (0: a pass ran and nothing was ready;
    // a poll that finds exchanges ready hands them out without a pass).
    int poll() {
        weir_exchange *xs[32];
        int n = w->poll(xs, 32, 0);
        if (n < 0) {
            why = "poll failed";
            return 0;
        }
        for (int i = 0; i < n; i++)
            take(xs[i]);
        return n;
    }

    // ---- host actions; a is the schedule's argument bytes
    void respond(Held &h, uint8_t a, bool abort) {
        static const int kStatus[8] = {200, 201, 204, 304, 404, 500, 503, 299};
        int status = kStatus[a & 7];
        std::string body = tag(h);
        uint32_t flags = (a & 8) ? WEIR_RESPOND_CLOSE : 0;
        if (abort)
            flags |= WEIR_RESPOND_ABORT;
        int rc = weir::exchange_respond(X(h), status, nullptr, 0, body.data(), body.size(), flags);
        if (std::getenv("WORKER_FUZZ_DEBUG"))
            std::fprintf(stderr, "respond %zu.%zu -> %d\n", h.client, h.index, rc);
        if (!allowed(h, rc, {0, WEIR_E_GONE, WEIR_E_STALE, -EINVAL}))
            return;
        if (rc == 0) {
            Expect &e = expect(h);
            e.kind = abort ? Expect::Abort : Expect::Whole;
            e.status = status;
            e.body = body;
            e.ended = true;
        }
        consumed_by(h, rc, rc == 0 || rc == WEIR_E_GONE || rc == WEIR_E_STALE);
    }
    void stream_start(Held &h, uint8_t a, uint8_t len) {
        static const int kStatus[4] = {200, 206, 204, 404};
        int status = kStatus[a & 3];
        uint64_t length = (a & 4) ? len : WEIR_LENGTH_UNKNOWN;
        int rc = weir::exchange_stream_start(X(h), status, nullptr, 0, length, 0);
        if (!allowed(h, rc, {0, WEIR_E_GONE, WEIR_E_STALE, -EINVAL}))
            return;
        if (rc == 0) {
            h.st = Held::Streaming;
            h.length = length;
            h.written = 0;
            Expect &e = expect(h);
            e.kind = Expect::Stream;
            e.status = status;
        }
        consumed_by(h, rc, rc == WEIR_E_GONE || rc == WEIR_E_STALE);
    }
    void stream_write(Held &h, uint8_t n) {
        std::string piece;
        for (uint8_t i = 0; i < n; i++)
            piece.push_back(static_cast<char>('A' + (h.written + i) % 26));
        int rc = weir::exchange_stream_write(X(h), piece.data(), piece.size());
        if (!allowed(h, rc, {0, -EAGAIN, -EMSGSIZE, -EINVAL, WEIR_E_STATE, WEIR_E_GONE, WEIR_E_STALE}))
            return;
        if (rc == 0) {
            if (h.st != Held::Streaming) {
                why = "stream_write succeeded on an exchange whose stream was not started";
                return;
            }
            if (h.length != WEIR_LENGTH_UNKNOWN && h.written + n > h.length && !bodiless(h)) {
                why = "stream_write took bytes past the announced length";
                return;
            }
            h.written += n;
            expect(h).body += piece;
        }
        if (rc == WEIR_E_STATE && h.st == Held::Streaming)
            why = "stream_write said WEIR_E_STATE on a started stream";
        consumed_by(h, rc, rc == WEIR_E_GONE || rc == WEIR_E_STALE);
    }
    void stream_end(Held &h) {
        int rc = weir::exchange_stream_end(X(h), nullptr, 0);
        if (!allowed(h, rc, {0, -EINVAL, WEIR_E_STATE, WEIR_E_GONE, WEIR_E_STALE}))
            return;
        if (rc == 0) {
            if (h.st != Held::Streaming || (h.length != WEIR_LENGTH_UNKNOWN && h.written != h.length && !bodiless(h))) {
                if (std::getenv("WORKER_FUZZ_DEBUG"))
                    std::fprintf(stderr, "stream_end: state %d length %llu written %llu head %d status %d\n", static_cast<int>(h.st), static_cast<unsigned long long>(h.length), static_cast<unsigned long long>(h.written), h.head, expect(h).status);
                why = "stream_end succeeded on an exchange not streaming, or short of its length";
                return;
            }
            expect(h).ended = true;
        }
        consumed_by(h, rc, rc == 0 || rc == WEIR_E_GONE || rc == WEIR_E_STALE);
    }
    void stream_abort(Held &h) {
        int rc = weir::exchange_stream_abort(X(h));
        if (!allowed(h, rc, {0, WEIR_E_STATE, WEIR_E_GONE, WEIR_E_STALE}))
            return;
        if (rc == 0) {
            if (h.st != Held::Streaming) {
                why = "stream_abort succeeded on an exchange not streaming";
                return;
            }
            expect(h).cut = true;
        }
        consumed_by(h, rc, rc == 0 || rc == WEIR_E_GONE || rc == WEIR_E_STALE);
    }
    void stream_room(Held &h) {
        int64_t rc = weir::exchange_stream_room(X(h));
        if ((h.st == Held::Done && rc != WEIR_E_STALE) ||
            (h.st == Held::Upgrading && rc != WEIR_E_STALE && rc != WEIR_E_STATE))
            why = "stream_room on a consumed handle was not refused stale";
        else if (h.st == Held::Streaming && rc < 0 && rc != WEIR_E_STALE)
            why = "stream_room failed on a started stream";
        if (rc == WEIR_E_STALE && h.st != Held::Upgrading)
            h.st = Held::Done;
    }
    void body_read(Held &h, uint8_t cap) {
        char buf[256];
        size_t n = static_cast<size_t>(cap) + 1;
        int64_t rc = weir::exchange_body_read(X(h), buf, n);
        if (h.st == Held::Done || h.st == Held::Upgrading) {
            if (rc != WEIR_E_STALE && !(h.st == Held::Upgrading && rc == WEIR_E_STATE))
                why = note("body_read on a consumed handle was not refused stale", rc);
            return;
        }
        if (rc > static_cast<int64_t>(n)) {
            why = "body_read returned more than the buffer holds";
            return;
        }
        if (rc > 0 && (!h.body_stream || h.body_over)) {
            why = "body_read gave bytes of a body that does not stream, or is over";
            return;
        }
        body_read_result(h, rc);
    }
    void upgrade(Held &h, bool raw) {
        static const char kName[] = "Upgrade", kValue[] = "fuzz";
        weir_header_t hd{{kName, sizeof kName - 1}, {kValue, sizeof kValue - 1}};
        int rc = weir::exchange_upgrade(X(h), raw ? nullptr : &hd, raw ? 0 : 1, raw);
        if (!allowed(h, rc, {0, -EINVAL, WEIR_E_GONE, WEIR_E_STALE}))
            return;
        if (rc == 0) {
            if (!h.upgrade_asked || h.body_stream) {
                why = "weir_upgrade accepted a request that did not ask for one, or whose body streams";
                return;
            }
            h.st = Held::Upgrading;
            Expect &e = expect(h);
            e.kind = raw ? Expect::RawUpgrade : Expect::Upgrade;
            e.status = 101;
            e.ended = true;
        }
        consumed_by(h, rc, rc == WEIR_E_GONE || rc == WEIR_E_STALE);
    }
    // room: the buffer's size (the end passes what -ENOBUFS asked for).
    void upgrade_take(Held &h, size_t room) {
        std::string buf(room ? room : 1, '\0');
        size_t len = 0;
        int fd = -1;
        int rc = weir::exchange_upgrade_take(X(h), &fd, buf.data(), room, &len);
        if (!allowed(h, rc, {0, -EAGAIN, -ENOBUFS, -EINVAL, WEIR_E_STATE, WEIR_E_GONE, WEIR_E_STALE}, false, true))
            return;
        if (rc == -ENOBUFS) {
            if (len <= room)
                why = "upgrade_take said -ENOBUFS for bytes that fit";
            h.take_room = len;
        }
        if (rc == 0) {
            Client &c = port->clients[h.client];
            if (h.st != Held::Upgrading || fd != c.fd || !c.released || len > room) {
                why = "upgrade_take gave a connection that was not this upgrade's, or not released";
                return;
            }
            if (::close(fd) != 0)
                why = "upgrade_take gave a descriptor that was closed already";
        }
        if (rc == -EAGAIN && h.st != Held::Upgrading)
            why = "upgrade_take said -EAGAIN for an exchange that is not upgrading";
        consumed_by(h, rc, rc == 0 || rc == WEIR_E_GONE || rc == WEIR_E_STALE);
    }
    void respond_file(Held &h, uint8_t a, uint8_t b) {
        std::string content;
        int fd = temp_file(&content);
        if (fd < 0) {
            why = "no temp file";
            return;
        }
        uint64_t off = static_cast<uint64_t>(a) * 11, len = static_cast<uint64_t>(b) * 10;
        if (a == 255)
            len = 4000; // past the file's end: refused, nothing done
        int rc = weir::exchange_respond_file(X(h), 200, nullptr, 0, fd, off, len, 0);
        bool bad = off + len > content.size(); // refused for its arguments before its handle is looked at
        if (!allowed(h, rc, {0, -EINVAL, WEIR_E_GONE, WEIR_E_STALE}, bad))
            return;
        if (rc == -EINVAL && off + len <= content.size() && h.st == Held::Fresh)
            why = "respond_file refused a range inside the file";
        if (rc == 0) {
            Expect &e = expect(h);
            e.kind = Expect::File;
            e.status = 200;
            e.body = content.substr(off, len);
            e.ended = true;
        }
        consumed_by(h, rc, rc == 0 || rc == WEIR_E_GONE || rc == WEIR_E_STALE);
    }
    void interim(Held &h, bool hints) {
        static const char kName[] = "Link", kValue[] = "</s.css>; rel=preload";
        weir_header_t hd{{kName, sizeof kName - 1}, {kValue, sizeof kValue - 1}};
        int status = hints ? 103 : 100;
        int rc = weir::exchange_interim(X(h), status, hints ? &hd : nullptr, hints ? 1 : 0);
        if (!allowed(h, rc, {0, -EINVAL, WEIR_E_STALE}))
            return;
        if (rc == 0)
            expect(h).interims.push_back(status);
        consumed_by(h, rc, rc == WEIR_E_STALE);
    }

    // The end: every exchange still held is answered or taken, as a host
    // must, and each call's result checked. Returns whether anything is left.
    bool finish_one(Held &h) {
        switch (h.st) {
        case Held::Done:
            return false;
        case Held::Fresh:
            if (h.body_stream && !h.body_over) {
                for (int i = 0; i < 64 && !h.body_over && h.st != Held::Done; i++) {
                    char buf[256];
                    int64_t rc = weir::exchange_body_read(X(h), buf, sizeof buf);
                    if (rc == -EAGAIN)
                        break; // answer before the body's end: weir closes after the answer
                    body_read_result(h, rc);
                }
                if (h.st == Held::Done)
                    return false;
            }
            respond(h, 0, false);
            return h.st != Held::Done;
        case Held::Streaming:
            while (h.st == Held::Streaming && h.length != WEIR_LENGTH_UNKNOWN && h.written < h.length && !bodiless(h)) {
                uint64_t before = h.written;
                stream_write(h, static_cast<uint8_t>(std::min<uint64_t>(h.length - h.written, 64)));
                if (h.written == before)
                    return h.st != Held::Done; // -EAGAIN: the window is full; the next round
            }
            if (h.st == Held::Streaming)
                stream_end(h);
            return h.st != Held::Done;
        case Held::Upgrading:
            upgrade_take(h, std::max<size_t>(h.take_room, 512));
            return h.st != Held::Done;
        }
        return false;
    }

  private:
    // The finding with the result that made it (one buffer: the first
    // finding ends the run).
    static const char *note(const char *what, int64_t rc) {
        static char buf[160];
        std::snprintf(buf, sizeof buf, "%s (%lld, %s)", what, static_cast<long long>(rc),
                      rc < 0 && rc >= -4095 ? strerrorname_np(static_cast<int>(-rc)) : weir::code_name(static_cast<int>(rc)));
        return buf;
    }
    static weir_exchange *X(const Held &h) { return h.x; }

    Expect &expect(const Held &h) { return expects[h.client][h.index]; }
    // No body is sent (HEAD, 204, 304): pieces are accepted and discarded,
    // and a stream's announced length is not owed.
    bool bodiless(const Held &h) {
        int st = expect(h).status;
        return h.head || st == 204 || st == 304;
    }

    std::string tag(const Held &h) const {
        return "#" + std::to_string(h.client) + "." + std::to_string(h.index);
    }

    void take(weir_exchange *x) {
        for (Held &h : held)
            if (h.x == x) {
                if (h.st == Held::Upgrading)
                    h.handed_back = true;
                return; // a hand-back or a report: the same request
            }
        const weir_request *r = weir::exchange_request(x);
        if (!r) {
            why = "poll handed out a handle that names no request";
            return;
        }
        Client *c = port->by_conn(r->connection_id);
        if (!c) {
            why = "poll handed out a request of no connection the port started";
            return;
        }
        Held h;
        h.x = x;
        h.client = static_cast<size_t>(c - port->clients.data());
        if (expects.size() < port->clients.size())
            expects.resize(port->clients.size());
        h.index = expects[h.client].size();
        expects[h.client].emplace_back();
        h.head = r->method.len == 4 && std::string(r->method.ptr, 4) == "HEAD";
        h.body_stream = (r->flags & WEIR_REQ_BODY_STREAM) != 0;
        h.upgrade_asked = (r->flags & WEIR_REQ_UPGRADE) != 0;
        held.push_back(h);
    }

    void body_read_result(Held &h, int64_t rc) {
        if (rc == 0 || (rc < 0 && rc != -EAGAIN))
            h.body_over = true;
        if (rc == WEIR_E_BODY_TOO_LARGE)
            expect(h).engine_status = 413; // consumed: weir answered it
        if (rc == WEIR_E_BODY_TOO_LARGE || rc == WEIR_E_GONE || rc == WEIR_E_STALE)
            h.st = Held::Done;
    }

    // Whether rc is one of the results weir.h documents for the call; a
    // consumed handle must be refused stale, whatever the call.
    // bad_args: the call's own arguments are invalid, which weir may say
    // (-EINVAL) before it looks at the handle.
    // After weir_upgrade the handle is the take's only: every other call is
    // refused stale (take: the call is weir_upgrade_take).
    bool allowed(Held &h, int64_t rc, std::initializer_list<int> ok, bool bad_args = false, bool take = false) {
        if (std::getenv("WORKER_FUZZ_DEBUG"))
            std::fprintf(stderr, "  %zu.%zu (state %d) -> %lld %s\n", h.client, h.index, static_cast<int>(h.st),
                         static_cast<long long>(rc), weir::code_name(static_cast<int>(rc)));
        if (h.st == Held::Done || (h.st == Held::Upgrading && !take)) {
            bool upgrading_state = h.st == Held::Upgrading && rc == WEIR_E_STATE; // "its answer began"
            if (rc != WEIR_E_STALE && !upgrading_state && !(bad_args && rc == -EINVAL)) {
                why = note("a call with a consumed handle was not refused stale", rc);
                return false;
            }
            return false;
        }
        for (int v : ok)
            if (rc == v)
                return true;
        why = note("a host call returned a result its documentation does not list", rc);
        return false;
    }
    void consumed_by(Held &h, int64_t rc, bool consumed) {
        (void)rc;
        if (consumed)
            h.st = Held::Done;
    }
};

} // namespace worker_fuzz
