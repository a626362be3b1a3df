package history

import "testing"

// MaybeImported answers as the decoded record would: true for an imported
// execution's record, false for one retrylab ran, whatever its text says.
func TestMaybeImported(t *testing.T) {
	for _, x := range []Execution{
		{ID: "exec_A", Scenario: "naive", Error: `"imported": "no"`},
		{ID: "otlp-1", Scenario: "agent", Imported: "otlp"},
		{ID: "temporal-1", Scenario: "OrderWorkflow", Imported: "temporal", Source: "order.json"},
	} {
		rec, err := EncodeExecution(x)
		if err != nil {
			t.Fatal(err)
		}
		if got := MaybeImported(rec); got != (x.Imported != "") {
			t.Errorf("%s: MaybeImported %v for %s", x.ID, got, rec)
		}
	}
}
