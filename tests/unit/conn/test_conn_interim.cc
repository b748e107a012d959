// Unit tests of interim answers and of answering nothing (Conn::interim,
// lib/conn/conn_interim.cc; WEIR_RESPOND_ABORT in Conn::respond): a 1xx on
// its exchange's turn goes to the output at once; before it, it waits at
// the front of the slot's answer buffer and leaves when the turn comes, or
// ahead of a final answer (whole, streamed or an upgrade) buffered after it.
// The arm that must lose is a final answer that clears the slot's buffer as
// it did before (test_conn_interim_kept_before_answer: the 103 is lost).
#include "cmocka_cxx.h"

#include <string>

#include "conn/conn.h"
#include "conn_check.h"

using weir::Conn;
using weir::ConnPool;
using weir::ConnSettings;
using weir::Exchange;
using namespace conn_check;

namespace {

const weir_header_t kLink[] = {{{"Link", 4}, {"</x>", 4}}};

std::string req(const char *path, const char *proto = "HTTP/1.1") {
    return std::string("GET ") + path + " " + proto + "\r\nHost: t\r\n\r\n";
}

struct Three {
    ConnSettings s = settings();
    ConnPool pool{s};
    Conn c{s, pool, 1};
    Exchange *a = nullptr, *b = nullptr, *x = nullptr;
    Three() {
        std::string in = req("/a") + req("/b") + req("/c");
        assert_int_equal(feed(c, in), in.size());
        a = c.take_request();
        b = c.take_request();
        x = c.take_request();
        assert_non_null(x);
    }
};

size_t at(const std::string &out, const char *what) { return out.find(what); }

void test_conn_interim_on_its_turn(void **) {
    Three t;
    assert_int_equal(t.c.interim(t.a, 103, kLink, 1), 0);
    std::string out = drain(t.c);
    assert_string_equal(out.c_str(), "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"); // at once, alone
    assert_int_equal(answer(t.c, t.a, "A"), 0);
    out = drain(t.c);
    assert_int_equal(at(out, "HTTP/1.1 200 OK"), 0);
}

// /b's 103 waits for /a; /c's 103 and its streamed head wait behind /b's
// answer, which is itself buffered with its own 103 in front.
void test_conn_interim_kept_before_answer(void **) {
    Three t;
    assert_int_equal(t.c.interim(t.b, 103, kLink, 1), 0);
    assert_int_equal(t.c.interim(t.x, 102, nullptr, 0), 0);
    assert_true(drain(t.c).empty()); // neither's turn
    assert_int_equal(t.c.stream_start(t.x, 200, nullptr, 0, UINT64_MAX, 0), 0);
    assert_int_equal(t.c.stream_write(t.x, "cc", 2), 0);
    assert_int_equal(t.c.stream_end(t.x, nullptr, 0), 0);
    assert_int_equal(answer(t.c, t.a, "A"), 0);
    std::string out = drain(t.c);
    assert_true(at(out, "\r\n\r\nA") != std::string::npos);
    assert_true(at(out, "103 Early Hints") > at(out, "\r\n\r\nA")); // /b's turn came with /a's answer
    assert_true(at(out, "102 Processing") == std::string::npos);    // /c waits behind /b
    assert_int_equal(answer(t.c, t.b, "B"), 0);
    out = drain(t.c);
    size_t b = at(out, "\r\n\r\nB"), p = at(out, "102 Processing"), chunk = at(out, "2\r\ncc\r\n");
    assert_true(b != std::string::npos && p != std::string::npos && chunk != std::string::npos);
    assert_true(b < p && p < chunk);
}

// Refused once the answer began or was given; nothing for HTTP/1.0.
void test_conn_interim_refusals(void **) {
    Three t;
    assert_int_equal(t.c.stream_start(t.a, 200, nullptr, 0, UINT64_MAX, 0), 0);
    assert_int_equal(t.c.interim(t.a, 103, kLink, 1), -EINVAL);
    assert_int_equal(answer(t.c, t.b, "B"), 0);
    assert_int_equal(t.c.interim(t.b, 103, kLink, 1), -EINVAL);

    ConnSettings s = settings();
    ConnPool pool{s};
    Conn old{s, pool, 2};
    std::string in = req("/o", "HTTP/1.0");
    assert_int_equal(feed(old, in), in.size());
    Exchange *o = old.take_request();
    assert_int_equal(old.interim(o, 103, kLink, 1), 0);
    assert_true(drain(old).empty());
}

// WEIR_RESPOND_ABORT: before its turn the answers before it leave, then the
// connection closes (what follows is dropped); on its turn, at once.
void test_conn_abort_answers_nothing(void **) {
    Three t;
    assert_int_equal(t.c.respond(t.b, 500, nullptr, 0, "never", 5, WEIR_RESPOND_ABORT), 0);
    assert_false(t.c.wants_close());
    assert_int_equal(answer(t.c, t.a, "A"), 0);
    std::string out = drain(t.c);
    assert_true(at(out, "\r\n\r\nA") != std::string::npos);
    assert_true(at(out, "never") == std::string::npos && at(out, "500") == std::string::npos);
    assert_true(t.c.wants_close());
    assert_int_equal(t.c.close_reason(), WEIR_CLOSE_ABORTED);
    assert_int_equal(answer(t.c, t.x, "C"), WEIR_E_GONE); // dropped with the close

    Three u;
    assert_int_equal(u.c.respond(u.a, 500, nullptr, 0, nullptr, 0, WEIR_RESPOND_ABORT), 0);
    assert_true(drain(u.c).empty());
    assert_true(u.c.wants_close());
    assert_int_equal(u.c.close_reason(), WEIR_CLOSE_ABORTED);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conn_interim_on_its_turn),
        cmocka_unit_test(test_conn_interim_kept_before_answer),
        cmocka_unit_test(test_conn_interim_refusals),
        cmocka_unit_test(test_conn_abort_answers_nothing),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
