//go:build weir_escape

package weir

// The hot crossings without #cgo noescape/nocallback (-tags weir_escape), for
// measuring what the directives save; see calls.go.

/*
#include "weirgo.h"
*/
import "C"

import "unsafe"

const crossingDirectives = false

func cCycle(w *C.weir_worker, ans *C.weirgo_answer, nans C.uint32_t, arena *C.char, rcs *C.int32_t,
	reads *C.weirgo_read, nreads C.uint32_t, rarena *C.char,
	out **C.weir_exchange, reqs **C.weir_request, peers *C.struct_sockaddr_storage, max C.uint32_t,
	timeout C.int, watch *C.int32_t, taken *C.weirgo_taken, mark C.int) C.int {
	return C.weirgo_cycle(w, ans, nans, arena, rcs, reads, nreads, rarena, out, reqs, peers, max, timeout, watch,
		taken, mark)
}

func cRespond(ex *C.weir_exchange, status C.int, hdrs *C.char, nhdr C.uint32_t, body unsafe.Pointer,
	bodyLen C.size_t, flags C.uint32_t) C.int {
	return C.weirgo_respond(ex, status, hdrs, nhdr, body, bodyLen, flags)
}

func cServeFile(ex *C.weir_exchange, fd C.int, hdrs *C.char, nhdr C.uint32_t, ctype *C.char, name *C.char,
	nameLen C.size_t, fileFlags, respondFlags C.uint32_t) C.int {
	return C.weirgo_serve_file(ex, fd, hdrs, nhdr, ctype, name, nameLen, fileFlags, respondFlags)
}
