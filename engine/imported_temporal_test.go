package engine_test

import (
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/temporal"
	"github.com/retrylab/retrylab/engine/trace"
)

// The explorer reads an imported Temporal workflow through the host as it
// reads imported spans: its history translated into the fold's events.
func TestImportedEventsOfTemporal(t *testing.T) {
	h := openHost(t, nil)
	res, err := temporal.ImportFile(h.Store(), "../fixtures/temporal/order-run1.cli.json")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := h.ImportedEvents(res.Execution)
	if err != nil {
		t.Fatal(err)
	}
	tr := trace.Fold(res.Execution, evs)
	if c := tr.LastCall("5"); c == nil || len(c.Attempts) != 2 || c.Attempts[0].NotKept != 2 || c.Attempts[1].Mark() != trace.MarkOK {
		t.Errorf("call 5: %+v", c)
	}
	if _, err := h.ImportedEvents("nope"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("unknown execution: %v", err)
	}
}
