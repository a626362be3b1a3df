package lesson

import (
	"errors"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/fixtures"
)

// The handout's room part: one row per participant and the class's sum,
// names escaped for the table; a room that did not answer is said, not
// left out.
func TestWriteHandoutTally(t *testing.T) {
	path, err := Path(scenario.NewCatalog(fixtures.FS))
	if err != nil {
		t.Fatal(err)
	}
	h := SessionHandout{Path: path, Progress: State{Done: []Answer{{Scenario: "naive", Predicted: -1, Actual: 2}}},
		Tally: &Tally{Room: "http://127.0.0.1:7420", Participants: []TallyRow{
			{Name: "ada", Right: 3, Asked: 4, Executions: 5, DeliveredMail: 6, Duplicates: 1, LastScenario: "safe", LastOutcome: "completed"},
			{Name: "b|ob", Right: 1, Asked: 2},
		},
			Lessons: map[string]string{"naive": "naive: 1 of 2 right; 1 said 1, 1 said 2; it was 2"}, Order: []string{"naive"},
		}}
	var b strings.Builder
	if err := WriteHandout(&b, h); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"1 of ", " lessons done, 0 predicted right.",
		"- predicted: none\n- outcome: 2 messages in the outbox · no prediction",
		"Room http://127.0.0.1:7420: 2 participant(s).",
		"| ada | 3 of 4 | 5 | 6 | 1 | safe (completed) |",
		"| b\\|ob | 1 of 2 | 0 | 0 | 0 |  |",
		"| **the class** | 4 of 6 |",
		"- outcome: 2 messages in the outbox · no prediction\n- the class: naive: 1 of 2 right; 1 said 1, 1 said 2; it was 2\n",
		"Each lesson, as the class predicted it:\n\n- naive: 1 of 2 right; 1 said 1, 1 said 2; it was 2\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the handout lacks %q:\n%s", want, md)
		}
	}
	b.Reset()
	h.Tally, h.TallyErr = nil, errors.New("the room at http://127.0.0.1:7420 did not answer")
	if err := WriteHandout(&b, h); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "## The room\n\nNo tally: the room at http://127.0.0.1:7420 did not answer") {
		t.Errorf("a room that did not answer:\n%s", b.String())
	}
}
