// A connection's output, kept in segments that never move.
//
// Answers are appended at the tail; a write takes iovecs from the head. Once
// a segment holds bytes it is never moved, resized or freed until every byte
// in it was reported written, so a write the kernel still holds (an io_uring
// send) can rely on its memory: an append during a write only adds bytes
// after the ones the write covers, or adds segments.
//
// Output lives in pooled segments (kSegAlloc bytes with their header), so
// the steady path allocates nothing; an append larger than kExactMin gets one
// exact-size segment of its own (a large body: one allocation and one iovec,
// freed once written). Single thread.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace weir {

struct OutSeg {
    OutSeg *next;
    uint32_t len; // bytes held
    uint32_t cap;
    bool pooled;
    char *data() { return reinterpret_cast<char *>(this + 1); }
};

// A worker's free pooled segments.
class SegPool {
  public:
    static constexpr size_t kSegAlloc = 4096;
    static constexpr uint32_t kSegCap = static_cast<uint32_t>(kSegAlloc - sizeof(OutSeg));
    static constexpr size_t kKeep = 128; // free segments kept (512 KiB)
    // An append of more than this (what is left of it after the tail's room)
    // gets one exact segment; smaller ones chain pooled segments.
    static constexpr size_t kExactMin = 64 * 1024;

    SegPool() = default;
    SegPool(const SegPool &) = delete;
    SegPool &operator=(const SegPool &) = delete;
    ~SegPool();
    // A pooled segment when want <= kExactMin, else one of exactly want
    // bytes; nullptr when out of memory.
    OutSeg *take(size_t want);
    void give(OutSeg *s);
    size_t cached() const { return cached_; }
    // Bytes of every segment taken and not freed (in queues or cached): the
    // overload manager's memory reading.
    size_t bytes() const { return bytes_; }
    // Frees cached segments past keep; the bytes freed.
    size_t trim(size_t keep);
    // Bytes freed since the last call (segments over kKeep, trims).
    size_t take_freed() {
        size_t f = freed_;
        freed_ = 0;
        return f;
    }

  private:
    OutSeg *free_ = nullptr;
    size_t cached_ = 0;
    size_t bytes_ = 0;
    size_t freed_ = 0;
};

class OutQueue {
  public:
    explicit OutQueue(SegPool &pool) : pool_(&pool) {}
    OutQueue(const OutQueue &) = delete;
    OutQueue &operator=(const OutQueue &) = delete;
    ~OutQueue() { release(); }

    // false on allocation failure (what was appended before stays).
    bool append(const void *p, size_t n) {
        if (tail_ && tail_->cap - tail_->len >= n) {
            if (n)
                std::memcpy(tail_->data() + tail_->len, p, n);
            tail_->len += static_cast<uint32_t>(n);
            pending_ += n;
            return true;
        }
        return append_slow(static_cast<const char *>(p), n);
    }
    bool append(const char *s) { return append(s, std::strlen(s)); }
    // The response writer's hint; segments need no reservation.
    bool reserve_more(size_t) { return true; }

    size_t pending() const { return pending_; }
    // Up to max iovecs over the unwritten bytes, oldest first; their count.
    size_t iov(iovec *v, size_t max) const {
        if (head_ == tail_) { // the usual case, inline: one segment
            if (pending_ == 0 || max == 0)
                return 0;
            v[0].iov_base = head_->data() + off_;
            v[0].iov_len = pending_;
            return 1;
        }
        return iov_chain(v, max);
    }
    // n of the bytes iov() described were written.
    void consume(size_t n) {
        if (head_ == tail_ && n >= pending_ && head_ && head_->pooled) { // all of one segment
            head_->len = 0;
            off_ = 0;
            pending_ = 0;
            return;
        }
        consume_slow(n);
    }
    // Drops every byte; the head segment is kept for reuse when pooled.
    // Nothing may be lent to a write.
    void clear() {
        if (head_ == tail_ && (!head_ || head_->pooled)) {
            if (head_)
                head_->len = 0;
            off_ = 0;
            pending_ = 0;
            return;
        }
        clear_slow();
    }
    // clear(), and the kept segment goes back to the pool too.
    void release();
    // The allocated bytes of the segments held (the pool's accounting).
    size_t held_bytes() const {
        size_t n = 0;
        for (const OutSeg *s = head_; s; s = s->next)
            n += sizeof(OutSeg) + s->cap;
        return n;
    }

  private:
    bool append_slow(const char *p, size_t n);
    size_t iov_chain(iovec *v, size_t max) const;
    void consume_slow(size_t n);
    void clear_slow();
    SegPool *pool_;
    OutSeg *head_ = nullptr;
    OutSeg *tail_ = nullptr;
    uint32_t off_ = 0; // bytes of head_ already written
    size_t pending_ = 0;
};

} // namespace weir
