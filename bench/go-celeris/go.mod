module github.com/weir-http/weir/bench/go-celeris

// celeris v1.5.8 declares go 1.26.4, so this module must too. scripts/bench-go
// builds it with -modfile: a scratch copy of this file whose replace points
// at the shared celeris source snapshot (the module proxy here refuses it).
go 1.26.4

require github.com/goceleris/celeris v1.5.8

require (
	golang.org/x/net v0.56.0 // indirect
	golang.org/x/sys v0.46.0 // indirect
	golang.org/x/text v0.38.0 // indirect
)
