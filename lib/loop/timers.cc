#include "loop/timers.h"

namespace weir {

void Timers::disarm(TimerNode &n) {
    if (n.kind == TimerKind::None)
        return;
    List &l = lists_[idx(n.kind)];
    if (n.prev)
        n.prev->next = n.next;
    else
        l.head = n.next;
    if (n.next)
        n.next->prev = n.prev;
    else
        l.tail = n.prev;
    n.prev = n.next = nullptr;
    n.kind = TimerKind::None;
    size_--;
}

void Timers::arm(TimerNode &n, TimerKind k, int64_t now_ms) {
    disarm(n);
    if (k == TimerKind::None || k >= TimerKind::Count || dur_[idx(k)] == 0)
        return;
    List &l = lists_[idx(k)];
    n.kind = k;
    n.deadline_ms = now_ms + dur_[idx(k)];
    n.next = nullptr;
    n.prev = l.tail;
    if (l.tail)
        l.tail->next = &n;
    else
        l.head = &n;
    l.tail = &n;
    size_++;
}

void Timers::arm_at(TimerNode &n, TimerKind k, int64_t deadline_ms) {
    disarm(n);
    if (k == TimerKind::None || k >= TimerKind::Count || dur_[idx(k)] == 0)
        return;
    List &l = lists_[idx(k)];
    n.kind = k;
    n.deadline_ms = deadline_ms;
    TimerNode *after = l.tail; // the last node due no later than n
    while (after && after->deadline_ms > deadline_ms)
        after = after->prev;
    n.prev = after;
    n.next = after ? after->next : l.head;
    if (n.next)
        n.next->prev = &n;
    else
        l.tail = &n;
    if (after)
        after->next = &n;
    else
        l.head = &n;
    size_++;
}

TimerNode *Timers::pop_expired(int64_t now_ms, TimerKind *fired) {
    for (int i = 1; i < idx(TimerKind::Count); i++) {
        TimerNode *h = lists_[i].head;
        if (h && h->deadline_ms <= now_ms) {
            disarm(*h);
            *fired = static_cast<TimerKind>(i);
            return h;
        }
    }
    return nullptr;
}

int64_t Timers::next_deadline() const {
    int64_t d = INT64_MAX;
    for (int i = 1; i < idx(TimerKind::Count); i++)
        if (lists_[i].head && lists_[i].head->deadline_ms < d)
            d = lists_[i].head->deadline_ms;
    return d;
}

} // namespace weir
