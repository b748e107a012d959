package weir

/*
#include "weirgo.h"
*/
import "C"

import (
	"fmt"
	"net"
	"syscall"
)

// listenOn serves l's socket (Config.Listener): weir gets a duplicate of its
// descriptor through weir_engine_listen_fds (every worker then serves that
// one accept queue), and l is closed once weir holds the socket, as
// net/http's Serve and celeris's engines take a listener over. A listener
// without a socket (not a *net.TCPListener or alike) is refused before
// weir sees anything; weir refuses a socket that is not a listening TCP one
// (-EINVAL).
func (e *Engine) listenOn(l net.Listener) error {
	sc, ok := l.(syscall.Conn)
	if !ok {
		return fmt.Errorf("weir: Config.Listener is a %T, which has no socket (want a *net.TCPListener)", l)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return fmt.Errorf("weir: Config.Listener: %w", err)
	}
	fd, derr := -1, error(nil)
	if cerr := raw.Control(func(s uintptr) {
		r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, s, syscall.F_DUPFD_CLOEXEC, 0)
		if errno != 0 {
			derr = errno
			return
		}
		fd = int(r)
	}); cerr != nil {
		return fmt.Errorf("weir: Config.Listener: %w", cerr)
	}
	if derr != nil {
		return fmt.Errorf("weir: Config.Listener: dup: %w", derr)
	}
	cfd := C.int(fd)
	if rc := C.weir_engine_listen_fds(e.ce, &cfd, 1); rc != 0 {
		return codeErr("weir_engine_listen_fds", rc) // weir owns (and closed) the duplicate even then
	}
	_ = l.Close() // the socket lives on in weir's duplicate
	return nil
}
