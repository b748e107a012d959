module github.com/weir-http/weir/go-binding

go 1.24
