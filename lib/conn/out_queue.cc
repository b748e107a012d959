#include "conn/out_queue.h"

#include <cstdlib>
#include <new>

namespace weir {

SegPool::~SegPool() {
    while (free_) {
        OutSeg *s = free_;
        free_ = s->next;
        std::free(s);
    }
}

OutSeg *SegPool::take(size_t want) {
    OutSeg *s;
    if (want <= kExactMin) {
        if (free_) {
            s = free_;
            free_ = s->next;
            cached_--;
        } else {
            s = static_cast<OutSeg *>(std::malloc(kSegAlloc));
            if (!s)
                return nullptr;
            s->cap = kSegCap;
            s->pooled = true;
            bytes_ += kSegAlloc;
        }
    } else {
        if (want > UINT32_MAX - sizeof(OutSeg))
            return nullptr;
        s = static_cast<OutSeg *>(std::malloc(sizeof(OutSeg) + want));
        if (!s)
            return nullptr;
        s->cap = static_cast<uint32_t>(want);
        s->pooled = false;
        bytes_ += sizeof(OutSeg) + want;
    }
    s->next = nullptr;
    s->len = 0;
    return s;
}

void SegPool::give(OutSeg *s) {
    if (!s->pooled || cached_ >= kKeep) {
        bytes_ -= s->pooled ? kSegAlloc : sizeof(OutSeg) + s->cap;
        freed_ += sizeof(OutSeg) + s->cap;
        std::free(s);
        return;
    }
    s->next = free_;
    free_ = s;
    cached_++;
}

size_t SegPool::trim(size_t keep) {
    size_t n = 0;
    while (cached_ > keep) {
        OutSeg *s = free_;
        free_ = s->next;
        cached_--;
        n += kSegAlloc;
        std::free(s);
    }
    freed_ += n;
    bytes_ -= n; // the overload manager's reading follows the trim
    return n;
}

bool OutQueue::append_slow(const char *p, size_t n) {
    while (n > 0) {
        size_t room = tail_ ? tail_->cap - tail_->len : 0;
        if (room == 0) {
            OutSeg *s = pool_->take(n);
            if (!s)
                return false;
            if (tail_)
                tail_->next = s;
            else
                head_ = s;
            tail_ = s;
            room = s->cap;
        }
        size_t k = n < room ? n : room;
        std::memcpy(tail_->data() + tail_->len, p, k);
        tail_->len += static_cast<uint32_t>(k);
        pending_ += k;
        p += k;
        n -= k;
    }
    return true;
}

size_t OutQueue::iov_chain(iovec *v, size_t max) const {
    size_t k = 0;
    uint32_t off = off_;
    for (OutSeg *s = head_; s && k < max; s = s->next) {
        if (s->len > off) {
            v[k].iov_base = s->data() + off;
            v[k].iov_len = s->len - off;
            k++;
        }
        off = 0;
    }
    return k;
}

void OutQueue::consume_slow(size_t n) {
    if (n > pending_)
        n = pending_;
    pending_ -= n;
    while (head_) {
        size_t left = head_->len - off_;
        if (n < left) {
            off_ += static_cast<uint32_t>(n);
            return;
        }
        n -= left;
        if (head_ == tail_) {
            // Drained: reuse the last segment from its start (a large one goes back).
            off_ = 0;
            if (head_->pooled) {
                head_->len = 0;
            } else {
                pool_->give(head_);
                head_ = tail_ = nullptr;
            }
            return;
        }
        OutSeg *done = head_;
        head_ = head_->next;
        off_ = 0;
        pool_->give(done);
    }
}

void OutQueue::clear_slow() {
    while (head_ && head_ != tail_) {
        OutSeg *s = head_;
        head_ = s->next;
        pool_->give(s);
    }
    if (head_ && !head_->pooled) {
        pool_->give(head_);
        head_ = tail_ = nullptr;
    }
    if (head_)
        head_->len = 0;
    off_ = 0;
    pending_ = 0;
}

void OutQueue::release() {
    clear();
    if (head_)
        pool_->give(head_);
    head_ = tail_ = nullptr;
}

} // namespace weir
