//go:build !race

package weirceleris

// ioRelease: see race.go; nothing to tell outside race builds.
func ioRelease() {}
