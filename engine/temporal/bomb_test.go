package temporal_test

import (
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/temporal"
)

// temporalBomb is a history whose first event's input is a payload in
// Temporal's JSON shorthand nested levels deep.
func temporalBomb(levels int) []byte {
	return []byte(`{"events":[{"eventId":"1","eventTime":"2026-01-01T00:00:00Z","eventType":"EVENT_TYPE_WORKFLOW_EXECUTION_STARTED",` +
		`"workflowExecutionStartedEventAttributes":{"workflowType":{"name":"w"},"input":{"payloads":[` +
		strings.Repeat(`{"a":`, levels) + "1" + strings.Repeat("}", levels) + `]}}}]}`)
}

// TestDecodeRefusesNestingBomb: a million levels is one line of error, not
// a stack overflow; a hundred still decode.
func TestDecodeRefusesNestingBomb(t *testing.T) {
	_, _, err := temporal.Decode(temporalBomb(1_000_000))
	if err == nil || !strings.HasPrefix(err.Error(), "JSON nested deeper than 100 levels (at byte ") {
		t.Fatalf("Decode(bomb) = %v", err)
	}
	if _, _, err := temporal.Decode(temporalBomb(90)); err != nil {
		t.Fatalf("Decode(90 levels) = %v", err)
	}
}
