// A connection image on its way between workers (a transplant, a sibling's
// hand-off) or out of the process (a hot upgrade's sender), and where it goes.
#pragma once

#include <cstdint>
#include <memory>

#include "loop/ledger.h"
#include "loop/mpsc.h"
#include "proto/exchange.h"

namespace weir {

class Worker;
struct ImageNode;

// Where a worker's detached connections go: another worker (a transplant),
// or a hot upgrade's sender, which takes them out of the process
// (lib/handover/). Any thread calls post_image.
class ImageSink {
  public:
    virtual void post_image(ImageNode *n) = 0;
    // A worker: the image is a transplant's (its ledger counts it).
    virtual bool transplant_target() const { return true; }
    // A listeners-only handover: a connection closes at its request
    // boundary (WEIR_CLOSE_HANDOVER) instead of leaving.
    virtual bool closes_at_boundary() const { return false; }

  protected:
    ~ImageSink() = default;
};

// A connection image on its way to a worker's hand-off door.
struct ImageNode : MpscNode {
    ConnImage img;
    std::shared_ptr<Ledger> ledger; // a transplant's image; null for a sibling's hand-off
    Worker *from = nullptr;         // where it was detached: where a refusal or a return goes
    bool refused = false;           // given back by the target: the source closes it
    uint32_t close_reason = 0;      // given back to be closed, counted so (a handover's)
    uint64_t seq = 0;               // a handover's sequence number
};

} // namespace weir
