// The successor's side of a hot upgrade (docs/upgrade.md): connect, say
// which protocols it speaks, take the listeners and listen on them held (no
// accept until Done, so a successor that dies first has taken nobody), then
// admit every image as it comes. An image is acknowledged before any worker
// sees it: from the Ack the connection is this process's, and until it the
// old process keeps its own copy of the fd and takes it back if this one dies.
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "handover/handover.h"
#include "handover/wire.h"

namespace weir::handover {

namespace {

int connect_path(const char *path, uint32_t wait_ms, int *out) {
    sockaddr_un sa{};
    size_t n = std::strlen(path);
    if (n == 0 || n >= sizeof sa.sun_path)
        return -EINVAL;
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path, path, n + 1);
    int64_t until = now_ms() + wait_ms;
    for (;;) {
        int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -errno;
        if (::connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) == 0) {
            *out = fd;
            return 0;
        }
        int rc = -errno;
        ::close(fd);
        // Nobody offers yet (the operator may start the successor first).
        if ((rc != -ENOENT && rc != -ECONNREFUSED) || now_ms() >= until)
            return rc;
        ::usleep(20000);
    }
}

} // namespace

TakeOver::TakeOver(Engine &e) : Handover(e) {
    ledger_->source_alive = false; // nothing goes back: a refused image closes here
    if (const char *v = std::getenv("WEIR_HANDOVER_TEST_CRASH")) {
        crash_after_listeners_ = std::strcmp(v, "listeners") == 0;
        if (std::strncmp(v, "images:", 7) == 0)
            crash_after_images_ = std::strtoull(v + 7, nullptr, 10);
    }
}

int TakeOver::create(Engine &e, const char *path, const weir_handover_options &o, std::shared_ptr<TakeOver> *out) {
    if (e.state() != Engine::State::Created)
        return WEIR_E_STATE;
    std::shared_ptr<TakeOver> h(new TakeOver(e));
    if (h->wake_fd_ < 0)
        return -errno;
    int rc = h->meet(path, o.wait_ms ? o.wait_ms : 10000);
    if (rc < 0)
        return rc;
    h->thread_ = std::thread([p = h.get()] { p->run(); });
    e.attach(h);
    *out = std::move(h);
    return 0;
}

int TakeOver::meet(const char *path, uint32_t wait_ms) {
    int rc = connect_path(path, wait_ms, &sock_);
    if (rc < 0)
        return rc;
    HelloBody hb{kProto, kProto, ::getpid(), e_.worker_count()};
    if (const char *v = std::getenv("WEIR_HANDOVER_TEST_PROTO")) // a successor of another format
        hb.proto_min = hb.proto_max = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
    if ((rc = send_msg(sock_, Type::Hello, &hb, sizeof hb, nullptr, 0, nullptr, 0, 0)) < 0)
        return rc;
    Msg &m = *msg_;
    if ((rc = wait_readable(sock_, static_cast<int>(wait_ms))) == 0)
        rc = recv_msg(sock_, m, 0);
    if (rc < 0)
        return rc;
    if (m.type() == Type::Refuse) {
        m.close_fds();
        return m.body<RefuseBody>() ? m.body<RefuseBody>()->error : -EPROTO;
    }
    const OfferBody *ob = m.body<OfferBody>();
    if (m.type() != Type::Offer || !ob || ob->listeners != m.nfds || m.nfds == 0) {
        m.close_fds();
        return -EPROTO;
    }
    if (m.nfds > e_.worker_count()) {
        m.close_fds();
        RefuseBody r{-EINVAL, 0};
        send_msg(sock_, Type::Refuse, &r, sizeof r, nullptr, 0, nullptr, 0, 0);
        return -EINVAL; // fewer workers than listeners: each needs its own
    }
    e_.hold_accept(true);
    size_t n = m.nfds;
    m.nfds = 0; // the engine owns them now, whatever listen_fds returns
    if ((rc = e_.listen_fds(m.fds, n)) < 0) {
        e_.hold_accept(false);
        RefuseBody r{rc, 0};
        send_msg(sock_, Type::Refuse, &r, sizeof r, nullptr, 0, nullptr, 0, 0);
        return rc;
    }
    if (crash_after_listeners_)
        ::raise(SIGKILL);
    {
        std::lock_guard<std::mutex> g(mu_);
        st_.listeners = static_cast<uint32_t>(n);
    }
    set_state(WEIR_HANDOVER_MOVING);
    // From here the listeners are this engine's: a failure below (the old
    // process died) is the thread's to report, and the engine accepts.
    if (send_msg(sock_, Type::Ready, nullptr, 0, nullptr, 0, nullptr, 0, 0) < 0)
        ::shutdown(sock_, SHUT_RDWR);
    return 0;
}

void TakeOver::stats(weir_handover_stats *out) const {
    Handover::stats(out);
    if (out->size >= offsetof(weir_handover_stats, refused) + sizeof out->refused)
        out->refused = ledger_->refused.load(std::memory_order_acquire);
}

// Whatever is there now, without waiting: 0, Done (1), or an error.
int TakeOver::receive(std::vector<ImageNode *> &batch, ImageNode *&partial, size_t &have) {
    Msg &m = *msg_;
    for (;;) {
        int rc = recv_msg(sock_, m, MSG_DONTWAIT);
        if (rc == -EAGAIN)
            return 0;
        if (rc < 0)
            return rc;
        switch (m.type()) {
        case Type::Image: {
            if (partial) {
                m.close_fds();
                return -EPROTO;
            }
            size_t off = 0, fi = 0;
            while (off < m.len) {
                ImageBody b;
                if (m.len - off < sizeof b || fi >= m.nfds) {
                    m.close_fds();
                    return -EPROTO;
                }
                std::memcpy(&b, m.data + off, sizeof b); // records follow tails: no alignment
                off += sizeof b;
                if (b.peer_len > sizeof b.peer) {
                    m.close_fds();
                    return -EPROTO;
                }
                auto *n = new ImageNode;
                n->seq = b.seq;
                n->ledger = ledger_;
                ConnImage &img = n->img;
                img.fd = m.fds[fi];
                m.fds[fi++] = -1;
                from_body(b, img);
                size_t tail = b.unread_len < m.len - off ? b.unread_len : m.len - off;
                if (b.unread_len) {
                    img.unread = static_cast<char *>(std::malloc(b.unread_len));
                    if (!img.unread) {
                        delete n;
                        m.close_fds();
                        return -ENOMEM;
                    }
                    img.unread_len = b.unread_len;
                    std::memcpy(img.unread, m.data + off, tail);
                }
                off += tail;
                if (tail < b.unread_len) { // cut: only the last record may be
                    if (off != m.len) {
                        delete n;
                        m.close_fds();
                        return -EPROTO;
                    }
                    partial = n;
                    have = tail;
                } else {
                    batch.push_back(n);
                }
            }
            if (fi != m.nfds) {
                m.close_fds();
                return -EPROTO;
            }
            m.nfds = 0;
            break;
        }
        case Type::More:
            if (!partial || have + m.len > partial->img.unread_len) {
                m.close_fds();
                return -EPROTO;
            }
            std::memcpy(partial->img.unread + have, m.data, m.len);
            have += m.len;
            if (have == partial->img.unread_len) {
                batch.push_back(partial);
                partial = nullptr;
            }
            break;
        case Type::Holding:
            if (m.body<CountBody>()) {
                last_holding_ = m.body<CountBody>()->n;
                received_at_report_ = received_ + batch.size();
            }
            break;
        case Type::Done:
            return partial ? -EPROTO : 1;
        default:
            m.close_fds();
            return -EPROTO;
        }
        if (crash_after_images_ && received_ + batch.size() >= crash_after_images_)
            ::raise(SIGKILL); // before the Ack: the old process still holds them all
    }
}

void TakeOver::run() {
    std::vector<ImageNode *> batch;
    ImageNode *partial = nullptr;
    size_t have = 0;
    for (;;) {
        if (stop_.load(std::memory_order_acquire)) {
            delete partial;
            for (ImageNode *n : batch) // held by the crash hook below: never acknowledged, so never ours
                delete n;
            fail(-ECANCELED);
            return;
        }
        int rc = receive(batch, partial, have);
        if (crash_after_images_ && rc == 0) {
            // The hook's promise is a crash before any Ack (docs/upgrade.md:
            // nothing lost). The old process cuts its messages as its
            // workers reach boundaries: a slow one (ASan) sent one image
            // first, which was acknowledged and then died with the crash (a
            // client reset, 2 runs in 5). So hold every batch until the
            // crash; the old process sends on without waiting for Acks.
            poll_once(false, 100);
            continue;
        }
        if (!batch.empty()) {
            // Acknowledged first (see the top of this file), then admitted.
            CountBody c{batch.back()->seq};
            int ack = send_msg(sock_, Type::Ack, &c, sizeof c, nullptr, 0, nullptr, 0, 0);
            if (ack < 0) {
                // The old process is gone, and with it its copies: these are
                // ours alone now, and served.
                rc = rc < 0 ? rc : ack;
            }
            uint32_t nw = e_.worker_count();
            for (ImageNode *n : batch)
                e_.worker(next_worker_++ % nw)->post_image(n);
            received_ += batch.size();
            add(&weir_handover_stats::received, batch.size());
            batch.clear();
        }
        if (rc == 1) {
            e_.hold_accept(false);
            send_msg(sock_, Type::Commit, nullptr, 0, nullptr, 0, nullptr, 0, 0);
            finish(WEIR_HANDOVER_DONE, 0);
            return;
        }
        if (rc < 0) {
            delete partial;
            fail(rc);
            return;
        }
        poll_once(false, 100);
    }
}

void TakeOver::fail(int err) {
    e_.hold_accept(false); // the listeners are ours: accept, whatever the old process did
    uint64_t since = received_ - received_at_report_;
    {
        std::lock_guard<std::mutex> g(mu_);
        st_.lost = last_holding_ > since ? last_holding_ - since : 0;
    }
    finish(WEIR_HANDOVER_FAILED, err == -EPIPE ? -ECONNRESET : err);
}

} // namespace weir::handover
