/*
 * demo_json.h — the growable buffer, JSON string escaping and base64 that
 * weir-demo's echo app uses. Header-only because the Makefile turns every
 * examples/c/<name>.c into a program of its own.
 *
 * JSON strings: '"', '\\' and the C0 controls use their JSON escapes; every
 * byte >= 0x7f is written as \u00XX of the byte itself (a Latin-1 reading).
 * HTTP field values are bytes, not UTF-8, so this keeps them lossless and the
 * output is always valid ASCII JSON: decode a string and take each code point
 * as one byte to get back exactly what the engine parsed.
 */
#ifndef WEIR_DEMO_JSON_H
#define WEIR_DEMO_JSON_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "weir.h"

typedef struct demo_buf {
    char *ptr;
    size_t len;
    size_t cap;
    int failed; /* an allocation failed: the contents are incomplete */
} demo_buf;

static int demo_buf_reserve(demo_buf *b, size_t more) {
    if (b->failed)
        return -1;
    if (b->len + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more)
        cap *= 2;
    char *p = (char *)realloc(b->ptr, cap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->ptr = p;
    b->cap = cap;
    return 0;
}

static void demo_buf_put(demo_buf *b, const void *p, size_t n) {
    if (n == 0 || demo_buf_reserve(b, n) != 0)
        return;
    memcpy(b->ptr + b->len, p, n);
    b->len += n;
}

static void demo_buf_puts(demo_buf *b, const char *s) { demo_buf_put(b, s, strlen(s)); }

static void demo_buf_free(demo_buf *b) {
    free(b->ptr);
    b->ptr = NULL;
    b->len = b->cap = 0;
}

/* Appends p[0, n) as a quoted JSON string (see the note at the top). */
static void demo_json_string(demo_buf *b, const char *p, size_t n) {
    static const char hex[] = "0123456789abcdef";
    /* Worst case: every byte becomes \u00XX (6 bytes), plus the quotes. */
    if (demo_buf_reserve(b, n * 6 + 2) != 0)
        return;
    char *o = b->ptr + b->len;
    *o++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        switch (c) {
        case '"': *o++ = '\\'; *o++ = '"'; continue;
        case '\\': *o++ = '\\'; *o++ = '\\'; continue;
        case '\n': *o++ = '\\'; *o++ = 'n'; continue;
        case '\r': *o++ = '\\'; *o++ = 'r'; continue;
        case '\t': *o++ = '\\'; *o++ = 't'; continue;
        default: break;
        }
        if (c < 0x20 || c >= 0x7f) {
            *o++ = '\\';
            *o++ = 'u';
            *o++ = '0';
            *o++ = '0';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        } else {
            *o++ = (char)c;
        }
    }
    *o++ = '"';
    b->len = (size_t)(o - b->ptr);
}

static void demo_json_view(demo_buf *b, weir_str_t s) { demo_json_string(b, s.ptr, s.len); }

/* [[name,value],...] */
static void demo_json_fields(demo_buf *b, const weir_header_t *h, uint32_t n) {
    demo_buf_put(b, "[", 1);
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            demo_buf_put(b, ",", 1);
        demo_buf_put(b, "[", 1);
        demo_json_view(b, h[i].name);
        demo_buf_put(b, ",", 1);
        demo_json_view(b, h[i].value);
        demo_buf_put(b, "]", 1);
    }
    demo_buf_put(b, "]", 1);
}

/* Appends the standard (RFC 4648, padded) base64 of p[0, n), quoted. */
static void demo_json_base64(demo_buf *b, const void *data, size_t n) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = (const unsigned char *)data;
    if (demo_buf_reserve(b, (n + 2) / 3 * 4 + 2) != 0)
        return;
    char *o = b->ptr + b->len;
    *o++ = '"';
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *o++ = tab[v >> 18];
        *o++ = tab[(v >> 12) & 63];
        *o++ = tab[(v >> 6) & 63];
        *o++ = tab[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        *o++ = tab[v >> 18];
        *o++ = tab[(v >> 12) & 63];
        *o++ = '=';
        *o++ = '=';
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
        *o++ = tab[v >> 18];
        *o++ = tab[(v >> 12) & 63];
        *o++ = tab[(v >> 6) & 63];
        *o++ = '=';
    }
    *o++ = '"';
    b->len = (size_t)(o - b->ptr);
}

/* ss as "ADDRESS:PORT" ("[ADDRESS]:PORT" for IPv6) into out; "" for a
 * family without a port (a Unix socket's peer). */
static void demo_peer_text(const struct sockaddr_storage *ss, char *out, size_t cap) {
    char a[INET6_ADDRSTRLEN] = "";
    out[0] = 0;
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)ss;
        inet_ntop(AF_INET, &s->sin_addr, a, sizeof a);
        snprintf(out, cap, "%s:%u", a, (unsigned)ntohs(s->sin_port));
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)ss;
        inet_ntop(AF_INET6, &s->sin6_addr, a, sizeof a);
        snprintf(out, cap, "[%s]:%u", a, (unsigned)ntohs(s->sin6_port));
    }
}

/* The echo app's whole answer body for r, whose peer (weir_exchange_peer:
 * the PROXY header's source with --proxy-protocol) is peer. Returns 0, or
 * -1 when memory ran out (b is then freed). */
static int demo_json_request(demo_buf *b, const weir_request *r, const char *peer) {
    demo_buf_puts(b, "{\"method\":");
    demo_json_view(b, r->method);
    demo_buf_puts(b, ",\"url\":");
    demo_json_view(b, r->target);
    demo_buf_puts(b, r->version_minor == 0 ? ",\"version\":\"1.0\"" : ",\"version\":\"1.1\"");
    demo_buf_puts(b, ",\"headers\":");
    demo_json_fields(b, r->headers, r->num_headers);
    demo_buf_puts(b, ",\"trailers\":");
    demo_json_fields(b, r->trailers, r->trailers ? r->num_trailers : 0);
    demo_buf_puts(b, ",\"body_b64\":");
    demo_json_base64(b, r->body.ptr, r->body.len);
    demo_buf_puts(b, ",\"peer\":");
    demo_json_string(b, peer, strlen(peer));
    demo_buf_puts(b, "}");
    if (b->failed) {
        demo_buf_free(b);
        return -1;
    }
    return 0;
}

#endif /* WEIR_DEMO_JSON_H */
