// Test hooks of the loop: integration tests flip these to show what a rule
// guards against (the rule's own mutant). Never set outside tests. The pause
// linger's hooks are in linger.h.
#pragma once

#include <atomic>

namespace weir {

struct LoopHooks {
    // The accept batch's mutant: run the doors where the listener's event
    // falls in the event list (inside the port's wait), not after the pass's
    // other events were settled. tests/integration/test_accept_batch.cc must
    // fail with it.
    std::atomic<bool> doors_at_event{false};
    // The drop as it was: a foreign answer to a connection that closed
    // posts an allocated Answer, and a failed allocation posts nothing, so
    // the zombie slot is never freed. tests/reliability/test_alloc_failure.cc
    // shows the leak with it.
    std::atomic<bool> drop_by_answer{false};
    // Widens the window of Worker::push_and_wake: a foreign poster sleeps
    // this long between its push and its wake, as if preempted there, so
    // tests/reliability/test_poster_destroy.cc can take the node, serve it
    // and destroy the engine inside it.
    std::atomic<int> post_wake_delay_ms{0};
    // File answers (worker_file.cc). Counted always, read by tests: ranges
    // a port sent from the file without copying (one relaxed add per
    // sendfile or splice, each 64 KiB or more unless the answer is smaller),
    // and answers that fell back to reading (Worker::file_written).
    std::atomic<uint64_t> file_range_sends{0};
    std::atomic<uint64_t> file_fallbacks{0};
    // The fallback's arm: a port's next sends of a file range fail with this
    // errno instead of reaching the kernel (EINVAL: as a filesystem that
    // cannot splice), so tests show the answer still arrives, read.
    std::atomic<int> file_range_errno{0};
    // Answers given from a thread that was not the worker's, posted to it
    // (Worker::respond's queue path). Counted always, read by tests.
    std::atomic<uint64_t> posted_answers{0};
    // The connection limit's arm: a connection accepted over max_connections
    // is closed at once, unanswered, as before issue 32 (no 503, no linger).
    // tests/integration/test_max_conns_answer.cc shows the client then gets
    // no answer.
    std::atomic<bool> skip_limit_answer{false};
    // Added to every mono_ms() reading: the worker fuzz target
    // (fuzz/oracle/worker.h) moves the loop's clock forward instead of
    // sleeping, so its timer ticks cost nothing and replay the same. Only
    // ever raised: the clock stays monotonic.
    std::atomic<int64_t> clock_skew_ms{0};
    // The overload manager's idle closes (worker_overload.cc), their arms:
    // an overload close (WEIR_CLOSE_OVERLOAD) closes at once instead of
    // lingering, so a request the client had on its way draws a reset; and
    // the level is not re-read after an accept batch, so the batch that
    // passed a watermark leaves it unseen until some later event.
    // tests/integration/test_overload_idle.cc shows both losses.
    std::atomic<bool> overload_close_plain{false};
    std::atomic<bool> overload_skip_batch_reread{false};
    // cfg.on_conn's mutant: close_conn (the close path most connections
    // take) tells no CLOSE. tests/integration/test_conn_events.cc shows its
    // ledger then finds connections opened and never closed.
    std::atomic<bool> skip_close_event{false};
    // The descriptor watermark: how often /proc/self/fd is counted (0: the
    // default 100 ms; tests set it long so that only the engine's own
    // accounting can see a flood), and its arm: the reading is the sample
    // alone, as before (engine_overload.cc), so a flood between samples is
    // unseen. tests/integration/test_overload.cc shows it.
    std::atomic<int64_t> overload_fd_sample_ms{0};
    std::atomic<bool> overload_skip_fd_drift{false};
    // The per-stream handler deadline's arm (Worker::expire_held): HTTP/2
    // takes the connection's deadline as before, one that runs only while
    // the connection waits for nothing but the host and starts again with
    // every answer, so a stream held for ever on a connection whose other
    // streams keep being answered is never cut. tests/integration/
    // test_h2_stream_deadline.cc shows it.
    std::atomic<bool> h2_connection_deadline{false};
};
LoopHooks &loop_hooks();

} // namespace weir
