module github.com/weir-http/weir/go-binding/celeris

// celeris v1.5.8 (the last release line with a public engine package)
// declares go 1.26.4, so this module must too; the binding itself stays at 1.24.
go 1.26.4

require (
	github.com/goceleris/celeris v1.5.8
	github.com/weir-http/weir/go-binding v0.0.0
)

replace github.com/weir-http/weir/go-binding => ../
