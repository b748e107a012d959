module github.com/weir-http/weir/tests/support/h2client

go 1.25.0

require golang.org/x/net v0.56.0

require golang.org/x/text v0.38.0 // indirect
