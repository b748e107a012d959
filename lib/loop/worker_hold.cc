// A worker's part in a hot upgrade (lib/handover/, docs/upgrade.md): the
// accept hold, the deadline's cut, and what the handover's thread reads.
//
// The hold stops a listener being heard without closing it: the socket and
// its accept queue live on (in this process and in the other), so a client
// arriving meanwhile waits in the queue instead of meeting a reset. The
// offering side holds once it holds no connection; whatever the backend or
// the queue had then is taken first and leaves as images. The successor
// holds from the start (its listeners were never heard) until the handover
// is done, so a successor that dies first has accepted nothing.
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include "loop/engine.h"
#include "loop/worker.h"

namespace weir {

int Worker::adopt_listener(int fd) {
    int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 || ::fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
        return -errno;
    // The pause linger clears and restores the option only where it was set.
    int secs = 0;
    socklen_t len = sizeof secs;
    listener_deferred_ = ::getsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs, &len) == 0 && secs > 0;
    hold_ = engine_.accept_held();
    if (!hold_) {
        int rc = port_->listen(fd);
        if (rc < 0)
            return rc;
        listen_door_.ready = true;
    }
    listener_.fd = fd;
    set_listener_state(ListenerState::Active);
    pub_hold_.store(hold_, std::memory_order_release);
    return fd;
}

void Worker::hold_tick() {
    if (uint64_t gen = engine_.cut_gen(); gen != cut_seen_) {
        // The handover's deadline: what has not reached a boundary closes.
        cut_seen_ = gen;
        close_all(WEIR_CLOSE_HANDOVER);
    }
    bool want = engine_.accept_held();
    if (want == hold_)
        return;
    bool heard = listener_.fd >= 0 && (listener_.state == ListenerState::Active ||
                                       listener_.state == ListenerState::Lingering);
    if (heard && want) {
        // Stop hearing, then take what the backend took and what the queue
        // holds now: with the transplant on they leave at once as images.
        port_->unlisten(listener_.fd);
        listen_door_.ready = true;
        BatchResult r = run_batch(listen_door_, 0, now_ms_, retry_ms_, [this] { return accept_one(true); });
        if (r.ran)
            metrics.add(M_ACCEPT_BATCHES);
        door_clear(listen_door_);
    } else if (heard && !overload_paused_) { // else the overload's resume hears it again
        int rc = port_->listen(listener_.fd);
        if (rc < 0)
            log_once(LOG_BACKEND, "handover: cannot hear the listener again");
        listen_door_.ready = true; // the queue may have filled while held
    }
    hold_ = want;
}

// After the pass, so the handover's thread never sees a connection
// admitted and not yet detached as gone.
void Worker::publish_holding() {
    pub_holding_.store(live_count_ + leaving_count_, std::memory_order_release);
    pub_hold_.store(hold_, std::memory_order_release);
}

} // namespace weir
