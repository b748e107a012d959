// lib/h2/h2_alloc.cc, nghttp2's per-session allocator: a freed block comes
// back for the next allocation of its class, realloc keeps the bytes, the
// cache is bounded per class, and what is kept is freed with the cache
// (the leak checkers of SAN=1 builds see the rest).
#include "cmocka_cxx.h"

#include <nghttp2/nghttp2.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "h2/h2_internal.h"

using namespace weir::h2_detail;

namespace {

void test_freed_block_comes_back(void **) {
    MemCache *m = mem_cache_new();
    assert_non_null(m);
    nghttp2_mem mem = session_mem(m);
    void *a = mem.malloc(40, mem.mem_user_data);
    assert_non_null(a);
    mem.free(a, mem.mem_user_data);
    // Same class (33..64 bytes): the kept block again, not malloc's.
    void *b = mem.malloc(64, mem.mem_user_data);
    assert_ptr_equal(a, b);
    // Another class: another block.
    void *c = mem.malloc(65, mem.mem_user_data);
    assert_ptr_not_equal(c, b);
    mem.free(b, mem.mem_user_data);
    mem.free(c, mem.mem_user_data);
    // Large blocks are plain malloc's; zero bytes is a valid block.
    void *big = mem.malloc(100000, mem.mem_user_data);
    void *zero = mem.malloc(0, mem.mem_user_data);
    assert_non_null(big);
    assert_non_null(zero);
    mem.free(big, mem.mem_user_data);
    mem.free(zero, mem.mem_user_data);
    mem.free(nullptr, mem.mem_user_data);
    mem_cache_del(m);
}

void test_realloc_and_calloc(void **) {
    MemCache *m = mem_cache_new();
    nghttp2_mem mem = session_mem(m);
    char *p = static_cast<char *>(mem.calloc(3, 10, mem.mem_user_data));
    for (int i = 0; i < 30; i++)
        assert_int_equal(p[i], 0);
    std::memset(p, 'a', 30);
    // Within its class (32 bytes): in place.
    assert_ptr_equal(mem.realloc(p, 32, mem.mem_user_data), p);
    char *q = static_cast<char *>(mem.realloc(p, 5000, mem.mem_user_data));
    for (int i = 0; i < 30; i++)
        assert_int_equal(q[i], 'a');
    std::memset(q, 'b', 5000);
    char *r = static_cast<char *>(mem.realloc(q, 20000, mem.mem_user_data));
    for (int i = 0; i < 5000; i++)
        assert_int_equal(r[i], 'b');
    assert_null(mem.calloc(SIZE_MAX / 2, 4, mem.mem_user_data)); // overflow
    mem.free(r, mem.mem_user_data);
    mem_cache_del(m);
}

// At most 8 KiB per class is kept: of 1,000 freed 32-byte blocks, the
// first 256 freed are kept and come back. Mutant tried: without the bound
// in h2_free all 1,000 are kept and the last freed comes back first (fails).
void test_cache_is_bounded(void **) {
    MemCache *m = mem_cache_new();
    nghttp2_mem mem = session_mem(m);
    std::vector<void *> v;
    for (int i = 0; i < 1000; i++)
        v.push_back(mem.malloc(32, mem.mem_user_data));
    for (void *p : v)
        mem.free(p, mem.mem_user_data);
    std::vector<void *> w;
    for (int i = 0; i < 1000; i++)
        w.push_back(mem.malloc(32, mem.mem_user_data));
    // The cache kept the first 256 freed (the later ones went to free())
    // and gives them back last kept first.
    size_t again = 0;
    for (size_t i = 0; i < 256; i++)
        again += w[i] == v[255 - i];
    assert_int_equal(again, 256);
    for (void *p : w)
        mem.free(p, mem.mem_user_data);
    mem_cache_del(m);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_freed_block_comes_back),
        cmocka_unit_test(test_realloc_and_calloc),
        cmocka_unit_test(test_cache_is_bounded),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
