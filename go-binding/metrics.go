package weir

/*
#include <weir.h>
*/
import "C"

// Metrics is a snapshot of the native counters (summed over workers) and the
// binding's own.
type Metrics struct {
	Workers              int
	Accepted             uint64 // connections accepted
	AcceptBatches        uint64
	AcceptOwed           uint64
	AcceptResourceErrors uint64 // EMFILE/ENFILE/ENOBUFS/ENOMEM from accept
	AcceptOtherErrors    uint64
	Handoffs             uint64
	HandoffsOwed         uint64
	ConnectionsOpen      uint64
	Requests             uint64 // complete requests parsed
	Responses            uint64 // answers written
	ParseErrors          uint64
	ContinuesSent        uint64 // 100 Continue sent natively
	BytesIn              uint64
	BytesOut             uint64
	LoopPasses           uint64
	Closes               [C.WEIR_CLOSE_REASONS]uint64 // by close reason; see CloseReasonName

	// The pause linger (docs/pause.md).
	PauseLingers          uint64 // listeners that entered the linger
	PauseCloses           uint64 // listeners closed by a pause
	PauseAborts           uint64 // lingers ended by a resume
	PauseDeferClears      uint64 // TCP_DEFER_ACCEPT cleared for a linger
	PauseDeferRestores    uint64 // TCP_DEFER_ACCEPT set again by a resume
	PauseGuards           uint64 // TCP_SYNCNT=1 applied (tcp_synack_retries = 0)
	PauseSetsockoptErrors uint64
	PauseSysctlUnreadable uint64
	PauseDrainAccepted    uint64 // connections accepted by the closing drain
	PauseReopens          uint64 // closed listeners reopened by a resume
	PauseReopenErrors     uint64

	// The backend (docs/uring.md): io_uring's tier, the WEIR_URING_F_* bits
	// probed and used, and its counts (0 on epoll).
	URingTier        uint32
	URingProbed      uint64
	URingUsed        uint64
	URingEnters      uint64
	URingCQOverflows uint64 // must stay 0
	URingNoBufs      uint64
	URingRearms      uint64

	// Transplant's ledger (docs/transplant.md): Detached == Adopted +
	// Refused + InFlight, always.
	TransplantDetached uint64
	TransplantAdopted  uint64
	TransplantRefused  uint64
	TransplantInFlight uint64
	TransplantReceived uint64

	// Lingering closes (docs/engine.md): closes that sent FIN and then read
	// until the peer's FIN or a bound; Cuts ended by the bound.
	CloseLingers    uint64
	CloseLingerCuts uint64

	// io_uring's SQ found full (docs/reliability.md "Exhaustion"): the queue
	// was submitted early; must stay 0 in a sound configuration.
	URingSQFull uint64

	// The PROXY protocol (Config.ProxyProtocol; docs/api.md §5.8): headers
	// accepted, and the connections refused by cause, each closed as
	// Closes[WEIR_CLOSE_PROXY] ("proxy").
	ProxyV1        uint64 // v1 headers accepted
	ProxyV2        uint64 // v2 headers accepted
	ProxyLocal     uint64 // of those, ones that kept the socket's peer (v2 LOCAL, v1 UNKNOWN, AF_UNSPEC, AF_UNIX)
	ProxyMissing   uint64 // connections whose bytes began with no PROXY signature
	ProxyMalformed uint64 // a signature, then a header the spec refuses (v2's CRC32C mismatch included)
	ProxyUntrusted uint64 // connections from outside ProxyTrusted
	ProxyOversized uint64 // v1 past 107 bytes, v2 past ProxyMaxBytes
	ProxyTimeouts  uint64 // no whole header within ProxyTimeout

	// The overload manager (Config.Overload*; docs/api.md §5.10); its closes
	// are Closes[WEIR_CLOSE_OVERLOAD] ("overload").
	OverloadLevel        uint64 // now: the highest level of any worker (0 none .. 4 refusing)
	OverloadEngaged      uint64 // actions engaged (a rise of n levels counts n)
	OverloadKeepAliveOff uint64 // answers that closed their connection only because keep-alive was off
	OverloadAcceptShrunk uint64 // accept batches run shrunk
	OverloadAcceptPauses uint64 // times a worker paused accepting
	OverloadRefused      uint64 // requests answered 503 at once, never handed to a handler
	// Memory that follows the load (Config.TrimInterval): bytes now kept in
	// the idle pools, bytes the trims gave back, and the trims that did.
	MemPooledBytes   uint64
	MemReturnedBytes uint64
	MemTrims         uint64
	// Keep-alive connections the overload manager closed idle between
	// requests once its level rose to 1 (each also Closes[WEIR_CLOSE_OVERLOAD]).
	OverloadIdleClosed uint64
	// HTTP/2 (Config.Protocols; docs/http2.md): connections served as
	// HTTP/2 and, of those, by Upgrade: h2c; streams opened, reset by the
	// peer, refused over H2MaxStreams, refused as malformed; connections
	// closed for a flood or rapid reset (each also Closes[WEIR_CLOSE_H2_ABUSE]).
	H2Sessions, H2Upgrades, H2Streams, H2ResetsByPeer, H2Refused, H2Malformed, H2Floods uint64
	// Streams held past weir_config.handler_timeout_ms, each cut alone (503,
	// or RST_STREAM once its answer began; the connection goes on). The
	// binding leaves that deadline off, so this stays 0 here.
	H2HandlerTimeouts uint64

	// The binding's own.
	Polls          uint64 // weir_worker_poll crossings (each also carries the queued inline answers)
	SchedPasses    uint64 // inline drivers' passes through the Go scheduler (sched_yield.go)
	DirectResponds uint64 // weir_respond crossings of their own (large bodies; async ones once their worker stopped)
	Posted         uint64 // async answers carried by a worker's cycle (mailbox)
	Wakes          uint64 // weir_worker_wake crossings (the first posted answer after each cycle; each posted body read)
	Exchanges      uint64 // exchanges handed to handlers
	Panics         uint64 // handler panics recovered into a 500 (net/http handlers: no answer; a stream begun: aborted)
	Goexits        uint64 // handlers that called runtime.Goexit (answered as Unanswered's are)
	HandOffs       uint64 // inline handlers that handed their worker on to a new goroutine (HandOff, Hijack, a wait)
	Streams        uint64 // streamed answers begun (ResponseWriter.Stream, net/http Flush)
	StreamWaits    uint64 // stream writes that waited for the client to make room
	Unanswered     uint64 // handlers that returned without answering (answered 500)
	Gone           uint64 // answers dropped because the connection had died (WEIR_E_GONE)
	Refused        uint64 // answers weir refused (-EINVAL, -ENOMEM), replaced by a 500
	FileAnswers    uint64 // answers sent from a file (RespondFile, celeris's file responses, net/http's ReadFrom of a file)
	FileServes     uint64 // ServeFile answers (weir_serve_file), whatever the status: 200, 206, 304, 412, 416, 405
	Interims       uint64 // 1xx answers sent before the final one (Interim, net/http WriteHeader(1xx))
	CopiedReads    uint64 // net/http ReadFrom calls that copied through Go instead (not a file, or not the whole answer)
	BodyReads      uint64 // streamed request bodies' reads weir ran (ReadBody, net/http's Body.Read), up to 64 KiB each
	BodyWaits      uint64 // of them, those that found nothing and waited for the client (a hand-back)
	DirectReads    uint64 // of them, those an inline handler made on its own thread: a crossing each

	// The engine's backend (weir_metrics.backend), for the metrics text.
	Backend Backend

	// Hot upgrade and systemd, from an attached Upgrader and Systemd
	// (upgrade.go, systemd.go; 0 and false without them): the latest
	// handover that ended (an offer's or the take-over's ledger), what Listen
	// took from systemd, what Store sent to its fd store.
	Handover          UpgradeStats
	HandoverSeen      bool
	SystemdListen     SystemdStats
	SystemdListenSeen bool
	SystemdStore      SystemdStats
	SystemdStoreSeen  bool
}

// CgoCalls is the number of hot-path crossings: polls, wakes, direct
// responds and an inline handler's own body reads.
func (m Metrics) CgoCalls() uint64 { return m.Polls + m.Wakes + m.DirectResponds + m.DirectReads }

// CgoCallsPerRequest is CgoCalls over Exchanges (0 before any exchange).
func (m Metrics) CgoCallsPerRequest() float64 {
	if m.Exchanges == 0 {
		return 0
	}
	return float64(m.CgoCalls()) / float64(m.Exchanges)
}

// closeProxy indexes Metrics.Closes for connections refused for their PROXY
// header (CloseReasonName: "proxy").
const closeProxy = int(C.WEIR_CLOSE_PROXY)

// Closes indexes of the deadlines that bind (Config.RequestTimeout,
// MinBodyRate, MinSendRate; CloseReasonName: "request_timeout", "slow_body",
// "slow_reader").
const (
	closeRequestTimeout = int(C.WEIR_CLOSE_REQUEST_TIMEOUT)
	closeSlowBody       = int(C.WEIR_CLOSE_SLOW_BODY)
	closeSlowReader     = int(C.WEIR_CLOSE_SLOW_READER)
)

// CloseReasonName names an index of Metrics.Closes ("peer", "bad_request", ...).
func CloseReasonName(i int) string { return C.GoString(C.weir_close_reason_name(C.uint32_t(i))) }

// Metrics reads the counters; any goroutine, any time (the native part is
// zero once the engine is destroyed).
func (e *Engine) Metrics() Metrics {
	var m Metrics
	e.life.RLock()
	if e.ce != nil {
		var cm C.weir_metrics
		cm.size = C.sizeof_weir_metrics
		if C.weir_engine_metrics(e.ce, &cm) == 0 {
			m.Workers = int(cm.workers)
			m.Accepted = uint64(cm.accepted)
			m.AcceptBatches = uint64(cm.accept_batches)
			m.AcceptOwed = uint64(cm.accept_owed)
			m.AcceptResourceErrors = uint64(cm.accept_resource_errors)
			m.AcceptOtherErrors = uint64(cm.accept_other_errors)
			m.Handoffs = uint64(cm.handoffs)
			m.HandoffsOwed = uint64(cm.handoffs_owed)
			m.ConnectionsOpen = uint64(cm.connections_open)
			m.Requests = uint64(cm.requests)
			m.Responses = uint64(cm.responses)
			m.ParseErrors = uint64(cm.parse_errors)
			m.ContinuesSent = uint64(cm.continues_sent)
			m.BytesIn = uint64(cm.bytes_in)
			m.BytesOut = uint64(cm.bytes_out)
			m.LoopPasses = uint64(cm.loop_passes)
			for i := range m.Closes {
				m.Closes[i] = uint64(cm.closes[i])
			}
			m.PauseLingers = uint64(cm.pause_lingers)
			m.PauseCloses = uint64(cm.pause_closes)
			m.PauseAborts = uint64(cm.pause_aborts)
			m.PauseDeferClears = uint64(cm.pause_defer_clears)
			m.PauseDeferRestores = uint64(cm.pause_defer_restores)
			m.PauseGuards = uint64(cm.pause_guards)
			m.PauseSetsockoptErrors = uint64(cm.pause_setsockopt_errors)
			m.PauseSysctlUnreadable = uint64(cm.pause_sysctl_unreadable)
			m.PauseDrainAccepted = uint64(cm.pause_drain_accepted)
			m.PauseReopens = uint64(cm.pause_reopens)
			m.PauseReopenErrors = uint64(cm.pause_reopen_errors)
			if cm.backend == C.WEIR_BACKEND_URING {
				m.Backend = BackendURing
			}
			m.URingTier = uint32(cm.uring_tier)
			m.URingProbed = uint64(cm.uring_probed)
			m.URingUsed = uint64(cm.uring_used)
			m.URingEnters = uint64(cm.uring_enters)
			m.URingCQOverflows = uint64(cm.uring_cq_overflows)
			m.URingNoBufs = uint64(cm.uring_nobufs)
			m.URingRearms = uint64(cm.uring_rearms)
			m.TransplantDetached = uint64(cm.transplant_detached)
			m.TransplantAdopted = uint64(cm.transplant_adopted)
			m.TransplantRefused = uint64(cm.transplant_refused)
			m.TransplantInFlight = uint64(cm.transplant_in_flight)
			m.TransplantReceived = uint64(cm.transplant_received)
			m.CloseLingers = uint64(cm.close_lingers)
			m.CloseLingerCuts = uint64(cm.close_linger_cuts)
			m.URingSQFull = uint64(cm.uring_sq_full)
			m.ProxyV1 = uint64(cm.proxy_v1)
			m.ProxyV2 = uint64(cm.proxy_v2)
			m.ProxyLocal = uint64(cm.proxy_local)
			m.ProxyMissing = uint64(cm.proxy_missing)
			m.ProxyMalformed = uint64(cm.proxy_malformed)
			m.ProxyUntrusted = uint64(cm.proxy_untrusted)
			m.ProxyOversized = uint64(cm.proxy_oversized)
			m.ProxyTimeouts = uint64(cm.proxy_timeouts)
			m.OverloadLevel = uint64(cm.overload_level)
			m.OverloadEngaged = uint64(cm.overload_engaged)
			m.OverloadKeepAliveOff = uint64(cm.overload_keepalive_off)
			m.OverloadAcceptShrunk = uint64(cm.overload_accept_shrunk)
			m.OverloadAcceptPauses = uint64(cm.overload_accept_pauses)
			m.OverloadRefused = uint64(cm.overload_refused)
			m.MemPooledBytes = uint64(cm.mem_pooled_bytes)
			m.MemReturnedBytes = uint64(cm.mem_returned_bytes)
			m.MemTrims = uint64(cm.mem_trims)
			m.OverloadIdleClosed = uint64(cm.overload_idle_closed)
			m.H2Sessions = uint64(cm.h2_sessions)
			m.H2Upgrades = uint64(cm.h2_upgrades)
			m.H2Streams = uint64(cm.h2_streams)
			m.H2ResetsByPeer = uint64(cm.h2_resets_by_peer)
			m.H2Refused = uint64(cm.h2_refused)
			m.H2Malformed = uint64(cm.h2_malformed)
			m.H2Floods = uint64(cm.h2_floods)
			m.H2HandlerTimeouts = uint64(cm.h2_handler_timeouts)
		}
	}
	e.life.RUnlock()
	e.mu.Lock()
	workers := e.workers
	e.mu.Unlock()
	for _, wk := range workers {
		m.Polls += wk.polls.Load()
		m.SchedPasses += wk.passes.Load()
		m.Exchanges += wk.taken.Load()
		m.Posted += wk.mb.posted.Load()
		m.Wakes += wk.mb.wakes.Load() + wk.bq.wakes.Load()
		m.BodyReads += wk.bq.runs.Load()
		m.BodyWaits += wk.bq.waits.Load()
		m.DirectReads += wk.bq.direct.Load()
	}
	m.DirectResponds = e.stats.responds.Load()
	m.Panics = e.stats.panics.Load()
	m.Goexits = e.stats.goexits.Load()
	m.HandOffs = e.stats.handOffs.Load()
	m.Streams = e.st.started.Load()
	m.StreamWaits = e.st.waits.Load()
	m.Unanswered = e.stats.unanswered.Load()
	m.Gone = e.stats.gone.Load()
	m.Refused = e.stats.refused.Load()
	m.FileAnswers = e.stats.files.Load()
	m.FileServes = e.stats.serves.Load()
	m.Interims = e.stats.interims.Load()
	m.CopiedReads = e.stats.copied.Load()
	for _, a := range e.attachments() {
		switch a := a.(type) {
		case *Upgrader:
			m.Handover, m.HandoverSeen = a.Last()
		case *Systemd:
			m.SystemdListen, m.SystemdListenSeen = a.Listened()
			m.SystemdStore, m.SystemdStoreSeen = a.Stored()
		}
	}
	return m
}
