package weir

/*
#include "weirgo.h"
*/
import "C"

import (
	"fmt"
	"net"
	"strings"
	"syscall"
)

// listenOn serves l's socket (Config.Listener): weir gets a duplicate of its
// descriptor through weir_engine_listen_fds (every worker then serves that
// one accept queue), and l is closed once weir holds the socket, as
// net/http's Serve and celeris's engines take a listener over.
//
// Refused, before weir sees anything, with an error that says why:
//   - a Unix socket (*net.UnixListener, or any listener whose address is not
//     TCP): weir serves TCP only; its listeners, pause (TCP_DEFER_ACCEPT),
//     hot upgrade and peer addresses are TCP's;
//   - a wrapped listener (a type that is not a socket, such as
//     netutil.LimitListener or a TLS listener): weir accepts on the socket
//     itself, so the wrapper's Accept (its limit, its handshake) would be
//     bypassed silently. Give weir the listener underneath, or use weir's
//     own knobs (MaxConnections).
//
// weir itself refuses a socket that is not a listening TCP one (-EINVAL).
func (e *Engine) listenOn(l net.Listener) error {
	if a := l.Addr(); a != nil && !strings.HasPrefix(a.Network(), "tcp") {
		return fmt.Errorf("weir: Config.Listener is a %s socket (%T): weir serves TCP sockets only", a.Network(), l)
	}
	sc, ok := l.(syscall.Conn)
	if !ok {
		return fmt.Errorf("weir: Config.Listener is a %T, which wraps a listener: weir accepts on the socket "+
			"itself and would bypass its Accept; give weir the *net.TCPListener underneath", l)
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
