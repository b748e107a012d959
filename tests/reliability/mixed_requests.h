// The requests of the mixed load (mixed_load.h) and the answers each must
// draw, built from one random source so a seed replays a run's bytes.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "mixed_load.h"

namespace mixed {

struct Expect {
    int cls = kGetNow;
    int status = 200;     // 200, or 400 for an invalid request
    std::string body;     // the whole body, checked byte for byte (200 only)
    bool then_eof = false; // answered with "Connection: close", then the server's FIN
};

struct Req {
    std::string bytes;
    size_t head_len = 0; // the head's bytes (the body, if any, follows)
    Expect expect;
};

// Takes one answer off the front of in (weir answers whole bodies with a
// Content-Length). 1: taken, 0: incomplete, -1: garbage.
int take_answer(std::string &in, int *status, std::string *body, bool *close);

class Requests {
  public:
    explicit Requests(uint64_t seed, int thread) : rng_(seed), thread_(thread) {}
    uint64_t roll(uint64_t n) { return rng_() % n; }
    // A valid request of a random kind, counted as cls (or as its own kind when cls < 0).
    Req valid(int cls = -1, const char *extra = "");
    // A POST whose body has at least one byte (for a body cut short).
    Req post_with_body();
    // A malformed request that must draw a 400.
    Req invalid();

  private:
    std::string tag() { return std::to_string(thread_) + "-" + std::to_string(seq_++); }
    std::string random_body(size_t n);
    Req get_now(const char *extra);
    Req get_big(const char *extra);
    Req get_later(const char *extra);
    Req post_length(bool deferred, size_t n, const char *extra);
    Req post_chunked(bool deferred, size_t n, const char *extra);
    std::mt19937_64 rng_;
    int thread_;
    uint64_t seq_ = 0;
};

} // namespace mixed
