// A worker's provided-buffer ring (one buffer group): the kernel picks a
// buffer for each multishot recv completion, so a connection holds no read
// buffer while it waits (an idle keep-alive connection costs only its Conn).
//
// Allocated here and registered with io_uring_register_buf_ring (liburing
// 2.3 has no io_uring_setup_buf_ring). Buffers go back with give(); the
// ring's tail moves once per batch of gives (publish()).
#pragma once

#include <liburing.h>

#include <cstddef>
#include <cstdint>

namespace weir {

class BufRing {
  public:
    BufRing() = default;
    ~BufRing();
    BufRing(const BufRing &) = delete;
    BufRing &operator=(const BufRing &) = delete;

    // count must be a power of two. Returns 0 or -errno.
    int init(io_uring *ring, uint16_t group, uint32_t count, uint32_t size);
    // Unregisters (while its ring is up) and frees.
    void destroy();
    // The ring was torn down, and its registration with it.
    void forget_ring() { ring_ = nullptr; }

    uint16_t group() const { return group_; }
    uint32_t size() const { return size_; }
    uint32_t count() const { return count_; }
    char *buf(uint16_t bid) const { return base_ + static_cast<size_t>(bid) * size_; }
    // Buffers the kernel may pick from now (those handed back, not yet
    // taken): an estimate kept by the port, see out().
    uint32_t out() const { return out_; }
    void took() {
        out_++;
        touched_ = true;
    }
    // Whether a recv took a buffer (and so wrote pages) since the last drop().
    bool touched() const { return touched_; }
    // Gives every buffer's pages back to the kernel (MADV_DONTNEED; the
    // next write into one faults in a zeroed page). Only when the port owns
    // none of them and no completion naming one is unread (UringPort::
    // trim_buffers); the bytes given, 0 when madvise refused.
    size_t drop();

    void give(uint16_t bid) {
        io_uring_buf_ring_add(br_, buf(bid), size_, bid, mask_, pending_++);
        out_--;
    }
    void publish() {
        if (pending_) {
            io_uring_buf_ring_advance(br_, pending_);
            pending_ = 0;
        }
    }

  private:
    io_uring *ring_ = nullptr;
    io_uring_buf_ring *br_ = nullptr;
    char *base_ = nullptr;
    size_t ring_bytes_ = 0;
    uint16_t group_ = 0;
    uint32_t count_ = 0;
    uint32_t size_ = 0;
    int mask_ = 0;
    int pending_ = 0;
    bool touched_ = false;
    uint32_t out_ = 0; // taken by completions, not yet given back
};

} // namespace weir
