package weir

/*
#include <weir.h>
*/
import "C"

import (
	"errors"
	"syscall"
)

// Error is a weir return code: a negative errno or one of weir's own codes.
// errors.Is matches it against the Err* values below and, for errno codes,
// against syscall.Errno (errors.Is(err, syscall.EADDRINUSE)).
type Error struct {
	Op   string // the call that failed, e.g. "weir_engine_listen"
	Code int    // the negative code weir returned
}

// weir's own codes, as Errors to compare with errors.Is.
var (
	ErrState       = &Error{Code: int(C.WEIR_E_STATE)}       // the call does not fit the engine's state
	ErrGone        = &Error{Code: int(C.WEIR_E_GONE)}        // the exchange's connection died; the answer was dropped
	ErrShutdown    = &Error{Code: int(C.WEIR_E_SHUTDOWN)}    // the engine is shutting down or shut down
	ErrStale       = &Error{Code: int(C.WEIR_E_STALE)}       // the exchange's handle is no longer valid (a stream its connection's death ended)
	ErrUnavailable = &Error{Code: int(C.WEIR_E_UNAVAILABLE)} // the backend is not available on this kernel
	// ErrBodyTooLarge: a streamed body's chunks took it past MaxBody; weir
	// answered 413 itself and closes the connection, so the exchange is
	// consumed (a later answer returns it again). A declared length past
	// MaxBody never reaches a handler: weir answers 413 at the head.
	ErrBodyTooLarge = &Error{Code: int(C.WEIR_E_BODY_TOO_LARGE)}
)

// Errors of the binding itself.
var (
	// ErrAnswered: the exchange was already answered.
	ErrAnswered = errors.New("weir: exchange already answered")
	// ErrPauseUnsupported: kept for callers that compare with it; libweir
	// 0.1 with weir_engine_pause never returns it (see pause.go).
	ErrPauseUnsupported = errors.New("weir: accept pause is not supported by this libweir yet")
	// ErrReservedHeader: Content-Length, Transfer-Encoding, Connection and Date are weir's to write.
	ErrReservedHeader = errors.New("weir: Content-Length, Transfer-Encoding, Connection and Date are set by weir")
	// ErrBadHeader: a header name that is not a token, or a value with CR, LF or NUL.
	ErrBadHeader = errors.New("weir: invalid header name or value")
	// ErrBadStatus: the status is not in 200..999 (1xx answers are weir's own).
	ErrBadStatus = errors.New("weir: status must be in 200..999")
)

func (e *Error) Error() string {
	msg := "weir: " + C.GoString(C.weir_strerror(C.int(e.Code))) + " (" + C.GoString(C.weir_err_name(C.int(e.Code))) + ")"
	if e.Op != "" {
		return e.Op + ": " + msg
	}
	return msg
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Unwrap gives the syscall.Errno of an errno code, nil for weir's own codes.
func (e *Error) Unwrap() error {
	if e.Code < 0 && e.Code > -4096 {
		return syscall.Errno(-e.Code)
	}
	return nil
}

func codeErr(op string, rc C.int) error {
	if rc >= 0 {
		return nil
	}
	return &Error{Op: op, Code: int(rc)}
}
