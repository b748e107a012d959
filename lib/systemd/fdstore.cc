// weir_engine_store_systemd (docs/upgrade-systemd.md): the listeners, every
// connection at its request boundary and their images go to systemd's fd
// store, so the process that systemd starts next serves them on.
//
// As an upgrade's offer does (lib/handover/offer.cc), the workers detach
// into a sink; here it only collects. Unlike an offer, the listeners are
// held at once: this process is leaving, and a client that arrives now waits
// in the accept queue, which the store keeps open with the listener.
// Nothing goes to the manager before every connection is collected, so a
// failure before the first send changes nothing: the connections come back
// and are served here, the listeners are heard again.
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "systemd/image_file.h"
#include "systemd/notify.h"
#include "systemd/systemd.h"

namespace weir::systemd {

namespace {

constexpr int64_t kDefaultTimeoutMs = 10000;
// After the cut, the time the workers get to close what they held and
// publish it; past it they are not running (a driven engine nobody polls).
constexpr int64_t kAfterCutMs = 2000;
constexpr unsigned kPollUs = 2000;

// Where the workers detach to. Attached to the engine (it outlives every
// worker that may post to it); what comes after the collection ends is
// served again (a failure) or closed, counted (after a store: nothing is
// expected, the listeners are held and no connection is left).
class Collector final : public Attachment, public ImageSink {
  public:
    void post_image(ImageNode *n) override {
        std::unique_lock<std::mutex> g(mu_);
        if (!open_) {
            bool serve = serve_late_;
            g.unlock();
            if (!serve)
                n->close_reason = WEIR_CLOSE_HANDOVER;
            n->from->post_image(n);
            return;
        }
        got_.push_back(n);
    }
    bool transplant_target() const override { return false; }
    void stop() override {}
    // Ends the collection: what came is the caller's; what comes later is
    // closed, or served again once serve_late() says so (a failure).
    std::vector<ImageNode *> take() {
        std::lock_guard<std::mutex> g(mu_);
        open_ = false;
        return std::move(got_);
    }
    void serve_late() {
        std::lock_guard<std::mutex> g(mu_);
        serve_late_ = true;
    }

  private:
    std::mutex mu_;
    std::vector<ImageNode *> got_;
    bool open_ = true;
    bool serve_late_ = false;
};

uint64_t handover_closes(const Engine &e) {
    weir_metrics m{};
    m.size = sizeof m;
    e.metrics(&m);
    return m.closes[WEIR_CLOSE_HANDOVER];
}

// The workers hold nothing and heard the hold: 0; or -ETIMEDOUT.
int collect(Engine &e, int64_t timeout_ms) {
    int64_t cut_at = mono_ms() + timeout_ms, give_up = 0;
    for (;;) {
        bool all_held = false;
        if (e.holding(&all_held) == 0 && all_held)
            return 0;
        int64_t now = mono_ms();
        if (!give_up && now >= cut_at) {
            e.cut_now(); // what has not reached a boundary closes, counted
            give_up = now + kAfterCutMs;
        } else if (give_up && now >= give_up) {
            return -ETIMEDOUT;
        }
        ::usleep(kPollUs);
    }
}

// One socket can sit behind several workers' fds (dups): stored once.
std::vector<int> distinct(const std::vector<int> &fds) {
    std::vector<int> out;
    std::vector<uint64_t> seen;
    for (int fd : fds) {
        uint64_t ino = socket_ino(fd);
        bool dup = false;
        for (uint64_t s : seen)
            dup = dup || (ino && s == ino);
        if (!dup) {
            out.push_back(fd);
            seen.push_back(ino);
        }
    }
    return out;
}

// The images go last: their file is the mark that every connection came
// before it (a store that fails part-way leaves connections without images,
// which the next process closes, never images of connections served on
// here). What was sent of a failed store is taken back, as far as the
// manager still listens.
int send_all(Notify &n, const std::vector<int> &listeners, const std::vector<ImageNode *> &imgs, int memfd,
             uint32_t *sent) {
    std::string head = "FDSTORE=1\nFDNAME=";
    int rc = n.send(head + kListenName, listeners.data(), listeners.size());
    if (rc < 0)
        return rc;
    *sent += static_cast<uint32_t>(listeners.size());
    // Each message's fds share one name (systemd names per message): the
    // image finds its fd by the socket's inode, the name says what to
    // remove from the store once adopted.
    std::vector<int> batch;
    std::vector<std::string> names;
    for (size_t i = 0; i < imgs.size(); i += kMaxFdsPerMsg) {
        batch.clear();
        for (size_t j = i; j < imgs.size() && j < i + kMaxFdsPerMsg; j++)
            batch.push_back(imgs[j]->img.fd);
        std::string name = kConnPrefix + std::to_string(imgs[i]->seq);
        if ((rc = n.send(head + name, batch.data(), batch.size())) < 0)
            break;
        names.push_back(name);
        *sent += static_cast<uint32_t>(batch.size());
    }
    if (rc == 0 && (rc = n.send(head + kImagesName, &memfd, 1)) == 0) {
        *sent += 1;
        return 0;
    }
    for (const std::string &name : names)
        n.send("FDSTOREREMOVE=1\nFDNAME=" + name, nullptr, 0);
    return rc;
}

// $FDSTORE (systemd 254 and later) is FileDescriptorStoreMax=: what would
// not fit is refused by the manager, and closed here instead, counted.
size_t room_for_connections(size_t listeners) {
    const char *v = std::getenv("FDSTORE");
    char *end = nullptr;
    unsigned long long max = v && *v ? std::strtoull(v, &end, 10) : 0;
    if (!v || !*v || *end)
        return SIZE_MAX;
    return max > listeners + 1 ? static_cast<size_t>(max - listeners - 1) : 0;
}

} // namespace

int store_systemd(Engine &e, int64_t timeout_ns, weir_systemd_stats &st) {
    Notify notify;
    if (int rc = notify.open(); rc < 0)
        return rc; // -ENOENT: not under systemd; nothing changed
    if (e.state() == Engine::State::Created || e.state() == Engine::State::Stopped)
        return WEIR_E_STATE;
    if (e.stopping())
        return WEIR_E_SHUTDOWN;
    std::vector<int> all;
    if (int rc = e.listener_fds(all); rc < 0)
        return rc;
    if (!e.claim_handover())
        return WEIR_E_STATE;
    uint64_t closes_before = handover_closes(e);
    auto sink = std::make_shared<Collector>();
    e.attach(sink);
    e.sink_to(sink.get());
    e.hold_accept(true);
    int64_t timeout_ms = timeout_ns > 0 ? (timeout_ns + 999999) / 1000000 : kDefaultTimeoutMs;
    int rc = collect(e, timeout_ms);
    std::vector<ImageNode *> imgs = sink->take();
    st.closed = handover_closes(e) - closes_before;
    std::vector<uint64_t> inos;
    uint64_t seq = 1;
    for (ImageNode *n : imgs) {
        n->seq = seq++;
        inos.push_back(socket_ino(n->img.fd));
    }
    std::vector<int> listeners = distinct(all);
    if (size_t room = room_for_connections(listeners.size()); rc == 0 && imgs.size() > room) {
        for (size_t i = room; i < imgs.size(); i++) {
            imgs[i]->close_reason = WEIR_CLOSE_HANDOVER; // closed by its worker, counted there
            imgs[i]->from->post_image(imgs[i]);
        }
        st.closed += imgs.size() - room;
        imgs.resize(room);
        inos.resize(room);
    }
    int memfd = -1;
    if (rc == 0)
        rc = write_images(imgs, inos, &memfd);
    if (rc == 0)
        rc = send_all(notify, listeners, imgs, memfd, &st.fds);
    if (memfd >= 0)
        ::close(memfd);
    if (rc < 0) {
        // Served here again, as if nothing had been asked.
        sink->serve_late();
        e.sink_to(nullptr);
        for (ImageNode *n : imgs)
            n->from->post_image(n);
        e.hold_accept(false);
        e.release_handover();
        return rc;
    }
    // The store holds them now (and the kernel, until the manager reads the
    // messages): our copies go with a plain close, never a shutdown, which
    // would end the connection for the store's copy too.
    for (ImageNode *n : imgs) {
        ::close(n->img.fd);
        n->img.fd = -1;
        delete n;
    }
    st.listeners = static_cast<uint32_t>(listeners.size());
    st.connections = imgs.size();
    return static_cast<int>(imgs.size() > INT32_MAX ? INT32_MAX : imgs.size());
}

} // namespace weir::systemd
