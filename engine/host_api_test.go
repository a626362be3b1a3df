package engine_test

import (
	"reflect"
	"testing"

	"github.com/retrylab/retrylab/engine"
)

// maxHostMethods bounds what Host exports: lifecycle, runs, the worker
// runtime and queries. What exists for other roles lives in the values it
// hands out (Providers, Faults, Traces, Runtime) or in engine/control, the
// cross-process API.
const maxHostMethods = 30

func TestHostExportsAtMost30Methods(t *testing.T) {
	typ := reflect.TypeFor[*engine.Host]()
	if n := typ.NumMethod(); n > maxHostMethods {
		names := make([]string, n)
		for i := range n {
			names[i] = typ.Method(i).Name
		}
		t.Fatalf("*engine.Host exports %d methods, want at most %d: %v", n, maxHostMethods, names)
	}
}
