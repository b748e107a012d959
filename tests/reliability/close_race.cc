#include "close_race.h"

#include <time.h>

#include <atomic>

#include "loop/linger.h"

namespace closerace {

namespace {

constexpr size_t kMax = 1 << 16;
int64_t g_close_us[kMax]; // stamps, in the order the workers reported them
std::atomic<size_t> g_n{0};

void on_event(uint32_t, weir::LingerEvent ev) {
    if (ev != weir::LingerEvent::Close)
        return;
    size_t i = g_n.fetch_add(1, std::memory_order_acq_rel);
    if (i < kMax)
        __atomic_store_n(&g_close_us[i], now_us(), __ATOMIC_RELEASE);
}

} // namespace

int64_t now_us() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

void install() { weir::linger_hooks().on_event = on_event; }
void uninstall() { weir::linger_hooks().on_event = nullptr; }
void clear() { g_n = 0; }
size_t closes() {
    size_t n = g_n.load(std::memory_order_acquire);
    return n < kMax ? n : kMax;
}

bool attributed(int64_t started_us) {
    size_t n = closes();
    for (size_t i = 0; i < n; i++) {
        int64_t c = __atomic_load_n(&g_close_us[i], __ATOMIC_ACQUIRE);
        if (c >= started_us - 500 && c <= started_us + 5000)
            return true;
    }
    return false;
}

size_t count_attributed(const std::vector<std::pair<int64_t, int64_t>> &resets) {
    size_t n = 0;
    for (const auto &r : resets)
        n += attributed(r.first) ? 1 : 0;
    return n;
}

} // namespace closerace
