package weir

/*
#include <stdlib.h>
#include <weir.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"
	"unsafe"
)

// Backend selects the native I/O backend.
type Backend int

const (
	BackendEpoll Backend = iota // epoll (the default)
	BackendURing                // io_uring
)

func (b Backend) String() string {
	switch b {
	case BackendEpoll:
		return "epoll"
	case BackendURing:
		return "io_uring"
	}
	return "unknown"
}

// Config holds every native knob, Go-typed, and the binding's own. The zero
// value of each field means weir's default, so Config{Addr: ..., Handler: ...}
// is a complete configuration; where the native knob gives 0 a meaning of its
// own (drain, off, close at once), the Go field says how to ask for it.
type Config struct {
	// Addr is "host:port" with a numeric host; "" is 127.0.0.1 on a port the
	// kernel picks, ":8080" is every IPv4 address. Port 0 picks a port.
	Addr string
	// Listener, when set, is served instead of binding Addr: weir takes its
	// socket over (a duplicate through weir_engine_listen_fds; every worker
	// serves its one accept queue) and closes the listener itself once weir
	// holds it, as net/http's Serve does. It must be a listening TCP socket
	// (*net.TCPListener).
	Listener net.Listener
	Backend  Backend
	// Workers is the number of native event loops, each driven by one
	// goroutine (locked to its OS thread in inline mode); 0 = the number of
	// online CPUs. A worker waiting in its poll is a cgo call, and with no
	// spare P the runtime hands that P to a new thread and back on many
	// waits, so Listen raises GOMAXPROCS to Workers+1 when it is not above
	// Workers already (gomaxprocs.go; KeepGOMAXPROCS to leave it).
	Workers int
	// KeepGOMAXPROCS leaves GOMAXPROCS as it is even when it is not above
	// Workers (docs/go.md, "Where a Go request's time goes": what that costs).
	KeepGOMAXPROCS bool
	// SchedPass makes a busy inline worker pass through the Go scheduler
	// every 8 ms between its cycles (sched_yield.go): sysmon then stops
	// retaking its P every 10 ms and keeps its 10 ms sleep, 12-15 % less
	// CPU a request on io_uring, but each pass waits for two thread wakes,
	// which on a loaded machine doubled the p90/p99 latency (docs/go.md,
	// 2026-12-06). Off by default until a quiet machine measures both.
	SchedPass bool

	// AcceptBatch: accepts per door per loop pass (default 16); < 0 drains the
	// whole backlog (the old behaviour, native 0).
	AcceptBatch int
	// Backlog of each listener (default 1024).
	Backlog int
	// DisableDeferAccept turns TCP_DEFER_ACCEPT off on the listeners.
	DisableDeferAccept bool
	// Linger is how long a paused listener keeps accepting (default 1.5s);
	// < 0 closes at once (native 0).
	Linger time.Duration
	// DisableNoDelay leaves Nagle on for accepted connections.
	DisableNoDelay bool
	// ReadBufferSize is the pooled per-connection read buffer (default 16 KiB).
	ReadBufferSize int
	// MaxOutputBytes of unsent output before a connection is closed (default 4 MiB).
	MaxOutputBytes int
	// MaxConnections per worker (default 10000). A client accepted over it is
	// answered 503 with Retry-After: 1 and Connection: close, then closed.
	MaxConnections int
	// MaxPipeline: requests parsed ahead of their answers per connection (default 64).
	MaxPipeline int
	// HeaderTimeout: first byte to complete head, one deadline (default 10s).
	HeaderTimeout time.Duration
	// BodyTimeout: the longest wait between two reads of a request body
	// (default 10s); a slow upload that keeps coming is never cut.
	BodyTimeout time.Duration
	// IdleTimeout: keep-alive wait for the next request (default 60s).
	IdleTimeout time.Duration
	// WriteTimeout: output pending without progress (default 30s).
	WriteTimeout time.Duration
	// Deadlines that bind (docs/reliability.md, Timers): unlike the idle
	// timers above, more bytes do not extend them. 0 is weir's default,
	// negative turns one off (weir's WEIR_DEADLINE_OFF). Time the host holds
	// a streamed body or has not produced an answer is never charged.
	// RequestTimeout: one request's head and body must arrive within it, or
	// 408 (default 5m).
	RequestTimeout time.Duration
	// MinBodyRate: bytes/s a request body must keep up over each RateWindow
	// the client owes body bytes, or 408 (default 500).
	MinBodyRate int
	// MinSendRate: bytes/s a client must read its answers at over each
	// RateWindow output waits unsent, or it is closed (default 500).
	MinSendRate int
	// RateWindow: the window both rates are judged over, and their grace
	// (default 10s; at least 10ms).
	RateWindow time.Duration

	// StreamWindowBytes: a streamed answer's unsent bytes at most (default
	// 256 KiB, at most MaxOutputBytes); a writer past it waits for the client.
	StreamWindowBytes int
	// Parser limits (0 = default): request line 8192, header section 16384,
	// 100 fields, chunk extensions 256, trailer section 4096, 32 trailers,
	// body 1 MiB. MaxBody bounds every body, buffered or streamed (weir's
	// max_body, 0.4): a declared length past it is answered 413 before the
	// handler runs (and before any 100 Continue), a chunked one at the chunk
	// that crosses it (ReadBody then says ErrBodyTooLarge, the exchange
	// consumed). Negative: no limit (WEIR_BODY_UNLIMITED). For HTTP handlers
	// 0 means no limit, as net/http has none (http.MaxBytesReader is the
	// handler's).
	MaxRequestLine  int
	MaxHeaderBytes  int
	MaxHeaders      int
	MaxChunkExt     int
	MaxTrailerBytes int
	MaxTrailers     int
	MaxBody         int64

	// Handler answers requests through the zero-copy API. Exactly one of
	// Handler and HTTP must be set.
	Handler Handler
	// HTTP serves a standard net/http handler on the native engine.
	HTTP http.Handler
	// Server, when set, is the *http.Server whose fields weir honours
	// (nethttp_server.go): its Handler (http.DefaultServeMux when nil) serves
	// unless HTTP is set; Addr when Addr and Listener are empty;
	// ErrorLog (panics); MaxHeaderBytes; ReadHeaderTimeout (else
	// ReadTimeout) as HeaderTimeout and IdleTimeout as IdleTimeout where
	// those are unset; RegisterOnShutdown's functions run when the engine's
	// shutdown begins; request contexts carry it as http.ServerContextKey.
	// Fields weir cannot honour are refused by New with an error that wraps
	// http.ErrNotSupported: ConnState and ConnContext (weir reports no
	// connection events to Go), TLSConfig (weir speaks no TLS), BaseContext
	// (pass the context to Listen instead).
	Server *http.Server
	// Async runs each handler on a goroutine of its own, answering through
	// weir's cross-thread path, instead of inline on the worker goroutine.
	// HTTP handlers run so by default: a net/http handler may block (a
	// database, a lock, a slow client's body), and inline it would stall
	// every connection of its worker.
	Async bool
	// Inline runs HTTP handlers on the worker goroutine, for handlers that
	// never block: it saves a goroutine and a cross-thread answer per
	// request (docs/go.md, "Execution"). Native handlers are inline unless Async.
	Inline bool
	// PeerAddrs makes Request.RemoteAddr available to native handlers (the
	// peer address is fetched with each batch; always on for HTTP).
	PeerAddrs bool
	// ReportGone tells handlers when their client goes (its FIN, a reset,
	// a forced shutdown) while they work: ResponseWriter.NotifyGone's
	// callbacks run then (weir's report_gone; gone.go). Always on for HTTP,
	// whose request contexts are cancelled so, as net/http's are; the celeris
	// engine sets it too.
	ReportGone bool
	// OnConnect and OnDisconnect are called once for each connection weir
	// accepts and once when it closes (for whatever reason: the client, a
	// timeout, a bad request, max connections, shutdown), with the client's
	// address as "127.0.0.1:5555" or "[::1]:5555" ("" when the kernel gave
	// none; under the PROXY protocol OnConnect gets the balancer's and
	// OnDisconnect the header's source). Both run on the worker's goroutine
	// right after the poll that saw them, before that poll's requests are
	// dispatched: they must not block. A connection moved to another engine
	// (a switch) is not disconnected. nil: not asked (nothing is done).
	OnConnect    func(addr string)
	OnDisconnect func(addr string)
	// StreamBodyBytes streams request bodies instead of buffering them
	// whole: a body with a Content-Length of at least this, every chunked
	// body and every request that expects 100-continue reach the handler at
	// their head (Request.BodyStreamed), and ResponseWriter.ReadBody reads
	// them as they arrive; the 100 Continue then goes with the first read
	// (weir's stream_body_bytes); MaxBody bounds them too. 0: off for
	// native handlers, 256 KiB for HTTP (whose
	// r.Body streams so, net/http's way); negative: off.
	StreamBodyBytes int64
	// ProxyProtocol makes every accepted connection begin with a PROXY
	// protocol header, v1 or v2 (HAProxy's send-proxy / send-proxy-v2,
	// nginx stream, AWS NLB), read before its first request: its source
	// address becomes the connection's peer (Request.RemoteAddr, net/http's
	// r.RemoteAddr). A connection without a valid one is answered 400 and
	// closed (Metrics.Closes[WEIR_CLOSE_PROXY], counted by cause in
	// Metrics.Proxy*). v2's LOCAL command and v1's UNKNOWN keep the socket's
	// peer. weir's proxy_protocol (docs/api.md §5.8).
	ProxyProtocol bool
	// ProxyTrusted: the sources allowed to send the header, comma-separated
	// IPv4/IPv6 addresses with an optional /prefix ("10.0.0.0/8, ::1"); a
	// connection from elsewhere is refused. "" = any source. A list weir
	// cannot parse fails New (weir_engine_create's -EINVAL).
	ProxyTrusted string
	// ProxyTimeout: the header's own deadline from the accept (default 5s).
	ProxyTimeout time.Duration
	// ProxyMaxBytes: the longest v2 header accepted, TLVs included
	// (232..65551, default 4096; v1 is 107 bytes by its spec).
	ProxyMaxBytes int
	// The overload manager (weir's overload_*, docs/api.md §5.10): each
	// watermark is where its resource counts as full; past 80 % of the
	// fullest keep-alive turns off, past 90 % accepting slows, past 95 % it
	// pauses, at 100 % new requests are answered 503 with Retry-After
	// without reaching a handler. 0 = off (the default).
	OverloadInflight int // per worker: requests handed to handlers and not yet answered
	OverloadConns    int // per worker: open connections (at most MaxConnections)
	OverloadFDs      int // per process: open descriptors
	OverloadMemMB    int // per engine: MiB of weir's connection buffers
	// TrimInterval: the memory trim's window (default 1s): a burst's
	// connection buffers go back to the kernel 3 windows after it passed.
	// Negative: no trim (WEIR_TRIM_OFF).
	TrimInterval time.Duration
	// PollTimeout bounds each native poll (default 100ms).
	PollTimeout time.Duration
	// BatchSize is the most exchanges one poll returns (default 64).
	BatchSize int
	// Protocols: HTTP/1.1, h2c (HTTP/2 in cleartext by prior knowledge) or
	// both (the zero value, ProtocolsAuto; protocols.go, docs/http2.md).
	// An HTTP/2 stream is one request to the same handlers
	// (Request.ProtoMajor 2; r.Proto "HTTP/2.0" for net/http).
	Protocols Protocols
	// HTTP/2 knobs, 0 = weir's default: the streams a connection may have
	// open (100, at most 10000), the HPACK dynamic table (4096, at most
	// 65536) and a stream's receive window for request bodies (65535, at
	// most 2^31-1).
	H2MaxStreams   int
	H2HeaderTable  int
	H2StreamWindow int
	// OnListen, if set, is called once by Listen when the listeners are
	// bound, before it blocks.
	OnListen func(addr net.Addr)
}

func (c *Config) validate() error {
	if c.Server != nil && c.Handler != nil {
		return errors.New("weir: Config.Server serves net/http handlers; it excludes Config.Handler")
	}
	if (c.Handler == nil) == (c.HTTP == nil) {
		return errors.New("weir: exactly one of Config.Handler and Config.HTTP must be set")
	}
	if c.Inline && (c.Async || c.HTTP == nil) {
		return errors.New("weir: Config.Inline is for HTTP handlers, and excludes Async")
	}
	if c.Backend.Name() == "" {
		return fmt.Errorf("weir: unknown backend %d", c.Backend)
	}
	if !c.ProxyProtocol && (c.ProxyTrusted != "" || c.ProxyTimeout != 0 || c.ProxyMaxBytes != 0) {
		return errors.New("weir: Config.ProxyTrusted, ProxyTimeout and ProxyMaxBytes need ProxyProtocol")
	}
	if c.ProxyTimeout < 0 || c.ProxyMaxBytes < 0 {
		return errors.New("weir: Config.ProxyTimeout and ProxyMaxBytes must not be negative")
	}
	if c.RateWindow < 0 || (c.RateWindow > 0 && c.RateWindow < 10*time.Millisecond) {
		return errors.New("weir: Config.RateWindow must be 0 (the default) or at least 10ms")
	}
	if c.BatchSize < 0 || c.BatchSize > 4096 {
		return errors.New("weir: BatchSize must be in 0..4096")
	}
	return c.validateH2()
}

// splitAddr turns Addr into weir's numeric host and port.
func splitAddr(addr string) (host string, port uint32, err error) {
	if addr == "" {
		return "127.0.0.1", 0, nil
	}
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("weir: bad Addr %q: %w", addr, err)
	}
	if h == "" {
		h = "0.0.0.0"
	}
	if net.ParseIP(h) == nil {
		return "", 0, fmt.Errorf("weir: Addr host %q must be a numeric IP address", h)
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("weir: bad Addr port %q", p)
	}
	return h, uint32(n), nil
}

func u32(v int) C.uint32_t {
	if v > math.MaxUint32 {
		return C.uint32_t(math.MaxUint32)
	}
	return C.uint32_t(v)
}

// ms rounds a duration up to whole milliseconds.
func ms(d time.Duration) C.uint32_t {
	m := (d + time.Millisecond - 1) / time.Millisecond
	if m > math.MaxUint32 {
		m = math.MaxUint32
	}
	return C.uint32_t(m)
}

// fill writes c over weir's defaults. host is C memory the caller frees after
// the engine is destroyed; limits and trusted (NULL unless ProxyTrusted) are
// C memory (out.limits and out.proxy_trusted point at them, and a C struct
// may not point into Go memory) that weir_engine_create copies, so the
// caller frees them once create has returned.
func (c *Config) fill(out *C.weir_config) (host *C.char, limits *C.weir_http1_limits, trusted *C.char, err error) {
	h, port, err := splitAddr(c.Addr)
	if err != nil {
		return nil, nil, nil, err
	}
	C.weir_config_init(out)
	host = C.CString(h)
	out.host = host
	out.port = C.uint32_t(port)
	out.mode = C.WEIR_MODE_DRIVEN
	if c.Backend == BackendURing {
		out.backend = C.WEIR_BACKEND_URING
	} else {
		out.backend = C.WEIR_BACKEND_EPOLL
	}
	if c.Workers > 0 {
		out.workers = u32(c.Workers)
	}
	switch {
	case c.AcceptBatch > 0:
		out.accept_batch = u32(c.AcceptBatch)
	case c.AcceptBatch < 0:
		out.accept_batch = 0
	}
	if c.Backlog > 0 {
		out.backlog = u32(c.Backlog)
	}
	if c.DisableDeferAccept {
		out.defer_accept = 0
	}
	switch {
	case c.Linger > 0:
		out.linger_ms = ms(c.Linger)
	case c.Linger < 0:
		out.linger_ms = 0
	}
	if c.DisableNoDelay {
		out.tcp_nodelay = 0
	}
	set := func(dst *C.uint32_t, v int) {
		if v > 0 {
			*dst = u32(v)
		}
	}
	if c.ReportGone { // New sets it for HTTP
		out.report_gone = 1
	}
	if c.StreamBodyBytes > 0 { // New sets it for HTTP
		out.stream_body_bytes = C.uint32_t(min(c.StreamBodyBytes, 1<<32-1))
	}
	set(&out.read_buffer_size, c.ReadBufferSize)
	set(&out.max_output_bytes, c.MaxOutputBytes)
	set(&out.stream_window_bytes, c.StreamWindowBytes)
	set(&out.max_connections, c.MaxConnections)
	set(&out.max_pipeline, c.MaxPipeline)
	setD := func(dst *C.uint32_t, d time.Duration) {
		if d > 0 {
			*dst = ms(d)
		}
	}
	setD(&out.header_timeout_ms, c.HeaderTimeout)
	setD(&out.idle_timeout_ms, c.IdleTimeout)
	setD(&out.write_timeout_ms, c.WriteTimeout)
	setD(&out.body_timeout_ms, c.BodyTimeout)
	// The binding deadlines: negative is off, 0 weir's default.
	bind := func(dst *C.uint32_t, v int64) {
		switch {
		case v < 0:
			*dst = C.WEIR_DEADLINE_OFF
		case v > 0:
			*dst = C.uint32_t(min(v, 1<<32-2))
		}
	}
	bind(&out.request_timeout_ms, int64(c.RequestTimeout/time.Millisecond))
	if c.RequestTimeout > 0 && c.RequestTimeout < time.Millisecond {
		out.request_timeout_ms = 1
	}
	bind(&out.min_body_rate, int64(c.MinBodyRate))
	bind(&out.min_send_rate, int64(c.MinSendRate))
	setD(&out.rate_window_ms, c.RateWindow)
	set(&out.overload_inflight, c.OverloadInflight)
	set(&out.overload_conns, c.OverloadConns)
	set(&out.overload_fds, c.OverloadFDs)
	set(&out.overload_mem_mb, c.OverloadMemMB)
	if c.TrimInterval < 0 {
		out.trim_interval_ms = C.WEIR_TRIM_OFF
	} else {
		setD(&out.trim_interval_ms, c.TrimInterval)
	}
	if c.ProxyProtocol {
		out.proxy_protocol = C.WEIR_PROXY_ON
		setD(&out.proxy_timeout_ms, c.ProxyTimeout)
		set(&out.proxy_max_bytes, c.ProxyMaxBytes)
	}
	c.fillH2(out)
	limits = (*C.weir_http1_limits)(C.malloc(C.size_t(C.sizeof_weir_http1_limits)))
	if limits == nil {
		freeC(host)
		return nil, nil, nil, errors.New("weir: out of memory")
	}
	C.weir_http1_limits_init(limits)
	set(&limits.max_request_line, c.MaxRequestLine)
	set(&limits.max_header_bytes, c.MaxHeaderBytes)
	set(&limits.max_headers, c.MaxHeaders)
	set(&limits.max_chunk_ext, c.MaxChunkExt)
	set(&limits.max_trailer_bytes, c.MaxTrailerBytes)
	set(&limits.max_trailers, c.MaxTrailers)
	if c.MaxBody > 0 {
		limits.max_body = C.uint64_t(c.MaxBody)
	} else if c.MaxBody < 0 {
		limits.max_body = C.WEIR_BODY_UNLIMITED
	}
	out.limits = limits
	if c.ProxyProtocol && c.ProxyTrusted != "" {
		trusted = C.CString(c.ProxyTrusted)
		out.proxy_trusted = trusted
	}
	return host, limits, trusted, nil
}

func freeC(p *C.char) {
	if p != nil {
		C.free(unsafe.Pointer(p))
	}
}
