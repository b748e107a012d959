//! Answers and bodies that go on after the handler returned: a streamed
//! answer paused on -EAGAIN (weir's stream window) and a request body read as
//! it arrives. Both park under the exchange's handle and go on when weir hands
//! the handle back (on_request again, on the same loop thread).
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::{answer, respond_500, sys, BodyPiece, BodyReader, Error, Pieces, Response};

const EAGAIN: c_int = -11;
const PIECE_MAX: usize = 64 * 1024; // within weir's default stream window

// A stream refused for room: its iterator and the piece it was writing, kept
// until weir hands the stream back (on_request again, same handle).
struct Paused {
    pieces: Pieces,
    piece: Vec<u8>,
    off: usize,
}

// Bodies waiting for more bytes in `reading`: while 0, no handle can be a
// body handed back.
static READING: AtomicUsize = AtomicUsize::new(0);

fn reading() -> &'static Mutex<HashMap<usize, BodyReader>> {
    static R: OnceLock<Mutex<HashMap<usize, BodyReader>>> = OnceLock::new();
    R.get_or_init(|| Mutex::new(HashMap::new()))
}

// Gives the reader the body's pieces until it answers; a read that finds
// nothing parks it in `reading` until weir hands the exchange back.
pub(crate) unsafe fn pump_body(
    ex: *mut sys::weir_exchange,
    owner: usize,
    reader: BodyReader,
    streamed: bool,
    whole: &[u8],
) {
    thread_local!(static BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0u8; 64 * 1024]));
    let mut fed_whole = false;
    loop {
        let mut data = Vec::new();
        let n: i64 = if streamed {
            BUF.with(|b| {
                let mut b = b.borrow_mut();
                let n = sys::weir_body_read(ex, b.as_mut_ptr() as *mut c_void, b.len());
                if n > 0 {
                    data.extend_from_slice(&b[..n as usize]);
                }
                n
            })
        } else if !fed_whole && !whole.is_empty() {
            fed_whole = true;
            data.extend_from_slice(whole);
            whole.len() as i64
        } else {
            0
        };
        if n == EAGAIN as i64 {
            if let Ok(mut m) = reading().lock() {
                m.insert(ex as usize, reader);
                READING.fetch_add(1, Ordering::SeqCst);
            }
            return; // handed back (on_request again) when there is more
        }
        if n == sys::WEIR_E_GONE as i64 {
            return; // consumed: the connection is gone
        }
        let over = n <= 0;
        let out = catch_unwind(AssertUnwindSafe(|| {
            let mut f = reader.0.lock().ok()?;
            match n {
                n if n > 0 => f(BodyPiece::Data(&data)),
                0 => f(BodyPiece::End),
                e => f(BodyPiece::Failed(Error(e as i32))),
            }
        }));
        match out {
            Ok(Some(resp)) => {
                if !answer(ex, owner, &resp) {
                    respond_500(ex);
                }
                return;
            }
            Ok(None) if !over => continue,
            _ => {
                respond_500(ex);
                return;
            }
        }
    }
}

// How many streams wait in `paused`: while 0, no handle can be a stream
// handed back, and the request path asks weir nothing more.
static PAUSED: AtomicUsize = AtomicUsize::new(0);

fn paused() -> &'static Mutex<HashMap<usize, Paused>> {
    static P: OnceLock<Mutex<HashMap<usize, Paused>>> = OnceLock::new();
    P.get_or_init(|| Mutex::new(HashMap::new()))
}

pub(crate) unsafe fn start_stream(ex: *mut sys::weir_exchange, r: &Response, pieces: Pieces) -> c_int {
    let hs = r.fields();
    let rc = sys::weir_stream_start(
        ex,
        r.status as c_int,
        hs.as_ptr(),
        hs.len(),
        sys::WEIR_LENGTH_UNKNOWN,
        r.respond_flags(),
    );
    if rc == 0 {
        pump(ex, Paused { pieces, piece: Vec::new(), off: 0 });
    }
    rc
}

// Writes pieces until the iterator ends (then ends the stream) or weir
// refuses one for room (then waits in `paused` for the hand-back).
unsafe fn pump(ex: *mut sys::weir_exchange, mut p: Paused) {
    loop {
        while p.off < p.piece.len() {
            let n = (p.piece.len() - p.off).min(PIECE_MAX);
            let rc = sys::weir_stream_write(ex, p.piece[p.off..].as_ptr() as *const c_void, n);
            if rc == EAGAIN {
                if let Ok(mut m) = paused().lock() {
                    m.insert(ex as usize, p);
                    PAUSED.fetch_add(1, Ordering::SeqCst);
                }
                return;
            }
            if rc < 0 {
                return; // the connection is gone (consumed), or the handle is stale
            }
            p.off += n;
        }
        let next = catch_unwind(AssertUnwindSafe(|| p.pieces.0.lock().ok().and_then(|mut it| it.next())));
        match next {
            Ok(Some(piece)) => {
                p.piece = piece;
                p.off = 0;
            }
            Ok(None) => {
                sys::weir_stream_end(ex, std::ptr::null(), 0);
                return;
            }
            Err(_) => {
                // A panic mid-body: cut it short, so the client cannot take
                // what it got for the whole answer.
                sys::weir_stream_abort(ex);
                return;
            }
        }
    }
}

/// on_request: true when ex is a paused stream or a parked body that weir
/// handed back (then it has gone on here), false for a new request.
pub(crate) unsafe fn handed_back(ex: *mut sys::weir_exchange, owner: usize) -> bool {
    if PAUSED.load(Ordering::SeqCst) > 0 && sys::weir_stream_room(ex) >= 0 {
        // A stream weir hands back: room again.
        let p = paused().lock().ok().and_then(|mut m| m.remove(&(ex as usize)));
        if let Some(p) = p {
            PAUSED.fetch_sub(1, Ordering::SeqCst);
            let _ = catch_unwind(AssertUnwindSafe(|| pump(ex, p)));
        }
        return true;
    }
    if READING.load(Ordering::SeqCst) > 0 {
        let r = reading().lock().ok().and_then(|mut m| m.remove(&(ex as usize)));
        if let Some(r) = r {
            // A body weir hands back: more of it, its end, or its failure.
            READING.fetch_sub(1, Ordering::SeqCst);
            let _ = catch_unwind(AssertUnwindSafe(|| pump_body(ex, owner, r, true, &[])));
            return true;
        }
    }
    false
}
