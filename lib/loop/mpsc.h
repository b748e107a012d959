// A lock-free multi-producer, single-consumer queue of intrusive nodes.
//
// Producers push with a CAS onto a Treiber stack; the one consumer takes the
// whole stack with one exchange and reverses it. Because the consumer never
// pops a single node off the shared head, there is no ABA problem and no
// transient "half-linked" state (which a Vyukov queue has, and which would
// need a retry path next to the eventfd wake). Order is FIFO per producer,
// which is all weir needs: Conn keeps pipelined order itself.
#pragma once

#include <atomic>

namespace weir {

struct MpscNode {
    MpscNode *next = nullptr;
};

class MpscQueue {
  public:
    // Any thread. Returns true when the queue was empty before the push (the
    // caller may use it to decide on a wake; weir wakes through a flag instead).
    bool push(MpscNode *n) noexcept {
        MpscNode *head = head_.load(std::memory_order_relaxed);
        do {
            n->next = head;
        } while (!head_.compare_exchange_weak(head, n, std::memory_order_release, std::memory_order_relaxed));
        return head == nullptr;
    }

    // Consumer thread: everything pushed so far, oldest first, as a list
    // linked through next (nullptr when empty).
    MpscNode *take_all() noexcept {
        MpscNode *n = head_.exchange(nullptr, std::memory_order_acquire);
        MpscNode *fifo = nullptr;
        while (n) {
            MpscNode *next = n->next;
            n->next = fifo;
            fifo = n;
            n = next;
        }
        return fifo;
    }

    // Any thread; a hint only.
    bool empty() const noexcept { return head_.load(std::memory_order_acquire) == nullptr; }

  private:
    std::atomic<MpscNode *> head_{nullptr};
};

} // namespace weir
