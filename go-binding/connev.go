package weir

/*
#include <stdlib.h>
#include <string.h>
#include <weir.h>

// One connection event, as weir's on_conn told it.
typedef struct weirgo_connev {
    uint64_t id;
    uint32_t event;
    uint32_t reason;
    struct sockaddr_storage peer; // ss_family 0: none
} weirgo_connev;

// A worker's events since its driver last drained them. Only the thread
// inside that worker's poll appends (on_conn runs there), and only its
// driver, after the poll returned, drains: never at the same time.
typedef struct weirgo_connbuf {
    weirgo_connev *ev;
    uint32_t n, cap;
    uint64_t lost; // no memory to record them
} weirgo_connbuf;

typedef struct weirgo_conns {
    uint32_t n;
    weirgo_connbuf *bufs; // by worker index
} weirgo_conns;

static void weirgo_on_conn(void *user, weir_worker *w, uint32_t worker, uint64_t id, uint32_t event,
                           uint32_t reason, const struct sockaddr *peer, socklen_t len) {
    (void)w;
    weirgo_conns *h = (weirgo_conns *)user;
    if (worker >= h->n)
        return;
    weirgo_connbuf *b = &h->bufs[worker];
    if (b->n == b->cap) {
        uint32_t cap = b->cap ? b->cap * 2 : 64;
        weirgo_connev *ev = (weirgo_connev *)realloc(b->ev, sizeof *ev * cap);
        if (!ev) {
            b->lost++;
            return;
        }
        b->ev = ev;
        b->cap = cap;
    }
    weirgo_connev *e = &b->ev[b->n++];
    e->id = id;
    e->event = event;
    e->reason = reason;
    memset(&e->peer, 0, sizeof e->peer);
    if (peer && len > 0)
        memcpy(&e->peer, peer, len < sizeof e->peer ? len : sizeof e->peer);
}

static weir_conn_fn weirgo_conn_hook(void) { return weirgo_on_conn; }

// The buffers, one per worker of e: 0, or -ENOMEM.
static int weirgo_conns_size(weirgo_conns *h, uint32_t n) {
    h->bufs = (weirgo_connbuf *)calloc(n ? n : 1, sizeof *h->bufs);
    if (!h->bufs)
        return -12;
    h->n = n;
    return 0;
}

static void weirgo_conns_free(weirgo_conns *h) {
    if (!h)
        return;
    for (uint32_t i = 0; i < h->n; i++)
        free(h->bufs[i].ev);
    free(h->bufs);
    free(h);
}
*/
import "C"

import (
	"errors"
	"unsafe"
)

// connEvents carries weir's on_conn (docs/api.md §5.11) to Config.OnConnect
// and OnDisconnect: the C hook appends each event to its worker's buffer
// during the poll, and the worker's driver drains the buffer right after
// the poll, before it dispatches the batch, so the callbacks run on the
// worker's goroutine with no call from C into Go. Unset (both nil): no hook
// is given to weir, and the drain is one nil check per cycle.
type connEvents struct {
	h    *C.weirgo_conns // C memory: weir keeps it as conn_user
	bufs map[*C.weir_worker]*C.weirgo_connbuf
	open func(addr string)
	shut func(addr string)
	lost uint64
}

// fill gives weir the hook when the config asks for either callback.
func (cv *connEvents) fill(cc *C.weir_config, cfg *Config) {
	if cfg.OnConnect == nil && cfg.OnDisconnect == nil {
		return
	}
	cv.open, cv.shut = cfg.OnConnect, cfg.OnDisconnect
	cv.h = (*C.weirgo_conns)(C.calloc(1, C.size_t(unsafe.Sizeof(C.weirgo_conns{}))))
	cc.on_conn = C.weirgo_conn_hook()
	cc.conn_user = unsafe.Pointer(cv.h)
}

// size makes the workers' buffers once the engine knows how many it has
// (before any listens, so before any event).
func (cv *connEvents) size(ce *C.weir_engine) error {
	if cv.h == nil {
		return nil
	}
	n := C.weir_engine_workers(ce)
	if C.weirgo_conns_size(cv.h, C.uint32_t(n)) != 0 {
		return errors.New("weir: no memory for connection events")
	}
	bufs := unsafe.Slice(cv.h.bufs, int(n))
	cv.bufs = make(map[*C.weir_worker]*C.weirgo_connbuf, int(n))
	for i := range bufs {
		var w *C.weir_worker
		if C.weir_engine_worker(ce, C.uint32_t(i), &w) == 0 {
			cv.bufs[w] = &bufs[i]
		}
	}
	return nil
}

// drain calls the callbacks for what w's last poll told, in order.
func (cv *connEvents) drain(w *C.weir_worker) {
	if cv.h == nil {
		return
	}
	b := cv.bufs[w]
	if b == nil || b.n == 0 {
		return
	}
	evs := unsafe.Slice(b.ev, int(b.n))
	for i := range evs {
		ev := &evs[i]
		addr := ""
		if ap, ok := sockaddrToAddrPort(&ev.peer); ok {
			addr = ap.String()
		}
		if ev.event == C.WEIR_CONN_OPEN && cv.open != nil {
			cv.open(addr)
		} else if ev.event == C.WEIR_CONN_CLOSE && cv.shut != nil {
			cv.shut(addr)
		}
	}
	b.n = 0
}

// free gives back the C memory once the engine is destroyed.
func (cv *connEvents) free() {
	C.weirgo_conns_free(cv.h)
	cv.h = nil
}
