// The worker fuzz target's oracle: the shared worker (lib/loop) of a
// one-worker driven engine, on a port whose kernel is the fuzz input
// (worker_port.h), serving a host that acts on what it polls
// (worker_host.h). The input is a schedule:
//   byte 0   the config: bit 0 streamed request bodies (stream_body_bytes
//            64), bit 1 writes start stalled (EAGAIN until a grant), bit 2
//            a 256-byte read buffer (else 4096), bit 3 report_gone, bit 4
//            handler_timeout_ms 1500, bit 5 file answers as ranges the port
//            sends, bit 6 a small output limit (4 KiB, stream window 1 KiB),
//            bit 7 max_pipeline 4;
//   byte 1   max_body: 0 the default, 1 none allowed, 2 unlimited, else
//            16 * the byte;
//   then     operations, each a byte (mod kOps) and its argument bytes:
//            clients connect, send bytes (split as the schedule splits
//            them), FIN or reset; the transport grants write budget or fails
//            a write; the clock moves on (timers); the host polls and acts.
// Then the end, as a host and clients would end: every write granted, every
// exchange answered or taken, and the checks:
//   - every call with a consumed handle is refused stale, and every result
//     is one weir.h lists (worker_host.h);
//   - what each client read parses as HTTP/1.1 responses (worker_wire.h),
//     the k-th final one being the host's answer to the k-th request it was
//     handed from that connection (status, body; interim 1xx before it; a
//     101 last), or the engine's own answer (an error, a handler timeout's
//     503) after which nothing follows; a cut answer only where the
//     connection ended; on a connection still open, every answer whole;
//   - every connection ends once (closed or released) and its descriptor is
//     closed once; the metrics balance: accepted = every close reason's
//     count + open, and the closes counted = the connections that ended.
// ASan and UBSan (and the leak check) watch all of it.
#pragma once

#include <fcntl.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "http1/parser.h"
#include "loop/config.h"
#include "loop/engine.h"
#include "loop/hooks.h"
#include "worker_host.h"
#include "worker_port.h"
#include "worker_wire.h"

namespace worker_fuzz {

inline constexpr unsigned kOps = 20;
inline constexpr size_t kMaxClients = 8;

// The metrics the last run read before its engine went (tests).
inline weir_metrics &last_metrics() {
    static weir_metrics m{};
    return m;
}

struct Reader {
    const uint8_t *p;
    size_t n, i = 0;
    bool more() const { return i < n; }
    uint8_t u8() { return i < n ? p[i++] : 0; }
};

inline FuzzPort *g_port = nullptr; // the port the factory made for this run
inline int factory(uint32_t, std::unique_ptr<weir::Port> *out) {
    g_port = new FuzzPort;
    out->reset(g_port);
    return 0;
}

// The client side of one connection against what the host answered.
inline const char *check_wire(const Client &c, const std::vector<Held> &held, const std::vector<Expect> &ex,
                              size_t client) {
    // The engine speaks HTTP/2 (protocols auto, the default) to a client
    // that began with the preface, and after a 101 to `Upgrade: h2c`: its
    // frames are the h2_session target's to judge (fuzz/oracle/h2.h), and
    // here only the lifecycle checks hold for it (each connection ends
    // once, its descriptor closed once, accepted = closes + open).
    static const char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    static const char kH2c101[] = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";
    if (c.head == kPreface)
        return nullptr;
    std::vector<const Held *> by_index(ex.size(), nullptr);
    for (const Held &h : held)
        if (h.client == client)
            by_index[h.index] = &h;
    size_t pos = 0, k = 0;
    while (pos < c.out.size()) {
        bool head = k < by_index.size() && by_index[k] && by_index[k]->head;
        WireResponse r;
        if (c.out.compare(pos, sizeof kH2c101 - 1, kH2c101) == 0)
            return nullptr;
        Wire w = parse_response(c.out, pos, head, r);
        if (w == Wire::Malformed)
            return "a client read bytes that are not an HTTP/1.1 response";
        const Expect *e = k < ex.size() ? &ex[k] : nullptr;
        if (r.status < 200 && r.status != 101) { // interim
            if (w != Wire::Complete)
                return c.ended ? nullptr : "an interim answer was cut on a connection still open";
            if (r.status != 100) {
                bool sent = false;
                for (int s : e ? e->interims : std::vector<int>())
                    sent |= s == r.status;
                if (!sent)
                    return "an interim answer the host did not send";
            }
            continue;
        }
        if (e && e->kind == Expect::RawUpgrade)
            return "a response after a raw upgrade (weir writes nothing for it)";
        if (e && e->kind == Expect::Abort)
            return "a response for a request the host aborted";
        if (r.status == 101) {
            if (!e || e->kind != Expect::Upgrade)
                return "a 101 for a request the host did not upgrade";
            if (w != Wire::Complete)
                return c.ended ? nullptr : "a 101 cut on a connection still open";
            if (pos != c.out.size())
                return "bytes after a 101";
            return nullptr;
        }
        if (!e || e->kind == Expect::None) {
            // The engine's own answer: an error, or a handler timeout's 503.
            if (r.status < 400)
                return "a success for a request the host never answered";
            if (w == Wire::Complete && pos != c.out.size())
                return "bytes after the engine's own answer";
            if (e && r.status != 503 && r.status != 500 && r.status != e->engine_status)
                return "an answer the host did not give for a request it holds";
            return nullptr;
        }
        if (r.status != e->status)
            return "a response whose status is not the host's answer to that request";
        if (!r.head_only) {
            if (e->body.compare(0, r.body.size(), r.body) != 0 || r.body.size() > e->body.size())
                return "a body that is not what the host gave";
            if (w == Wire::Complete && !r.until_close && e->ended && r.body != e->body)
                return "a body shorter than the host's, framed as whole";
            if (w == Wire::Complete && e->cut && r.body.size() == e->body.size() && r.chunked)
                return "an aborted chunked stream that looks whole";
        }
        if (w != Wire::Complete)
            return c.ended ? nullptr : "an answer cut on a connection still open";
        k++;
    }
    if (!c.ended) // still open after the end: everything the host answered has left
        for (size_t i = k; i < ex.size(); i++)
            if (ex[i].kind != Expect::None && ex[i].kind != Expect::RawUpgrade && ex[i].kind != Expect::Abort)
                return "an answer the host gave never reached a connection still open";
    return nullptr;
}

inline void dump(const Client &c, const std::vector<Expect> &ex, size_t client) {
    std::fprintf(stderr, "client %zu (ended %d, released %d) read %zu bytes:\n", client, c.ended, c.released,
                 c.out.size());
    for (char ch : c.out)
        std::fprintf(stderr, ch == '\n' ? "\\n\n" : ch == '\r' ? "\\r" : "%c", ch);
    std::fprintf(stderr, "\n");
    for (size_t k = 0; k < ex.size(); k++)
        std::fprintf(stderr, "request %zu: kind %d status %d ended %d cut %d body %zu bytes\n", k,
                     static_cast<int>(ex[k].kind), ex[k].status, ex[k].ended, ex[k].cut, ex[k].body.size());
}

inline const char *one(const uint8_t *data, size_t size) {
    Reader in{data, size};
    // The file answers' file, made before any connection: opened later, it
    // could take the number of a connection closed this run, which the
    // descriptor check at the end would then find open.
    std::string file_content;
    if (temp_file(&file_content) < 0)
        return "no temp file for file answers";
    uint8_t cf = in.u8(), mb = in.u8();
    weir_http1_limits lim;
    weir::http1::limits_default(&lim);
    if (mb == 1)
        lim.max_body = 0;
    else if (mb == 2)
        lim.max_body = WEIR_BODY_UNLIMITED;
    else if (mb > 2)
        lim.max_body = 16ull * mb;
    weir_config cfg;
    weir::config_defaults(&cfg);
    cfg.workers = 1;
    cfg.mode = WEIR_MODE_DRIVEN;
    cfg.defer_accept = 0;
    cfg.limits = &lim;
    cfg.header_timeout_ms = 1000;
    cfg.idle_timeout_ms = 3000;
    cfg.write_timeout_ms = 2000;
    cfg.body_timeout_ms = 1000;
    cfg.stream_body_bytes = (cf & 1) ? 64 : 0;
    cfg.read_buffer_size = (cf & 4) ? 256 : 4096;
    cfg.report_gone = (cf & 8) ? 1 : 0;
    cfg.handler_timeout_ms = (cf & 16) ? 1500 : 0;
    cfg.max_output_bytes = (cf & 64) ? 4096 : 65536;
    cfg.stream_window_bytes = (cf & 64) ? 1024 : 8192;
    cfg.max_pipeline = (cf & 128) ? 4 : 64;
    weir::Engine *e = nullptr;
    g_port = nullptr;
    g_port_why = nullptr;
    if (weir::Engine::create(&cfg, &e, factory) != 0 || !g_port)
        return "engine create failed";
    std::unique_ptr<weir::Engine> own(e);
    if (e->listen() != 0)
        return nullptr; // no socket to listen on (out of descriptors): nothing to judge
    FuzzPort &port = *g_port;
    port.ranges = (cf & 32) != 0;
    bool stalled = (cf & 2) != 0;
    bool trace = std::getenv("WORKER_FUZZ_DEBUG") != nullptr;
    Host host;
    host.w = e->worker(0);
    host.port = &port;
    auto client = [&](uint8_t a) -> Client * {
        return port.clients.empty() ? nullptr : &port.clients[a % port.clients.size()];
    };
    auto pick = [&](uint8_t a) -> Held * { return host.held.empty() ? nullptr : &host.held[a % host.held.size()]; };
    while (in.more() && !host.why && !g_port_why) {
        unsigned op = in.u8() % kOps;
        uint8_t a = in.u8();
        if (trace)
            std::fprintf(stderr, "op %u arg %u (held %zu, clients %zu)\n", op, a, host.held.size(),
                         port.clients.size());
        Client *c = nullptr;
        Held *h = nullptr;
        switch (op) {
        case 0:
            if (port.clients.size() < kMaxClients && port.connect() >= 0 && stalled)
                port.clients.back().budget = 0;
            host.poll();
            break;
        case 1: { // a bytes from the input, as one arrival
            size_t n = std::min<size_t>(in.u8(), in.n - in.i);
            if ((c = client(a)))
                port.send(*c, reinterpret_cast<const char *>(in.p + in.i), n);
            in.i += n;
            break;
        }
        case 2:
            if ((c = client(a)))
                port.fin(*c);
            break;
        case 3:
            if ((c = client(a)))
                port.reset(*c);
            break;
        case 4: {
            uint8_t b = in.u8();
            if ((c = client(a)))
                port.grant(*c, b == 255 ? kUnlimited : static_cast<size_t>(b) * 8);
            break;
        }
        case 5:
            if ((c = client(a)))
                port.fail_write(*c);
            break;
        case 6:
            host.poll();
            break;
        case 7: // the clock moves on a * 50 ms, then a pass runs the timers
            weir::loop_hooks().clock_skew_ms.fetch_add(static_cast<int64_t>(a) * 50);
            host.poll();
            break;
        case 8:
            if ((h = pick(a)))
                host.respond(*h, in.u8(), false);
            break;
        case 9:
            if ((h = pick(a))) {
                uint8_t b = in.u8();
                host.stream_start(*h, b, in.u8());
            }
            break;
        case 10:
            if ((h = pick(a)))
                host.stream_write(*h, in.u8());
            break;
        case 11:
            if ((h = pick(a)))
                host.stream_end(*h);
            break;
        case 12:
            if ((h = pick(a)))
                host.stream_abort(*h);
            break;
        case 13:
            if ((h = pick(a)))
                host.body_read(*h, in.u8());
            break;
        case 14:
            if ((h = pick(a)))
                host.upgrade(*h, in.u8() & 1);
            break;
        case 15:
            if ((h = pick(a)))
                host.upgrade_take(*h, static_cast<size_t>(in.u8()) * 2);
            break;
        case 16:
            if ((h = pick(a))) {
                uint8_t b = in.u8();
                host.respond_file(*h, b, in.u8());
            }
            break;
        case 17:
            if ((h = pick(a)))
                host.interim(*h, in.u8() & 1);
            break;
        case 18:
            if ((h = pick(a)))
                host.respond(*h, in.u8(), true);
            break;
        case 19:
            if ((h = pick(a)))
                host.stream_room(*h);
            break;
        }
    }
    // The end: the transport takes everything, the host answers everything.
    for (int round = 0; round < 64 && !host.why && !g_port_why; round++) {
        for (Client &cl : port.clients) {
            cl.fail_next_write = false;
            port.grant(cl, kUnlimited);
        }
        host.poll();
        for (size_t i = 0; i < host.held.size() && !host.why; i++)
            host.finish_one(host.held[i]);
        // What the answers let through (the next pipelined requests). A poll
        // that finds exchanges ready hands them out (or skips the stale
        // ones) without a pass; only the second of two polls that hand
        // nothing out surely ran one after the answers above, and so wrote
        // what they put in the connections' output: until then the end is
        // not reached (found at db3ac87 after 41 CPU-min: 33 exchanges
        // ready, the last poll ran no pass, and a stream's last 5 bytes sat
        // unwritten when the wire was judged; seed last_poll_runs_no_pass).
        bool left = host.poll() != 0;
        left = host.poll() != 0 || left;
        for (const Held &h : host.held)
            left |= h.st != Held::Done;
        if (!left)
            break;
    }
    if (host.why)
        return host.why;
    if (g_port_why)
        return g_port_why;
    for (const Held &h : host.held)
        if (h.st != Held::Done) {
            if (std::getenv("WORKER_FUZZ_DEBUG"))
                std::fprintf(stderr, "held: client %zu request %zu state %d body_stream %d over %d back %d\n",
                             h.client, h.index, static_cast<int>(h.st), h.body_stream, h.body_over, h.handed_back);
            return "an exchange the host holds could be neither answered nor taken";
        }
    host.expects.resize(port.clients.size());
    for (size_t i = 0; i < port.clients.size(); i++)
        if (const char *why = check_wire(port.clients[i], host.held, host.expects[i], i)) {
            if (std::getenv("WORKER_FUZZ_DEBUG")) // what the client read, to see the finding
                dump(port.clients[i], host.expects[i], i);
            return why;
        }
    if (const char *d = std::getenv("WORKER_FUZZ_DEBUG"); d && *d == '2')
        for (size_t i = 0; i < port.clients.size(); i++)
            dump(port.clients[i], host.expects[i], i);
    weir_metrics m{};
    m.size = sizeof m;
    e->metrics(&m);
    last_metrics() = m;
    uint64_t closes = 0, ended = 0;
    for (uint64_t v : m.closes)
        closes += v;
    for (const Client &cl : port.clients)
        ended += cl.ended;
    if (m.accepted != closes + m.connections_open)
        return "metrics: accepted != closes + open";
    if (closes != ended)
        return "metrics: the closes counted are not the connections that ended";
    std::vector<int> fds;
    for (const Client &cl : port.clients)
        fds.push_back(cl.fd);
    own.reset(); // destroy (the port goes with it): what is still open closes, counted as shutdown
    if (g_port_why)
        return g_port_why;
    for (int fd : fds)
        if (::fcntl(fd, F_GETFD) != -1) {
            if (std::getenv("WORKER_FUZZ_DEBUG")) {
                char link[256] = {0}, path[64];
                std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
                (void)!::readlink(path, link, sizeof link - 1);
                std::fprintf(stderr, "descriptor %d still open: %s\n", fd, link);
            }
            return "a connection's descriptor is still open after the engine is gone";
        }
    return nullptr;
}

} // namespace worker_fuzz
