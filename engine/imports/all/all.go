// Package all assembles the sources of imported traces this build knows:
// the one place a new source (Tempo, Jaeger) is registered, in one line.
package all

import (
	"github.com/retrylab/retrylab/engine/imports"
	"github.com/retrylab/retrylab/engine/jaeger"
	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/engine/tempo"
	"github.com/retrylab/retrylab/engine/temporal"
)

// Register adds the built-in sources to r, in the order they are sniffed.
func Register(r *imports.Registry) {
	r.Register(temporal.Source{}) // tells its histories from their first bytes
	r.Register(tempo.Source())    // a top-level "batches" or "trace"
	r.Register(jaeger.Source())   // a top-level "data" or "result"
	r.Register(otlp.Source{})     // last: takes any stream (protobuf cannot be sniffed)
}

// Registry is a new registry of the built-in sources.
func Registry() *imports.Registry {
	r := imports.New()
	Register(r)
	return r
}
