module github.com/weir-http/weir/examples/go

go 1.24

require github.com/weir-http/weir/go-binding v0.0.0

replace github.com/weir-http/weir/go-binding => ../../go-binding
