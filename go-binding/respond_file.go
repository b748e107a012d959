package weir

/*
#include <errno.h>
#include "weirgo.h"
*/
import "C"

import (
	"errors"
	"os"
)

// ErrNotRegular: RespondFile of something that is not a regular file, or a
// range past its end. The exchange is still to be answered.
var ErrNotRegular = errors.New("weir: RespondFile needs a regular file and a range within it")

// RespondFile answers with length bytes of f from offset (Content-Length:
// length) and the added headers: weir_respond_file, which sends from the
// file without copying it through Go or weir (sendfile on epoll, splice on
// io_uring) as the client drains, whatever the size. weir keeps its own
// duplicate of the descriptor, so f may be closed as soon as RespondFile
// returns. For HEAD weir sends the head only. ErrNotRegular (and a failure
// to reach f's descriptor) leave the exchange unanswered, for the caller to
// answer otherwise; any other error consumed it (ErrGone: the client left).
func (w *ResponseWriter) RespondFile(status int, f *os.File, offset, length int64) error {
	if w.answered {
		return ErrAnswered
	}
	if status < 200 || status > 999 {
		return ErrBadStatus
	}
	if f == nil || offset < 0 || length < 0 {
		return ErrNotRegular
	}
	sc, err := f.SyscallConn() // not f.Fd(), which would put f in blocking mode
	if err != nil {
		return err
	}
	hp, flags := w.encoded()
	// Counted before the call: an async answer may reach the client (and a
	// test read the count) before the call returns. Taken back on failure.
	w.e.stats.files.Add(1)
	var rc C.int
	if cerr := sc.Control(func(fd uintptr) {
		rc = C.weirgo_respond_file(w.ex, C.int(status), hp, C.uint32_t(w.nhdr), C.int(fd), C.uint64_t(offset),
			C.uint64_t(length), C.uint32_t(flags))
	}); cerr != nil {
		w.e.stats.files.Add(^uint64(0))
		return cerr
	}
	if rc != 0 {
		w.e.stats.files.Add(^uint64(0))
	}
	switch rc {
	case 0:
		w.answered = true
		return nil
	case -C.EINVAL, -C.EBADF:
		return ErrNotRegular
	case -C.ENOMEM, -C.EMFILE, -C.ENFILE:
		return codeErr("weir_respond_file", rc) // not consumed either: answer otherwise
	}
	w.answered = true
	w.e.countRespond(rc)
	return codeErr("weir_respond_file", rc)
}
