// The soak's report (docs/reliability.md, "The soak"): what a run of
// tests/reliability/test_soak.cc did and found, as Markdown ready to paste.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "leak_check.h"
#include "mixed_load.h"
#include "weir.h"

namespace soak {

struct Sample {
    double t = 0;           // seconds since the load began
    size_t rss = 0;         // bytes
    size_t heap = 0;        // allocated bytes (leakcheck::allocated_bytes)
    uint64_t requests = 0;  // parsed by both engines so far
};

struct Result {
    double seconds = 0; // of load (the wind-down included)
    int switches = 0, aborted_pauses = 0;
    mixed::Counts c;
    const char *name[2] = {"", ""}; // the backends of A and B
    weir_metrics m[2]{};
    leakcheck::Verdict leaks;
    size_t byte_bound = 0;
    // Connect resets the listener-close race explains (close_race.h), and
    // the kernel's migrations over the run (TcpExt, -1 when unreadable).
    size_t race_resets = 0;
    long migrated = -1, migrate_failed = -1;
    // Reserved before the leak baseline (reserve_for): a sample a second,
    // whose buffer would otherwise count as a leak of the run's length.
    std::vector<Sample> samples;
    std::vector<std::string> failures; // empty: the run passed every check
};

// Makes r's vectors big enough for a run of at most seconds, so that
// nothing the run records allocates once the leak baseline is taken.
void reserve_for(Result &r, int64_t seconds);

// The report, headed by how it was run (commit, kernel, CPUs, command).
std::string markdown(const Result &r, const std::string &command);
// Writes it to path (its folder must exist); false on error.
bool write(const std::string &path, const std::string &text);

} // namespace soak
