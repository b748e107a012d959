#include "mixed_requests.h"

#include <strings.h>

#include <cstdio>
#include <cstdlib>

namespace mixed {

namespace {

// Each must be answered 400 by the parser (weir.h lists the codes): one per
// kind of error the parser reports with that status.
const char *const kBadRequests[] = {
    "GET / HTTP/1.1\r\nHost: t\r\nBad Name: x\r\n\r\n",                                    // name not a token
    "GET / HTTP/1.1\r\nUser-Agent: mixed\r\n\r\n",                                          // no Host
    "GET / HTTP/1.1\r\nHost: t\r\nHost: u\r\n\r\n",                                         // two Hosts
    "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", // both framings
    "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1x\r\n\r\n",                             // bad length
    "GET / HTTP/1.1\r\nHost: t\r\nX-A: a\r\n folded\r\n\r\n",                               // obs-fold
    "GET / HTTP/1.1\nHost: t\n\n",                                                          // bare LF
    "G(T / HTTP/1.1\r\nHost: t\r\n\r\n",                                                    // method
    "GET /a b HTTP/1.1\r\nHost: t\r\n\r\n",                                                 // target
    "GET / HTTP/1.1\r\nHost: t\r\nX-A : a\r\n\r\n",                                         // space before colon
    "POST /echo/x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",          // chunk size
    "POST /echo/x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY0\r\n\r\n", // chunk CRLF
};

} // namespace

int take_answer(std::string &in, int *status, std::string *body, bool *close) {
    size_t h = in.find("\r\n\r\n");
    if (h == std::string::npos)
        return in.size() > 65536 ? -1 : 0;
    if (in.compare(0, 9, "HTTP/1.1 ") != 0)
        return -1;
    *status = std::atoi(in.c_str() + 9);
    *close = false;
    long cl = -1;
    size_t p = in.find("\r\n") + 2;
    while (p < h + 2) {
        size_t e = in.find("\r\n", p);
        const char *line = in.data() + p;
        size_t n = e - p;
        if (n > 15 && strncasecmp(line, "Content-Length:", 15) == 0)
            cl = std::strtol(line + 15, nullptr, 10);
        else if (n >= 17 && strncasecmp(line, "Connection: close", 17) == 0)
            *close = true;
        else if (n > 18 && strncasecmp(line, "Transfer-Encoding:", 18) == 0)
            return -1; // weir answers whole bodies with a length
        p = e + 2;
    }
    if (cl < 0 || in.size() < h + 4 + static_cast<size_t>(cl))
        return cl < 0 ? -1 : 0;
    body->assign(in, h + 4, static_cast<size_t>(cl));
    in.erase(0, h + 4 + static_cast<size_t>(cl));
    return 1;
}

std::string Requests::random_body(size_t n) {
    std::string b(n, 'x');
    uint64_t r = rng_();
    for (size_t i = 0; i < n; i++) {
        if (i % 8 == 0)
            r = rng_();
        b[i] = static_cast<char>(' ' + (r >> (8 * (i % 8))) % 95);
    }
    return b;
}

Req Requests::get_now(const char *extra) {
    Req q;
    std::string path = "/now/" + tag();
    q.bytes = "GET " + path + " HTTP/1.1\r\nHost: t\r\n" + extra + "\r\n";
    q.head_len = q.bytes.size();
    q.expect.cls = kGetNow;
    q.expect.body = "N" + path;
    return q;
}

Req Requests::get_big(const char *extra) {
    static const size_t kSizes[] = {16384, 40000, 65536};
    Req q;
    size_t n = kSizes[roll(3)];
    q.bytes = "GET /big/" + std::to_string(n) + "/" + tag() + " HTTP/1.1\r\nHost: t\r\n" + extra + "\r\n";
    q.head_len = q.bytes.size();
    q.expect.cls = kGetNow;
    q.expect.body = big_body(n);
    return q;
}

Req Requests::get_later(const char *extra) {
    Req q;
    std::string path = "/later/" + tag();
    q.bytes = "GET " + path + " HTTP/1.1\r\nHost: t\r\nUser-Agent: mixed/1\r\n" + extra + "\r\n";
    q.head_len = q.bytes.size();
    q.expect.cls = kGetLater;
    q.expect.body = "L" + path;
    return q;
}

Req Requests::post_length(bool deferred, size_t n, const char *extra) {
    Req q;
    q.expect.body = random_body(n);
    q.bytes = std::string("POST ") + (deferred ? "/echol/" : "/echo/") + tag() + " HTTP/1.1\r\nHost: t\r\n" +
              "Content-Type: text/plain\r\nContent-Length: " + std::to_string(n) + "\r\n" + extra + "\r\n";
    q.head_len = q.bytes.size();
    q.bytes += q.expect.body;
    q.expect.cls = kPostLength;
    return q;
}

Req Requests::post_chunked(bool deferred, size_t n, const char *extra) {
    Req q;
    q.expect.body = random_body(n);
    q.bytes = std::string("POST ") + (deferred ? "/echol/" : "/echo/") + tag() + " HTTP/1.1\r\nHost: t\r\n" +
              "Transfer-Encoding: chunked\r\n" + extra + "\r\n";
    q.head_len = q.bytes.size();
    size_t off = 0;
    while (off < n) { // 1-4 chunks of random sizes
        size_t left = n - off;
        size_t len = left <= 16 || roll(4) == 0 ? left : 1 + roll(left);
        char size[24];
        std::snprintf(size, sizeof size, roll(2) ? "%zx" : "%zX", len);
        q.bytes += size;
        q.bytes += roll(8) == 0 ? ";ext=1\r\n" : "\r\n";
        q.bytes.append(q.expect.body, off, len);
        q.bytes += "\r\n";
        off += len;
    }
    q.bytes += roll(4) == 0 ? "0\r\nX-Trailer: t\r\n\r\n" : "0\r\n\r\n";
    q.expect.cls = kPostChunked;
    return q;
}

Req Requests::valid(int cls, const char *extra) {
    uint64_t r = roll(100);
    Req q;
    if (r < 38)
        q = get_now(extra);
    else if (r < 40)
        q = get_big(extra);
    else if (r < 60)
        q = get_later(extra);
    else if (r < 80)
        q = post_length(roll(2) == 0, roll(8) == 0 ? 4096 + roll(28672) : roll(1500), extra);
    else
        q = post_chunked(roll(2) == 0, roll(1500), extra);
    if (cls >= 0)
        q.expect.cls = cls;
    return q;
}

Req Requests::post_with_body() {
    size_t n = 1 + roll(3000);
    return roll(2) ? post_length(roll(2) == 0, n, "") : post_chunked(roll(2) == 0, n, "");
}

Req Requests::invalid() {
    Req q;
    q.bytes = kBadRequests[roll(sizeof kBadRequests / sizeof kBadRequests[0])];
    q.head_len = q.bytes.size();
    q.expect.cls = kInvalid;
    q.expect.status = 400;
    q.expect.then_eof = true;
    return q;
}

} // namespace mixed
