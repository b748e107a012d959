module github.com/weir-http/weir/go-binding/celeris

// celeris v1.5.8 is the newest release we could read, and its engine package
// is public (github.com/goceleris/celeris/engine). It declares go 1.26.4, so
// this module must too; the binding itself stays at go 1.24.
go 1.26.4

require (
	github.com/goceleris/celeris v1.5.8
	github.com/weir-http/weir/go-binding v0.0.0
)

require (
	golang.org/x/net v0.56.0 // indirect
	golang.org/x/sys v0.46.0 // indirect
	golang.org/x/text v0.38.0 // indirect
)

replace github.com/weir-http/weir/go-binding => ../
