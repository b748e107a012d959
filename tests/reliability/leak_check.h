// The leak checks of the reliability suite (docs/reliability.md, "Leaks"):
// what a process holds before an engine is made and after it is destroyed
// (descriptors, allocated bytes), and the conservation of connections in
// the engines' metrics. The checks return what differs; the tests assert.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mixed_load.h"
#include "weir.h"

namespace leakcheck {

// The open descriptors (/proc/self/fd), each with what it names.
using Fds = std::vector<std::pair<int, std::string>>;
Fds fds();

// Bytes the allocator has handed out and not had back: mallinfo2()'s
// uordblks + hblkhd (chunks in the arenas, and those mmapped whole), or
// under ASan the sanitizer's own count (its allocator replaces glibc's).
size_t allocated_bytes();
// glibc's per-thread caches (tcache) keep freed chunks that mallinfo2 counts
// as in use, and a long-lived thread's cache fills over a run (measured:
// +25-60 KB a run, flattening near 250 KB), which would hide a leak of that
// size; without them the count comes back to within 16 bytes. Call first
// in main: re-executes the binary with glibc.malloc.tcache_count=0 added to
// GLIBC_TUNABLES (read only at start-up), unless it is there already or
// ASan's allocator runs. Returns whether the count is exact (false: the
// exec failed, and the caller's byte bound must allow for the caches).
bool exact_byte_count(int argc, char **argv);
// Resident set size (/proc/self/statm).
size_t rss_bytes();

struct Baseline {
    Fds fds;
    size_t bytes = 0;
};
Baseline take();

struct Verdict {
    long fd_delta = 0;
    long long byte_delta = 0;
    size_t fds_before = 0, fds_after = 0, bytes_before = 0, bytes_after = 0;
    std::string fd_diff; // "+7 anon_inode:[eventfd]" and the like
    bool fds_ok = false, bytes_ok = false;
    bool ok() const { return fds_ok && bytes_ok; }
    std::string describe() const;
};
// Compares now with b: the same descriptors, and allocated bytes within
// byte_bound of the baseline. The descriptor count may take a moment to
// settle after an io_uring engine's destroy (the kernel tears a ring down
// in a work queue, and a close it still owns lands there), so it is looked
// at again for up to settle_ms before it is called a leak.
Verdict check(const Baseline &b, size_t byte_bound, int settle_ms = 2000);

uint64_t closes_total(const weir_metrics &m);
// Every connection accepted by these engines was closed once, and none is
// open (connections move between engines by transplant, so the sums are
// over all of them). "" when it holds, else what differs.
std::string conservation(const std::vector<weir_metrics> &ms);
// What in these engines' metrics (summed) does not fit what the mixed load
// did: each reason closes exactly the connections whose plan calls for it
// (bad_request the invalid ones, not_keep_alive Connection: close, peer the
// client's FINs and resets, silent the silent ones that waited), and no
// other. Empty when everything fits.
std::vector<std::string> mix_mismatches(const mixed::Counts &c, const std::vector<weir_metrics> &ms);
// The closes of m with a count, "peer 1234, bad_request 56, ...".
std::string closes_line(const weir_metrics &m);

} // namespace leakcheck
