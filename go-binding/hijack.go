package weir

/*
#include <errno.h>
#include <stdlib.h>
#include "weirgo.h"
*/
import "C"

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Hijack: the handler takes the connection of a request that asked to
// upgrade (Connection: upgrade, Upgrade: ...) and writes its own answer, a
// 101 for one, on it: net/http's Hijacker, celeris's Context.Hijack. weir
// answers the exchange with weir_upgrade_raw (no bytes of its own), sends
// every answer before it, lifts the connection out and hands it back in a
// poll batch, where the worker's cycle takes the socket and the bytes that
// came past the request (weirgo_cycle). Hijack waits for that hand-back.
//
// Waiting is what an inline handler must not do on its worker's goroutine:
// that goroutine's next poll is what brings the connection back. So an inline
// Hijack hands the worker on (handOff): another goroutine drives it from the
// batch's next exchange, and the hijacking one, unlocked from the worker's
// thread, is the handler's alone. A hijacked handler is counted out of the
// engine at once (async: inflight; inline: the worker group), so Shutdown
// waits for neither, as net/http's does not.

// ErrNotUpgrade: Hijack on a request that did not ask to upgrade. weir stops
// parsing a connection only after such a request, so only then is what
// follows the handler's; the exchange is still to be answered.
var ErrNotUpgrade = errors.New("weir: Hijack needs a request that asks to upgrade (Connection: upgrade and an Upgrade field)")

// ErrHijacked: the connection was hijacked; the writer answers nothing more.
var ErrHijacked = errors.New("weir: the connection was hijacked")

type hijackTable struct {
	waiting *int32   // C memory (weirgo_cycle's watch[1]): Hijacks not yet handed back
	waits   sync.Map // *C.weir_exchange -> chan hijackResult
	lost    atomic.Uint64
}

type hijackResult struct {
	conn net.Conn
	err  error
}

// deliver is the worker's: ex came back taken (t). A hand-back nobody waits
// for (cannot happen: the wait is registered before weir_upgrade_raw) closes.
func (t *hijackTable) deliver(ex *C.weir_exchange, tk *C.weirgo_taken) {
	var res hijackResult
	var early []byte
	if tk.len > 0 {
		early = C.GoBytes(unsafe.Pointer(tk.buf), C.int(tk.len))
	}
	C.free(unsafe.Pointer(tk.buf))
	tk.buf, tk.len = nil, 0
	switch {
	case tk.rc == 0:
		res.conn, res.err = fdConn(int(tk.fd), early)
	default:
		res.err = codeErr("weir_upgrade_take", C.int(tk.rc)) // WEIR_E_GONE: it died before it could leave
	}
	c, ok := t.waits.LoadAndDelete(ex)
	atomic.AddInt32(t.waiting, -1)
	if !ok {
		t.lost.Add(1)
		if res.conn != nil {
			res.conn.Close()
		}
		return
	}
	c.(chan hijackResult) <- res // buffered: never blocks the worker
}

// fdConn makes a net.Conn of a socket taken from weir (Go's netpoller owns
// the duplicate; weir's fd is closed here).
func fdConn(fd int, early []byte) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "weir-hijacked")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	if len(early) == 0 {
		return c, nil
	}
	return &earlyConn{Conn: c, early: early}, nil
}

// earlyConn reads the bytes that arrived past the request before the socket.
type earlyConn struct {
	net.Conn
	early []byte
}

func (c *earlyConn) Read(p []byte) (int, error) {
	if len(c.early) > 0 {
		n := copy(p, c.early)
		c.early = c.early[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// Hijack takes the connection of a request that asked to upgrade: weir
// writes nothing for this exchange, and the handler writes its own answer
// (its 101) and then speaks the new protocol on the returned conn, which it
// must close. Bytes the client sent past the request are the conn's first.
// Errors: ErrNotUpgrade (the request did not ask: answer it as usual),
// ErrAnswered, ErrGone (the client left first), ErrShutdown (the engine
// stopped before the connection came back). An inline handler must call it
// from its own goroutine; the worker goes on without it (see above).
func (w *ResponseWriter) Hijack() (net.Conn, error) {
	if w.answered || w.hijacked {
		return nil, ErrAnswered
	}
	e := w.e
	inline := w.wk != nil
	if inline && C.weirgo_on_worker() == 0 {
		return nil, errHandOffThread
	}
	ch := make(chan hijackResult, 1)
	e.hj.waits.Store(w.ex, ch)
	atomic.AddInt32(e.hj.waiting, 1) // before the call: its hand-back is always seen (weirgo_cycle)
	if rc := C.weirgo_upgrade_raw(w.ex); rc != 0 {
		e.hj.waits.Delete(w.ex)
		atomic.AddInt32(e.hj.waiting, -1)
		if rc == -C.EINVAL {
			return nil, ErrNotUpgrade
		}
		w.answered = true // any other refusal consumed the exchange
		return nil, codeErr("weir_upgrade_raw", rc)
	}
	w.answered, w.hijacked = true, true
	if inline {
		w.wk.handOff(false)
	} else {
		e.asyncDone(w.home) // counted out now: Shutdown does not wait for it
	}
	select {
	case res := <-ch:
		return res.conn, res.err
	case <-e.done: // every worker has stopped: nothing more is delivered
		select {
		case res := <-ch:
			return res.conn, res.err
		default:
			return nil, ErrShutdown
		}
	}
}

// closeUpgraded indexes Metrics.Closes: connections that left by an upgrade
// or a Hijack.
const closeUpgraded = int(C.WEIR_CLOSE_UPGRADED)
