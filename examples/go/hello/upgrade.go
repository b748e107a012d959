package main

// hello's share of weir-demo's operator contract for hot upgrade and systemd
// (weir-demo --help; examples/c/demo_handover.h and demo_systemd.h): the same
// flags, the same signals and the same lines on stdout, so the operators'
// scripts and tests/scripts/go_handover.sh drive both alike.
//
//	--upgrade-socket PATH   SIGQUIT hands the listeners and every connection
//	                        to a successor started with --take-over PATH
//	--take-over PATH        take them from the process offering at PATH
//	--handover-wait-ms N, --handover-deadline-ms N, --handover-listeners-only
//	--systemd, --fdstore    socket activation; SIGTERM fills the fd store
//	SIGHUP                  "metrics begin", weir's names, "metrics end"
//
// Lines: "handover: offered at PATH", "handover: done {json}" (then exit 0),
// "handover: failed: REASON {json}" (serving on), "handover: took {json}",
// "handover: took-failed: REASON {json}", "handover: not offered: REASON";
// "systemd: listening on N sockets, adopted M connections, closed K {json}",
// "systemd: none passed: REASON", "fdstore: stored L listeners, C
// connections, closed K {json}", "fdstore: not stored: REASON".

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	weir "github.com/weir-http/weir/go-binding"
)

type upgradeFlags struct {
	socket, takeOver   string
	waitMS, deadlineMS uint
	listenersOnly      bool
	systemd, fdstore   bool
}

func (f *upgradeFlags) register() {
	flag.StringVar(&f.socket, "upgrade-socket", "", "SIGQUIT hands the listeners and every connection to a successor started with --take-over PATH, then exits (docs/upgrade.md)")
	flag.StringVar(&f.takeOver, "take-over", "", "take the listeners and connections of the process offering at PATH instead of binding --addr")
	flag.UintVar(&f.waitMS, "handover-wait-ms", 10000, "time to wait for a successor / to find an offer")
	flag.UintVar(&f.deadlineMS, "handover-deadline-ms", 10000, "in-flight requests' time to reach their boundary (a hand-over, the fd store)")
	flag.BoolVar(&f.listenersOnly, "handover-listeners-only", false, "hand over the listeners only; connections close (comparison)")
	flag.BoolVar(&f.systemd, "systemd", false, "listen on the sockets systemd passed ($LISTEN_FDS) and adopt the connections its fd store kept; --addr when none")
	flag.BoolVar(&f.fdstore, "fdstore", false, "SIGTERM stores the listeners and connections in systemd's fd store ($NOTIFY_SOCKET) before the exit")
}

// ops is the running process's share: the Upgrader, the Systemd, the
// signals and the lines.
type ops struct {
	f    upgradeFlags
	e    *weir.Engine
	up   *weir.Upgrader
	sd   *weir.Systemd
	out  sync.Mutex // one line (or the metrics block) at a time
	busy sync.Mutex // one offer at a time (a second SIGQUIT is refused)
}

func (o *ops) attach(e *weir.Engine) error {
	o.e = e
	if o.f.socket != "" || o.f.takeOver != "" {
		up, err := weir.NewUpgrader(e, weir.UpgradeOptions{
			Socket: o.f.socket, TakeOver: o.f.takeOver,
			Wait:          time.Duration(o.f.waitMS) * time.Millisecond,
			Deadline:      time.Duration(o.f.deadlineMS) * time.Millisecond,
			ListenersOnly: o.f.listenersOnly,
			OnOffer:       func(p string) { o.printf("handover: offered at %s\n", p) },
		})
		if err != nil {
			return err
		}
		o.up = up
	}
	if o.f.systemd || o.f.fdstore {
		sd, err := weir.NewSystemd(e, weir.SystemdOptions{Activation: o.f.systemd})
		if err != nil {
			return err
		}
		o.sd = sd
	}
	return nil
}

func (o *ops) printf(format string, a ...any) {
	o.out.Lock()
	fmt.Printf(format, a...)
	o.out.Unlock()
}

func upgradeJSON(st weir.UpgradeStats) string {
	b, _ := json.Marshal(map[string]any{"listeners": st.Listeners, "sent": st.Sent, "returned": st.Returned,
		"closed": st.Closed, "received": st.Received, "refused": st.Refused, "lost": st.Lost,
		"moving_ms": json.Number(strconv.FormatFloat(float64(st.Moving)/1e6, 'f', 3, 64))})
	return string(b)
}

func systemdJSON(st weir.SystemdStats) string {
	ie := ""
	if st.ImageErr != nil {
		ie = st.ImageErr.Error()
	}
	b, _ := json.Marshal(map[string]any{"fds": st.FDs, "image_error": ie})
	return string(b)
}

// onListen: before "listening on", what systemd passed.
func (o *ops) onListen() {
	if o.sd == nil || !o.f.systemd {
		return
	}
	if st, ok := o.sd.Listened(); ok {
		if st.Err != nil {
			o.printf("systemd: none passed: %v\n", st.Err)
		} else {
			o.printf("systemd: listening on %d sockets, adopted %d connections, closed %d %s\n",
				st.Listeners, st.Connections, st.Closed, systemdJSON(st))
		}
	}
}

// ready opens the successor's gate once the application is ready, and
// reports the take-over's end when it comes.
func (o *ops) ready() error {
	if o.up == nil {
		return nil
	}
	if err := o.up.Ready(); err != nil {
		return err
	}
	if o.f.takeOver != "" {
		go func() {
			st, err := o.up.TakeOverResult()
			if err != nil {
				o.printf("handover: took-failed: %v %s\n", err, upgradeJSON(st))
			} else {
				o.printf("handover: took %s\n", upgradeJSON(st))
			}
		}()
	}
	return nil
}

// offer: SIGQUIT's, on its own goroutine.
func (o *ops) offer(shutdown func()) {
	if o.up == nil || o.f.socket == "" {
		o.printf("handover: not offered: no --upgrade-socket\n")
		return
	}
	select {
	case <-o.up.TakenOver():
	default:
		o.printf("handover: not offered: one is under way\n")
		return
	}
	if !o.busy.TryLock() {
		o.printf("handover: not offered: one is under way\n")
		return
	}
	go func() {
		defer o.busy.Unlock()
		st, err := o.up.Upgrade(context.Background())
		switch {
		case err == nil:
			o.printf("handover: done %s\n", upgradeJSON(st))
			shutdown() // it holds nothing
		case st.State == 0:
			o.printf("handover: not offered: %v\n", err)
		default:
			o.printf("handover: failed: %v %s\n", err, upgradeJSON(st))
		}
	}()
}

// store: SIGTERM's with --fdstore, before the shutdown.
func (o *ops) store() {
	if o.sd == nil || !o.f.fdstore {
		return
	}
	st, err := o.sd.Store(time.Duration(o.f.deadlineMS) * time.Millisecond)
	if err != nil {
		o.printf("fdstore: not stored: %v\n", err)
		return
	}
	o.printf("fdstore: stored %d listeners, %d connections, closed %d %s\n", st.Listeners, st.Connections, st.Closed, systemdJSON(st))
}

func (o *ops) metrics() {
	o.out.Lock()
	defer o.out.Unlock()
	fmt.Println("metrics begin")
	_ = o.e.Metrics().WriteText(os.Stdout, "")
	fmt.Println("metrics end")
}

// signals handles TERM, INT, HUP and QUIT until shutdown is called.
func (o *ops) signals(shutdown func()) {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGTERM, os.Interrupt, syscall.SIGHUP, syscall.SIGQUIT)
	for s := range ch {
		switch s {
		case syscall.SIGTERM:
			o.store()
			shutdown()
			return
		case os.Interrupt:
			shutdown()
			return
		case syscall.SIGHUP:
			o.metrics()
		case syscall.SIGQUIT:
			o.offer(shutdown)
		}
	}
}

// testAppInit is the application's own start-up before it is ready, for the
// tests of the readiness gate (tests/scripts/go_handover.py): with
// HELLO_TEST_APP_INIT_MS=N the handlers wait until N ms after the start. With
// HELLO_TEST_UNGATED=1 the successor says Ready before that init instead of
// after it: the gate's mutant, which takes the connections over into a
// process that cannot answer them yet.
func testAppInit() (initDone chan struct{}, initMS int, ungated bool) {
	initMS, _ = strconv.Atoi(os.Getenv("HELLO_TEST_APP_INIT_MS"))
	if initMS <= 0 {
		return nil, 0, false
	}
	return make(chan struct{}), initMS, os.Getenv("HELLO_TEST_UNGATED") == "1"
}
