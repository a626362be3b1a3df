package agent

import (
	"os/exec"
	"strings"
	"testing"
)

// The worker talks to the simulated providers through engine/attrib, the
// protocol between them, not by importing them: a worker binary links no
// provider, and the providers may change without the worker.
func TestWorkerDoesNotImportTheWorld(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the imports with")
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	const attrib, world = "github.com/retrylab/retrylab/engine/attrib", "github.com/retrylab/retrylab/engine/world"
	var hasAttrib bool
	for _, d := range deps {
		if d == world {
			t.Errorf("engine/agent depends on %s", world)
		}
		hasAttrib = hasAttrib || d == attrib
	}
	if !hasAttrib {
		t.Errorf("engine/agent does not depend on %s; the list is\n%s", attrib, out)
	}
}
