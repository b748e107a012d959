#include "loop/answer.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

namespace weir {

AnswerPool::~AnswerPool() {
    while (free_) {
        Answer *a = free_;
        free_ = a->next_free;
        std::free(a->buf);
        delete a;
    }
}

Answer *AnswerPool::take(size_t need) {
    Answer *a = nullptr;
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (free_) {
            a = free_;
            free_ = a->next_free;
            count_--;
        }
    }
    if (!a) {
        a = new (std::nothrow) Answer;
        if (!a)
            return nullptr;
    }
    if (a->cap < need) {
        size_t cap = need < 512 ? 512 : need;
        char *b = static_cast<char *>(std::realloc(a->buf, cap));
        if (!b) {
            std::free(a->buf);
            delete a;
            return nullptr;
        }
        a->buf = b;
        a->cap = cap;
    }
    a->next = nullptr;
    a->next_free = nullptr;
    return a;
}

Answer *AnswerPool::make(Exchange *x, int status, const weir_header_t *h, size_t nh, const void *body, size_t len,
                         uint32_t flags) {
    size_t need = nh * sizeof(weir_header_t);
    for (size_t i = 0; i < nh; i++)
        need += h[i].name.len + h[i].value.len;
    need += len;
    Answer *a = take(need);
    if (!a)
        return nullptr;
    auto *hv = reinterpret_cast<weir_header_t *>(a->buf);
    char *p = a->buf + nh * sizeof(weir_header_t);
    for (size_t i = 0; i < nh; i++) {
        std::memcpy(p, h[i].name.ptr, h[i].name.len);
        hv[i].name = {p, h[i].name.len};
        p += h[i].name.len;
        if (h[i].value.len)
            std::memcpy(p, h[i].value.ptr, h[i].value.len);
        hv[i].value = {p, h[i].value.len};
        p += h[i].value.len;
    }
    if (len)
        std::memcpy(p, body, len);
    a->x = x;
    a->kind = AnswerKind::Respond;
    a->handle = 0;
    a->status = status;
    a->flags = flags;
    a->drop = false;
    a->headers = nh ? hv : nullptr;
    a->num_headers = nh;
    a->body = len ? p : nullptr;
    a->body_len = len;
    return a;
}

Answer *AnswerPool::make_drop(Exchange *x) {
    Answer *a = take(0);
    if (!a)
        return nullptr;
    a->x = x;
    a->kind = AnswerKind::Respond;
    a->drop = true;
    a->status = 500;
    a->flags = 0;
    a->headers = nullptr;
    a->num_headers = 0;
    a->body = nullptr;
    a->body_len = 0;
    return a;
}

void AnswerPool::give(Answer *a) {
    if (a->cap > kKeepBytes) {
        std::free(a->buf);
        a->buf = nullptr;
        a->cap = 0;
    }
    {
        std::lock_guard<std::mutex> lk(mu_);
        if (count_ < kKeepCount) {
            a->next_free = free_;
            free_ = a;
            count_++;
            return;
        }
    }
    std::free(a->buf);
    delete a;
}

} // namespace weir
