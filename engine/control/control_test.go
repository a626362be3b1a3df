package control_test

import (
	"os"
	"testing"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/agent"
	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/internal/testrun"
)

func TestMain(m *testing.M) {
	agent.MainForTests()
	testrun.WaitBound(8)
	os.Exit(m.Run())
}

// openHostAt opens a host on path that serves the control API, checked and
// closed when the test ends.
func openHostAt(t *testing.T, path string, clock engine.Clock) *control.Server {
	t.Helper()
	s, err := control.Open(engine.Config{DBPath: path, Scenarios: fixtures.FS, Clock: clock})
	if err != nil {
		t.Fatalf("open host: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Store().Check(); err != nil {
			t.Errorf("database check: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("close host: %v", err)
		}
	})
	return s
}
