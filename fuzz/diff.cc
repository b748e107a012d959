// libFuzzer target: weir's request parser against llhttp (differential).
// The oracle is fuzz/oracle/diff.h; the classes of deliberate strictness it
// accepts are fuzz/oracle/diff_classes.h. Built only where llhttp's C
// sources are present (Debian's node-llhttp; see the Makefile).
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "oracle/diff.h"
#include "util/codes.h"

namespace {
const char *weir_name(int rc) {
    switch (rc) {
#define X(code, status, text)                                                                                  \
    case code:                                                                                                 \
        return #code;
        WEIR_CODE_LIST(X)
#undef X
    default:
        return rc > 0 ? "head" : "?";
    }
}
const char *verdict(diff_fuzz::Verdict v) {
    return v == diff_fuzz::Verdict::Accept ? "accept" : v == diff_fuzz::Verdict::Refuse ? "refuse" : "incomplete";
}

// WEIR_DIFF_DISCOVER=DIR: log and go on instead of aborting. Each unlisted
// disagreement is printed and its first inputs (three per signature) are
// kept in DIR; at exit, the count of each listed class is printed.
struct Discovery {
    const char *dir = getenv("WEIR_DIFF_DISCOVER");
    std::map<std::string, unsigned long> seen;
    unsigned long total = 0;
    void print() const {
        for (const auto &[k, n] : seen)
            fprintf(stderr, "diff: class %s: %lu inputs\n", k.c_str(), n);
    }
    // Also every 2^20 disagreements: an interrupted run ends with _Exit.
    void count(const char *id) {
        seen[id]++;
        if ((++total & ((1ul << 20) - 1)) == 0)
            print();
    }
    ~Discovery() {
        if (dir)
            print();
    }
};
Discovery discovery;

void keep(const diff_fuzz::Outcome &o, const uint8_t *data, size_t size) {
    char sig[512], path[1024];
    snprintf(sig, sizeof sig, "%s|%s|%s|%s|%d|%s", o.what, verdict(o.w.verdict), weir_name(o.w.code),
             verdict(o.l.verdict), o.l.code, o.l.reason);
    unsigned long h = 5381;
    for (const char *c = sig; *c; c++)
        h = h * 33 + static_cast<unsigned char>(*c);
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/%08lx-%d", discovery.dir, h & 0xffffffffu, k);
        if (FILE *f = fopen(path, "wbx")) {
            fprintf(f, "%s\n", sig);
            fwrite(data, 1, size, f);
            fclose(f);
            break;
        }
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    diff_fuzz::Outcome o = diff_fuzz::compare(data, size);
    if (!o.what)
        return 0;
    if (o.cls) {
        if (discovery.dir)
            discovery.count(o.cls->id);
        return 0;
    }
    fprintf(stderr, "diff: %s [UNLISTED] weir %s %s%s, llhttp %s %s (%s)\n", o.what, verdict(o.w.verdict),
            weir_name(o.w.code), o.w.in_body ? " in the body" : "", verdict(o.l.verdict),
            llhttp_errno_name(static_cast<llhttp_errno_t>(o.l.code)), o.l.reason);
    if (!discovery.dir)
        abort();
    discovery.count("UNLISTED");
    keep(o, data, size);
    return 0;
}
