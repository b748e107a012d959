/*
 * weir.h — the whole public C API of weir, a native HTTP/1.1 server engine
 * for Linux (epoll and io_uring) behind a plain C ABI.
 *
 * Threading model
 * ---------------
 * - Nothing here is thread-safe unless its comment says so.
 * - The pure functions (version, errors, the HTTP/1 parser and chunked
 *   decoder) keep no hidden state: any thread may call them on its own data.
 * - An engine is driven from one "control" thread at a time (create, listen,
 *   start, shutdown, destroy). weir_engine_metrics may be called from any
 *   thread at any time between create and destroy.
 * - Each worker is one event loop owned by one thread at a time: the thread
 *   weir_engine_start spawned for it (inline mode), or the host thread that
 *   calls weir_worker_poll on it (driven mode).
 * - An exchange belongs to its worker's thread. The one cross-thread call is
 *   weir_respond on an exchange that was deferred (weir_defer) or that was
 *   returned by weir_worker_poll: it may be called from any thread. A
 *   handle answers once: a second answer, a late one (handler_timeout_ms)
 *   or one after its engine was destroyed is refused with WEIR_E_STALE and
 *   never reaches another request (see "Exchanges" below).
 * - A driven worker is driven by one host thread at a time; which thread
 *   may change between polls (the one that polls last is the worker's
 *   thread until the next poll, or until it gives its turn up with
 *   weir_worker_own), but two threads must never poll it at once.
 *
 * Errors
 * ------
 * Functions return 0 (or a count) on success and a negative errno on failure
 * (-EINVAL, -ENOMEM, -EADDRINUSE, ...). weir's own codes live in a band
 * outside errno, from -(WEIR_E_BASE + 1) down; weir_strerror and
 * weir_err_name name any code, never returning NULL. There is no
 * thread-local "last error". weir never prints, exits, installs a signal
 * handler or raises SIGPIPE.
 *
 * ABI
 * ---
 * Sized structs (weir_config, weir_http1_limits, weir_http1_request,
 * weir_http1_chunked, weir_metrics, weir_request) begin with `uint32_t size`
 * and grow only at their end: none embeds another sized struct, and none has
 * tail padding (an explicit reserved_ field fills it), so a field appended
 * later never lands in bytes an older caller's sizeof already covers.
 * - A struct the caller gives (weir_config, weir_http1_limits): set it up with
 *   its *_init function, which sets size and every default and is required (a
 *   struct filled by hand gets each zero's meaning, which is not always the
 *   default; each field says). weir accepts any size from the struct's first
 *   size (where its first layout ended: its 0.2 layout for the structs 0.2
 *   changed, the end of closes for weir_metrics) up to sizeof in this library;
 *   the fields past the caller's size take their defaults. A size below the
 *   first size (0 included: never "use the defaults") or above this library's
 *   sizeof is -EINVAL.
 * - A struct weir fills for the caller (weir_metrics, weir_http1_request,
 *   weir_http1_chunked): set size to sizeof; the same sizes are accepted, and
 *   weir writes only what size covers and leaves the rest, and size itself,
 *   alone.
 * - weir_request is weir's own, read by the host: its size is the number of
 *   bytes weir filled. A host reads a field only if size covers its end
 *   (always true for the fields of the header it was built against, when the
 *   library's minor is the header's; see below).
 * Before 1.0 a minor release may change the ABI (0.2 did: docs/api.md §7),
 * so a program checks at run time that weir_version()'s major AND minor
 * equal the header's; the SONAME stays libweir.so.0. Symbols are versioned
 * by the release that added them (capi/weir.map).
 */
#ifndef WEIR_H
#define WEIR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define WEIR_API __attribute__((visibility("default")))
#else
#define WEIR_API
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                    */
/* ------------------------------------------------------------------------ */

#define WEIR_VERSION_MAJOR 0
#define WEIR_VERSION_MINOR 4
#define WEIR_VERSION_PATCH 0
#define WEIR_VERSION_HEX ((WEIR_VERSION_MAJOR << 16) | (WEIR_VERSION_MINOR << 8) | WEIR_VERSION_PATCH)

/* The library's version as WEIR_VERSION_HEX packs it. Before 1.0 the
 * library's major and minor must both equal the header's (a minor release may
 * change the ABI): compare (weir_version() >> 8) with (WEIR_VERSION_HEX >> 8)
 * at start-up and refuse to run on a mismatch. Any thread. */
WEIR_API uint32_t weir_version(void);
/* "MAJOR.MINOR.PATCH", static storage. Any thread. */
WEIR_API const char *weir_version_string(void);

/* ------------------------------------------------------------------------ */
/* Errors                                                                     */
/* ------------------------------------------------------------------------ */

/* weir's own codes are -(WEIR_E_BASE + n); errno values stay below 4096. */
#define WEIR_E_BASE 10000

/* Parser: the input ends before the element is complete; call again with more. */
#define WEIR_E_INCOMPLETE (-(WEIR_E_BASE + 1))
/* Request-line errors. */
#define WEIR_E_BAD_METHOD (-(WEIR_E_BASE + 2))           /* 400: method is not a token            */
#define WEIR_E_BAD_TARGET (-(WEIR_E_BASE + 3))           /* 400: request-target syntax           */
#define WEIR_E_BAD_VERSION (-(WEIR_E_BASE + 4))          /* 400: HTTP-version syntax             */
#define WEIR_E_VERSION_UNSUPPORTED (-(WEIR_E_BASE + 5))  /* 505: well-formed, not 1.0 or 1.1     */
#define WEIR_E_BAD_REQUEST_LINE (-(WEIR_E_BASE + 6))     /* 400: separators, empty parts         */
#define WEIR_E_REQUEST_LINE_TOO_LONG (-(WEIR_E_BASE + 7)) /* 414                                 */
/* Field (header and trailer) errors. */
#define WEIR_E_BAD_LINE_ENDING (-(WEIR_E_BASE + 8))      /* 400: bare CR or bare LF              */
#define WEIR_E_BAD_HEADER_NAME (-(WEIR_E_BASE + 9))      /* 400: name is not a token             */
#define WEIR_E_WS_BEFORE_COLON (-(WEIR_E_BASE + 10))     /* 400: "Name :"                        */
#define WEIR_E_BAD_HEADER_VALUE (-(WEIR_E_BASE + 11))    /* 400: NUL or CTL in a value           */
#define WEIR_E_OBS_FOLD (-(WEIR_E_BASE + 12))            /* 400: line folding                    */
#define WEIR_E_HEADERS_TOO_LARGE (-(WEIR_E_BASE + 13))   /* 431: header section bytes            */
#define WEIR_E_TOO_MANY_HEADERS (-(WEIR_E_BASE + 14))    /* 431: field count                     */
/* Semantic errors, found once the header section is complete. */
#define WEIR_E_MISSING_HOST (-(WEIR_E_BASE + 15))        /* 400: HTTP/1.1 without Host           */
#define WEIR_E_DUPLICATE_HOST (-(WEIR_E_BASE + 16))      /* 400                                  */
#define WEIR_E_BAD_HOST (-(WEIR_E_BASE + 17))            /* 400: Host value syntax               */
#define WEIR_E_BAD_CONTENT_LENGTH (-(WEIR_E_BASE + 18))  /* 400: non-digits, overflow, mismatch  */
#define WEIR_E_CL_AND_TE (-(WEIR_E_BASE + 19))           /* 400: both framings                   */
#define WEIR_E_BAD_TRANSFER_ENCODING (-(WEIR_E_BASE + 20)) /* 400: chunked not last, or twice    */
#define WEIR_E_UNKNOWN_TRANSFER_CODING (-(WEIR_E_BASE + 21)) /* 501                              */
#define WEIR_E_BODY_TOO_LARGE (-(WEIR_E_BASE + 22))      /* 413                                  */
#define WEIR_E_EXPECTATION_FAILED (-(WEIR_E_BASE + 23))  /* 417: Expect other than 100-continue  */
/* Chunked body errors. */
#define WEIR_E_BAD_CHUNK (-(WEIR_E_BASE + 24))           /* 400: size line or data CRLF          */
#define WEIR_E_CHUNK_EXT_TOO_LONG (-(WEIR_E_BASE + 25))  /* 400                                  */
#define WEIR_E_TRAILERS_TOO_LARGE (-(WEIR_E_BASE + 26))  /* 431                                  */
/* Engine errors. */
#define WEIR_E_STATE (-(WEIR_E_BASE + 40))      /* the call does not fit the object's state       */
#define WEIR_E_GONE (-(WEIR_E_BASE + 41))       /* the exchange's connection died; answer dropped */
#define WEIR_E_SHUTDOWN (-(WEIR_E_BASE + 42))   /* the engine is shutting down or shut down       */
#define WEIR_E_UNAVAILABLE (-(WEIR_E_BASE + 43)) /* the backend is not available on this kernel  */
#define WEIR_E_STALE (-(WEIR_E_BASE + 44))      /* the exchange handle names no live exchange:
                                                   answered already, timed out, or its engine
                                                   was destroyed; nothing was done            */
#define WEIR_E_HANDOVER_VERSION (-(WEIR_E_BASE + 45)) /* a handover's other side speaks another
                                                         protocol or image format; refused, the
                                                         offering process serves on            */
#define WEIR_E_LAST (-(WEIR_E_BASE + 63))

/* A static description of rc (any negative errno or weir code; 0 is "success").
 * Never NULL; unknown codes give "unknown error". Any thread. */
WEIR_API const char *weir_strerror(int rc);
/* The symbolic name of rc: "EINVAL", "WEIR_E_BAD_HOST", ... Never NULL;
 * unknown codes give "UNKNOWN". Any thread. */
WEIR_API const char *weir_err_name(int rc);

/* ------------------------------------------------------------------------ */
/* Views                                                                      */
/* ------------------------------------------------------------------------ */

/* A view into someone else's memory: not NUL-terminated. */
typedef struct weir_str_t {
    const char *ptr;
    size_t len;
} weir_str_t;

typedef struct weir_header_t {
    weir_str_t name;
    weir_str_t value; /* leading and trailing whitespace removed */
} weir_header_t;

/* ------------------------------------------------------------------------ */
/* HTTP/1.1 request parser (RFC 9112, RFC 9110), pure and zero-copy          */
/* ------------------------------------------------------------------------ */

/* Limits; each breach has its own code and HTTP status. Set size with
 * weir_http1_limits_init (required: it sets size and every default), then
 * change what you need. A zero where it would refuse every request means the
 * default; where it has a use of its own (none allowed) it keeps it. */
typedef struct weir_http1_limits {
    uint32_t size;
    uint32_t max_request_line;  /* bytes of the request line, CRLF excluded: 8192 -> 414;
                                   0 = 8192                                                 */
    uint32_t max_header_bytes;  /* bytes after the request line through the empty line:
                                   16384 -> 431; 0 = 16384                                  */
    uint32_t max_headers;       /* field lines: 100 -> 431; 0 = 100                         */
    uint32_t max_chunk_ext;     /* bytes of one chunk-size line's extensions: 256 -> 400;
                                   0 = no extension allowed                                 */
    uint32_t max_trailer_bytes; /* trailer section bytes, final CRLF included: 4096 -> 431;
                                   0 = 4096                                                 */
    uint32_t max_trailers;      /* trailer field lines: 32 -> 431; 0 = no trailer field     */
    uint32_t reserved_;         /* zero                                                     */
    uint64_t max_body;          /* decoded body bytes: 1 MiB (1048576) -> 413; 0 = no body
                                   byte allowed; WEIR_BODY_UNLIMITED = no limit. The
                                   engine applies it to every body, buffered or
                                   streamed (weir_config.stream_body_bytes)           */
} weir_http1_limits;

/* weir_http1_limits.max_body: no limit (0.4). Meant for hosts that stream
 * unbounded uploads (weir_body_read); a body weir buffers is then bounded only
 * by memory (a failed allocation closes its connection), so pair it with
 * stream_body_bytes. The parser took UINT64_MAX this way already. */
#define WEIR_BODY_UNLIMITED UINT64_MAX

/* Sets size and every default above. Any thread. */
WEIR_API void weir_http1_limits_init(weir_http1_limits *limits);

/* weir_http1_request.target_form */
#define WEIR_TARGET_ORIGIN 1    /* /path?query                         */
#define WEIR_TARGET_ABSOLUTE 2  /* http://host/path?query              */
#define WEIR_TARGET_AUTHORITY 3 /* host:port, CONNECT only             */
#define WEIR_TARGET_ASTERISK 4  /* *, OPTIONS only                     */

/* weir_http1_request.body_kind */
#define WEIR_BODY_NONE 0
#define WEIR_BODY_LENGTH 1  /* content_length bytes follow the head  */
#define WEIR_BODY_CHUNKED 2 /* decode with weir_http1_chunked_*      */

/* weir_http1_request.flags */
#define WEIR_REQ_KEEP_ALIVE 0x1u      /* the connection may carry another request     */
#define WEIR_REQ_EXPECT_CONTINUE 0x2u /* Expect: 100-continue (HTTP/1.1 and HTTP/2)   */
#define WEIR_REQ_UPGRADE 0x4u         /* Connection: upgrade with an Upgrade field     */
#define WEIR_REQ_BODY_STREAM 0x8u     /* weir_request only: the body is read with
                                         weir_body_read (cfg.stream_body_bytes)       */
#define WEIR_REQ_HTTP2 0x10u          /* weir_request only (0.4): an HTTP/2 stream; the
                                         version is 2.0 (version_minor 0), method,
                                         target and host come from :method, :path and
                                         :authority (or Host); KEEP_ALIVE is set while
                                         the connection takes new streams              */

typedef struct weir_http1_request {
    uint32_t size;
    uint32_t version_minor; /* 0 or 1                                             */
    uint32_t target_form;   /* WEIR_TARGET_*                                      */
    uint32_t body_kind;     /* WEIR_BODY_*                                        */
    uint32_t flags;         /* WEIR_REQ_*                                         */
    uint32_t num_headers;   /* entries filled in the caller's headers array       */
    weir_str_t method;
    weir_str_t target; /* the whole request-target                                */
    weir_str_t path;   /* origin/absolute form: the path ("/" when absent); else empty */
    weir_str_t query;  /* after '?', without it; empty when absent                */
    weir_str_t host;   /* the Host field value (empty view when absent); with an
                          absolute-form target, the target's authority instead
                          (RFC 9112 3.2.2: Host is then ignored)               */
    uint64_t content_length; /* when body_kind == WEIR_BODY_LENGTH                */
    weir_header_t *headers;  /* the caller's array                                */
} weir_http1_request;

/*
 * Parses one request head (request line and header section) from
 * buf[0, len). Keeps no state between calls: on WEIR_E_INCOMPLETE, call again
 * with the same bytes and more. Parsing any input split at any byte boundary
 * gives exactly the result of parsing it whole: each prefix answers either
 * WEIR_E_INCOMPLETE or the whole input's answer.
 *
 * headers/headers_cap: the caller's array for the field views; more fields
 * than min(headers_cap, limits->max_headers) is WEIR_E_TOO_MANY_HEADERS.
 * limits may be NULL (defaults). req->size must be set (sizeof; any size the
 * ABI rule at the top accepts: weir writes only what it covers).
 *
 * Returns the length of the head (> 0; the body, if any, starts there),
 * WEIR_E_INCOMPLETE, a parse error (weir_http1_status names its status), or
 * -EINVAL for NULL req or headers, NULL buf with len > 0, or a bad size
 * (req->size, or limits->size: 0 is refused, never read as the defaults).
 * Views in *req point into buf and live as long as buf does. Any thread.
 */
WEIR_API int weir_http1_parse_request(const char *buf, size_t len, const weir_http1_limits *limits,
                                      weir_http1_request *req, weir_header_t *headers, size_t headers_cap);

/* The HTTP status a parse error calls for (400, 413, 414, 417, 431, 501, 505),
 * or 0 when rc is not a parse error. Any thread. */
WEIR_API int weir_http1_status(int rc);

/* Incremental chunked-body decoder. Fields marked private are not to be read;
 * the limits it needs are private copies (no embedded weir_http1_limits, so
 * the struct can grow at its end). */
typedef struct weir_http1_chunked {
    uint32_t size;
    uint32_t state_;        /* private                                              */
    uint64_t chunk_left_;   /* private                                              */
    uint64_t body_len;      /* decoded bytes so far                                 */
    uint64_t raw_len;       /* raw bytes consumed so far                            */
    uint64_t trailer_off;   /* once done: raw offset where the trailer section starts */
    uint64_t trailer_len;   /* once done: its bytes, final CRLF included (2 if none) */
    uint32_t num_trailers;  /* once done: trailer field lines                       */
    uint32_t count_;        /* private                                              */
    uint64_t max_body_;     /* private: the limits' max_body                        */
    uint32_t max_chunk_ext_;     /* private: the limits' max_chunk_ext              */
    uint32_t max_trailer_bytes_; /* private: the limits' max_trailer_bytes          */
    uint32_t max_trailers_;      /* private: the limits' max_trailers               */
    uint32_t reserved_;          /* private                                         */
} weir_http1_chunked;

/* Starts a decoder: set d->size first (sizeof; any size the ABI rule at the
 * top accepts), since only that many bytes are written. limits may be NULL
 * (defaults). Returns 0, or -EINVAL (NULL d, a bad d->size or limits->size). */
WEIR_API int weir_http1_chunked_init(weir_http1_chunked *d, const weir_http1_limits *limits);

/*
 * Decodes raw chunked bytes in[0, in_len), writing the chunk data to out
 * (out may equal in or lie before it: decoding in place is allowed, since data
 * never outruns the raw bytes it came from). On return *in_used raw bytes were
 * consumed and *out_len data bytes written.
 *
 * Returns 0 when the body is complete (last chunk, trailer section and final
 * CRLF consumed: bytes after *in_used belong to the next message),
 * WEIR_E_INCOMPLETE when all input was consumed and more is needed, or an
 * error (WEIR_E_BAD_CHUNK, WEIR_E_CHUNK_EXT_TOO_LONG, WEIR_E_BODY_TOO_LARGE,
 * WEIR_E_TRAILERS_TOO_LARGE, WEIR_E_TOO_MANY_HEADERS, or a field error), or
 * -EINVAL (NULL pointers, a d->size outside the ABI rule).
 * Trailer fields are validated here and never used for framing; parse them
 * into views with weir_http1_parse_trailers. Any thread.
 */
WEIR_API int weir_http1_chunked_decode(weir_http1_chunked *d, const char *in, size_t in_len, size_t *in_used,
                                       char *out, size_t *out_len);

/*
 * Parses a complete trailer section (as located by trailer_off/trailer_len:
 * zero or more field lines, then CRLF) into views. Returns the number of
 * fields, or an error as for weir_http1_parse_request. Any thread.
 */
WEIR_API int weir_http1_parse_trailers(const char *buf, size_t len, const weir_http1_limits *limits,
                                       weir_header_t *headers, size_t headers_cap);

/* ------------------------------------------------------------------------ */
/* Engine                                                                     */
/* ------------------------------------------------------------------------ */

typedef struct weir_engine weir_engine;     /* one backend, N workers            */
typedef struct weir_worker weir_worker;     /* one loop; owned by its engine     */
typedef struct weir_exchange weir_exchange; /* one request and its response      */

/* weir_config.backend. The values are dense from 1: a loop over
 * weir_backend_name(1), (2), ... until NULL lists every backend this library
 * has (the kernel may still refuse one: weir_engine_create's
 * WEIR_E_UNAVAILABLE). */
#define WEIR_BACKEND_EPOLL 1
#define WEIR_BACKEND_URING 2

/* A backend's short name ("epoll", "uring"), the one weir-demo's --backend
 * and the test runners' WEIR_TEST_BACKEND take; NULL for a value that names
 * no backend of this library. Static; any thread. (0.4) */
WEIR_API const char *weir_backend_name(uint32_t backend);
/* The WEIR_BACKEND_* value named name (exact, case-sensitive), or -EINVAL
 * for NULL or a name no backend has. Any thread. (0.4) */
WEIR_API int weir_backend_by_name(const char *name);

/* weir_config.mode */
#define WEIR_MODE_INLINE 1 /* weir_engine_start runs each worker; on_request is called on it */
#define WEIR_MODE_DRIVEN 2 /* the host runs each worker with weir_worker_poll                */

/* Log levels given to weir_config.log. */
#define WEIR_LOG_ERROR 1
#define WEIR_LOG_WARN 2
#define WEIR_LOG_INFO 3

/* Called on the worker's thread for each complete request (inline mode). It
 * must answer with weir_respond before it returns, or call weir_defer and
 * answer later from any thread. */
typedef void (*weir_handler_fn)(void *user, weir_exchange *ex);
/* msg is NUL-terminated and valid only during the call; any worker thread. */
typedef void (*weir_log_fn)(void *user, int level, const char *msg);

/* weir_config.on_conn (0.4; docs/api.md §5.11): a connection's life, told to
 * the host. event is WEIR_CONN_OPEN (right after the accept; reason 0) or
 * WEIR_CONN_CLOSE (once, when weir closes it or hands it out, with the
 * reason it is counted under in weir_metrics.closes: WEIR_CLOSE_*). conn_id
 * is unique within the engine; worker is w's index. peer is the address weir
 * knows at that moment (NULL, len 0 when the kernel gave none): the socket's
 * at OPEN, at CLOSE the PROXY header's source once one was read. Called on
 * the thread running w (inline: its loop thread; driven: the thread inside
 * weir_worker_poll or weir_respond), except at weir_engine_destroy for what
 * was still open then. It must return quickly and call nothing of weir's but
 * weir_worker_wake. */
typedef void (*weir_conn_fn)(void *user, weir_worker *w, uint32_t worker, uint64_t conn_id, uint32_t event,
                             uint32_t reason, const struct sockaddr *peer, socklen_t len);
#define WEIR_CONN_OPEN 1
#define WEIR_CONN_CLOSE 2

/*
 * The engine's configuration. weir_config_init is required: it sets size and
 * every default named below (after the colon), then the host changes what it
 * needs. Each field says what a zero means: for most it is the default (so a
 * zeroed struct with size set is a working config), but where a zero has a
 * use of its own (off, none, at once) it keeps it, and then a zero is not
 * the default: one more reason to start from weir_config_init.
 */
typedef struct weir_config {
    uint32_t size;           /* weir_config_init: sizeof                              */
    uint32_t port;           /* 0 picks one, resolved once for all workers: 0         */
    const char *host;        /* numeric IPv4 or IPv6 address: "127.0.0.1"; NULL = that */
    uint32_t backend;        /* WEIR_BACKEND_*: WEIR_BACKEND_EPOLL; 0 = epoll          */
    uint32_t workers;        /* loops: 0 = online CPUs (the default)                  */
    uint32_t mode;           /* WEIR_MODE_*: WEIR_MODE_INLINE; 0 = inline              */
    uint32_t accept_batch;   /* accepts per door per pass: 16; 0 drains the backlog
                                each pass (not the default)                          */
    weir_handler_fn on_request; /* inline mode: required; driven mode: unused         */
    void *user;              /* passed to on_request: NULL                            */
    uint32_t backlog;        /* listen(2) backlog: 1024; 0 = 1024                     */
    uint32_t defer_accept;   /* TCP_DEFER_ACCEPT on listeners: 1; 0 = off              */
    uint32_t linger_ms;      /* pause linger: 1500; 0 closes at once                  */
    uint32_t tcp_nodelay;    /* TCP_NODELAY on connections: 1; 0 = off (Nagle on)     */
    uint32_t read_buffer_size;  /* per-connection read buffer (pooled): 16384;
                                   0 = 16384; 1..255 is -EINVAL                       */
    uint32_t max_output_bytes;  /* unsent output before the connection is closed:
                                   4194304; 0 = 4194304                               */
    uint32_t max_connections;   /* per worker: 10000; 0 = 10000. Over it (no sibling
                                   with room) a connection is accepted, answered
                                   503 with Retry-After: 1 and Connection: close,
                                   and closed lingering (counted max_connections) */
    uint32_t max_pipeline;      /* requests parsed ahead of their answers per
                                   connection: 64; 0 = 64                             */
    uint32_t header_timeout_ms; /* first byte to complete head, one deadline: 10000;
                                   0 = no deadline                                    */
    uint32_t idle_timeout_ms;   /* keep-alive wait for the next request: 60000;
                                   0 = no deadline                                    */
    uint32_t write_timeout_ms;  /* output pending without progress: 30000;
                                   0 = no deadline                                    */
    uint32_t body_timeout_ms;   /* a body arriving: the longest wait between two reads
                                   that bring bytes of it (a slow upload that keeps
                                   coming is never cut): 10000; 0 = header_timeout_ms */
    const weir_http1_limits *limits; /* parser limits and max body: NULL = the defaults
                                   of weir_http1_limits_init; else a struct set up
                                   with it (size 0 or outside the ABI rule is -EINVAL,
                                   never replaced), copied by weir_engine_create      */
    weir_log_fn log;            /* optional: NULL = no logging                        */
    void *log_user;             /* passed to log: NULL                                */
    uint32_t handler_timeout_ms; /* the longest a connection waits for the host's next
                                    answer to a request handed out; past it weir
                                    answers 503, closes the connection (counted as
                                    WEIR_CLOSE_HANDLER_TIMEOUT) and the exchange's
                                    handle turns stale. On HTTP/2 each stream's own:
                                    a stream held past it is answered 503 (or reset)
                                    alone and the connection goes on
                                    (h2_handler_timeouts). 0 = no deadline: 0        */
    uint32_t stream_window_bytes; /* a streamed answer's unsent bytes at most: a write
                                    that would pass it is refused with -EAGAIN and
                                    the stream handed back once half of it has
                                    left; at most max_output_bytes; 0 = 262144 (or
                                    max_output_bytes when smaller): 0               */
    uint32_t stream_body_bytes; /* request bodies the host reads as they arrive
                                    (weir_body_read) instead of waiting for them
                                    whole: a body whose Content-Length is at least
                                    this, every chunked body, and every request
                                    that expects 100-continue (so the host decides
                                    whether the body comes) is handed out at its
                                    head with WEIR_REQ_BODY_STREAM. max_body holds
                                    for these too (since 0.4): a declared length
                                    past it is answered 413 at its head (before any
                                    100 Continue, never handed out), a chunked body
                                    at the chunk size that crosses it (weir_body_read
                                    says WEIR_E_BODY_TOO_LARGE); WEIR_BODY_UNLIMITED
                                    lifts it. 0 = off, every body buffered: 0        */
    uint32_t report_gone;       /* (0.3) driven mode: 1 hands the exchanges the host
                                    holds out again, in a poll batch, when their
                                    client goes (its FIN, or the connection
                                    dies: a reset, a forced shutdown), so a host
                                    can stop working on them; weir_exchange_gone
                                    then says 1. 0 = off: 0                       */
    /* The PROXY protocol (0.4; docs/api.md §5.8): weir behind a
     * load balancer (HAProxy send-proxy / send-proxy-v2, nginx stream, AWS NLB)
     * learns the client's address from a header the balancer sends first. */
    uint32_t proxy_protocol;    /* (0.4) WEIR_PROXY_ON: every accepted connection must
                                    begin with a PROXY header, v1 or v2, read before
                                    its first request; its source address becomes
                                    the connection's peer (weir_exchange_peer). A
                                    connection without a valid one is answered 400
                                    and closed (WEIR_CLOSE_PROXY, counted by cause
                                    in weir_metrics.proxy_*). WEIR_PROXY_OFF: 0     */
    uint32_t proxy_timeout_ms;  /* (0.4) the header's own deadline, from the accept:
                                    past it the connection is answered 408 (part
                                    of a header came) or closed (nothing came).
                                    0 = 5000                                        */
    const char *proxy_trusted;  /* (0.4) the sources allowed to send the header:
                                    comma-separated IPv4/IPv6 addresses with an
                                    optional /prefix ("10.0.0.0/8, ::1"), copied by
                                    weir_engine_create; one that does not parse is
                                    -EINVAL. A connection from elsewhere is refused
                                    at its first bytes (400). NULL = any source: NULL */
    uint32_t proxy_max_bytes;   /* (0.4) the longest v2 header accepted (its TLVs
                                    included; v1 is 107 bytes by its spec); 232..65551,
                                    else -EINVAL. 0 = 4096                          */
    uint32_t reserved_;         /* 0                                               */
    /* Deadlines that bind (0.4; docs/reliability.md, Timers): unlike the idle
     * timers above, which every byte re-arms, these cut a client that keeps
     * moving bytes too slowly. Each is on by default; WEIR_DEADLINE_OFF turns
     * one off. Time the host is responsible for never counts: a streamed body
     * the host is not reading (weir_body_read not waiting), an answer the host
     * has not produced yet. */
    uint32_t request_timeout_ms; /* (0.4) the longest one request may take to
                                    arrive, head and body together, from its first
                                    byte (time a streamed body waits for the host
                                    excluded). Past it: answered 408 when no answer
                                    to it has begun (a streamed body's request is
                                    the host's: its weir_body_read says -ETIMEDOUT
                                    and the host answers), then closed,
                                    WEIR_CLOSE_REQUEST_TIMEOUT.
                                    0 = 300000; WEIR_DEADLINE_OFF = none           */
    uint32_t min_body_rate;     /* (0.4) bytes/s a request body must keep up, judged
                                    over each rate_window_ms the client owes body
                                    bytes (the first window is the grace): slower is
                                    answered 408 as above, WEIR_CLOSE_SLOW_BODY.
                                    0 = 500; WEIR_DEADLINE_OFF = none              */
    uint32_t min_send_rate;     /* (0.4) bytes/s a client must read its answers at,
                                    judged over each rate_window_ms that output is
                                    queued and unsent: slower is closed (part of an
                                    answer has left), WEIR_CLOSE_SLOW_READER.
                                    0 = 500; WEIR_DEADLINE_OFF = none              */
    uint32_t rate_window_ms;    /* (0.4) the window both rates are judged over, and
                                    their grace: 0 = 10000; at least 10, else -EINVAL;
                                    WEIR_DEADLINE_OFF is -EINVAL                    */
    /* The overload manager (0.4; docs/api.md §5.10, docs/reliability.md
     * "Overload"): each watermark is where its resource counts as full.
     * Past 80 % of the fullest one keep-alive turns off (answers carry
     * Connection: close), past 90 % the accept batch shrinks to a quarter,
     * past 95 % accepting pauses (the listener stays open: new clients wait
     * in the kernel's queue, none is accepted and dropped), at 100 % new
     * requests are answered 503 with Retry-After: 1 at once instead of being
     * handed to the host (the connection then closes, lingering, counted
     * WEIR_CLOSE_OVERLOAD). Each action releases only below a lower point
     * (70, 80, 85, 90 %). All off by default (docs/api.md §5.10 argues why);
     * WEIR_OVERLOAD_OFF or 0 is off. */
    uint32_t overload_inflight; /* (0.4) per worker: exchanges handed to the host
                                    and not yet answered (inline handlers that
                                    deferred, driven polls, foreign threads): 0 */
    uint32_t overload_conns;    /* (0.4) per worker: open connections; at most
                                    max_connections, else -EINVAL: 0               */
    uint32_t overload_fds;      /* (0.4) per process: open descriptors (the
                                    host's too, sampled every 100 ms); at most
                                    the RLIMIT_NOFILE hard limit, else -EINVAL: 0  */
    uint32_t overload_mem_mb;   /* (0.4) per engine: MiB of weir's connection
                                    buffers (pooled read buffers and output
                                    segments, in use or cached); at most 4194304
                                    (4 TiB), else -EINVAL: 0                       */
    uint32_t trim_interval_ms;  /* (0.4) the trim's window: at each window's end a worker frees
                                    the idle connection states (read buffer, exchange ring,
                                    header views, output segment) past the most it held at
                                    once in the last 3 windows, plus 8; after 3 windows that
                                    held no more than 8 at once it also gives io_uring's
                                    provided buffers and the heap's free pages back to the
                                    kernel (malloc_trim). A worker with nothing to trim sets
                                    no timer. WEIR_TRIM_OFF: never (the pool keeps up to 256
                                    states, the heap what it had). 0 = 1000                */
    uint32_t reserved2_;        /* 0                                               */
    weir_conn_fn on_conn;       /* (0.4; docs/api.md §5.11) each connection's OPEN
                                    and CLOSE; NULL = none (nothing is done): NULL */
    void *conn_user;            /* (0.4) passed to on_conn: NULL                   */
    /* HTTP/2 in cleartext (0.4; docs/http2.md). protocols: which the listeners
     * speak, WEIR_PROTO_*: HTTP/1.1 only, h2c only (by prior knowledge), or
     * both (auto: told apart on the first bytes, and Upgrade: h2c from
     * HTTP/1.1). Each HTTP/2 stream is one exchange through the same API. */
    uint32_t protocols;         /* (0.4) WEIR_PROTO_*: 0 = WEIR_PROTO_AUTO         */
    uint32_t h2_max_streams;    /* (0.4) SETTINGS_MAX_CONCURRENT_STREAMS a
                                    connection allows: 0 = 100; at most 10000   */
    uint32_t h2_header_table;   /* (0.4) HPACK: the decoder's dynamic table
                                    (SETTINGS_HEADER_TABLE_SIZE) and the most the
                                    encoder uses: 0 = 4096; at most 65536         */
    uint32_t h2_stream_window;  /* (0.4) a stream's receive window for request
                                    bodies (SETTINGS_INITIAL_WINDOW_SIZE): 0 =
                                    65535; at most 2^31-1 (the struct grows
                                    after this field)                             */
} weir_config;

/* weir_config.protocols (0.4) */
#define WEIR_PROTO_HTTP1 0x1u /* HTTP/1.1 and 1.0                                     */
#define WEIR_PROTO_H2C 0x2u   /* HTTP/2 in cleartext: the client preface by prior
                                 knowledge; with WEIR_PROTO_HTTP1, also Upgrade: h2c */
#define WEIR_PROTO_AUTO (WEIR_PROTO_HTTP1 | WEIR_PROTO_H2C)

/* weir_config.request_timeout_ms, min_body_rate, min_send_rate (0.4): off. */
#define WEIR_DEADLINE_OFF 0xFFFFFFFFu


/* weir_config.overload_* (0.4): this watermark is off (as 0). */
#define WEIR_OVERLOAD_OFF 0

/* weir_config.trim_interval_ms: no trim. */
#define WEIR_TRIM_OFF 0xffffffffu

/* weir_config.proxy_protocol (0.4). */
#define WEIR_PROXY_OFF 0
#define WEIR_PROXY_ON 1

/* Sets size and every default listed above (limits NULL: the parser's
 * defaults). Any thread. */
WEIR_API void weir_config_init(weir_config *cfg);

/* Validates cfg and creates an engine (no sockets yet). Returns 0 and fills
 * *out, or -EINVAL (NULL, a bad cfg->size or cfg->limits->size, bad host,
 * inline mode without on_request, unknown backend or mode, port over 65535,
 * read_buffer_size 1..255, workers over 1024), -ENOMEM, WEIR_E_UNAVAILABLE (backend refused by
 * this kernel). The engine copies cfg, the host string and *cfg->limits.
 * Control thread. */
WEIR_API int weir_engine_create(const weir_config *cfg, weir_engine **out);

/* Binds every worker's SO_REUSEPORT listener on the one resolved address.
 * Returns 0, -EADDRINUSE, -EACCES, WEIR_E_STATE (already listening), or
 * another negative errno. Control thread. */
WEIR_API int weir_engine_listen(weir_engine *e);

/* Like weir_engine_listen, on listening TCP sockets the host already has
 * (socket activation, a handover): worker i serves fds[i]; workers past n
 * serve a dup of fds[i % n] (both wait on one accept queue: nothing needs
 * SO_REUSEPORT). The engine owns the n fds from then on, even when it fails.
 * The sockets' options are kept as found (TCP_DEFER_ACCEPT is read back for
 * the pause linger). Returns 0, -EINVAL (NULL, n 0, more fds than workers, an
 * fd that is not a listening TCP socket), WEIR_E_STATE (already listening),
 * or another negative errno. Control thread. (0.3) */
WEIR_API int weir_engine_listen_fds(weir_engine *e, const int *fds, size_t n);

/* The bound address (after listen). Returns 0, -EINVAL, WEIR_E_STATE. Any thread. */
WEIR_API int weir_engine_addr(weir_engine *e, struct sockaddr_storage *ss, socklen_t *len);

/* Inline mode: spawns one library-owned thread per worker. Returns 0,
 * WEIR_E_STATE (not listening, already started, or driven mode), or a
 * negative errno. Control thread. */
WEIR_API int weir_engine_start(weir_engine *e);

/* Graceful shutdown: stop accepting, finish in-flight exchanges within
 * grace_ns (< 0: wait without bound), then close every connection and join
 * the workers (inline mode). Within the grace each connection is answered
 * for every request it had parsed (the last answer says Connection: close)
 * and its close lingers, so a client that pipelined more reads them all and
 * then EOF, never a reset (docs/engine.md); the hard close at the grace's
 * end does not linger. In driven mode the hosts' weir_worker_poll calls
 * return WEIR_E_SHUTDOWN once their worker has finished. Returns 0,
 * -ETIMEDOUT (grace ran out; what was left was closed and counted), or
 * -EINVAL. Control thread; but while one call waits, another from any thread
 * may bring the grace's end closer (0: close what is left now) and returns 0
 * at once; the waiting call then returns as its grace ran out. A later call
 * never extends a grace, and one after the shutdown is harmless. */
WEIR_API int weir_engine_shutdown(weir_engine *e, int64_t grace_ns);

/* Shuts down (grace 0) if needed and frees everything. NULL is a no-op.
 * Control thread, after every driven host has stopped polling. A foreign
 * thread still returning from weir_respond on an answer the engine already
 * took, or another engine's worker still posting a transplanted connection
 * the ledger shows adopted, is waited for. Exchanges still outstanding are
 * made safe, not refused: their handles turn stale (weir_respond and
 * weir_defer return WEIR_E_STALE, weir_exchange_request NULL, from any
 * thread, also while destroy runs), but views read from their requests die
 * with the engine. */
WEIR_API void weir_engine_destroy(weir_engine *e);

/* Driven mode: the index-th worker (0 <= index < workers). Returns 0, -EINVAL,
 * WEIR_E_STATE (not driven mode). The worker lives as long as its engine. */
WEIR_API int weir_engine_worker(weir_engine *e, uint32_t index, weir_worker **out);

/* The number of workers. Any thread. */
WEIR_API int weir_engine_workers(weir_engine *e);

/* ------------------------------------------------------------------------ */
/* Accept pause (the pause linger, docs/pause.md)                            */
/* ------------------------------------------------------------------------ */

/*
 * With TCP_DEFER_ACCEPT on (cfg.defer_accept, the default), a client whose
 * handshake completed but which has sent nothing is invisible to accept(2)
 * until the kernel promotes it about one second after its SYN; closing a
 * listener before then resets that client. So a pause does not close at once:
 * each worker, on its own thread, raises the listener's TCP_SYNCNT to 1 when
 * net.ipv4.tcp_synack_retries reads 0, clears TCP_DEFER_ACCEPT, and keeps
 * accepting and serving for cfg.linger_ms (measured from that clear); then it
 * drains the accept queue, serves what it held and closes the listener.
 * Connections already accepted are served on. A listener opened without
 * TCP_DEFER_ACCEPT, or cfg.linger_ms == 0, closes at once (after draining
 * its accept queue). Inline workers act within one pass; driven workers when
 * their host next polls.
 */

/* Starts a pause and returns at once. Returns 0, -EINVAL (NULL), WEIR_E_STATE
 * (not listening yet; or a hot upgrade holds the listeners: an offer under
 * way or done), WEIR_E_SHUTDOWN. Repeated calls are harmless: a lingering
 * listener keeps its deadline, a closed one stays closed. Any thread. */
WEIR_API int weir_engine_begin_pause(weir_engine *e);

/* weir_engine_begin_pause, then waits (woken by notification, never polling)
 * until every worker's listener has closed, bounded by cfg.linger_ms + 1 s.
 * Returns:
 *   0                 every listener closed (a dial is now refused);
 *   -ECANCELED        weir_engine_resume was called meanwhile;
 *   WEIR_E_SHUTDOWN   the engine shut down (a shutdown during the linger
 *                     releases the wait at once);
 *   -ETIMEDOUT        the bound passed first (a driven worker nobody polls,
 *                     or an inline engine never started);
 *   -EINVAL, WEIR_E_STATE as for weir_engine_begin_pause.
 * Any thread; not from a worker's own thread (it would wait for itself). */
WEIR_API int weir_engine_pause(weir_engine *e);

/* Ends a pause: a lingering listener gets TCP_DEFER_ACCEPT back on the same
 * fd (never closed), a closed one is reopened (a new SO_REUSEPORT socket on
 * the same address). Returns at once: 0, -EINVAL, WEIR_E_STATE (not
 * listening yet, or a hot upgrade as above), WEIR_E_SHUTDOWN. A resume with
 * no pause is a no-op.
 * Failures to reopen are counted in weir_metrics.pause_reopen_errors and
 * logged. Any thread. */
WEIR_API int weir_engine_resume(weir_engine *e);

/*
 * Driven mode: runs passes of worker w's loop (I/O, accept batch, timers,
 * flush of answers given since the last pass) until at least one request is
 * ready or timeout_ms passes (-1: no bound; 0: one pass, no wait), and returns
 * up to max requests in out. While accepts are owed it runs further passes
 * (up to max_connections accepts' worth) before returning. Returns the count
 * (>= 0), -EINVAL, WEIR_E_STATE (not listening), or WEIR_E_SHUTDOWN once the
 * worker has finished. Each handle returned is the host's to answer once,
 * from any thread. One host thread at a time per worker (see Threading).
 */
WEIR_API int weir_worker_poll(weir_worker *w, weir_exchange **out, uint32_t max, int timeout_ms);

/* Driven mode: makes w's weir_worker_poll return after its current pass,
 * ready requests or not (0 then), so the host can hand the worker work of
 * its own (answers its other threads gathered, to be given from the polling
 * thread in one batch) without waiting out the poll's timeout. A wake given
 * while no poll runs is kept for the next one, which then makes one pass and
 * returns; wakes given before a poll returns count once. Returns 0 or -EINVAL.
 * Any thread. (0.3) */
WEIR_API int weir_worker_wake(weir_worker *w);

/* Driven mode, from the thread that drives w, between its polls: own 1 makes
 * the calling thread w's thread, as a poll does (its answers are then given
 * at once, not posted); own 0 ends the calling thread's turn (a no-op if it
 * is not w's thread), so that until the next poll no thread is w's and every
 * answer, from any thread, is posted. For a host whose driving thread runs
 * other work between polls: Go's binding drives an async worker from a
 * goroutine not locked to a thread, so a handler goroutine may run on the
 * thread that polled last while the driver polls from another. Returns 0 or
 * -EINVAL. (0.3) */
WEIR_API int weir_worker_own(weir_worker *w, int own);

/* Close reasons, indexes into weir_metrics.closes. */
#define WEIR_CLOSE_PEER 0            /* the peer closed or reset                         */
#define WEIR_CLOSE_NOT_KEEP_ALIVE 1  /* Connection: close, HTTP/1.0 without keep-alive  */
#define WEIR_CLOSE_BAD_REQUEST 2     /* a parse error was answered (4xx/5xx), then close */
#define WEIR_CLOSE_HEADER_TIMEOUT 3  /* a head started, did not complete in time:
                                        answered 408, then closed                      */
#define WEIR_CLOSE_IDLE_TIMEOUT 4    /* keep-alive wait ran out                          */
#define WEIR_CLOSE_WRITE_TIMEOUT 5   /* output made no progress in time                 */
#define WEIR_CLOSE_OUTPUT_LIMIT 6    /* unsent output passed max_output_bytes           */
#define WEIR_CLOSE_IO_ERROR 7        /* read/write error other than a peer close        */
#define WEIR_CLOSE_MAX_CONNECTIONS 8 /* accepted over max_connections (answered 503)    */
#define WEIR_CLOSE_SHUTDOWN 9        /* engine shutdown closed it                        */
#define WEIR_CLOSE_HANDLER 10        /* the handler's answer asked for close            */
#define WEIR_CLOSE_RESOURCE 11       /* out of memory or buffers for this connection    */
#define WEIR_CLOSE_SILENT 12         /* connected, sent no byte within header_timeout_ms */
#define WEIR_CLOSE_TRANSPLANT_REFUSED 13 /* moved by weir_engine_transplant, refused by the
                                            target (full, shutting down), given back and
                                            closed at its request boundary by this engine */
#define WEIR_CLOSE_BODY_TIMEOUT 14   /* a request body stopped arriving for body_timeout_ms:
                                        answered 408, then closed                      */
#define WEIR_CLOSE_HANDLER_TIMEOUT 15 /* the host did not answer within handler_timeout_ms:
                                         answered 503, then closed                     */
#define WEIR_CLOSE_UPGRADED 16       /* taken out of the engine by the host after a 101
                                        (weir_upgrade_take): not closed by weir       */
#define WEIR_CLOSE_BODY_UNREAD 17    /* answered before its streamed body was read to the
                                        end: closed after the answer, the rest discarded */
#define WEIR_CLOSE_ABORTED 18        /* the host cut its streamed answer short
                                        (weir_stream_abort): closed after what was sent */
#define WEIR_CLOSE_HANDOVER 19       /* a hot upgrade's deadline closed it, or a listeners-only
                                        handover closed it at its request boundary (0.3) */
#define WEIR_CLOSE_PROXY 20          /* cfg.proxy_protocol: no valid PROXY header (missing,
                                        malformed, oversized, late, or from a source not
                                        in proxy_trusted): answered 400 (408 late), or
                                        closed when nothing came (0.4)                  */
#define WEIR_CLOSE_REQUEST_TIMEOUT 21 /* a request did not arrive whole within
                                          request_timeout_ms: answered 408 where no
                                          answer had begun, then closed (0.4)     */
#define WEIR_CLOSE_SLOW_BODY 22      /* a request body came slower than min_body_rate:
                                        answered 408 as above, then closed (0.4)  */
#define WEIR_CLOSE_SLOW_READER 23    /* a client read its answer slower than
                                        min_send_rate: closed (0.4)              */
#define WEIR_CLOSE_OVERLOAD 24       /* the overload manager: answered 503 with Retry-After
                                        at once, or closed after its answer while
                                        keep-alive was off, or closed idle between
                                        requests when the level rose (lingering: FIN,
                                        never a reset; 0.4; cfg.overload_*)            */
#define WEIR_CLOSE_H2_PROTOCOL 25    /* HTTP/2: the peer broke the protocol (a
                                        connection error): GOAWAY with its code, then
                                        closed (0.4)                                  */
#define WEIR_CLOSE_H2_ABUSE 26       /* HTTP/2: a flood or rapid reset past its bound
                                        (RST_STREAM, SETTINGS, PING, empty DATA,
                                        WINDOW_UPDATE, CONTINUATION): GOAWAY
                                        ENHANCE_YOUR_CALM, then closed (0.4)           */
#define WEIR_CLOSE_GOAWAY 27         /* HTTP/2: drained by a graceful GOAWAY so that
                                        the client reconnects (transplant, the adaptive
                                        switch, a hot upgrade), closed once its streams
                                        were answered (0.4)                            */
#define WEIR_CLOSE_REASONS 32        /* 0.2 made room: 16 in 0.1 */

/* A static name for a close reason ("peer", "bad_request", ...); "unknown"
 * past the table. Any thread. */
WEIR_API const char *weir_close_reason_name(uint32_t reason);

typedef struct weir_metrics {
    uint32_t size;
    uint32_t workers;
    uint64_t accepted;          /* connections accepted                             */
    uint64_t accept_batches;    /* batches run                                       */
    uint64_t accept_owed;       /* passes that ran a batch because one was owed      */
    uint64_t accept_resource_errors; /* EMFILE/ENFILE/ENOBUFS/ENOMEM from accept      */
    uint64_t accept_other_errors;
    uint64_t handoffs;          /* connections passed to a sibling worker           */
    uint64_t handoffs_owed;
    uint64_t connections_open;  /* now                                               */
    uint64_t requests;          /* complete requests parsed                          */
    uint64_t responses;         /* answers written                                   */
    uint64_t parse_errors;      /* requests answered with a parse error status       */
    uint64_t continues_sent;    /* 100 Continue interim answers                     */
    uint64_t bytes_in;
    uint64_t bytes_out;
    uint64_t loop_passes;
    uint64_t closes[WEIR_CLOSE_REASONS]; /* by WEIR_CLOSE_*                          */
    /* The accept pause (docs/pause.md); counted per listener. */
    uint64_t pause_lingers;          /* listeners that entered the linger             */
    uint64_t pause_closes;           /* listeners closed by a pause                   */
    uint64_t pause_aborts;           /* lingers ended by a resume                     */
    uint64_t pause_defer_clears;     /* TCP_DEFER_ACCEPT cleared for a linger         */
    uint64_t pause_defer_restores;   /* TCP_DEFER_ACCEPT set again by a resume        */
    uint64_t pause_guards;           /* TCP_SYNCNT=1 applied (tcp_synack_retries = 0) */
    uint64_t pause_setsockopt_errors; /* a clear, restore or guard that failed        */
    uint64_t pause_sysctl_unreadable; /* tcp_synack_retries unreadable: no guard      */
    uint64_t pause_drain_accepted;   /* connections accepted by the closing drain     */
    uint64_t pause_reopens;          /* closed listeners reopened by a resume         */
    uint64_t pause_reopen_errors;    /* reopens that failed (logged)                  */
    /* The backend (docs/uring.md): what the engine runs on, the same in every
     * worker, and io_uring's own counts (0 on epoll). */
    uint32_t backend;                /* WEIR_BACKEND_* the engine runs on             */
    uint32_t uring_tier;             /* WEIR_URING_TIER_*; 0 on epoll                 */
    uint64_t uring_probed;           /* WEIR_URING_F_* this kernel was probed to have */
    uint64_t uring_used;             /* WEIR_URING_F_* the engine uses                */
    uint64_t uring_enters;           /* io_uring_enter calls                          */
    uint64_t uring_cq_overflows;     /* completions the CQ ring could not take at once
                                        (kept by the kernel, never lost; 0 in a sound
                                        configuration)                              */
    uint64_t uring_nobufs;           /* recvs that found the buffer ring empty: re-armed
                                        once buffers came back                       */
    uint64_t uring_rearms;           /* multishot accepts and recvs re-armed after the
                                        kernel ended them                            */
    /* Transplant's ledger (docs/transplant.md), as the source counts it:
     * detached == adopted + refused + in_flight, always; in_flight is 0 at
     * quiescence. */
    uint64_t transplant_detached;    /* connections that left this engine in an image */
    uint64_t transplant_adopted;     /* of those, admitted by the target              */
    uint64_t transplant_refused;     /* of those, refused by the target and closed    */
    uint64_t transplant_in_flight;   /* of those, not yet admitted or refused         */
    uint64_t transplant_received;    /* connections this engine adopted from others   */
    /* Lingering closes (docs/engine.md): a close while the peer may still be
     * sending (an error answer, a timeout, or Connection: close / a handler's
     * close with bytes past the request) sends FIN, then reads and discards
     * until the peer's FIN, 5 s or 8 MiB, so the last answer is not destroyed
     * by the reset a close with unread input draws. */
    uint64_t close_lingers;          /* closes that lingered                          */
    uint64_t close_linger_cuts;      /* of those, ended by a bound, not the peer's FIN */
    uint64_t uring_sq_full;          /* SQEs asked for while the SQ was full: the queue
                                        was submitted early (an enter more, nothing
                                        lost; 0 on epoll)                            */
    /* The PROXY protocol (0.4; cfg.proxy_protocol): headers accepted, and the
     * connections refused by cause (each closed as WEIR_CLOSE_PROXY). */
    uint64_t proxy_v1;               /* v1 headers accepted                           */
    uint64_t proxy_v2;               /* v2 headers accepted                           */
    uint64_t proxy_local;            /* of those, ones that kept the socket's peer:
                                        v2 LOCAL, v1 UNKNOWN, AF_UNSPEC, AF_UNIX      */
    uint64_t proxy_missing;          /* bytes that began with no PROXY signature      */
    uint64_t proxy_malformed;        /* a signature, then a header the spec refuses
                                        (v2's CRC32C mismatch included)              */
    uint64_t proxy_untrusted;        /* connections from outside proxy_trusted        */
    uint64_t proxy_oversized;        /* v1 past 107 bytes, v2 past proxy_max_bytes    */
    uint64_t proxy_timeouts;         /* no whole header within proxy_timeout_ms       */
    /* The overload manager (0.4; cfg.overload_*, docs/api.md §5.10). */
    uint64_t overload_level;         /* now: the highest level of any worker: 0 none,
                                        1 keep-alive off, 2 accept batch shrunk,
                                        3 accepting paused, 4 refusing with 503      */
    uint64_t overload_engaged;       /* actions engaged (a rise of n levels counts n) */
    uint64_t overload_keepalive_off; /* answers that closed their connection only
                                        because keep-alive was off (WEIR_CLOSE_OVERLOAD;
                                        the refused requests' 503s included)         */
    uint64_t overload_accept_shrunk; /* accept batches run shrunk                     */
    uint64_t overload_accept_pauses; /* times a worker paused accepting               */
    uint64_t overload_refused;       /* requests answered 503 at once, never handed out */
    /* Memory that follows the load (0.4; cfg.trim_interval_ms). Bytes are
     * allocated bytes: a pooled state's untouched pages may not be resident. */
    uint64_t mem_pooled_bytes;       /* now: idle connection states and output segments
                                        kept for the next connections to speak        */
    uint64_t mem_returned_bytes;     /* given back by trims: pooled bytes freed, and
                                        io_uring provided buffers' pages released     */
    uint64_t mem_trims;              /* trim windows that gave something back (the
                                        pool, io_uring's buffers or a heap trim)      */
    /* The overload manager, continued (0.4; docs/api.md §5.10). */
    uint64_t overload_idle_closed;   /* keep-alive connections closed while idle between
                                        requests because the level rose to >= 1 (the
                                        rise's sweep, and ones whose last answer left
                                        after it): each also WEIR_CLOSE_OVERLOAD, each
                                        a lingering close (FIN, never a reset)        */
    /* HTTP/2 (0.4; docs/http2.md): a connection's counts are folded as it
     * is settled, like requests. */
    uint64_t h2_sessions; /* connections served as HTTP/2 (prior knowledge or Upgrade) */
    uint64_t h2_upgrades; /* of those: by Upgrade: h2c from HTTP/1.1 (answered 101) */
    uint64_t h2_streams; /* streams the peers opened (each an exchange unless refused) */
    uint64_t h2_resets_by_peer; /* streams the peer reset (RST_STREAM) before their answer ended */
    uint64_t h2_refused; /* streams refused over h2_max_streams (RST_STREAM REFUSED_STREAM) */
    uint64_t h2_malformed; /* streams or connections refused as malformed (RFC 9113 §8.1.1, §5.1.1) */
    uint64_t h2_floods; /* connections closed for a flood or rapid reset (WEIR_CLOSE_H2_ABUSE) */
    uint64_t h2_handler_timeouts; /* streams the host held past handler_timeout_ms, each
                                     cut alone: answered 503, or reset (RST_STREAM
                                     INTERNAL_ERROR) once its answer had begun; the
                                     connection and its other streams go on (0.4) */
} weir_metrics;

/* weir_metrics.uring_tier: how the rings run (docs/uring.md). */
#define WEIR_URING_TIER_DEFER 1 /* SINGLE_ISSUER | DEFER_TASKRUN: inline mode       */
#define WEIR_URING_TIER_COOP 2  /* COOP_TASKRUN | TASKRUN_FLAG: driven mode, or no
                                   DEFER_TASKRUN                                     */
#define WEIR_URING_TIER_BASIC 3 /* neither                                          */

/* weir_metrics.uring_probed / uring_used bits, each found by a run-time probe
 * of the kernel (never by its version number). */
#define WEIR_URING_F_SINGLE_ISSUER (1ull << 0)
#define WEIR_URING_F_DEFER_TASKRUN (1ull << 1)
#define WEIR_URING_F_COOP_TASKRUN (1ull << 2)
#define WEIR_URING_F_MULTISHOT_ACCEPT (1ull << 3)
#define WEIR_URING_F_MULTISHOT_RECV (1ull << 4)
#define WEIR_URING_F_BUF_RING (1ull << 5)
#define WEIR_URING_F_BUF_RING_INC (1ull << 6)   /* incremental buffer consumption   */
#define WEIR_URING_F_RECV_BUNDLE (1ull << 7)    /* recv/send bundles                */
#define WEIR_URING_F_ACCEPT_DONTWAIT (1ull << 8)
#define WEIR_URING_F_ACCEPT_POLL_FIRST (1ull << 9)
#define WEIR_URING_F_NAPI (1ull << 10)
#define WEIR_URING_F_EXT_ARG (1ull << 11)       /* a timeout inside io_uring_enter  */
#define WEIR_URING_F_CQE_SKIP (1ull << 12)      /* no CQE for a successful close    */
#define WEIR_URING_F_NODROP (1ull << 13)        /* an overflowed CQE is kept        */
#define WEIR_URING_F_REG_RING_FD (1ull << 14)   /* the registered ring fd           */
#define WEIR_URING_F_MIN_TIMEOUT (1ull << 15)   /* a wait that gathers completions  */
#define WEIR_URING_F_COUNT 16

/* A static name for one WEIR_URING_F_* bit ("defer_taskrun", ...) or a tier
 * ("defer", "coop", "basic"); "unknown" otherwise. Any thread. */
WEIR_API const char *weir_uring_feature_name(uint64_t bit);
WEIR_API const char *weir_uring_tier_name(uint32_t tier);

/*
 * Moves every HTTP/1 connection of `from` to `to` (DESIGN.md §6,
 * docs/transplant.md): each at its next request boundary, with its answers
 * flushed, carrying the unread bytes of its next pipelined request; one in
 * the middle of a request (body arriving, handler running, deferred answer
 * out, output pending) moves when it reaches a boundary. The transplant
 * stays active until it is ended (WEIR_TRANSPLANT_END, a transplant from
 * `to` back to `from`, or `from`'s shutdown): what `from` accepts meanwhile
 * moves too. Worker i of `from` hands to worker i mod N of `to`. Any
 * backend pair. Socket options are the adopter's. A target that refuses an
 * image (over max_connections, shutting down) gives it back: `from` closes
 * it at its request boundary (FIN, never a reset), counted as
 * WEIR_CLOSE_TRANSPLANT_REFUSED and in transplant_refused. Once `from` is
 * destroyed, the target closes what it refuses itself, in its own closes.
 * A transplant from `to` back to `from` ends this one first (what it held
 * is served where it is), so connections never play ping-pong.
 * flags: 0, or WEIR_TRANSPLANT_END: end `from`'s transplant (into `to`, or
 * wherever it goes when `to` is NULL); connections it held, not yet
 * detached, are served by `from` again, images already on their way arrive.
 * Returns 0 at once (connections move as they reach their boundaries; END
 * is 0 also when nothing was transplanting), -EINVAL (NULL without END,
 * from == to, unknown flags), WEIR_E_STATE (either engine not listening,
 * `to` not started in inline mode, or `from` already transplanting
 * elsewhere; again to the same `to` is 0), WEIR_E_SHUTDOWN (either
 * shutting down). Any thread, not concurrently with the shutdown or
 * destroy of either engine; `to` must outlive the images in flight to it
 * (transplant_in_flight 0).
 */
#define WEIR_TRANSPLANT_END 1u
WEIR_API int weir_engine_transplant(weir_engine *from, weir_engine *to, uint32_t flags);

/*
 * The adaptive switch (DESIGN.md §6, docs/transplant.md): `to` takes over
 * from `from` on the address both listen on (create `to` with `from`'s port;
 * SO_REUSEPORT lets both bind it). In this order: resumes `to` (a lingering
 * listener keeps its socket, a closed one reopens), transplants `from` to
 * `to` (ending a transplant the other way), and begins `from`'s pause: its
 * listeners linger (DESIGN.md §5) and what they accept meanwhile moves to
 * `to` too. Returns at once; weir_engine_pause(from) waits for the linger.
 * A switch back inside the linger resumes `from`'s same listeners.
 * A switch whose transplant fails after `to` was resumed is undone: a `to`
 * that was paused pauses again (lingering) and transplants what it accepted
 * meanwhile back to `from`, so no fresh standby is left holding clients.
 * Returns 0, -EINVAL (NULL, the same engine, different addresses), or the
 * first error of the three steps. Any thread, as weir_engine_transplant.
 */
WEIR_API int weir_engine_switch(weir_engine *from, weir_engine *to);

/* Sums every worker's counters. out->size must be set; fields past it are
 * left alone. Returns 0 or -EINVAL. Any thread. */
WEIR_API int weir_engine_metrics(weir_engine *e, weir_metrics *out);

/* ------------------------------------------------------------------------ */
/* Exchanges                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * Handles. A weir_exchange * is a handle, not an address: weir never reuses
 * one while it could still be presented. It names one request from the
 * moment it is handed out (on_request, weir_worker_poll) until it is
 * consumed; from then on every call with it returns WEIR_E_STALE (or NULL)
 * and touches nothing, whichever request the engine now serves. Handles are
 * not canonical addresses: never dereference one. (Strictly, a handle could
 * come back after about 4 * 10^12 later exchanges of its worker; weir
 * assumes none is kept that long.)
 *
 * The one failure rule of weir_respond, the same on every thread:
 *   0                  consumed: the answer is queued (in request order).
 *   WEIR_E_GONE        consumed: the connection died first; dropped.
 *   -ENOMEM            consumed: no memory for the answer; weir answers 500
 *                      and closes the connection (WEIR_CLOSE_RESOURCE).
 *   -EINVAL            not consumed: bad arguments (status, headers, flags,
 *                      NULL with a length); answer it again.
 *   -EMSGSIZE          not consumed: the answer alone is larger than
 *                      max_output_bytes; answer it with a smaller one.
 *   WEIR_E_STATE       not consumed: an inline exchange answered from
 *                      another thread without weir_defer.
 *   WEIR_E_STALE       nothing was done: the handle names no live exchange
 *                      (consumed already, taken back by handler_timeout_ms,
 *                      or its engine destroyed).
 */

/* What a handler reads. Views point into the worker's buffers and stay valid
 * until the exchange is consumed (or taken back by handler_timeout_ms). */
typedef struct weir_request {
    uint32_t size;
    uint32_t version_minor;
    uint32_t flags;          /* WEIR_REQ_*                                         */
    uint32_t num_headers;
    uint32_t num_trailers;
    uint32_t reserved_;
    weir_str_t method;
    weir_str_t target;
    weir_str_t path;
    weir_str_t query;
    weir_str_t host;
    const weir_header_t *headers;
    const weir_header_t *trailers; /* chunked bodies only                          */
    weir_str_t body;               /* decoded, whole; empty with WEIR_REQ_BODY_STREAM */
    uint64_t connection_id;        /* unique within the engine                     */
    uint64_t body_length;          /* the body's length, or WEIR_LENGTH_UNKNOWN for a
                                      streamed chunked body (0.2)                  */
} weir_request;

/* The request of ex; NULL for NULL or a stale handle. Valid until ex is
 * consumed. The thread that holds ex. */
WEIR_API const weir_request *weir_exchange_request(weir_exchange *ex);

/* The peer's address: the socket's peer, or, with cfg.proxy_protocol, the
 * source address the connection's PROXY header gave (a LOCAL command, v1
 * UNKNOWN, AF_UNSPEC or AF_UNIX keep the socket's peer); a transplant or a
 * hot upgrade carries it along. Returns 0, -EINVAL (NULL), WEIR_E_STALE. The
 * thread that holds ex. */
WEIR_API int weir_exchange_peer(weir_exchange *ex, struct sockaddr_storage *ss, socklen_t *len);

/* weir_respond flags */
#define WEIR_RESPOND_CLOSE 0x1u /* close the connection after this answer */
/* (0.4) send no answer at all: the answers before ex (and ex's interim
 * answers) leave, then the connection closes (WEIR_CLOSE_ABORTED), as
 * net/http treats a handler that panicked. status and headers are checked
 * as usual and not sent. Consumes ex as any answer does. */
#define WEIR_RESPOND_ABORT 0x2u

/*
 * Answers ex: status (100 < status < 1000, not 1xx), headers (Content-Length,
 * Transfer-Encoding, Connection and Date are weir's and are refused with
 * -EINVAL), body. Copies everything before it returns. Answers leave in
 * request order, whichever order handlers answer in. flags: 0 or
 * WEIR_RESPOND_CLOSE (anything else is -EINVAL).
 *
 * Inline mode, inside on_request: the owning thread. After weir_defer, or for
 * an exchange returned by weir_worker_poll: any thread.
 * Returns as the failure rule above says: 0, WEIR_E_GONE, -ENOMEM (each
 * consumes ex), -EINVAL, -EMSGSIZE, WEIR_E_STATE (ex as it was), or
 * WEIR_E_STALE (nothing done).
 */
WEIR_API int weir_respond(weir_exchange *ex, int status, const weir_header_t *headers, size_t num_headers,
                          const void *body, size_t body_len, uint32_t flags);

/*
 * (0.4) An interim answer: a 1xx head (status 100 or 102..199; 101 is
 * weir_upgrade's) with the given fields (the rules of weir_respond's
 * headers), e.g. 103 Early Hints with its Link fields. It leaves before
 * ex's final answer and after every answer before ex (pipelined answers
 * keep their order), and ex stays the host's, to answer as usual; several
 * may be sent. A 100 for a request whose body streams is that body's 100
 * Continue, sent once: when the body still waits for it (weir then sends
 * no other with its first read), else not at all (weir's left with a read,
 * the body's bytes came anyway, or it was read). Nothing is sent to an
 * HTTP/1.0 client (RFC 9110 15.2), nor when the connection has died (the
 * final answer then learns WEIR_E_GONE); both return 0.
 * Same threads as weir_respond. Returns 0, -EINVAL (status, headers; or the
 * final answer began streaming), WEIR_E_STATE (an inline exchange from
 * another thread without weir_defer), WEIR_E_STALE (answered, or not a live
 * handle), -ENOMEM (nothing sent; from the owning thread the connection is
 * aborted).
 */
WEIR_API int weir_respond_interim(weir_exchange *ex, int status, const weir_header_t *headers,
                                  size_t num_headers);

/* One answer of a batch given to weir_respond_many. */
typedef struct weir_answer_t {
    weir_exchange *ex;
    int32_t status;
    uint32_t flags;               /* WEIR_RESPOND_*                              */
    const weir_header_t *headers;
    size_t num_headers;
    const void *body;
    size_t body_len;
    int32_t result;               /* out: what weir_respond returned for it      */
    uint32_t reserved_;
} weir_answer_t;

/* Gives n answers in one call (a binding pays one crossing for a whole batch).
 * Each is applied as by weir_respond, in array order, and its result stored in
 * answers[i].result. Returns how many succeeded (0..n), or -EINVAL for NULL
 * with n > 0. The same threads as weir_respond. */
WEIR_API int weir_respond_many(weir_answer_t *answers, size_t n);

/*
 * Streamed answers: a head now, the body in pieces, for answers that are
 * large, produced over time (server-sent events, a download) or of unknown
 * length. Every call is for the same threads as weir_respond, and follows
 * the same failure rule; one thread at a time writes to a stream.
 *
 * weir_stream_start: status and headers as weir_respond; length is the body's
 * length (Content-Length), or WEIR_LENGTH_UNKNOWN: chunked for HTTP/1.1,
 * delimited by closing the connection for HTTP/1.0. For HEAD, 204 and 304
 * no body is sent (pieces are accepted and discarded). Started inside
 * on_request, the handler may return: the stream goes on from any thread
 * (no weir_defer needed) and, inline, from on_request again (below).
 * Returns 0, -EINVAL (as weir_respond, or begun already), WEIR_E_STATE,
 * WEIR_E_STALE, or, consuming ex, WEIR_E_GONE and -ENOMEM.
 *
 * weir_stream_write: one piece (len may be 0). A stream holds at most
 * cfg.stream_window_bytes unsent: a piece that would pass it is refused
 * with -EAGAIN (nothing done; not consumed). The stream is then handed back
 * once half the window has left: inline, on_request is called again with
 * the same ex on its worker's thread (tell it from a new request by
 * weir_stream_room(ex) >= 0); driven, ex comes back in a weir_worker_poll
 * batch. Returns 0, -EAGAIN, -EMSGSIZE (len above the window: split it),
 * -EINVAL (past the announced length, NULL data with len), WEIR_E_STATE
 * (not started), WEIR_E_STALE, or, consuming ex, WEIR_E_GONE and -ENOMEM.
 *
 * weir_stream_end: the end, with trailer fields for a chunked body (same
 * rules as headers; -EINVAL on another framing). A Length body must have
 * received every byte first (-EINVAL: not consumed, write the rest).
 * Returns 0 (consumed, answered), the codes above, or WEIR_E_GONE/-ENOMEM.
 *
 * weir_stream_abort: the stream ends short, for a producer that failed
 * mid-way: what was written still leaves, then the connection closes
 * (counted as WEIR_CLOSE_ABORTED), so the client sees a body cut off (a
 * chunked one without its last chunk, a Length one short; a close-delimited
 * HTTP/1.0 body cannot show it) and never an answer that looks whole; the
 * requests after it on that connection are dropped. Returns 0 (consumed),
 * WEIR_E_STATE (not started), WEIR_E_STALE, or, consuming ex, WEIR_E_GONE and
 * -ENOMEM (the connection is then aborted at once).
 *
 * weir_stream_room: bytes a piece may have now without -EAGAIN (0 when the
 * window is full), WEIR_E_STATE (ex is live but its answer was not started
 * as a stream: a new request), WEIR_E_STALE, -EINVAL. Any thread.
 *
 * A stream whose connection dies is over: the next call returns WEIR_E_GONE,
 * or WEIR_E_STALE when pieces posted from another thread reached the dead
 * connection first (the engine then released the stream itself); either
 * way, stop.
 *
 * Pipelined answers still leave in request order: a stream's pieces wait
 * (within the window) while the answers before it are sent, and the
 * answers after it wait for its end.
 */
#define WEIR_LENGTH_UNKNOWN UINT64_MAX

/*
 * Answers ex with length bytes of the regular file fd from offset
 * (Content-Length: length). weir sends through its own dup of fd (made
 * before the call returns: the caller's fd stays the caller's, to close
 * whenever it likes), as the connection drains: the answer's size is not
 * bounded by max_output_bytes. The body goes from the file without a copy
 * through weir's memory (sendfile on epoll, splice through a pipe on
 * io_uring); a file the kernel will not send so is read with pread into
 * the output, within stream_window_bytes, from where sending stopped
 * (docs/api.md §5.3). A read error, or a file that shrank below offset +
 * length, aborts the connection (the head promised the length), counted as
 * WEIR_CLOSE_IO_ERROR.
 * Same threads and failure rule as weir_respond; also -EBADF (fd not open)
 * and -EINVAL (not a regular file, or offset + length past its size), each
 * leaving ex as it was, and a negative errno from dup (-EMFILE).
 */
WEIR_API int weir_respond_file(weir_exchange *ex, int status, const weir_header_t *headers, size_t num_headers,
                               int fd, uint64_t offset, uint64_t length, uint32_t flags);
WEIR_API int weir_stream_start(weir_exchange *ex, int status, const weir_header_t *headers, size_t num_headers,
                               uint64_t length, uint32_t flags);
WEIR_API int weir_stream_write(weir_exchange *ex, const void *data, size_t len);
WEIR_API int weir_stream_end(weir_exchange *ex, const weir_header_t *trailers, size_t num_trailers);
WEIR_API int64_t weir_stream_room(weir_exchange *ex);
WEIR_API int weir_stream_abort(weir_exchange *ex);

/*
 * Upgrades (RFC 9110 7.8): weir_upgrade answers ex, a request that asked
 * for one (WEIR_REQ_UPGRADE on a keep-alive connection), with 101 Switching
 * Protocols, "Connection: upgrade" and the given fields (Upgrade: ... is
 * the host's to send). Nothing after that request is parsed as HTTP: once
 * the 101 and every answer before it has left, the connection leaves the
 * engine (counted as WEIR_CLOSE_UPGRADED; the engine never touches it
 * again) and is handed back to the host as the same handle: inline,
 * on_request is called with it again on the worker's thread; driven, it
 * comes back in a weir_worker_poll batch. An Upgrade request answered any
 * other way stays HTTP. Threads and failure rule as weir_respond; -EINVAL
 * also when the request did not ask for an upgrade.
 *
 * weir_upgrade_take, on the worker's thread (inside on_request, or the
 * polling thread), after the hand-back: *fd is the connection's socket
 * (non-blocking; the host's to close) and buf[0, *len) the bytes that
 * arrived past the request (the new protocol's first bytes). Returns 0 (the
 * handle is then stale), -ENOBUFS (cap is too small: *len says how much is
 * needed; nothing taken), -EAGAIN (the 101 has not left yet: wait for the
 * hand-back), WEIR_E_GONE (the connection died before it could leave;
 * consumed), WEIR_E_STATE (not an upgraded exchange: a new request, or the
 * wrong thread), WEIR_E_STALE, -EINVAL (NULL). A connection handed back and
 * never taken is closed when its engine is destroyed.
 *
 * weir_upgrade_raw (0.3) is weir_upgrade without the 101: weir writes
 * nothing for ex, and the host answers on the socket it takes (a Hijack, as
 * net/http's and celeris's websocket code write their own 101). Everything
 * else, the rules, the hand-back and the take, is weir_upgrade's.
 */
/*
 * weir_exchange_gone (0.3): 1 when ex's client has gone: its FIN (or a
 * read error) arrived, or the connection died (then the answer is dropped:
 * answering returns WEIR_E_GONE, which also releases ex; after a FIN alone
 * weir still sends it, for a client that only half-closed). 0 while the
 * client is there; WEIR_E_STALE, -EINVAL (NULL). Any thread. With
 * cfg.report_gone the exchanges a poll had handed out come back in a poll
 * batch once, at the FIN or the death, whichever is first (net/http cancels
 * a request's context the same way), and for those it says 2: a report,
 * never a new request. One not handed out yet when its client went comes
 * out once, as a request, and says 1. An exchange may also come back for
 * another reason (a stream's room, a body's bytes): a 2 covers that too.
 */
WEIR_API int weir_exchange_gone(weir_exchange *ex);

WEIR_API int weir_upgrade(weir_exchange *ex, const weir_header_t *headers, size_t num_headers);
WEIR_API int weir_upgrade_raw(weir_exchange *ex);
WEIR_API int weir_upgrade_take(weir_exchange *ex, int *fd, void *buf, size_t cap, size_t *len);

/*
 * Streamed request bodies (cfg.stream_body_bytes): a request with
 * WEIR_REQ_BODY_STREAM is handed out at its head, its body still to come
 * (req->body is empty; req->body_length says how long it is, or
 * WEIR_LENGTH_UNKNOWN when chunked). weir_body_read copies up to cap bytes
 * of the decoded body into buf, on the worker's thread (inside on_request,
 * or the polling thread), before the answer begins. Returns:
 *   > 0               bytes copied; read again.
 *   0                 the body is complete (a chunked body's trailer fields
 *                     are now in weir_exchange_request(ex)->trailers); 0 again
 *                     on every later call.
 *   -EAGAIN           nothing now. ex is handed back when bytes arrive, the
 *                     body ends or cannot (inline: on_request is called with it
 *                     again, so a handler that got -EAGAIN may return without
 *                     answering; driven: it comes back in a poll batch).
 *   -ETIMEDOUT        the host waited and no byte came for body_timeout_ms,
 *                     or the client spent request_timeout_ms or fell below
 *                     min_body_rate (0.4); the host answers (408, say), then
 *                     the connection closes;
 *   -ECONNABORTED     the peer closed mid-body, or the connection is closing
 *                     (engine shutdown);
 *   a parse error     a malformed chunked body (WEIR_E_BAD_CHUNK and the like;
 *                     weir_http1_status gives its status; counted in
 *                     parse_errors), after the data before it was read.
 *                     For these the body is over, and ex stays the host's:
 *                     answer it (408, that status, anything); the
 *                     connection closes after the answer.
 *   WEIR_E_BODY_TOO_LARGE (0.4) a chunk size took the body past max_body
 *                     (checked as each chunk's size line is read, before
 *                     its data: a size like ffffffffffffffff fails at once),
 *                     after the data before it was read (at most max_body
 *                     bytes in all). weir has answered
 *                     413 itself, after the answers before it, and closes
 *                     the connection (lingering: the client reads the 413
 *                     while still sending; counted in parse_errors and as
 *                     WEIR_CLOSE_BAD_REQUEST). ex is consumed, as for
 *                     WEIR_E_GONE: do not answer (weir_respond would say
 *                     WEIR_E_STALE). The limit holds whatever the host does.
 *                     (A declared Content-Length past max_body never reaches
 *                     the host: weir answers 413 at the head.)
 *   WEIR_E_GONE       the connection died (consumed: do not answer).
 *   WEIR_E_STATE      not a streamed body (or its answer began, or the wrong
 *                     thread); WEIR_E_STALE; -EINVAL (NULL, cap 0).
 * weir_upgrade refuses (-EINVAL) a request whose body streams.
 * The first read of a request that expects 100-continue sends the 100
 * Continue (unless body bytes came already), so a host that answers before
 * reading, 417 for one, refuses the body: the client never sends it. Any
 * answer begun before the body was read to its end (0) closes the connection
 * after it, counted as WEIR_CLOSE_BODY_UNREAD; the rest is discarded. At
 * most a read buffer of a body waits in weir (read_buffer_size, grown to
 * leave 4 KiB plus max_trailer_bytes after a large head): a host that stops
 * reading stops the client (TCP's window), and body_timeout_ms does not run
 * while the host, not the client, is the one behind.
 */
WEIR_API int64_t weir_body_read(weir_exchange *ex, void *buf, size_t cap);

/* Inline mode, inside on_request: the answer will come later, from any
 * thread, through weir_respond. Returns 0, -EINVAL (NULL, not the exchange
 * this handler was given, already deferred or answered, driven mode), or
 * WEIR_E_STALE. */
WEIR_API int weir_defer(weir_exchange *ex);

/* ------------------------------------------------------------------------ */
/* File answers with validators (0.4)                                         */
/* ------------------------------------------------------------------------ */

/* weir_file_options flags */
#define WEIR_FILE_NO_RANGES 0x1u /* ignore Range and If-Range; no Accept-Ranges (0.4) */

/* How weir_serve_file answers. weir_file_options_init is required: it sets
 * size and every default (all zero). (0.4) */
typedef struct weir_file_options {
    uint32_t size;                /* weir_file_options_init: sizeof                     */
    uint32_t flags;               /* WEIR_FILE_*                                        */
    const char *content_type;     /* Content-Type of 200/206; NULL = application/octet-stream */
    const weir_header_t *headers; /* extra fields for 200, 206 and 304 (Cache-Control,
                                     Vary, ...); copied before weir_serve_file returns */
    size_t num_headers;
    uint32_t respond_flags;       /* WEIR_RESPOND_CLOSE                                 */
    uint32_t reserved_;
} weir_file_options;

/* Sets o->size and the defaults (no flags, no extra fields). NULL is a
 * no-op. Any thread. (0.4) */
WEIR_API void weir_file_options_init(weir_file_options *o);

/*
 * Answers ex's request (GET or HEAD) with the regular file fd as nginx's
 * static files are answered (docs/api.md §5.7), through weir_respond_file's
 * zero-copy path for a body and weir_respond for the rest. From fstat(fd):
 * a strong ETag "<mtime s hex>.<mtime ns hex>-<size hex>" and Last-Modified
 * (the mtime, or now when the mtime is in the future). The request's
 * preconditions are evaluated in RFC 9110 13.2.2's order, then its Range:
 *   405  a method other than GET and HEAD (Allow: GET, HEAD);
 *   412  If-Match fails (strong comparison, "*"), or, without If-Match, the
 *        file changed after If-Unmodified-Since;
 *   304  If-None-Match matches (weak comparison, "*", lists), or, without
 *        If-None-Match, the file did not change after If-Modified-Since
 *        (ETag, Last-Modified and opts->headers; no body fields);
 *   206  GET with one satisfiable "bytes" range (first-last, first-,
 *        -suffix; If-Range, if sent, must match: a strong ETag or the exact
 *        Last-Modified date), with Content-Range;
 *   416  GET with a Range none of whose ranges overlaps the file (every
 *        range on an empty file), with Content-Range's unsatisfied form
 *        ("bytes *" "/" size, RFC 9110 14.4);
 *   200  the whole file otherwise: no or an invalid Range (ignored), an
 *        If-Range that does not match, several satisfiable ranges (no
 *        multipart/byteranges: the whole file), HEAD (Range is GET's).
 * HEAD gets the head GET would (its Content-Length) and no body. 200/206
 * carry ETag, Last-Modified, Content-Type, Accept-Ranges: bytes (not with
 * WEIR_FILE_NO_RANGES) and opts->headers; 405/412/416 a short text/plain
 * body. opts may be NULL (defaults); opts->headers must not name ETag,
 * Last-Modified, Content-Type, Content-Range or Accept-Ranges (weir's here)
 * nor the fields weir_respond refuses.
 * Returns the status answered (> 0; ex consumed, the answer under way),
 * or as weir_respond_file: WEIR_E_GONE and -ENOMEM (consumed), -EBADF (fd
 * not open), -EINVAL (NULL ex, a bad opts->size, flags or field, fd not a
 * regular file), -EMFILE and kin, WEIR_E_STATE (ex as it was), WEIR_E_STALE.
 * Same threads as weir_respond_file; fd stays the caller's (close it when
 * the call returns). (0.4)
 */
WEIR_API int weir_serve_file(weir_exchange *ex, int fd, const weir_file_options *opts);

/* A Content-Type for a file name (a path: its last segment's extension,
 * ASCII case-insensitive) from a small static table (html, css, js, json,
 * svg, png, jpeg, wasm, woff2, mp4, ...; docs/api.md §5.7); text types
 * carry "; charset=utf-8". "application/octet-stream" when the extension is
 * unknown or absent (NULL name with len 0 too). A static string; any
 * thread. (0.4) */
WEIR_API const char *weir_content_type(const char *name, size_t len);

/*
 * Hot upgrade (docs/upgrade.md): a running engine hands its listeners and
 * then each live connection, at its next request boundary and with the bytes
 * it already read, to a successor process over a Unix socket (SCM_RIGHTS).
 * No listener is closed and no connection is reset; in-flight exchanges end
 * in the old process first. A handover is either side's weir_handover.
 *
 * Offer (the running process): weir_handover_offer listens on `path` and
 * returns at once; a thread of the handle waits for one successor, checks
 * its version, hands the listeners over and then the connections. When the
 * engine holds nothing the successor starts accepting and the handover is
 * DONE: the host shuts its engine down and exits. Until then a failure of
 * the successor (it refused the version, crashed, hung up) leaves the engine
 * as it was: what was not acknowledged comes back and is served here, and
 * the listeners accept again (state FAILED, `error` says why).
 *
 * Take over (the successor): weir_handover_take_over connects to `path`
 * (retrying while nobody listens, up to opt->wait_ms), takes the listeners
 * (the engine is then listening, as after weir_engine_listen, but accepts
 * nothing yet) and returns; the host starts the engine as usual. The
 * handle's thread admits the connections as they come and, at DONE, lets
 * the engine accept. If the offering process vanishes before DONE, the
 * engine accepts at once and `lost` says how many connections the old
 * process still held at its last report.
 */
typedef struct weir_handover weir_handover;

#define WEIR_HANDOVER_PROTOCOL 1 /* the wire protocol and image format this library speaks */

#define WEIR_HANDOVER_LISTENERS_ONLY 0x1u /* offer: connections are not handed over but
                                             closed at their request boundary (counted as
                                             WEIR_CLOSE_HANDOVER): what nginx, HAProxy and
                                             Envoy do; for comparison */

typedef struct weir_handover_options {
    uint32_t size;        /* sizeof(weir_handover_options) */
    uint32_t flags;       /* WEIR_HANDOVER_* */
    uint32_t wait_ms;     /* offer: how long to wait for a successor; take over: how
                             long to retry the connect. 0: 10000 */
    uint32_t deadline_ms; /* offer: from the successor's READY, how long in-flight
                             exchanges may take to reach their boundary; what still
                             holds is closed (WEIR_CLOSE_HANDOVER). 0: 10000 */
} weir_handover_options;

enum {
    WEIR_HANDOVER_WAITING = 1, /* offer: no successor yet / take over: connecting      */
    WEIR_HANDOVER_MOVING = 2,  /* the listeners moved; connections are moving           */
    WEIR_HANDOVER_DONE = 3,    /* the successor serves everything                      */
    WEIR_HANDOVER_FAILED = 4,  /* ended before DONE: `error`; the offerer serves on     */
};

typedef struct weir_handover_stats {
    uint32_t size;       /* sizeof(weir_handover_stats), set by the caller */
    uint32_t state;      /* WEIR_HANDOVER_* */
    int32_t error;       /* what ended a FAILED handover (negative errno, WEIR_E_*) */
    uint32_t listeners;  /* listening sockets handed over / taken */
    uint64_t sent;       /* offer: connections the successor acknowledged            */
    uint64_t returned;   /* offer: taken back after a failure and served here        */
    uint64_t closed;     /* offer: closed by the deadline or a listeners-only offer  */
    uint64_t received;   /* take over: connections received                          */
    uint64_t refused;    /* take over: received and closed (no room, out of memory;
                            their reasons are in the engine's close counts)         */
    uint64_t lost;       /* take over: what the old process still held when it
                            vanished before DONE (its last report)                  */
    uint64_t moving_ns;  /* from the listeners' move to DONE                         */
} weir_handover_stats;

/* Returns 0 and *out, or -EINVAL (NULL, bad size, a path too long for a Unix
 * socket), WEIR_E_STATE (not listening, or a handover or transplant already
 * running), WEIR_E_SHUTDOWN, -EADDRINUSE (something listens on path), or the
 * errno of socket/bind/listen. A stale socket file at path is replaced.
 * Control thread. */
WEIR_API int weir_handover_offer(weir_engine *e, const char *path, const weir_handover_options *opt,
                                 weir_handover **out);
/* e: created, not listening. Blocks until the listeners are taken. Returns 0
 * and *out, or -EINVAL, WEIR_E_STATE, -ECONNREFUSED/-ENOENT (nobody offered
 * within wait_ms), WEIR_E_HANDOVER_VERSION (the offerer speaks another
 * protocol; both sides go on as they were), -EPROTO (a malformed message), or
 * an errno of the socket; on failure the engine is still created and unused. */
WEIR_API int weir_handover_take_over(weir_engine *e, const char *path, const weir_handover_options *opt,
                                     weir_handover **out);
/* Waits until the handover is DONE (0) or FAILED (its error), or timeout_ns
 * passes (-ETIMEDOUT; < 0 waits forever). A handover FAILED for a timeout
 * (no successor within wait_ms) returns -ETIMEDOUT too: when timeout_ns >= 0,
 * weir_handover_stats_get's state tells the two apart. Any thread. */
WEIR_API int weir_handover_wait(weir_handover *h, int64_t timeout_ns);
/* Fills *out (out->size set by the caller). Returns 0 or -EINVAL. Any thread. */
WEIR_API int weir_handover_stats_get(const weir_handover *h, weir_handover_stats *out);
/* Ends a handover not DONE (the offer is withdrawn, as a failure: everything
 * stays or comes back here), joins its thread, frees it. Before the engine is
 * destroyed. NULL is a no-op. Control thread. */
WEIR_API void weir_handover_free(weir_handover *h);

/*
 * systemd (docs/upgrade-systemd.md), without libsystemd: socket activation
 * and the file-descriptor store, so a service that systemd restarts keeps its
 * listeners and its idle keep-alive connections.
 *
 * weir_engine_store_systemd, in a service about to exit (SIGTERM): holds the
 * listeners (open, unheard: a client arriving meanwhile waits in the accept
 * queue), detaches every connection at its request boundary (in-flight
 * exchanges finish first, for up to timeout_ns; what still holds then is
 * closed, counted as WEIR_CLOSE_HANDOVER) and sends to $NOTIFY_SOCKET
 * "FDSTORE=1" messages: the listeners (FDNAME=weir-listen), the connections
 * (FDNAME=weir-conn-<seq>, up to 253 a message) and one sealed memfd
 * (FDNAME=weir-images) with their images (counters, peer, the bytes already
 * read), headed by WEIR_HANDOVER_PROTOCOL. The unit needs
 * FileDescriptorStoreMax= at least the listeners + connections + 1; systemd
 * keeps the store across a restart, not across a stop (docs). The host then
 * shuts the engine down and exits: the connections live on in the store.
 *
 * weir_engine_listen_systemd, at start: what sd_listen_fds(unset=1) reads
 * ($LISTEN_PID, which must be this process, $LISTEN_FDS, $LISTEN_FDNAMES;
 * once read, the three are unset whatever the outcome, so no child inherits
 * them: call it before other threads use the environment). The listening TCP sockets among fds 3.. (named
 * `name` or weir-listen when name is given; any name, else) are listened on
 * as by weir_engine_listen_fds (one socket passed twice, by a socket unit
 * and by the store, counts once); a store's connections are read back from
 * weir-images and posted to the workers, which serve them as their own. A
 * connection fd without its image, or an image without its fd, is closed
 * and counted (`closed`); images of another protocol are not read (their
 * connections close, counted; `image_error` says why) and the listeners are
 * served all the same. What was adopted is removed from the store
 * (FDSTOREREMOVE=1), or the store's copies would keep those sockets open
 * after this process closes them.
 */
typedef struct weir_systemd_stats {
    uint32_t size;        /* sizeof(weir_systemd_stats), set by the caller */
    uint32_t listeners;   /* listening sockets taken / stored */
    uint64_t connections; /* connections adopted / stored */
    uint64_t closed;      /* listen: connections closed (an fd without its image, an
                             image without its fd, images not read); store: in-flight
                             connections the timeout closed (WEIR_CLOSE_HANDOVER) */
    uint32_t fds;         /* listen: descriptors passed ($LISTEN_FDS); store: sent */
    int32_t image_error;  /* listen: why the images were not read: 0,
                             WEIR_E_HANDOVER_VERSION, -EPROTO, an errno */
} weir_systemd_stats;

/* e: created, not listening. out may be NULL (else out->size set). Returns
 * the number of listening sockets (> 0), or -ENOENT (nothing passed: no
 * $LISTEN_PID or $LISTEN_FDS, $LISTEN_PID not this process, no listening TCP
 * socket of that name among the fds: the host may weir_engine_listen; a
 * store's connections without a listener are closed, counted), -EINVAL (e
 * NULL, a bad out->size, $LISTEN_PID or $LISTEN_FDS malformed), WEIR_E_STATE
 * (e not in its created state: nothing is read), or what
 * weir_engine_listen_fds returns (-EINVAL for more listeners than workers);
 * on failure the engine is still created and unused. Control thread. (0.3) */
WEIR_API int weir_engine_listen_systemd(weir_engine *e, const char *name, weir_systemd_stats *out);
/* e: listening or started. timeout_ns <= 0: 10 s. Blocks until everything is
 * sent. Returns the number of connections stored (>= 0; *out says the rest),
 * or -ENOENT ($NOTIFY_SOCKET unset: nothing changes), -EINVAL (e NULL, a bad
 * out->size, a $NOTIFY_SOCKET that is neither a path nor an '@' name, or
 * too long), WEIR_E_STATE (not listening, paused or pausing, a handover
 * or transplant under way, or already stored), WEIR_E_SHUTDOWN,
 * -ETIMEDOUT (the workers did not give up their connections: they are
 * served here again), or the errno of socket/connect/memfd_create/sendmsg
 * (the connections are served here again and the listeners heard; any fds
 * already sent stay in the store, and the next process closes them as
 * fds without images). Control thread. (0.3) */
WEIR_API int weir_engine_store_systemd(weir_engine *e, int64_t timeout_ns, weir_systemd_stats *out);

/* ------------------------------------------------------------------------ */
/* The adaptive pair (0.4, docs/adaptive.md)                                  */
/* ------------------------------------------------------------------------ */

/*
 * A weir_adaptive watches an active engine and a paused standby that listen
 * on one port (create the standby with the active engine's port and the
 * other backend, listen, start, weir_engine_pause it) and switches them with
 * weir_engine_switch: when asked (weir_adaptive_switch) or, with a
 * controller, when the active engine's own metrics say so
 * (weir_adaptive_tick). It owns neither engine: destroy it before them.
 *
 * The controller thinks in roles, not backends: the active engine begins
 * in the role of its backend (weir_metrics.backend) and the standby holds the
 * other, even where it is a second epoll engine (io_uring refused); every
 * switch swaps them. One sample per interval_ms: connections per worker
 * (connections_open / workers, now), requests per second over the interval,
 * errors per 1000 (parse errors and IO_ERROR, RESOURCE, OUTPUT_LIMIT and
 * WRITE_TIMEOUT closes, over the requests plus the parse errors). On the
 * epoll role it switches up at up_conns or up_rps; on the io_uring role down
 * below down_conns and down_rps both; only after `hold` samples in a row,
 * not within cooldown_ms of any switch, not while errors are above
 * max_error_permille, not within lockout_ms of flap_count switches inside
 * flap_window_ms. docs/adaptive.md says why each default is what it is.
 */
typedef struct weir_adaptive weir_adaptive;

typedef struct weir_adaptive_config {
    uint32_t size;               /* sizeof(weir_adaptive_config)                          */
    uint32_t interval_ms;        /* one sample per interval, 10..60000 (1000)             */
    uint64_t up_conns;           /* to io_uring at >= this many connections per worker (64) */
    uint64_t up_rps;             /* ... or at >= this many requests per second (20000)    */
    uint64_t down_conns;         /* to epoll below this per worker (16) ...               */
    uint64_t down_rps;           /* ... and below this rate, both (5000)                  */
    uint64_t max_error_permille; /* no switch while errors per 1000 are above (50), <= 1000 */
    uint64_t hold;               /* samples in a row the load must ask (3), >= 1          */
    uint64_t cooldown_ms;        /* no switch this long after any switch (10000)          */
    uint64_t flap_count;         /* this many switches (3; 0: no lock-out), <= 16 ...     */
    uint64_t flap_window_ms;     /* ... within this window (60000) ...                    */
    uint64_t lockout_ms;         /* ... lock switching out this long (300000)             */
} weir_adaptive_config;

/* Why the last sample decided what it did (weir_adaptive_state.last_reason). */
#define WEIR_ADAPTIVE_NONE 0     /* no sample yet                                     */
#define WEIR_ADAPTIVE_STEADY 1   /* the load fits the active engine's role            */
#define WEIR_ADAPTIVE_HOLD 2     /* the load asks for a switch, fewer than hold times */
#define WEIR_ADAPTIVE_LOCKOUT 3  /* it would switch, but flapping locked it out       */
#define WEIR_ADAPTIVE_COOLDOWN 4 /* it would switch, but a switch was too recent      */
#define WEIR_ADAPTIVE_ERRORS 5   /* it would switch, but the error rate is too high   */
#define WEIR_ADAPTIVE_UP 6       /* it switched (or tried to) to the io_uring role     */
#define WEIR_ADAPTIVE_DOWN 7     /* it switched (or tried to) to the epoll role        */
#define WEIR_ADAPTIVE_REASON_COUNT 8

typedef struct weir_adaptive_state {
    uint32_t size;                /* set by the caller                                     */
    uint32_t controller;          /* 1: created with a config, the load switches it        */
    uint32_t active_backend;      /* WEIR_BACKEND_* of the engine serving now              */
    uint32_t standby_backend;     /* WEIR_BACKEND_* of the paused one                      */
    uint32_t role;                /* WEIR_BACKEND_* role the active engine holds           */
    uint32_t last_reason;         /* WEIR_ADAPTIVE_*                                       */
    uint64_t switches;            /* switches made, forced or the controller's             */
    uint64_t switch_failures;     /* weir_engine_switch errors (nothing swapped)           */
    uint64_t controller_switches; /* of the switches, the controller's                     */
    uint64_t forced_switches;     /* of the switches, weir_adaptive_switch's               */
    uint64_t decisions;           /* samples taken                                         */
    uint64_t streak;              /* samples in a row the load has asked for a switch      */
    uint64_t held_by_cooldown;    /* samples where a due switch was held by the cooldown   */
    uint64_t held_by_errors;      /* ... by the error rate                                 */
    uint64_t held_by_lockout;     /* ... by a flap lock-out                                */
    uint64_t lockouts;            /* flap lock-outs begun                                  */
    uint64_t last_conns_per_worker; /* the last sample                                    */
    uint64_t last_rps;
    uint64_t last_error_permille;
} weir_adaptive_state;

/* The defaults above, size set. NULL: nothing. Any thread. (0.4) */
WEIR_API void weir_adaptive_config_init(weir_adaptive_config *cfg);
/* NULL when cfg is usable, else a static sentence saying what is wrong
 * (a size outside the struct rule, interval_ms outside 10..60000, down
 * thresholds not below the up ones, hold 0, flap_count over 16,
 * max_error_permille over 1000). Any thread. (0.4) */
WEIR_API const char *weir_adaptive_config_error(const weir_adaptive_config *cfg);
/* active: listening and started, serving; standby: listening on the same
 * address, started and paused (weir_engine_pause). cfg NULL: no controller,
 * only weir_adaptive_switch switches. Returns 0, -EINVAL (NULL handles, the
 * same engine twice, a cfg weir_adaptive_config_error refuses), -ENOMEM, or
 * weir_engine_metrics' error. Control thread. (0.4) */
WEIR_API int weir_adaptive_create(weir_engine *active, weir_engine *standby, const weir_adaptive_config *cfg,
                                  weir_adaptive **out);
/* Frees it; the engines are the caller's and left as they are. Not
 * concurrently with any other call on it. NULL: nothing. (0.4) */
WEIR_API void weir_adaptive_destroy(weir_adaptive *a);
/* Takes a sample when one is due (none without a controller) and makes
 * the switch it asks for. Call it at least every weir_adaptive_timeout_ms.
 * Returns 1 (switched), 0 (no switch due, or not yet a sample), -EINVAL, or
 * the switch's error (counted in switch_failures; asked again at the next
 * sample). Any thread (calls on one weir_adaptive are serialised). (0.4) */
WEIR_API int weir_adaptive_tick(weir_adaptive *a);
/* Milliseconds until the next sample is due (0: now), -1 without a
 * controller, -EINVAL for NULL. Any thread. (0.4) */
WEIR_API int weir_adaptive_timeout_ms(weir_adaptive *a);
/* Switches now (an operator's SIGWINCH), whatever the controller says:
 * never held back; the controller counts it toward cooldown and flapping.
 * Returns 0, -EINVAL, or weir_engine_switch's error (nothing swapped). Any
 * thread. (0.4) */
WEIR_API int weir_adaptive_switch(weir_adaptive *a);
/* The engine serving now and the standby (either pointer may be NULL);
 * they change at every switch. Returns 0 or -EINVAL. Any thread. (0.4) */
WEIR_API int weir_adaptive_engines(weir_adaptive *a, weir_engine **active, weir_engine **standby);
/* The state and counters above. out->size must be set. Returns 0 or
 * -EINVAL. Any thread. (0.4) */
WEIR_API int weir_adaptive_state_get(weir_adaptive *a, weir_adaptive_state *out);
/* A static name for a WEIR_ADAPTIVE_* reason ("none", "steady", "hold",
 * "lockout", "cooldown", "errors", "up", "down"), "unknown" otherwise. (0.4) */
WEIR_API const char *weir_adaptive_reason_name(uint32_t reason);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_H */
