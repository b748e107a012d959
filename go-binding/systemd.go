package weir

/*
#include <errno.h>
#include <stdlib.h>
#include <weir.h>
*/
import "C"

import (
	"context"
	"errors"
	"sync"
	"time"
	"unsafe"
)

// SystemdOptions configure a Systemd (docs/upgrade.md "Hot upgrade under
// systemd"; weir speaks sd_listen_fds and sd_notify's fd store without
// libsystemd).
type SystemdOptions struct {
	// Activation: Listen takes what systemd passed ($LISTEN_FDS: a socket
	// unit's sockets, and the listeners and connections a previous process
	// left in the fd store) and binds Config.Addr only when nothing was
	// passed for this process. $LISTEN_PID, $LISTEN_FDS and $LISTEN_FDNAMES
	// are unset once read, as sd_listen_fds(unset=1) does.
	Activation bool
	// Name, if set, takes only the sockets so named (FileDescriptorName=)
	// and the store's weir-listen; empty: any listening TCP socket.
	Name string
}

// SystemdStats is weir_systemd_stats: what Listen took, or what Store sent.
type SystemdStats struct {
	Listeners   uint32 // listening sockets taken / stored
	Connections uint64 // connections adopted / stored
	Closed      uint64 // listen: fds without images and images without fds, closed; store: in-flight connections the timeout closed
	FDs         uint32 // listen: descriptors passed ($LISTEN_FDS); store: sent
	ImageErr    error  // listen: why the store's images were not read (another protocol: WEIR_E_HANDOVER_VERSION)
	Err         error  // listen: why nothing was taken (ENOENT: not under systemd; Config.Addr was bound)
}

// Systemd attaches socket activation and the fd store to an Engine. Its
// methods are safe for concurrent use.
type Systemd struct {
	e        *Engine
	opt      SystemdOptions
	mu       sync.Mutex
	listened *SystemdStats
	stored   *SystemdStats
}

// NewSystemd attaches s to e, before e.Listen.
func NewSystemd(e *Engine, opt SystemdOptions) (*Systemd, error) {
	s := &Systemd{e: e, opt: opt}
	if err := e.attach(s); err != nil {
		return nil, err
	}
	return s, nil
}

func systemdStats(c *C.weir_systemd_stats) SystemdStats {
	st := SystemdStats{Listeners: uint32(c.listeners), Connections: uint64(c.connections), Closed: uint64(c.closed),
		FDs: uint32(c.fds)}
	if c.image_error != 0 {
		st.ImageErr = &Error{Op: "systemd images", Code: int(c.image_error)}
	}
	return st
}

func (s *Systemd) gate(context.Context) error { return nil }

// listen: with the engine's control lock held.
func (s *Systemd) listen() (bool, error) {
	if !s.opt.Activation {
		return false, nil
	}
	var name *C.char
	if s.opt.Name != "" {
		name = C.CString(s.opt.Name)
		defer C.free(unsafe.Pointer(name))
	}
	var c C.weir_systemd_stats
	c.size = C.uint32_t(unsafe.Sizeof(c))
	rc := C.weir_engine_listen_systemd(s.e.ce, name, &c)
	st := systemdStats(&c)
	if rc <= 0 {
		st.Err = codeErr("weir_engine_listen_systemd", rc)
	}
	s.mu.Lock()
	s.listened = &st
	s.mu.Unlock()
	if rc == -C.ENOENT {
		return false, nil // not under systemd: the engine binds Addr
	}
	if rc < 0 {
		return false, st.Err
	}
	return true, nil
}

func (s *Systemd) release() {}

// Listened is what Listen took from systemd (Err set when nothing was
// passed), and false before Listen has asked (or without Activation).
func (s *Systemd) Listened() (SystemdStats, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listened == nil {
		return SystemdStats{}, false
	}
	return *s.listened, true
}

// ErrNoNotifySocket: Store outside systemd ($NOTIFY_SOCKET unset); nothing changed.
var ErrNoNotifySocket = errors.New("weir: $NOTIFY_SOCKET is not set: no fd store")

// Store puts the listeners and every connection, at its request boundary,
// in systemd's fd store (in-flight exchanges finish first, for up to
// timeout, 0: 10 s; what still holds is closed and counted), so the next
// process of the unit takes them up through Activation. Call it on SIGTERM,
// before Shutdown; the engine then holds nothing. The unit needs
// FileDescriptorStoreMax= of at least listeners + connections + 1. Returns
// ErrNoNotifySocket outside systemd (nothing changes).
func (s *Systemd) Store(timeout time.Duration) (SystemdStats, error) {
	e := s.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopping {
		return SystemdStats{}, ErrShutdown
	}
	if !e.listening {
		return SystemdStats{}, &Error{Op: "weir_engine_store_systemd", Code: int(C.WEIR_E_STATE)}
	}
	var c C.weir_systemd_stats
	c.size = C.uint32_t(unsafe.Sizeof(c))
	rc := C.weir_engine_store_systemd(e.ce, C.int64_t(timeout), &c)
	st := systemdStats(&c)
	var err error
	if rc == -C.ENOENT {
		err = ErrNoNotifySocket
	} else if rc < 0 {
		err = codeErr("weir_engine_store_systemd", rc)
	}
	st.Err = err
	s.mu.Lock()
	s.stored = &st
	s.mu.Unlock()
	return st, err
}

// Stored is what Store sent, and false before it ran.
func (s *Systemd) Stored() (SystemdStats, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stored == nil {
		return SystemdStats{}, false
	}
	return *s.stored, true
}
