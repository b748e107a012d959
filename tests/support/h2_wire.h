// A blocking HTTP/2 client over a real socket for the integration tests: a
// real nghttp2 client session (prior knowledge), requests submitted, frames
// pumped until a condition holds or a deadline passes, what came recorded per
// stream. Header-only: only the tests that speak HTTP/2 include it.
#pragma once

#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "support/net.h"

namespace h2wire {

struct Stream {
    int status = 0;
    std::string body;
    bool closed = false;
    uint32_t rst = UINT32_MAX; // RST_STREAM code received
};

class Client {
  public:
    std::map<int32_t, Stream> got;
    bool goaway = false, eof = false;
    bool settings = false; // the server's SETTINGS came
    uint32_t goaway_code = 0;
    int fd = -1;

    explicit Client(uint16_t port) {
        testnet::Client c = testnet::connect_to(port);
        fd = c.fd;
        c.fd = -1;
        nghttp2_session_callbacks *cb;
        nghttp2_session_callbacks_new(&cb);
        nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
        nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame);
        nghttp2_session_client_new(&ng, cb, this);
        nghttp2_session_callbacks_del(cb);
        nghttp2_submit_settings(ng, NGHTTP2_FLAG_NONE, nullptr, 0);
    }
    ~Client() {
        nghttp2_session_del(ng);
        if (fd >= 0)
            ::close(fd);
    }
    Client(const Client &) = delete;
    Client &operator=(const Client &) = delete;

    int32_t get(const std::string &path, const std::string &authority = "example") {
        const std::string get = "GET", http = "http", b = "b";
        nghttp2_nv nv[] = {nv_of(":method", get), nv_of(":scheme", http), nv_of(":path", path),
                           nv_of(":authority", authority), nv_of("x-a", b)};
        return nghttp2_submit_request(ng, nullptr, nv, 5, nullptr, nullptr);
    }
    void reset(int32_t id) { nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL); }

    // Sends what is queued, reads what comes, until done() or ms pass.
    bool run(const std::function<bool()> &done, int ms = 5000) {
        int64_t end = testnet::now_ms() + testnet::bound_ms(ms);
        for (;;) {
            flush();
            if (done())
                return true;
            int64_t left = end - testnet::now_ms();
            if (left <= 0 || eof)
                return done();
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, static_cast<int>(left < 50 ? left : 50)) > 0) {
                char buf[16384];
                ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
                if (n <= 0) {
                    eof = true;
                    continue;
                }
                if (nghttp2_session_mem_recv(ng, reinterpret_cast<uint8_t *>(buf), static_cast<size_t>(n)) < 0)
                    eof = true;
            }
        }
    }
    void flush() {
        const uint8_t *p;
        ssize_t n;
        while ((n = nghttp2_session_mem_send(ng, &p)) > 0)
            if (::send(fd, p, static_cast<size_t>(n), MSG_NOSIGNAL) != n)
                return;
    }

  private:
    nghttp2_session *ng = nullptr;
    // Values are copied by nghttp2 (no NO_COPY flag): the literals' strings die with the call.
    static nghttp2_nv nv_of(const char *n, const std::string &v) {
        return nghttp2_nv{(uint8_t *)n, (uint8_t *)v.data(), strlen(n), v.size(), NGHTTP2_NV_FLAG_NONE};
    }
    static Client &me(void *u) { return *static_cast<Client *>(u); }
    static int on_header(nghttp2_session *, const nghttp2_frame *f, const uint8_t *n, size_t nl, const uint8_t *v,
                         size_t vl, uint8_t, void *u) {
        if (nl == 7 && memcmp(n, ":status", 7) == 0)
            me(u).got[f->hd.stream_id].status = std::stoi(std::string((const char *)v, vl));
        return 0;
    }
    static int on_data(nghttp2_session *, uint8_t, int32_t id, const uint8_t *d, size_t n, void *u) {
        me(u).got[id].body.append((const char *)d, n);
        return 0;
    }
    static int on_close(nghttp2_session *, int32_t id, uint32_t, void *u) {
        me(u).got[id].closed = true;
        return 0;
    }
    static int on_frame(nghttp2_session *, const nghttp2_frame *f, void *u) {
        if (f->hd.type == NGHTTP2_GOAWAY) {
            me(u).goaway = true;
            me(u).goaway_code = f->goaway.error_code;
        } else if (f->hd.type == NGHTTP2_SETTINGS && !(f->hd.flags & NGHTTP2_FLAG_ACK)) {
            me(u).settings = true;
        } else if (f->hd.type == NGHTTP2_RST_STREAM) {
            me(u).got[f->hd.stream_id].rst = f->rst_stream.error_code;
        }
        return 0;
    }
};

} // namespace h2wire
