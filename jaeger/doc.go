// Package jaeger tests retrylab against a real Jaeger: Jaeger v1.76.0's
// own binary (github.com/jaegertracing/jaeger/cmd/jaeger, a tool of this
// module, built with Jaeger's own dependency versions), all-in-one with
// in-memory storage on loopback, fed the article's window over OTLP with
// the OpenTelemetry Go SDK, and read back by retrylab's binary through
// Jaeger's query API as a user runs it: import of a trace's URL (API v1
// and v3), import of a search by service, audit.
//
// It lives in a module of its own, as temporal/ does, so that the main
// module never builds Jaeger nor requires it. The first `go test ./...`
// here builds Jaeger (many minutes on two cores); later ones take it
// from the build cache.
package jaeger
