// Interim answers (weir_respond_interim): a 1xx head (103 Early Hints, 100
// Continue, 102) sent before an exchange's final answer, the exchange
// staying the host's. On the owning thread it is given to the connection at
// once; from any other it is posted, and counted in its ticket's nodes
// (as a stream's pieces are) so that a final answer given on the owning
// thread meanwhile is posted behind it instead of overtaking it
// (nothing_posted): a 1xx after the final answer would be a protocol error.
#include <cerrno>

#include "loop/engine.h"
#include "loop/worker.h"
#include "proto/answer_rules.h"

namespace weir {

bool Worker::nothing_posted(TicketRef &r) { return r.ticket().nodes.load(std::memory_order_acquire) == 0; }

int Worker::interim(TicketRef &r, int status, const weir_header_t *h, size_t nh) {
    if (status < 100 || status > 199 || status == 101)
        return -EINVAL; // 101 is weir_upgrade's
    if (int rc = fields_check(h, nh); rc < 0)
        return rc;
    bool own = owner_thread();
    if (int rc = r.open(own); rc < 0)
        return rc;
    Ticket &t = r.ticket();
    if (own && nothing_posted(r)) {
        Exchange *x = tickets_.live(r.handle());
        if (!x)
            return WEIR_E_STALE;
        Slot &s = *static_cast<Slot *>(x->user);
        int rc = s.session().interim(x, status, h, nh);
        mark_dirty(s);
        return rc;
    }
    if (finished())
        return 0; // nothing will be sent: the final answer learns WEIR_E_GONE
    Answer *a = answer_pool_.make(nullptr, status, h, nh, nullptr, 0, 0);
    if (!a)
        return -ENOMEM; // nothing sent; the exchange is as it was
    a->kind = AnswerKind::Interim;
    a->handle = r.handle();
    t.nodes.fetch_add(1, std::memory_order_acq_rel);
    push_and_wake(answers_, a);
    return 0;
}

// A posted interim answer, in its turn: before the final answer posted
// after it (the ticket may be Claimed or Stream by now, never retired), or
// nothing when the exchange was taken back meanwhile (the handler deadline).
void Worker::apply_interim(Answer *a) {
    Ticket *t = tickets_.at(a->handle);
    if (t) {
        t->nodes.fetch_sub(1, std::memory_order_acq_rel);
        if (Exchange *x = t->x) {
            Slot &s = *static_cast<Slot *>(x->user);
            s.session().interim(x, a->status, a->headers, a->num_headers);
            mark_dirty(s);
        }
    }
    answer_pool_.give(a);
}

} // namespace weir
