package weir

/*
#include <weir.h>
*/
import "C"

import (
	"bufio"
	"fmt"
	"io"
	"time"
)

// WriteText writes m as "name value" lines with weir's own names, in the
// order weir.h declares them: the lines weir-demo prints between "metrics
// begin" and "metrics end" on SIGHUP (examples/c/demo_metrics.h), each name
// behind prefix ("standby." for an adaptive pair's standby). The attached
// Upgrader's and Systemd's ledgers follow as handover.* and systemd.*
// lines, in the names weir-demo's "handover:" and "systemd:" lines use. So
// an operator's probe reads a Go server and weir-demo alike.
func (m Metrics) WriteText(w io.Writer, prefix string) error {
	b := bufio.NewWriter(w)
	f := func(name string, v any) { fmt.Fprintf(b, "%s%s %v\n", prefix, name, v) }
	f("workers", m.Workers)
	f("accepted", m.Accepted)
	f("accept_batches", m.AcceptBatches)
	f("accept_owed", m.AcceptOwed)
	f("accept_resource_errors", m.AcceptResourceErrors)
	f("accept_other_errors", m.AcceptOtherErrors)
	f("handoffs", m.Handoffs)
	f("handoffs_owed", m.HandoffsOwed)
	f("connections_open", m.ConnectionsOpen)
	f("requests", m.Requests)
	f("responses", m.Responses)
	f("parse_errors", m.ParseErrors)
	f("continues_sent", m.ContinuesSent)
	f("bytes_in", m.BytesIn)
	f("bytes_out", m.BytesOut)
	f("loop_passes", m.LoopPasses)
	f("pause_lingers", m.PauseLingers)
	f("pause_closes", m.PauseCloses)
	f("pause_aborts", m.PauseAborts)
	f("pause_defer_clears", m.PauseDeferClears)
	f("pause_defer_restores", m.PauseDeferRestores)
	f("pause_guards", m.PauseGuards)
	f("pause_setsockopt_errors", m.PauseSetsockoptErrors)
	f("pause_sysctl_unreadable", m.PauseSysctlUnreadable)
	f("pause_drain_accepted", m.PauseDrainAccepted)
	f("pause_reopens", m.PauseReopens)
	f("pause_reopen_errors", m.PauseReopenErrors)
	if m.Backend == BackendURing {
		f("backend", "uring")
		f("uring_tier", C.GoString(C.weir_uring_tier_name(C.uint32_t(m.URingTier))))
		for i := 0; i < C.WEIR_URING_F_COUNT; i++ {
			bit := uint64(1) << i
			if m.URingProbed&bit != 0 {
				use := "probed"
				if m.URingUsed&bit != 0 {
					use = "used"
				}
				f("uring_feature."+C.GoString(C.weir_uring_feature_name(C.uint64_t(bit))), use)
			}
		}
	} else {
		f("backend", "epoll")
	}
	f("uring_enters", m.URingEnters)
	f("uring_cq_overflows", m.URingCQOverflows)
	f("uring_nobufs", m.URingNoBufs)
	f("uring_rearms", m.URingRearms)
	f("transplant_detached", m.TransplantDetached)
	f("transplant_adopted", m.TransplantAdopted)
	f("transplant_refused", m.TransplantRefused)
	f("transplant_in_flight", m.TransplantInFlight)
	f("transplant_received", m.TransplantReceived)
	f("close_lingers", m.CloseLingers)
	f("close_linger_cuts", m.CloseLingerCuts)
	f("uring_sq_full", m.URingSQFull)
	f("proxy_v1", m.ProxyV1)
	f("proxy_v2", m.ProxyV2)
	f("proxy_local", m.ProxyLocal)
	f("proxy_missing", m.ProxyMissing)
	f("proxy_malformed", m.ProxyMalformed)
	f("proxy_untrusted", m.ProxyUntrusted)
	f("proxy_oversized", m.ProxyOversized)
	f("proxy_timeouts", m.ProxyTimeouts)
	f("overload_level", m.OverloadLevel)
	f("overload_engaged", m.OverloadEngaged)
	f("overload_keepalive_off", m.OverloadKeepAliveOff)
	f("overload_accept_shrunk", m.OverloadAcceptShrunk)
	f("overload_accept_pauses", m.OverloadAcceptPauses)
	f("overload_refused", m.OverloadRefused)
	f("mem_pooled_bytes", m.MemPooledBytes)
	f("mem_returned_bytes", m.MemReturnedBytes)
	f("mem_trims", m.MemTrims)
	f("overload_idle_closed", m.OverloadIdleClosed)
	f("h2_sessions", m.H2Sessions)
	f("h2_upgrades", m.H2Upgrades)
	f("h2_streams", m.H2Streams)
	f("h2_resets_by_peer", m.H2ResetsByPeer)
	f("h2_refused", m.H2Refused)
	f("h2_malformed", m.H2Malformed)
	f("h2_floods", m.H2Floods)
	f("h2_handler_timeouts", m.H2HandlerTimeouts)
	for i := range m.Closes {
		name := CloseReasonName(i)
		if name != "unknown" || m.Closes[i] != 0 {
			f("closes."+name, m.Closes[i])
		}
	}
	if m.HandoverSeen {
		h := m.Handover
		f("handover.state", h.State)
		f("handover.error", errName(h.Err))
		f("handover.listeners", h.Listeners)
		f("handover.sent", h.Sent)
		f("handover.returned", h.Returned)
		f("handover.closed", h.Closed)
		f("handover.received", h.Received)
		f("handover.refused", h.Refused)
		f("handover.lost", h.Lost)
		f("handover.moving_ms", fmt.Sprintf("%.3f", float64(h.Moving)/float64(time.Millisecond)))
	}
	for _, s := range []struct {
		side string
		st   SystemdStats
		seen bool
	}{{"listen", m.SystemdListen, m.SystemdListenSeen}, {"store", m.SystemdStore, m.SystemdStoreSeen}} {
		if !s.seen {
			continue
		}
		p := "systemd." + s.side + "."
		f(p+"listeners", s.st.Listeners)
		f(p+"connections", s.st.Connections)
		f(p+"closed", s.st.Closed)
		f(p+"fds", s.st.FDs)
		f(p+"image_error", errName(s.st.ImageErr))
		f(p+"error", errName(s.st.Err))
	}
	return b.Flush()
}

// String names a handover state as weir.h does (waiting, moving, done, failed).
func (s UpgradeState) String() string {
	switch s {
	case UpgradeWaiting:
		return "waiting"
	case UpgradeMoving:
		return "moving"
	case UpgradeDone:
		return "done"
	case UpgradeFailed:
		return "failed"
	}
	return "none"
}

// errName is weir's name of an error's code (WEIR_E_HANDOVER_VERSION,
// ETIMEDOUT, ...), "-" for none.
func errName(err error) string {
	if err == nil {
		return "-"
	}
	if e, ok := err.(*Error); ok {
		return C.GoString(C.weir_err_name(C.int(e.Code)))
	}
	return err.Error()
}
