package weir

import (
	"context"
	"os"
	"os/signal"
	"sync"
)

// OnSignal offers the engine each time one of sigs arrives (weir-demo and
// examples/go/hello use SIGQUIT; tableflip's examples SIGHUP) and passes each
// outcome to report (nil: ignored): nil once a successor holds everything
// (Exit is closed and the watch ends), else the failure, after which the
// engine serves on and the next signal offers again. A signal that comes
// while an offer runs is reported as ErrUpgradeBusy. It returns at once;
// the watch ends when ctx does or stop is called, and stop waits for an
// offer under way (which ctx's end withdraws).
func (up *Upgrader) OnSignal(ctx context.Context, report func(UpgradeStats, error), sigs ...os.Signal) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	ctx, cancel := context.WithCancel(ctx)
	var offers sync.WaitGroup
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer signal.Stop(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-up.exit:
				return
			case <-ch:
				offers.Add(1)
				go func() {
					defer offers.Done()
					st, err := up.Upgrade(ctx)
					if report != nil {
						report(st, err)
					}
				}()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			offers.Wait()
		})
	}
}
