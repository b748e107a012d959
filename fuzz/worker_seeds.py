#!/usr/bin/env python3
"""Writes the worker fuzz target's seed corpus (fuzz/corpus/worker/): one
schedule per host action and transport event, in the input format of
fuzz/oracle/worker.h. Run it after changing that format; the seeds are
committed (tests/unit/loop/test_worker_corpus.cc replays them)."""
import os

OPS = dict(connect=0, send=1, fin=2, reset=3, grant=4, fail_write=5, poll=6, tick=7,
           respond=8, stream_start=9, stream_write=10, stream_end=11, stream_abort=12,
           body_read=13, upgrade=14, take=15, file=16, interim=17, abort=18, room=19)

# config byte bits (fuzz/oracle/worker.h)
STREAM_BODY, STALLED, SMALL_BUF, REPORT_GONE, HANDLER_TO, RANGES, SMALL_OUT, PIPE4 = (1 << i for i in range(8))


def op(name, *args):
    return bytes([OPS[name], *args])


def send(client, data):
    data = data.encode() if isinstance(data, str) else data
    out = b""
    for i in range(0, len(data), 200):
        piece = data[i:i + 200]
        out += bytes([OPS["send"], client, len(piece)]) + piece
    return out


GET = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
HEAD = "HEAD /h HTTP/1.1\r\nHost: x\r\n\r\n"
POST = "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + "b" * 100
CHUNKED = "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
EXPECT = "POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n"
UPGRADE = "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: fuzz\r\n\r\nRAW-BYTES"
HTTP10 = "GET /old HTTP/1.0\r\n\r\n"

SEEDS = {
    "respond_pipelined": (0, 0, op("connect", 0) + send(0, GET + HEAD + GET) + op("poll", 0)
                          + op("respond", 1, 0) + op("respond", 0, 4) + op("respond", 2, 1) + op("poll", 0)),
    "respond_close": (0, 0, op("connect", 0) + send(0, GET + GET) + op("poll", 0) + op("respond", 0, 8)
                      + op("respond", 1, 0) + op("poll", 0)),
    "respond_twice_stale": (0, 0, op("connect", 0) + send(0, GET) + op("poll", 0) + op("respond", 0, 0)
                            + op("respond", 0, 0) + op("stream_start", 0, 0, 0) + op("poll", 0)),
    "stream_unknown": (0, 0, op("connect", 0) + send(0, GET) + op("poll", 0) + op("stream_start", 0, 0, 0)
                       + op("stream_write", 0, 50) + op("room", 0) + op("stream_write", 0, 200)
                       + op("poll", 0) + op("stream_end", 0) + op("poll", 0)),
    "stream_length": (0, 0, op("connect", 0) + send(0, GET) + op("poll", 0) + op("stream_start", 0, 4, 120)
                      + op("stream_write", 0, 100) + op("stream_end", 0) + op("stream_write", 0, 20)
                      + op("stream_end", 0) + op("poll", 0)),
    "stream_window_stalled": (SMALL_OUT | STALLED, 0, op("connect", 0) + send(0, GET) + op("poll", 0)
                              + op("stream_start", 0, 0, 0) + b"".join(op("stream_write", 0, 250) for _ in range(6))
                              + op("grant", 0, 100) + op("poll", 0) + op("stream_write", 0, 250)
                              + op("grant", 0, 255) + op("poll", 0) + op("stream_end", 0)),
    "stream_abort": (0, 0, op("connect", 0) + send(0, GET + GET) + op("poll", 0) + op("stream_start", 0, 0, 0)
                     + op("stream_write", 0, 30) + op("stream_abort", 0) + op("respond", 1, 0) + op("poll", 0)),
    "respond_abort_flag": (0, 0, op("connect", 0) + send(0, GET + GET) + op("poll", 0) + op("respond", 0, 0)
                           + op("abort", 1, 0) + op("poll", 0)),
    "body_read_streamed": (STREAM_BODY, 0, op("connect", 0) + send(0, POST[:80]) + op("poll", 0)
                           + op("body_read", 0, 20) + send(0, POST[80:]) + op("poll", 0)
                           + op("body_read", 0, 200) + op("body_read", 0, 200) + op("body_read", 0, 10)
                           + op("respond", 0, 0) + op("poll", 0)),
    "body_read_chunked": (STREAM_BODY | SMALL_BUF, 0, op("connect", 0) + send(0, CHUNKED) + op("poll", 0)
                          + op("body_read", 0, 3) + op("body_read", 0, 100) + op("body_read", 0, 100)
                          + op("respond", 0, 1) + op("poll", 0)),
    "body_too_large_chunked": (STREAM_BODY, 3, op("connect", 0)
                               + send(0, "POST /big HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                                      "ffffffffffffffff\r\n") + op("poll", 0) + op("body_read", 0, 50)
                               + op("respond", 0, 0) + op("poll", 0)),
    "body_unread_answer": (STREAM_BODY, 0, op("connect", 0) + send(0, POST[:70]) + op("poll", 0)
                           + op("respond", 0, 4) + op("poll", 0) + send(0, POST[70:]) + op("poll", 0)),
    "expect_continue": (STREAM_BODY, 0, op("connect", 0) + send(0, EXPECT) + op("poll", 0)
                        + op("interim", 0, 0) + op("body_read", 0, 9) + send(0, "0123456789") + op("poll", 0)
                        + op("body_read", 0, 20) + op("body_read", 0, 20) + op("respond", 0, 0) + op("poll", 0)),
    "expect_continue_buffered": (0, 0, op("connect", 0) + send(0, EXPECT) + op("poll", 0)
                                 + send(0, "0123456789") + op("poll", 0) + op("respond", 0, 0) + op("poll", 0)),
    "upgrade_take": (0, 0, op("connect", 0) + send(0, UPGRADE) + op("poll", 0) + op("take", 0, 100)
                     + op("upgrade", 0, 0) + op("take", 0, 100) + op("poll", 0) + op("take", 0, 2)
                     + op("take", 0, 100) + op("take", 0, 100)),
    # Found by the fuzzer in this session's own fix: a second weir_upgrade
    # of an upgrading handle cleared its mark, and the take then said stale.
    "upgrade_twice_take": (0, 0, op("connect", 0) + send(0, UPGRADE) + op("poll", 0) + op("upgrade", 0, 0)
                           + op("upgrade", 0, 0) + op("take", 0, 100) + op("poll", 0) + op("take", 0, 100)),
    # The new protocol's first bytes past any buffer the schedule gives the
    # take: -ENOBUFS says how much, and the end takes it with that.
    "upgrade_take_large_unread": (0, 0, op("connect", 0) + send(0, UPGRADE + "z" * 700) + op("poll", 0)
                                  + op("upgrade", 0, 0) + op("poll", 0) + op("take", 0, 10)),
    "upgrade_raw": (0, 0, op("connect", 0) + send(0, UPGRADE) + op("poll", 0) + op("upgrade", 0, 1)
                    + op("poll", 0) + op("take", 0, 100)),
    "upgrade_behind_answer": (STALLED, 0, op("connect", 0) + send(0, GET + UPGRADE) + op("poll", 0)
                              + op("upgrade", 1, 0) + op("poll", 0) + op("take", 1, 100) + op("stream_start", 0, 0, 0)
                              + op("stream_write", 0, 40) + op("stream_end", 0) + op("grant", 0, 3) + op("poll", 0)
                              + op("grant", 0, 255) + op("poll", 0) + op("take", 1, 100)),
    "file_answer": (0, 0, op("connect", 0) + send(0, GET + HEAD) + op("poll", 0) + op("file", 0, 3, 50)
                    + op("file", 1, 0, 10) + op("file", 0, 255, 1) + op("poll", 0)),
    "file_answer_ranges_stalled": (RANGES | STALLED, 0, op("connect", 0) + send(0, GET + GET) + op("poll", 0)
                                   + op("file", 0, 0, 250) + op("respond", 1, 0) + op("grant", 0, 40) + op("poll", 0)
                                   + op("grant", 0, 200) + op("poll", 0) + op("grant", 0, 255) + op("poll", 0)),
    "file_answer_small_window": (SMALL_OUT, 0, op("connect", 0) + send(0, GET) + op("poll", 0)
                                 + op("file", 0, 1, 255) + op("poll", 0)),
    "interim_hints": (0, 0, op("connect", 0) + send(0, GET + GET) + op("poll", 0) + op("interim", 1, 1)
                      + op("interim", 0, 1) + op("respond", 1, 0) + op("respond", 0, 0) + op("poll", 0)),
    "interim_http10": (0, 0, op("connect", 0) + send(0, HTTP10) + op("poll", 0) + op("interim", 0, 1)
                       + op("stream_start", 0, 0, 0) + op("stream_write", 0, 10) + op("stream_end", 0) + op("poll", 0)),
    "split_bytes": (SMALL_BUF, 0, op("connect", 0) + b"".join(send(0, GET[i:i + 3]) for i in range(0, len(GET), 3))
                    + op("poll", 0) + op("respond", 0, 0) + op("poll", 0)),
    "short_writes": (STALLED, 0, op("connect", 0) + send(0, GET + GET) + op("poll", 0) + op("respond", 0, 0)
                     + op("respond", 1, 0) + op("poll", 0) + op("grant", 0, 1) + op("poll", 0) + op("grant", 0, 5)
                     + op("poll", 0) + op("grant", 0, 255)),
    "write_error": (STALLED, 0, op("connect", 0) + send(0, GET) + op("poll", 0) + op("respond", 0, 0)
                    + op("grant", 0, 2) + op("fail_write", 0) + op("poll", 0) + op("respond", 0, 0)),
    "peer_fin_mid_answer": (REPORT_GONE, 0, op("connect", 0) + send(0, GET) + op("fin", 0) + op("poll", 0)
                            + op("poll", 0) + op("respond", 0, 0) + op("poll", 0)),
    "peer_reset_streaming": (REPORT_GONE, 0, op("connect", 0) + send(0, GET) + op("poll", 0)
                             + op("stream_start", 0, 0, 0) + op("stream_write", 0, 10) + op("reset", 0)
                             + op("poll", 0) + op("stream_write", 0, 10) + op("stream_end", 0)),
    "header_timeout_tick": (0, 0, op("connect", 0) + op("connect", 1) + send(0, "GET /slow HTTP/1.1\r\n")
                            + send(1, GET) + op("poll", 0) + op("tick", 30) + op("respond", 0, 0) + op("poll", 0)),
    "idle_timeout_tick": (0, 0, op("connect", 0) + send(0, GET) + op("poll", 0) + op("respond", 0, 0)
                          + op("poll", 0) + op("tick", 100) + op("poll", 0)),
    "handler_timeout_tick": (HANDLER_TO, 0, op("connect", 0) + send(0, GET + GET) + op("poll", 0)
                             + op("respond", 1, 0) + op("poll", 0) + op("tick", 40) + op("respond", 0, 0) + op("poll", 0)),
    "write_timeout_tick": (STALLED, 0, op("connect", 0) + send(0, GET) + op("poll", 0) + op("respond", 0, 0)
                           + op("poll", 0) + op("tick", 60) + op("poll", 0)),
    "bad_request": (0, 0, op("connect", 0) + send(0, GET + "GET /x HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n")
                    + op("poll", 0) + op("respond", 0, 0) + op("poll", 0)),
    "body_limit_declared": (STREAM_BODY, 3, op("connect", 0) + send(0, EXPECT.replace("10", "99999999999"))
                            + op("poll", 0)),
    "pipeline_limit": (PIPE4 | SMALL_BUF, 0, op("connect", 0) + send(0, GET * 7) + op("poll", 0)
                       + b"".join(op("respond", i, 0) for i in range(4)) + op("poll", 0) + op("poll", 0)),
    "many_clients": (STREAM_BODY | STALLED, 0, b"".join(op("connect", i) for i in range(4)) + send(0, GET)
                     + send(1, POST) + send(2, UPGRADE) + send(3, CHUNKED) + op("poll", 0) + op("respond", 0, 0)
                     + op("body_read", 1, 255) + op("upgrade", 2, 0) + op("stream_start", 3, 0, 0)
                     + op("grant", 0, 255) + op("grant", 2, 255) + op("poll", 0) + op("take", 2, 100)
                     + op("reset", 1) + op("poll", 0)),
    # Found by the fuzzer: a streamed answer's handle consumed by WEIR_E_GONE
    # (its client reset) stays Claimed inside weir, and weir_upgrade_take
    # said -EAGAIN ("wait for the hand-back") for it instead of WEIR_E_STALE.
    "take_after_gone_stream": (0, 0, op("connect", 0) + send(0, GET) + op("poll", 0) + op("stream_start", 0, 0, 0)
                               + op("stream_write", 0, 5) + op("reset", 0) + op("poll", 0)
                               + op("stream_write", 0, 5) + op("take", 0, 100)),
    # Found by the fuzzer, the same hole: weir_body_read said WEIR_E_STATE
    # ("its answer began") for that consumed handle instead of WEIR_E_STALE.
    "body_read_after_gone_stream": (STREAM_BODY, 0, op("connect", 0) + send(0, POST[:70]) + op("poll", 0)
                                    + op("stream_start", 0, 0, 0) + op("reset", 0) + op("poll", 0)
                                    + op("stream_write", 0, 5) + op("body_read", 0, 10)),
}


def main():
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "worker")
    os.makedirs(d, exist_ok=True)
    for name, (cfg, maxbody, ops) in SEEDS.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(bytes([cfg, maxbody]) + ops)


if __name__ == "__main__":
    main()
