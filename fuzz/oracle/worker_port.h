// The worker fuzz target's transport: a port (lib/loop/port.h) whose kernel
// is the fuzz schedule. Clients' bytes land when the schedule sends them (as
// much as the Conn lends room for; the rest waits for want_read, as a socket
// buffer would), writes take what the schedule's budget allows and then
// stall (EAGAIN) until it grants more, and a write may fail (EPIPE).
//
// Each connection's fd is a real descriptor (/dev/null), so the worker's own
// socket calls (setsockopt, the lingering close's shutdown and recv, its
// ::close) act on a descriptor that is ours: a double close or a leak shows
// as a wrong close() result or a descriptor still open at the end. recv on it
// fails with ENOTSOCK, which the lingering close takes as the peer's end, so
// no reaper thread runs.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "loop/port.h"
#include "loop/worker.h"

namespace worker_fuzz {

inline constexpr size_t kUnlimited = SIZE_MAX;

// The first broken port rule of the run; global, because the port goes with
// its engine and the engine's destruction closes connections too.
inline const char *g_port_why = nullptr;

// One client connection as the fuzz schedule sees it.
struct Client {
    int fd = -1;
    weir::Slot *slot = nullptr; // while the worker holds the connection
    uint64_t conn_id = 0;
    std::string pending;        // sent, not yet taken by the Conn
    bool fin_pending = false;   // the FIN follows the pending bytes
    bool input_ended = false;   // FIN or reset reported
    bool readable = true;       // false after the Conn had no room, until want_read
    bool wants_write = false;   // the worker asked; the budget said EAGAIN
    size_t budget = kUnlimited; // bytes the transport takes before EAGAIN
    bool fail_next_write = false;
    bool flushing = false;      // flush() is under way (written() may ask to write again)
    std::string out;            // every byte written to the client
    std::string head;           // its first 24 bytes sent: HTTP/2's preface makes it an HTTP/2 client
    bool ended = false;         // closed or released by the worker
    bool released = false;      // released (a lingering close or an upgrade)
    int ends = 0;               // close/release calls: more than one is a finding
};

class FuzzPort final : public weir::Port {
  public:
    weir::Worker *w = nullptr;
    std::vector<Client> clients;
    std::vector<int> accept_queue; // client indices the listener holds
    bool ranges = false;           // file answers as ranges (Port::file_ranges)

    int init(weir::Worker &wk) override {
        w = &wk;
        return 0;
    }
    int listen(int) override { return 0; }
    void unlisten(int) override {}
    weir::Take accept(int, weir::Accepted &a, bool) override {
        if (accept_queue.empty())
            return weir::Take::Empty;
        a = weir::Accepted{};
        a.fd = clients[static_cast<size_t>(accept_queue.front())].fd;
        accept_queue.erase(accept_queue.begin());
        return weir::Take::Took;
    }
    int start(weir::Slot &s) override {
        Client *c = by_fd(s.fd);
        if (!c) {
            fail("port: start() for a descriptor no client has");
            return -EINVAL;
        }
        c->slot = &s;
        c->conn_id = s.session().id();
        return 0;
    }
    void want_read(weir::Slot &s) override {
        if (Client *c = by_slot(s))
            c->readable = true; // delivered in the next wait, as a readiness event would be
    }
    void write(weir::Slot &s) override {
        Client *c = by_slot(s);
        if (!c)
            return;
        c->wants_write = true;
        if (!c->flushing)
            flush(*c);
    }
    bool file_ranges() const override { return ranges; }
    void close(weir::Slot &s, bool) override {
        Client *c = by_slot(s);
        if (!c) {
            fail("port: close() of a slot no client holds");
            return;
        }
        end(*c, false);
        if (::close(c->fd) != 0)
            fail("port: the connection's descriptor was closed already");
    }
    void release(weir::Slot &s) override {
        Client *c = by_slot(s);
        if (!c) {
            fail("port: release() of a slot no client holds");
            return;
        }
        end(*c, true);
    }
    void wait(int) override {
        if (woke_) {
            woke_ = false;
            w->woken();
        }
        for (Client &c : clients)
            if (c.slot && c.readable)
                pump(c);
    }
    void wake() override { woke_ = true; }
    const char *name() const override { return "fuzz"; }

    // ---- the schedule
    int connect() {
        Client c;
        c.fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (c.fd < 0)
            return -1;
        clients.push_back(c);
        accept_queue.push_back(static_cast<int>(clients.size() - 1));
        w->door_ready();
        return static_cast<int>(clients.size() - 1);
    }
    void send(Client &c, const char *p, size_t n) {
        if (c.input_ended || c.fin_pending)
            return; // nothing follows a FIN
        c.pending.append(p, n);
        if (c.head.size() < 24)
            c.head.append(p, std::min(n, 24 - c.head.size()));
        if (c.slot && c.readable)
            pump(c);
    }
    void fin(Client &c) {
        if (c.input_ended || c.fin_pending)
            return;
        c.fin_pending = true;
        if (c.slot && c.readable)
            pump(c);
    }
    void reset(Client &c) {
        if (!c.slot || c.input_ended)
            return;
        c.pending.clear();
        c.fin_pending = false;
        c.input_ended = true;
        w->input_end(*c.slot, ECONNRESET);
    }
    void grant(Client &c, size_t bytes) {
        c.budget = bytes == kUnlimited || c.budget == kUnlimited ? kUnlimited : c.budget + bytes;
        if (c.slot && c.wants_write && !c.flushing)
            flush(c);
    }
    void fail_write(Client &c) {
        c.fail_next_write = true;
        if (c.slot && c.wants_write && !c.flushing)
            flush(c);
    }
    Client *by_slot(weir::Slot &s) {
        for (Client &c : clients)
            if (c.slot == &s)
                return &c;
        return nullptr;
    }
    Client *by_conn(uint64_t id) {
        for (Client &c : clients)
            if (c.conn_id == id && c.conn_id != 0)
                return &c;
        return nullptr;
    }

  private:
    static void fail(const char *why) {
        if (!g_port_why)
            g_port_why = why;
    }
    bool woke_ = false;

    Client *by_fd(int fd) {
        for (Client &c : clients)
            if (c.fd == fd && !c.ended)
                return &c;
        return nullptr;
    }
    void end(Client &c, bool released) {
        c.ends++;
        if (c.ends > 1)
            fail("port: a connection was closed or released twice");
        c.ended = true;
        c.released = released;
        c.slot = nullptr;
        c.wants_write = false;
    }
    // What the socket would hand the Conn now: as much as it lends room for.
    void pump(Client &c) {
        while (c.slot && !c.pending.empty()) {
            iovec sp = w->lend_input(*c.slot);
            if (sp.iov_len == 0) {
                c.readable = false; // the worker calls want_read when it has room
                return;
            }
            size_t n = std::min(sp.iov_len, c.pending.size());
            std::memcpy(sp.iov_base, c.pending.data(), n);
            c.pending.erase(0, n);
            if (!w->input(*c.slot, n)) {
                c.readable = false;
                return;
            }
        }
        if (c.slot && c.pending.empty() && c.fin_pending && !c.input_ended) {
            c.fin_pending = false;
            c.input_ended = true;
            w->input_end(*c.slot, 0);
        }
    }
    // The socket takes output while the budget lasts, then says EAGAIN and
    // the write waits for the next grant. A file range goes as the port that
    // sends files would send it, read here with pread.
    void flush(Client &c) {
        c.flushing = true;
        while (c.slot && c.wants_write) {
            weir::Slot &s = *c.slot;
            if (c.budget == 0 && !c.fail_next_write)
                break; // EAGAIN: nothing is lent, so the Conn's output stays as it is
            iovec v[64];
            size_t k = w->lend_output(s, v, 64);
            weir::FileRange r;
            bool file = k == 0 && ranges && w->lend_file(s, r);
            if (k == 0 && !file) {
                c.wants_write = false;
                break;
            }
            if (c.fail_next_write) {
                c.fail_next_write = false;
                c.wants_write = false;
                if (file)
                    w->file_written(s, -EPIPE);
                else
                    w->written(s, -EPIPE);
                break;
            }
            size_t n = 0;
            if (file) {
                size_t want = static_cast<size_t>(std::min<uint64_t>(r.len, c.budget));
                std::string buf(want, '\0');
                ssize_t got = ::pread(r.fd, buf.data(), want, static_cast<off_t>(r.off));
                if (got <= 0) {
                    w->file_written(s, got == 0 ? -ENODATA : -errno);
                    continue;
                }
                n = static_cast<size_t>(got);
                c.out.append(buf.data(), n);
            } else {
                for (size_t i = 0; i < k && n < c.budget; i++) {
                    size_t take = std::min(v[i].iov_len, c.budget - n);
                    c.out.append(static_cast<const char *>(v[i].iov_base), take);
                    n += take;
                }
            }
            if (c.budget != kUnlimited)
                c.budget -= n;
            if (file)
                w->file_written(s, static_cast<ssize_t>(n));
            else
                w->written(s, static_cast<ssize_t>(n));
        }
        c.flushing = false;
    }
};

} // namespace worker_fuzz
