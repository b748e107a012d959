// What the mixed load counts (mixed_load.h): the classes' names, and the
// counts summed over its threads.
#include <cstdio>
#include <string>

#include "mixed_load.h"
#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()

namespace mixed {

const char *class_name(int c) {
    static const char *const names[kClasses] = {"get_now",    "get_later",  "post_length",    "post_chunked",
                                                "pipelined",  "close",      "invalid",        "abort_head",
                                                "abort_body", "reset",      "silent_give_up", "silent_wait"};
    return c >= 0 && c < kClasses ? names[c] : "?";
}

bool is_request(int c) { return c != kSilentGiveUp && c != kSilentWait; }

const char *end_name(int e) {
    static const char *const names[kEnds] = {"fin", "close", "invalid", "abort_head", "abort_body", "reset"};
    return e >= 0 && e < kEnds ? names[e] : "?";
}

uint64_t Counts::requests() const {
    uint64_t n = 0;
    for (int i = 0; i < kClasses; i++)
        if (is_request(i))
            n += sent[i];
    return n;
}

uint64_t Counts::answers() const {
    uint64_t n = 0;
    for (int i = 0; i < kClasses; i++)
        if (is_request(i) && i != kAbortHead && i != kAbortBody)
            n += verified[i];
    return n;
}

uint64_t Counts::total_errors() const {
    uint64_t n = connect_errors;
    for (uint64_t e : errors)
        n += e;
    return n;
}

void Counts::add(const Counts &o) {
    for (int i = 0; i < kClasses; i++) {
        sent[i] += o.sent[i];
        verified[i] += o.verified[i];
        errors[i] += o.errors[i];
    }
    for (int i = 0; i < kEnds; i++)
        ends[i] += o.ends[i];
    connections += o.connections;
    connect_errors += o.connect_errors;
    bytes_sent += o.bytes_sent;
    bytes_read += o.bytes_read;
    silent_wait_max_ms = silent_wait_max_ms > o.silent_wait_max_ms ? silent_wait_max_ms : o.silent_wait_max_ms;
    for (const auto &r : o.connect_resets)
        if (connect_resets.size() < 1000)
            connect_resets.push_back(r);
    for (const std::string &n : o.notes)
        if (notes.size() < 20)
            notes.push_back(n);
}

std::string Counts::summary() const {
    std::string s;
    char line[256];
    for (int i = 0; i < kClasses; i++) {
        std::snprintf(line, sizeof line, "  %-15s sent %9llu  verified %9llu  errors %llu\n", class_name(i),
                      (unsigned long long)sent[i], (unsigned long long)verified[i], (unsigned long long)errors[i]);
        s += line;
    }
    s += "  keep-alive endings:";
    for (int i = 0; i < kEnds; i++) {
        std::snprintf(line, sizeof line, " %s %llu", end_name(i), (unsigned long long)ends[i]);
        s += line;
    }
    std::snprintf(line, sizeof line,
                  "\n  requests %llu, answers checked %llu, connections %llu, connect errors %llu, longest silent "
                  "wait %llu ms\n",
                  (unsigned long long)requests(), (unsigned long long)answers(), (unsigned long long)connections,
                  (unsigned long long)connect_errors, (unsigned long long)silent_wait_max_ms);
    s += line;
    for (const std::string &n : notes)
        s += "  error: " + n + "\n";
    return s;
}

void print_lines(const std::string &text) {
    for (size_t p = 0; p < text.size();) {
        size_t e = text.find('\n', p);
        if (e == std::string::npos)
            e = text.size();
        print_message("%s\n", text.substr(p, e - p).c_str());
        p = e + 1;
    }
}

} // namespace mixed
