#include "soak_report.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace soak {

namespace {

std::string fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char *f, ...) {
    char b[512];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(b, sizeof b, f, ap);
    va_end(ap);
    return b;
}

std::string n(uint64_t v) { // 1234567 -> "1,234,567"
    std::string s = std::to_string(v);
    for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
        s.insert(static_cast<size_t>(i), ",");
    return s;
}

std::string mib(size_t b) { return fmt("%.1f MiB", b / 1048576.0); }

void row(std::string &s, const std::string &what, uint64_t a, uint64_t b) {
    s += "| " + what + " | " + n(a) + " | " + n(b) + " |\n";
}

} // namespace

void reserve_for(Result &r, int64_t seconds) {
    r.samples.reserve(static_cast<size_t>(seconds) + 2);
    r.failures.reserve(40);
}

std::string markdown(const Result &r, const std::string &command) {
    std::string s;
    utsname u{};
    ::uname(&u);
    char date[32];
    std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    const char *commit = std::getenv("WEIR_SOAK_COMMIT");
    s += fmt("### Soak: %.1f minutes, %s and %s alternating\n\n", r.seconds / 60, r.name[0], r.name[1]);
    s += fmt("Run %s, weir %s, kernel %s, %ld CPUs: `%s`.\n\n", date, commit && *commit ? commit : "(commit unknown)",
             u.release, ::sysconf(_SC_NPROCESSORS_ONLN), command.c_str());
    if (r.failures.empty()) {
        s += "Verdict: **pass** (0 client errors, connections conserved, ledgers balanced, "
             "descriptors and bytes back at their baseline).\n\n";
    } else {
        s += "Verdict: **FAIL**\n\n";
        for (const std::string &f : r.failures)
            s += "- " + f + "\n";
        s += "\n";
    }
    const mixed::Counts &c = r.c;
    s += "| | |\n|---|---|\n";
    s += fmt("| load | %.0f s |\n", r.seconds);
    s += fmt("| switches (each moving the listeners, no linger) | %d |\n", r.switches);
    s += fmt("| aborted pauses (resumed inside the linger) | %d |\n", r.aborted_pauses);
    s += "| requests | " + n(c.requests()) + fmt(" (%.0f/s)", c.requests() / (r.seconds > 0 ? r.seconds : 1)) +
         " over " + n(c.connections) + " connections |\n";
    s += "| answers checked | " + n(c.answers()) + " |\n";
    s += "| client errors | " + n(c.total_errors() - r.race_resets) + " |\n";
    s += "| connects reset by the listener-close race (close_race.h; counted in the errors above) | " + n(r.race_resets) + " |\n";
    s += fmt("| kernel migrations at listener closes (TcpExt TCPMigrateReqSuccess / Failure) | %ld / %ld |\n\n",
             r.migrated, r.migrate_failed);

    s += "| class | sent | verified | errors |\n|---|---:|---:|---:|\n";
    for (int k = 0; k < mixed::kClasses; k++)
        s += fmt("| %s | ", mixed::class_name(k)) + n(c.sent[k]) + " | " + n(c.verified[k]) + " | " +
             n(c.errors[k]) + " |\n";
    s += "\nKeep-alive connections by their ending:";
    for (int e = 0; e < mixed::kEnds; e++)
        s += std::string(e ? "," : "") + " " + mixed::end_name(e) + " " + n(c.ends[e]);
    s += ".\n\n";
    for (const std::string &note : c.notes)
        s += "- error: " + note + "\n";

    s += fmt("| engine | A (%s) | B (%s) |\n|---|---:|---:|\n", r.name[0], r.name[1]);
    row(s, "requests parsed", r.m[0].requests, r.m[1].requests);
    row(s, "responses", r.m[0].responses, r.m[1].responses);
    row(s, "parse errors", r.m[0].parse_errors, r.m[1].parse_errors);
    row(s, "accepted", r.m[0].accepted, r.m[1].accepted);
    for (uint32_t k = 0; k < WEIR_CLOSE_REASONS; k++)
        if (r.m[0].closes[k] || r.m[1].closes[k])
            row(s, std::string("closes: ") + weir_close_reason_name(k), r.m[0].closes[k], r.m[1].closes[k]);
    row(s, "lingering closes", r.m[0].close_lingers, r.m[1].close_lingers);
    row(s, "transplant: detached", r.m[0].transplant_detached, r.m[1].transplant_detached);
    row(s, "transplant: adopted", r.m[0].transplant_adopted, r.m[1].transplant_adopted);
    row(s, "transplant: refused", r.m[0].transplant_refused, r.m[1].transplant_refused);
    row(s, "transplant: received", r.m[0].transplant_received, r.m[1].transplant_received);
    row(s, "pause: lingers", r.m[0].pause_lingers, r.m[1].pause_lingers);
    row(s, "pause: closes", r.m[0].pause_closes, r.m[1].pause_closes);
    row(s, "pause: aborts", r.m[0].pause_aborts, r.m[1].pause_aborts);
    row(s, "pause: reopens", r.m[0].pause_reopens, r.m[1].pause_reopens);
    s += "\n";

    const leakcheck::Verdict &v = r.leaks;
    s += "| leaks | before | after |\n|---|---:|---:|\n";
    s += fmt("| descriptors (/proc/self/fd) | %zu | %zu |\n", v.fds_before, v.fds_after);
    s += fmt("| allocated bytes (bound ±%zu) | %s | %s |\n", r.byte_bound, n(v.bytes_before).c_str(),
             n(v.bytes_after).c_str());
    if (!v.fd_diff.empty())
        s += "\nDescriptors that differ: " + v.fd_diff + "\n";

    size_t lo = SIZE_MAX, hi = 0;
    for (const Sample &p : r.samples) {
        lo = std::min(lo, p.rss);
        hi = std::max(hi, p.rss);
    }
    if (!r.samples.empty()) {
        s += "\nRSS over the run (the test process: engines, client and all): min " + mib(lo) + ", max " + mib(hi) +
             ".\n\n| t | RSS | allocated | requests so far |\n|---:|---:|---:|---:|\n";
        size_t step = std::max<size_t>(1, r.samples.size() / 30);
        for (size_t i = 0; i < r.samples.size(); i += step) {
            const Sample &p = r.samples[i];
            s += fmt("| %.0f s | %s | %s | ", p.t, mib(p.rss).c_str(), mib(p.heap).c_str()) + n(p.requests) + " |\n";
        }
    }
    return s;
}

bool write(const std::string &path, const std::string &text) {
    FILE *f = std::fopen(path.c_str(), "w");
    if (!f)
        return false;
    bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    return std::fclose(f) == 0 && ok;
}

} // namespace soak
