package main

// hello --adaptive: weir-demo's operator contract for the adaptive pair
// (docs/adaptive.md). An epoll and an io_uring engine share the port, weir's
// controller switches them by the load, SIGWINCH forces a switch; each
// switch prints "switched to BACKEND" (the controller's preceded by
// "controller: REASON"); SIGHUP prints the pair's metrics between "metrics
// begin" and "metrics end" as weir-demo does: the active engine's under
// weir's names, "adaptive.active", "adaptive.switches",
// "adaptive.switch_failures", then the standby's prefixed "standby." (so
// bench/switch_dip.py reads both ledgers). Kept apart from main.go so the
// other flags grow there without touching this.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	weir "github.com/weir-http/weir/go-binding"
)

var adaptive = flag.Bool("adaptive", false, "a standby engine on the other backend shares the port; weir's controller switches by the load, SIGWINCH forces a switch")

func backendName(b weir.Backend) string {
	if b == weir.BackendURing {
		return "uring"
	}
	return "epoll"
}

// runAdaptive serves cfg as an adaptive pair until SIGTERM or SIGINT.
func runAdaptive(cfg weir.Config) error {
	var a *weir.Adaptive
	var out sync.Mutex // a switch's lines and SIGHUP's block never interleave
	ac := weir.AdaptiveConfig{OnSwitch: func(to weir.Backend, byController bool) {
		out.Lock()
		defer out.Unlock()
		if byController {
			fmt.Printf("controller: %s\n", a.Metrics().LastReason)
		}
		fmt.Printf("switched to %s\n", backendName(to))
	}}
	a, err := weir.NewAdaptive(cfg, ac)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	go func() {
		for range winch {
			if err := a.Switch(); err != nil {
				out.Lock()
				fmt.Printf("switch failed: %v\n", err)
				out.Unlock()
			}
		}
	}()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			m := a.Metrics()
			out.Lock()
			fmt.Println("metrics begin")
			_ = m.Active.WriteText(os.Stdout, "")
			fmt.Printf("adaptive.active %s\nadaptive.switches %d\nadaptive.switch_failures %d\n",
				backendName(m.ActiveBackend), m.Switches, m.SwitchFailures)
			_ = m.Standby.WriteText(os.Stdout, "standby.")
			fmt.Println("metrics end")
			out.Unlock()
		}
	}()
	return a.Listen(ctx)
}
