package weir

/*
#include <stdlib.h>
#include <weir.h>
*/
import "C"

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Engine is one native weir engine in driven mode: N native workers, each
// run by a goroutine locked to its OS thread. Its methods are safe for
// concurrent use. The shape follows the Go engine abstractions (celeris's
// engine.Engine: Listen, Shutdown, Metrics, Type, Addr; Pause/ResumeAccept),
// so a framework adopts it with a thin adapter.
type Engine struct {
	cfg     Config
	handler Handler
	ce      *C.weir_engine
	host    *C.char
	watch   *C.int32_t // weirgo_cycle's three counters (New)

	life      sync.RWMutex // guards ce against destroy for the any-thread calls
	mu        sync.Mutex   // control: listen and shutdown
	listening bool
	stopping  bool
	workers   []*worker
	addr      atomic.Pointer[net.TCPAddr]

	wg        sync.WaitGroup  // worker goroutines
	inflight  sync.WaitGroup  // async handlers
	idle      chan *asyncPair // async.go: idle handler goroutines wait here
	idleCount atomic.Int32
	fatal     chan error
	done      chan struct{} // closed once the engine is destroyed
	stopped   chan struct{} // closed once every worker has stopped (Listen returns)
	stopErr   error

	stats goStats
	st    streamTable                     // open streamed answers (stream.go)
	hj    hijackTable                     // Hijacks waiting for their connection (hijack.go)
	gn    goneTable                       // NotifyGone callbacks (gone.go)
	cv    connEvents                      // OnConnect, OnDisconnect (connev.go)
	ctx   atomic.Pointer[context.Context] // Listen's context without its cancellation: the base of net/http request contexts
	hctx  atomic.Pointer[httpValues]     // that base with net/http's values (nethttp.go httpContext)

	// Attached before Listen (an Upgrader, systemd activation): they may
	// hold Listen at a gate, bind the listeners instead of
	// weir_engine_listen, and free their native handles before the engine
	// (attach.go).
	attached []attachment
}

type goStats struct {
	responds   atomic.Uint64 // direct weir_respond crossings
	panics     atomic.Uint64
	goexits    atomic.Uint64
	handOffs   atomic.Uint64
	unanswered atomic.Uint64
	gone       atomic.Uint64
	refused    atomic.Uint64
	files      atomic.Uint64 // answers sent from a file (RespondFile)
	serves     atomic.Uint64 // ServeFile answers, whatever their status
	interims   atomic.Uint64 // 1xx answers sent (Interim, net/http WriteHeader(1xx))
	copied     atomic.Uint64 // net/http ReadFrom calls that copied (not a file, or not whole)
}

// New validates cfg and creates the native engine (no socket yet).
func New(cfg Config) (*Engine, error) {
	if err := cfg.fromServer(); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = 100 * time.Millisecond
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = 64
	}
	if cfg.HTTP != nil && !cfg.Inline {
		cfg.Async = true // a net/http handler may block: never on the worker's goroutine
	}
	if cfg.HTTP != nil {
		if cfg.MaxHeaderBytes == 0 {
			cfg.MaxHeaderBytes = http.DefaultMaxHeaderBytes // net/http's 1 MiB, request line included
		}
		if cfg.MaxRequestLine == 0 {
			cfg.MaxRequestLine = cfg.MaxHeaderBytes // net/http bounds the line only by MaxHeaderBytes
		}
		cfg.ReportGone = true // its request contexts are cancelled when the client goes
		if cfg.StreamBodyBytes == 0 {
			cfg.StreamBodyBytes = httpStreamBodyBytes // r.Body streams, and 100 Continue waits for its first Read
		}
		if cfg.MaxBody == 0 {
			cfg.MaxBody = -1 // net/http bounds no body (http.MaxBytesReader is the handler's); weir's max_body holds for streamed ones too
		}
	}
	e := &Engine{cfg: cfg, handler: cfg.Handler, done: make(chan struct{}), stopped: make(chan struct{}), idle: make(chan *asyncPair)}
	if cfg.HTTP != nil {
		e.handler = httpHandler(cfg.HTTP, cfg.Server)
	}
	var cc C.weir_config
	host, limits, trusted, err := cfg.fill(&cc)
	if err != nil {
		return nil, err
	}
	e.host = host
	e.cv.fill(&cc, &cfg)
	rc := C.weir_engine_create(&cc, &e.ce)
	C.free(unsafe.Pointer(limits)) // copied by weir_engine_create
	freeC(trusted)                 // so is the trusted list
	if rc != 0 {
		freeC(host)
		e.cv.free()
		return nil, codeErr("weir_engine_create", rc)
	}
	if err := e.cv.size(e.ce); err != nil {
		C.weir_engine_destroy(e.ce)
		freeC(host)
		e.cv.free()
		return nil, err
	}
	e.fatal = make(chan error, int(C.weir_engine_workers(e.ce))+1)
	// weirgo_cycle's watch, in C memory it reads after each poll: [0] open
	// streams (stream.go), [1] Hijacks waiting (hijack.go), [2] 1 when gone
	// clients are reported (gone.go)
	e.watch = (*C.int32_t)(C.calloc(3, C.size_t(unsafe.Sizeof(C.int32_t(0)))))
	watch := unsafe.Slice(e.watch, 3)
	e.st.init(&e.cfg, &watch[0])
	e.hj.waiting = (*int32)(unsafe.Pointer(&watch[1]))
	if cfg.ReportGone {
		watch[2] = 1 // weirgo_cycle asks weir_exchange_gone of each exchange
	}
	e.gn.m = make(map[*C.weir_exchange]*ResponseWriter)
	e.gn.on = cfg.ReportGone
	return e, nil
}

// Listen binds the listeners, starts the workers and blocks until ctx ends
// (then it shuts down gracefully, as Shutdown(context.Background()) would),
// a shutdown has stopped the workers (nil: no connection is served any
// more; a handler that has not returned may still run, and the engine is
// freed once it has, as net/http's Serve returns without waiting for its
// handlers), or a worker fails (its error). Addr is nil until the listeners
// are bound.
func (e *Engine) Listen(ctx context.Context) error {
	base := context.WithoutCancel(ctx) // the requests' (nethttp.go httpContext)
	e.ctx.Store(&base)
	if err := e.gate(ctx); err != nil {
		return err
	}
	if err := e.start(); err != nil {
		return err
	}
	if f := e.cfg.OnListen; f != nil {
		f(e.Addr())
	}
	select {
	case <-ctx.Done():
		e.begin(-1)
		<-e.stopped
		return e.stopErr
	case err := <-e.fatal:
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = e.Shutdown(sctx)
		return err
	case <-e.stopped:
		return nil
	}
}

func (e *Engine) start() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopping {
		return ErrShutdown
	}
	if e.listening {
		return &Error{Op: "Listen", Code: int(C.WEIR_E_STATE)}
	}
	if bound, err := e.bindAttached(); err != nil {
		return err
	} else if bound {
		// an attachment's listeners (a take-over, systemd's sockets)
	} else if l := e.cfg.Listener; l != nil {
		if err := e.listenOn(l); err != nil {
			return err
		}
	} else if rc := C.weir_engine_listen(e.ce); rc != 0 {
		return codeErr("weir_engine_listen", rc)
	}
	e.listening = true
	n := int(C.weir_engine_workers(e.ce))
	peers := e.cfg.PeerAddrs || e.cfg.HTTP != nil
	timeout := int(e.cfg.PollTimeout / time.Millisecond)
	if timeout < 1 {
		timeout = 1
	}
	for i := 0; i < n; i++ {
		var w *C.weir_worker
		if rc := C.weir_engine_worker(e.ce, C.uint32_t(i), &w); rc != 0 {
			e.fatal <- codeErr("weir_engine_worker", rc)
			break
		}
		e.workers = append(e.workers, newWorker(e, w, e.cfg.BatchSize, peers, timeout))
	}
	if !e.cfg.KeepGOMAXPROCS {
		raiseProcs(len(e.workers))
	}
	for _, wk := range e.workers {
		e.runWorker(wk)
	}
	if a, err := e.nativeAddr(); err == nil {
		e.addr.Store(a)
	}
	return nil
}

func (e *Engine) nativeAddr() (*net.TCPAddr, error) {
	var ss C.struct_sockaddr_storage
	l := C.socklen_t(C.sizeof_struct_sockaddr_storage)
	if rc := C.weir_engine_addr(e.ce, &ss, &l); rc != 0 {
		return nil, codeErr("weir_engine_addr", rc)
	}
	ap, ok := sockaddrToAddrPort(&ss)
	if !ok {
		return nil, errors.New("weir: unknown address family")
	}
	return net.TCPAddrFromAddrPort(ap), nil
}

// Shutdown stops accepting and lets in-flight exchanges finish until ctx's
// deadline, or until ctx is cancelled (without either: without bound), then
// closes what is left (idle keep-alive connections close at once). The native
// engine is destroyed once every worker has stopped and every async handler
// has returned, even if that is after ctx ends. It returns ctx.Err() when ctx
// ends first, weir's -ETIMEDOUT when the grace ran out, else nil. Repeated
// calls wait for the same shutdown.
func (e *Engine) Shutdown(ctx context.Context) error {
	grace := int64(-1)
	if d, ok := ctx.Deadline(); ok {
		grace = max(int64(time.Until(d)), 0)
	}
	e.begin(grace)
	select {
	case <-e.done:
		return e.stopErr
	case <-ctx.Done():
		// Out of patience: what is left closes now. The native shutdown under
		// way (e.stop) takes a shorter grace from any thread.
		e.life.RLock()
		if e.ce != nil {
			C.weir_engine_shutdown(e.ce, 0)
		}
		e.life.RUnlock()
		return ctx.Err()
	}
}

// begin starts the shutdown once (grace in ns, -1: none).
func (e *Engine) begin(grace int64) {
	e.mu.Lock()
	if !e.stopping {
		e.stopping = true
		go e.stop(grace, e.listening)
		e.runOnShutdown()
	}
	e.mu.Unlock()
}

func (e *Engine) stop(grace int64, listening bool) {
	if listening {
		if rc := C.weir_engine_shutdown(e.ce, C.int64_t(grace)); rc != 0 {
			e.stopErr = codeErr("weir_engine_shutdown", rc)
		}
	}
	e.wg.Wait()
	close(e.stopped)
	e.inflight.Wait()
	e.releaseAttached() // a handover handle is freed before its engine
	e.life.Lock()
	C.weir_engine_destroy(e.ce)
	e.ce = nil
	freeC(e.host)
	e.host = nil
	C.free(unsafe.Pointer(e.watch))
	e.watch, e.st.open = nil, nil
	e.cv.free() // after destroy: weir no longer tells

	e.life.Unlock()
	close(e.done)
}

// Done is closed once the engine has shut down and freed its native memory.
func (e *Engine) Done() <-chan struct{} { return e.done }

// Addr is the bound address, nil before Listen has bound it.
func (e *Engine) Addr() net.Addr {
	if a := e.addr.Load(); a != nil {
		return a
	}
	return nil
}

// Type is the native backend.
func (e *Engine) Type() Backend { return e.cfg.Backend }

// Workers is the number of native workers.
func (e *Engine) Workers() int {
	e.life.RLock()
	defer e.life.RUnlock()
	if e.ce == nil {
		return 0
	}
	return int(C.weir_engine_workers(e.ce))
}
