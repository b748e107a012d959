// Writes the seed corpus of fuzz/h2_session.cc (fuzz/corpus/h2_session/)
// from a real nghttp2 client: each seed is the oracle's program (fuzz/oracle/
// h2.h) feeding the client's bytes after the preface, answering, draining.
// Not a test (no test_ prefix): build and run by hand when the seeds change:
//   g++ -std=c++20 -Iinclude -Ilib -Itests -Itests/unit/h2 tests/unit/h2/h2_seeds.cc \
//       build/lib/libweir.a -lnghttp2 -luring -lpthread -o build/h2_seeds && build/h2_seeds fuzz/corpus/h2_session
#include <cstdio>
#include <string>

#include "h2_peer.h"

namespace {

// The client's bytes after its 24-byte magic and first SETTINGS (the
// oracle sends a preface of its own).
std::string client_bytes(h2_peer::Peer &p, bool skip_preface) {
    std::string out;
    const uint8_t *b;
    ssize_t n;
    while ((n = nghttp2_session_mem_send(p.ng, &b)) > 0)
        out.append(reinterpret_cast<const char *>(b), static_cast<size_t>(n));
    if (skip_preface && out.size() >= 24)
        out = out.substr(24);
    return out;
}

// op 0 (take_bytes) in pieces of at most 255, then answer (op 3 with how),
// then drain (op 6).
std::string program(uint8_t cfg, const std::string &bytes, uint8_t how) {
    std::string s(1, char(cfg));
    for (size_t off = 0; off < bytes.size(); off += 255) {
        size_t k = std::min<size_t>(255, bytes.size() - off);
        s.push_back(0);
        s.push_back(char(k));
        s += bytes.substr(off, k);
    }
    s.push_back(3);
    s.push_back(char(how));
    s.push_back(6);
    s.push_back(char(255));
    return s;
}

void write(const std::string &dir, const char *name, const std::string &data) {
    std::string path = dir + "/" + name;
    FILE *f = fopen(path.c_str(), "wb");
    fwrite(data.data(), 1, data.size(), f);
    fclose(f);
}

} // namespace

int main(int argc, char **argv) {
    std::string dir = argc > 1 ? argv[1] : "fuzz/corpus/h2_session";
    {
        h2_peer::Peer p;
        p.get("/index.html?q=1");
        write(dir, "get", program(0, client_bytes(p, true), 0));
    }
    {
        h2_peer::Peer p;
        std::string body(300, 'p');
        p.request("POST", "/upload", {{"content-type", "text/plain"}}, &body);
        write(dir, "post_body", program(0, client_bytes(p, true), 0));
        h2_peer::Peer q;
        q.request("POST", "/upload", {}, &body);
        write(dir, "post_streamed", program(2, client_bytes(q, true), 4));
    }
    {
        h2_peer::Peer p;
        for (int i = 0; i < 5; i++)
            p.get("/s" + std::to_string(i));
        write(dir, "several_streams", program(0, client_bytes(p, true), 5));
    }
    {
        h2_peer::Peer p;
        int32_t id = p.get("/reset");
        std::string a = client_bytes(p, true);
        nghttp2_submit_rst_stream(p.ng, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
        p.get("/after");
        write(dir, "reset", program(0, a + client_bytes(p, false), 6));
    }
    {
        h2_peer::Peer p;
        int32_t id = p.request("POST", "/trailers", {{"te", "trailers"}}, nullptr, true);
        std::string a = client_bytes(p, true);
        nghttp2_nv t[] = {{(uint8_t *)"x-checksum", (uint8_t *)"abc", 10, 3, NGHTTP2_NV_FLAG_NONE}};
        nghttp2_submit_headers(p.ng, NGHTTP2_FLAG_END_STREAM, id, nullptr, t, 1, nullptr);
        write(dir, "trailers", program(0, a + client_bytes(p, false), 4));
    }
    {
        h2_peer::Peer p;
        p.request("HEAD", "/h");
        p.get("/g");
        std::string b = client_bytes(p, true);
        std::string s = program(0, b, 0);
        s += std::string("\x09\x01\x06\xff", 4); // close(SHUTDOWN), drain
        write(dir, "head_and_drain", s);
    }
    return 0;
}
