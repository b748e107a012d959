// Answers from a file (weir_respond_file): a body far above
// max_output_bytes fed as the connection drains, a range of a file, HEAD,
// the host's fd free to close at once, from another thread, the failure
// rule's codes, a file that shrinks mid-answer (the connection aborts,
// counted as io_error), and a client that leaves (weir's own fd is closed:
// no descriptor leaks).
#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;

namespace {

constexpr size_t kFileBytes = 6u << 20; // above the default 4 MiB output limit
std::string g_path;
std::string g_content;
std::mutex g_mu;
std::vector<weir_exchange *> g_parked;
std::vector<int> g_rcs;

void write_file() {
    char tmpl[] = "/tmp/weir-file-XXXXXX";
    int fd = mkstemp(tmpl);
    assert_true(fd >= 0);
    g_path = tmpl;
    g_content.resize(kFileBytes);
    for (size_t i = 0; i < kFileBytes; i++)
        g_content[i] = static_cast<char>('a' + (i / 4096 + i) % 26);
    assert_int_equal(::write(fd, g_content.data(), kFileBytes), static_cast<ssize_t>(kFileBytes));
    ::close(fd);
}

int reset_state(void **) {
    std::lock_guard<std::mutex> lk(g_mu);
    g_parked.clear();
    g_rcs.clear();
    write_file();
    return 0;
}

int remove_file(void **) {
    ::unlink(g_path.c_str());
    return 0;
}

int answer_file(weir_exchange *ex, uint64_t off, uint64_t len) {
    int fd = ::open(g_path.c_str(), O_RDONLY | O_CLOEXEC);
    weir_header_t ct = {{"Content-Type", 12}, {"application/octet-stream", 24}};
    int rc = weir_respond_file(ex, 200, &ct, 1, fd, off, len, 0);
    ::close(fd); // the host's fd is its own: weir reads through a dup
    return rc;
}

void handler(void *, weir_exchange *ex) {
    const weir_request *r = weir_exchange_request(ex);
    std::string path = str(r->path);
    if (path == "/file") {
        assert_int_equal(answer_file(ex, 0, kFileBytes), 0);
    } else if (path == "/range") {
        assert_int_equal(answer_file(ex, 1000, 5000), 0);
    } else if (path == "/rule") {
        std::lock_guard<std::mutex> lk(g_mu);
        g_rcs.push_back(weir_respond_file(ex, 200, nullptr, 0, -1, 0, 1, 0)); // -EBADF
        int p[2];
        assert_int_equal(pipe(p), 0);
        g_rcs.push_back(weir_respond_file(ex, 200, nullptr, 0, p[0], 0, 1, 0)); // -EINVAL: not a file
        ::close(p[0]);
        ::close(p[1]);
        int fd = ::open(g_path.c_str(), O_RDONLY | O_CLOEXEC);
        g_rcs.push_back(weir_respond_file(ex, 200, nullptr, 0, fd, kFileBytes - 10, 11, 0)); // -EINVAL: past its end
        g_rcs.push_back(weir_respond_file(ex, 200, nullptr, 0, fd, 0, 10, 0));               // 0
        g_rcs.push_back(weir_respond_file(ex, 200, nullptr, 0, fd, 0, 10, 0));               // WEIR_E_STALE
        ::close(fd);
    } else if (path == "/defer") {
        assert_int_equal(weir_defer(ex), 0);
        std::lock_guard<std::mutex> lk(g_mu);
        g_parked.push_back(ex);
    } else {
        answer(ex, 404, "");
    }
}

weir_config cfg() { return config(1, WEIR_MODE_INLINE, handler, nullptr); }

int open_fds() {
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

void test_file_larger_than_output_limit(void **) {
    Server s;
    assert_int_equal(s.start(cfg()), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/file") + get("/range")));
    Response r = read_response(c, bound_ms(20000));
    if (r.body != g_content)
        print_message("status %d body %zu buf %zu\n", r.status, r.body.size(), c.buf.size());
    assert_int_equal(r.status, 200);
    assert_int_equal(std::strtoul(r.header("Content-Length").c_str(), nullptr, 10), kFileBytes);
    assert_true(r.body == g_content);
    Response range = read_response(c); // keep-alive: the next answer follows the file's end
    assert_true(range.body == g_content.substr(1000, 5000));
}

void test_file_head(void **) {
    Server s;
    assert_int_equal(s.start(cfg()), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, "HEAD /range HTTP/1.1\r\nHost: x\r\n\r\n" + get("/range")));
    sleep_ms(100);
    read_some(c);
    size_t head_end = c.buf.find("\r\n\r\n");
    assert_true(head_end != std::string::npos);
    assert_true(c.buf.find("Content-Length: 5000\r\n") < head_end);
    c.buf.erase(0, head_end + 4); // HEAD: no body, the GET's answer follows at once
    Response r = read_response(c);
    assert_true(r.body == g_content.substr(1000, 5000));
}

void test_file_failure_rule(void **) {
    Server s;
    assert_int_equal(s.start(cfg()), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/rule")));
    Response r = read_response(c);
    assert_true(r.body == g_content.substr(0, 10));
    std::lock_guard<std::mutex> lk(g_mu);
    assert_int_equal(g_rcs.size(), 5);
    assert_int_equal(g_rcs[0], -EBADF);
    assert_int_equal(g_rcs[1], -EINVAL);
    assert_int_equal(g_rcs[2], -EINVAL);
    assert_int_equal(g_rcs[3], 0);
    assert_int_equal(g_rcs[4], WEIR_E_STALE);
}

weir_exchange *parked(size_t i) {
    int64_t until = now_ms() + 3000;
    while (now_ms() < until) {
        {
            std::lock_guard<std::mutex> lk(g_mu);
            if (g_parked.size() > i)
                return g_parked[i];
        }
        sleep_ms(1);
    }
    return nullptr;
}

void test_file_from_another_thread(void **) {
    Server s;
    assert_int_equal(s.start(cfg()), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/defer")));
    weir_exchange *ex = parked(0);
    assert_non_null(ex);
    int rc = -1;
    std::thread([&] { rc = answer_file(ex, 0, kFileBytes); }).join();
    assert_int_equal(rc, 0);
    Response r = read_response(c, bound_ms(20000));
    assert_true(r.body == g_content);
}

// The file shrinks while a reader that does not read holds the answer back:
// the promised length cannot be kept, so the connection is aborted.
void test_file_shrinks(void **) {
    Server s;
    assert_int_equal(s.start(cfg()), 0);
    Client c = connect_to(s.port, 16 * 1024);
    assert_true(send_all(c, get("/file")));
    sleep_ms(100); // the window and the socket buffers fill; the rest waits unread
    assert_int_equal(::truncate(g_path.c_str(), 1u << 20), 0);
    assert_true(wait_closed(c, bound_ms(20000)));
    assert_true(c.buf.size() < kFileBytes);
    assert_int_equal(s.wait_closes(WEIR_CLOSE_IO_ERROR, 1), 1);
}

// A client that leaves mid-file: weir's dup is closed, nothing leaks.
void test_file_client_leaves(void **) {
    Server s;
    assert_int_equal(s.start(cfg()), 0);
    int before = open_fds();
    {
        Client c = connect_to(s.port, 16 * 1024);
        assert_true(send_all(c, get("/file")));
        sleep_ms(50);
        linger lg = {1, 0};
        setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    int64_t until = now_ms() + 3000;
    while (open_fds() > before && now_ms() < until)
        sleep_ms(5);
    assert_true(open_fds() <= before);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_file_larger_than_output_limit, reset_state, remove_file),
        cmocka_unit_test_setup_teardown(test_file_head, reset_state, remove_file),
        cmocka_unit_test_setup_teardown(test_file_failure_rule, reset_state, remove_file),
        cmocka_unit_test_setup_teardown(test_file_from_another_thread, reset_state, remove_file),
        cmocka_unit_test_setup_teardown(test_file_shrinks, reset_state, remove_file),
        cmocka_unit_test_setup_teardown(test_file_client_leaves, reset_state, remove_file),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
