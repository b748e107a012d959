// The running process's side of a hot upgrade (docs/upgrade.md):
//
//   WAITING  a Unix socket at the path (mode 0600, the peer's uid checked)
//            until one successor connects; its Hello names the protocols it
//            speaks, or it is refused and nothing changes here.
//   MOVING   the listeners go (Offer, SCM_RIGHTS) and, once the successor is
//            Ready, every worker detaches its connections to this sink at
//            their request boundaries; each image is sent with its fd and
//            kept until the successor acknowledges it. This engine accepts
//            on (what it accepts leaves at once) until it holds nothing,
//            then holds its listeners (open, unheard) and says Done.
//   DONE     the successor accepts (Commit): the host may shut down.
//   FAILED   the successor refused, hung up or died before Commit: what it
//            had not acknowledged is served here again, the listeners are
//            heard again; nothing else changed.
// The deadline, from Ready, closes what has not reached a boundary by then
// (WEIR_CLOSE_HANDOVER); five seconds after it, a successor that has not
// committed counts as dead.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "handover/handover.h"
#include "handover/wire.h"

namespace weir::handover {

namespace {

constexpr int kHelloTimeoutMs = 5000;
constexpr int kReportMs = 50;
constexpr int kGiveUpAfterDeadlineMs = 5000;

int bind_path(const std::string &path, int *out) {
    sockaddr_un sa{};
    if (path.empty() || path.size() >= sizeof sa.sun_path)
        return -EINVAL;
    sa.sun_family = AF_UNIX;
    std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
    int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -errno;
    // A socket file left by a process that died: replaced, unless someone
    // still listens on it.
    struct stat sb;
    if (::lstat(path.c_str(), &sb) == 0 && S_ISSOCK(sb.st_mode)) {
        int probe = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        bool live = probe >= 0 && ::connect(probe, reinterpret_cast<sockaddr *>(&sa), sizeof sa) == 0;
        if (probe >= 0)
            ::close(probe);
        if (live) {
            ::close(fd);
            return -EADDRINUSE;
        }
        ::unlink(path.c_str());
    }
    mode_t old = ::umask(077); // only this user may take the listeners
    int rc = ::bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa);
    ::umask(old);
    if (rc < 0 || ::listen(fd, 4) < 0) {
        rc = -errno;
        ::close(fd);
        return rc;
    }
    *out = fd;
    return 0;
}

bool same_user(int fd) {
    ucred c{};
    socklen_t len = sizeof c;
    return ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c, &len) == 0 && (c.uid == ::geteuid() || c.uid == 0);
}

void refuse(int sock, int err) {
    RefuseBody b{err, 0};
    send_msg(sock, Type::Refuse, &b, sizeof b, nullptr, 0, nullptr, 0, MSG_DONTWAIT);
}

} // namespace

Offer::Offer(Engine &e, const weir_handover_options &o)
    : Handover(e), wait_ms_(o.wait_ms ? o.wait_ms : 10000), deadline_ms_(o.deadline_ms ? o.deadline_ms : 10000),
      listeners_only_((o.flags & WEIR_HANDOVER_LISTENERS_ONLY) != 0) {}

Offer::~Offer() {
    stop();
    if (lsock_ >= 0) {
        ::close(lsock_);
        ::unlink(path_.c_str());
    }
}

int Offer::create(Engine &e, const char *path, const weir_handover_options &o, std::shared_ptr<Offer> *out) {
    if (e.state() == Engine::State::Created || e.state() == Engine::State::Stopped)
        return WEIR_E_STATE;
    if (e.stopping())
        return WEIR_E_SHUTDOWN;
    std::vector<int> fds;
    if (int rc = e.listener_fds(fds); rc < 0)
        return rc;
    if (fds.size() > kMaxFds)
        return -EINVAL;
    if (!e.claim_handover())
        return WEIR_E_STATE;
    std::shared_ptr<Offer> h(new Offer(e, o));
    h->path_ = path;
    int rc = h->wake_fd_ < 0 ? -errno : bind_path(h->path_, &h->lsock_);
    if (rc < 0) {
        e.release_handover();
        return rc;
    }
    h->thread_ = std::thread([p = h.get()] { p->run(); });
    e.attach(h);
    *out = std::move(h);
    return 0;
}

void Offer::run() {
    int rc = meet();
    if (rc == 0) {
        set_state(WEIR_HANDOVER_MOVING);
        weir_metrics m{};
        m.size = sizeof m;
        e_.metrics(&m);
        closes_at_start_ = m.closes[WEIR_CLOSE_HANDOVER];
        e_.sink_to(this);
        rc = move();
    }
    if (rc < 0) {
        fail(rc);
        return;
    }
    {
        std::lock_guard<std::mutex> g(in_mu_);
        ended_ = done_ = true;
    }
    weir_metrics m{};
    m.size = sizeof m;
    e_.metrics(&m);
    add(&weir_handover_stats::closed, m.closes[WEIR_CLOSE_HANDOVER] - closes_at_start_);
    finish(WEIR_HANDOVER_DONE, 0);
}

int Offer::meet() {
    int64_t until = now_ms() + wait_ms_;
    while (sock_ < 0) {
        if (stop_.load(std::memory_order_acquire))
            return -ECANCELED;
        int64_t left = until - now_ms();
        if (left <= 0)
            return -ETIMEDOUT;
        std::swap(sock_, lsock_); // poll_once waits on sock_
        poll_once(false, static_cast<int>(left));
        std::swap(sock_, lsock_);
        int fd = ::accept4(lsock_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        if (!same_user(fd)) {
            ::close(fd);
            continue;
        }
        sock_ = fd;
    }
    // Taken: the path is free for the successor's own offer, later.
    ::close(lsock_);
    lsock_ = -1;
    ::unlink(path_.c_str());
    Msg &m = *msg_;
    int rc = wait_readable(sock_, kHelloTimeoutMs);
    if (rc == 0)
        rc = recv_msg(sock_, m, 0);
    if (rc < 0)
        return rc;
    const HelloBody *hello = m.body<HelloBody>();
    m.close_fds();
    if (m.type() != Type::Hello || !hello)
        return -EPROTO;
    if (kProto < hello->proto_min || kProto > hello->proto_max) {
        refuse(sock_, WEIR_E_HANDOVER_VERSION);
        return WEIR_E_HANDOVER_VERSION;
    }
    std::vector<int> fds;
    if ((rc = e_.listener_fds(fds)) < 0) { // a pause came meanwhile
        refuse(sock_, rc);
        return rc;
    }
    OfferBody ob{static_cast<uint32_t>(fds.size()), ::getpid()};
    if ((rc = send_msg(sock_, Type::Offer, &ob, sizeof ob, nullptr, 0, fds.data(), fds.size(), 0)) < 0)
        return rc;
    if ((rc = wait_readable(sock_, static_cast<int>(wait_ms_))) == 0)
        rc = recv_msg(sock_, m, 0);
    if (rc < 0)
        return rc;
    m.close_fds();
    if (m.type() == Type::Refuse)
        return m.body<RefuseBody>() ? m.body<RefuseBody>()->error : -EPROTO;
    if (m.type() != Type::Ready)
        return -EPROTO;
    std::lock_guard<std::mutex> g(mu_);
    st_.listeners = static_cast<uint32_t>(fds.size());
    return 0;
}

void Offer::post_image(ImageNode *n) {
    std::unique_lock<std::mutex> g(in_mu_);
    if (ended_) {
        bool serve = !done_;
        g.unlock();
        give_back(n, serve);
        return;
    }
    incoming_.push_back(n);
    g.unlock();
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
}

// To the worker it came from: served there again (a failed handover), or
// closed there, where its close is counted (one that came after Done).
void Offer::give_back(ImageNode *n, bool to_serve) {
    if (to_serve)
        add(&weir_handover_stats::returned, 1);
    else
        n->close_reason = WEIR_CLOSE_HANDOVER;
    n->from->post_image(n);
}

// As many images at the head of outq_ as one message holds: records of an
// ImageBody and that image's unread bytes, their fds in the same order. Only
// a first image too large for one message is cut; its rest follows at once in
// More messages. Returns how many images left, or -EAGAIN, or -errno.
int Offer::send_images() {
    batch_.clear();
    int fds[kMaxFds] = {};
    size_t n = 0, cut_at = 0;
    const ImageNode *cut = nullptr;
    constexpr size_t room = kMaxMsg - sizeof(Head);
    for (const ImageNode *node : outq_) {
        const ConnImage &img = node->img;
        size_t left = room - batch_.size();
        if (n == kMaxFds || left < sizeof(ImageBody) + (n ? img.unread_len : 0))
            break; // whole, in the next message
        ImageBody b = to_body(img, node->seq);
        size_t tail = img.unread_len < left - sizeof b ? img.unread_len : left - sizeof b;
        auto *p = reinterpret_cast<const unsigned char *>(&b);
        batch_.insert(batch_.end(), p, p + sizeof b);
        batch_.insert(batch_.end(), img.unread, img.unread + tail);
        fds[n++] = img.fd;
        if (tail < img.unread_len) {
            cut = node;
            cut_at = tail;
            break;
        }
    }
    int rc = send_msg(sock_, Type::Image, batch_.data(), batch_.size(), nullptr, 0, fds, n, MSG_DONTWAIT);
    // The rest of a cut image (a large pipelined tail, rare) goes now,
    // blocking: the successor reads on while it waits for the whole image.
    for (size_t off = cut_at; rc == 0 && cut && off < cut->img.unread_len; off += kMoreTail) {
        size_t k = cut->img.unread_len - off < kMoreTail ? cut->img.unread_len - off : kMoreTail;
        rc = send_msg(sock_, Type::More, nullptr, 0, cut->img.unread + off, k, nullptr, 0, 0);
        if (rc == -EAGAIN)
            return -EIO; // cannot happen without MSG_DONTWAIT
    }
    return rc < 0 ? rc : static_cast<int>(n);
}

int Offer::move() {
    Msg &m = *msg_;
    int64_t deadline = now_ms() + deadline_ms_;
    int64_t give_up = deadline + kGiveUpAfterDeadlineMs;
    int64_t report_at = 0;
    bool cut = false, done_sent = false;
    for (;;) {
        if (stop_.load(std::memory_order_acquire))
            return -ECANCELED;
        {
            std::lock_guard<std::mutex> g(in_mu_);
            for (ImageNode *n : incoming_) {
                n->seq = next_seq_++;
                outq_.push_back(n);
            }
            incoming_.clear();
        }
        while (!outq_.empty()) {
            int rc = send_images();
            if (rc == -EAGAIN)
                break;
            if (rc < 0)
                return rc;
            for (int k = 0; k < rc; k++) {
                unacked_.push_back(outq_.front());
                outq_.pop_front();
            }
        }
        for (;;) {
            int rc = recv_msg(sock_, m, MSG_DONTWAIT);
            if (rc == -EAGAIN)
                break;
            if (rc < 0)
                return rc;
            m.close_fds();
            if (m.type() == Type::Ack && m.body<CountBody>()) {
                uint64_t upto = m.body<CountBody>()->n, k = 0;
                while (!unacked_.empty() && unacked_.front()->seq <= upto) {
                    ImageNode *n = unacked_.front();
                    unacked_.pop_front();
                    ::close(n->img.fd); // the successor's now; its copy lives on
                    n->img.fd = -1;
                    delete n;
                    k++;
                }
                add(&weir_handover_stats::sent, k);
            } else if (m.type() == Type::Commit && done_sent) {
                return 0;
            } else if (m.type() == Type::Refuse && m.body<RefuseBody>()) {
                return m.body<RefuseBody>()->error;
            } else {
                return -EPROTO;
            }
        }
        int64_t now = now_ms();
        bool all_held = false;
        uint64_t held_here = e_.holding(&all_held);
        if (now >= report_at) {
            CountBody c{held_here + outq_.size() + unacked_.size()};
            send_msg(sock_, Type::Holding, &c, sizeof c, nullptr, 0, nullptr, 0, MSG_DONTWAIT);
            report_at = now + kReportMs;
        }
        if (!cut && now >= deadline) {
            cut = true; // what has not reached a boundary closes, counted
            e_.cut_now();
            held_ = true;
            e_.hold_accept(true);
        }
        if (now >= give_up)
            return -ETIMEDOUT;
        if (!done_sent) {
            if (!held_ && held_here == 0) {
                // Nothing left but what may still arrive: stop hearing the
                // listeners (what the queue holds leaves as images first).
                held_ = true;
                e_.hold_accept(true);
            } else if (held_ && all_held && held_here == 0 && outq_.empty() && unacked_.empty()) {
                std::unique_lock<std::mutex> g(in_mu_);
                if (incoming_.empty()) {
                    g.unlock();
                    CountBody c{};
                    {
                        std::lock_guard<std::mutex> gs(mu_);
                        c.n = st_.sent;
                    }
                    if (int rc = send_msg(sock_, Type::Done, &c, sizeof c, nullptr, 0, nullptr, 0, 0); rc < 0)
                        return rc;
                    done_sent = true;
                }
            }
        }
        poll_once(!outq_.empty(), 10);
    }
}

// Everything comes back: the workers serve on, the listeners are heard.
void Offer::fail(int err) {
    e_.sink_to(nullptr);
    std::vector<ImageNode *> back;
    {
        std::lock_guard<std::mutex> g(in_mu_);
        ended_ = true;
        back.swap(incoming_);
    }
    for (ImageNode *n : back)
        give_back(n, true);
    for (auto *q : {&outq_, &unacked_}) {
        for (ImageNode *n : *q)
            give_back(n, true);
        q->clear();
    }
    if (held_)
        e_.hold_accept(false);
    if (lsock_ >= 0) { // nobody came: the path is free again
        ::close(lsock_);
        lsock_ = -1;
        ::unlink(path_.c_str());
    }
    if (sock_ >= 0) {
        ::close(sock_);
        sock_ = -1;
    }
    e_.release_handover();
    finish(WEIR_HANDOVER_FAILED, err);
}

} // namespace weir::handover
