// Socket steps every backend takes the same way, whatever reports them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loop/doors.h"
#include "loop/port.h"

namespace weir {

// How a failed accept counts for a door's batch: EAGAIN Empty, EMFILE,
// ENFILE, ENOBUFS, ENOMEM Resource (never owed, retried on a timer), the
// rest Other.
Take take_for_errno(int e);

// One accept4 straight from the listener: non-blocking, close-on-exec, with
// the peer's address; out.error set when it is not Took.
Take accept_now(int listen_fd, Accepted &out);

// Before a close after which the peer may still be sending: FIN first, then
// discard what already arrived, at most max_reads reads of 4 KiB (bounded:
// later bytes still draw a reset, but the answer and the FIN lead them).
// Returns whether the peer's FIN (or an error) came too; adds the bytes
// discarded to *got when given.
bool fin_and_drain(int fd, int max_reads = 64, size_t *got = nullptr);

// The close reason of a failed read or write: the peer's (a reset, a
// broken pipe) or an I/O error.
uint32_t close_for_errno(int e);

} // namespace weir
