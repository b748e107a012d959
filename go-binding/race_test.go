//go:build race

package weir

// raceEnabled: the race detector's sync.Pool drops a quarter of what is put
// back, at random, so allocation counts under -race measure the detector;
// the allocation rules run in go_binding.sh's plain (cgocheck2) pass.
const raceEnabled = true
