// Parser benchmark: ns per request and MB/s for weir_http1_parse_request on a
// fixed request set, best of several runs, with the vector scans and with
// the scalar scan pinned. Built and run by scripts/bench-parser.
//
// Side by side with picohttpparser (not in the repository; see
// docs/parser.md for the by-hand build): compile this file with
// -DWEIR_BENCH_PICO and picohttpparser.{c,h} to add its rows.
//
// Request set (bytes are the whole head):
//   short-get    "GET / HTTP/1.1" + Host                       (2 lines)
//   browser-get  picohttpparser's bench.c request: 9 headers, 700-odd bytes
//   post-form    POST with Host, User-Agent, Content-Type, Content-Length, Accept
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "http1/scan.h"
#include "weir.h"

#ifdef WEIR_BENCH_PICO
#include "picohttpparser.h"
#endif

namespace {

struct Req {
    const char *name;
    std::string text;
};

const Req kRequests[] = {
    {"short-get", "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"},
    {"browser-get",
     "GET /wp-content/uploads/2010/03/hello-kitty-darth-vader-pink.jpg HTTP/1.1\r\n"
     "Host: www.kittyhell.com\r\n"
     "User-Agent: Mozilla/5.0 (Macintosh; U; Intel Mac OS X 10.6; ja-JP-mac; rv:1.9.2.3) "
     "Gecko/20100401 Firefox/3.6.3 Pathtraq/0.9\r\n"
     "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\n"
     "Accept-Language: ja,en-us;q=0.7,en;q=0.3\r\n"
     "Accept-Encoding: gzip,deflate\r\n"
     "Accept-Charset: Shift_JIS,utf-8;q=0.7,*;q=0.7\r\n"
     "Keep-Alive: 115\r\n"
     "Connection: keep-alive\r\n"
     "Cookie: wp_ozh_wsa_visits=2; wp_ozh_wsa_visit_lasttime=xxxxxxxxxx; "
     "__utma=xxxxxxxxx.xxxxxxxxxx.xxxxxxxxxx.xxxxxxxxxx.xxxxxxxxxx.x; "
     "__utmz=xxxxxxxxx.xxxxxxxxxx.x.x.utmccn=(referral)|utmcsr=reader.livedoor.com|utmcct=/reader/|utmcmd=referral\r\n"
     "\r\n"},
    {"post-form",
     "POST /api/v1/items?draft=1 HTTP/1.1\r\n"
     "Host: api.example.com:8443\r\n"
     "User-Agent: curl/8.5.0\r\n"
     "Content-Type: application/x-www-form-urlencoded\r\n"
     "Content-Length: 27\r\n"
     "Accept: */*\r\n"
     "\r\n"},
};

double now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

volatile long g_sink;

// Best of `runs` timings of `iters` calls of f(), in ns per call.
template <typename F> double best_ns(F f, int iters, int runs) {
    double best = 1e300;
    for (int r = 0; r < runs; r++) {
        long sink = 0;
        double t0 = now_ns();
        for (int i = 0; i < iters; i++)
            sink += f();
        double dt = (now_ns() - t0) / iters;
        g_sink = sink;
        if (dt < best)
            best = dt;
    }
    return best;
}

int parse_weir(const std::string &s) {
    weir_header_t h[32];
    weir_http1_request req;
    req.size = sizeof req;
    return weir_http1_parse_request(s.data(), s.size(), nullptr, &req, h, 32);
}

#ifdef WEIR_BENCH_PICO
int parse_pico(const std::string &s) {
    const char *method, *path;
    size_t method_len, path_len, num_headers = 32;
    int minor;
    phr_header h[32];
    return phr_parse_request(s.data(), s.size(), &method, &method_len, &path, &path_len, &minor, h, &num_headers,
                             0);
}
#endif

void row(const char *parser, const Req &r, double ns) {
    printf("%-14s %-12s %5zu %9.1f %9.1f\n", parser, r.name, r.text.size(), ns,
           static_cast<double>(r.text.size()) / ns * 1e3);
}

} // namespace

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 200000;
    int runs = argc > 2 ? atoi(argv[2]) : 7;
    if (iters <= 0 || runs <= 0) {
        fprintf(stderr, "usage: %s [iterations per run] [runs]\n", argv[0]);
        return 2;
    }
    for (const Req &r : kRequests)
        if (parse_weir(r.text) != static_cast<int>(r.text.size())) {
            fprintf(stderr, "%s: weir refuses it (%d)\n", r.name, parse_weir(r.text));
            return 1;
        }
    printf("# best of %d runs x %d parses; bytes = head size; MB/s = 10^6 bytes/s\n", runs, iters);
    printf("%-14s %-12s %5s %9s %9s\n", "parser", "request", "bytes", "ns/req", "MB/s");
    int best = weir::http1::scan_force(weir::http1::kScanAuto);
    const char *names[] = {"weir-scalar", "weir-sse4.2", "weir-avx2"};
    for (int level = best; level >= 0; level--) {
        if (weir::http1::scan_force(level) != level)
            continue;
        for (const Req &r : kRequests)
            row(names[level], r, best_ns([&] { return parse_weir(r.text); }, iters, runs));
    }
    weir::http1::scan_force(weir::http1::kScanAuto);
#ifdef WEIR_BENCH_PICO
    for (const Req &r : kRequests) {
        if (parse_pico(r.text) != static_cast<int>(r.text.size()))
            return 1;
        row("picohttpparser", r, best_ns([&] { return parse_pico(r.text); }, iters, runs));
    }
#endif
    return 0;
}
