package room

import (
	"slices"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/history"
)

// A participant's runs in the room list as the explorer lists a host's:
// the latest activity first, so a resumed execution comes back to the top
// though it started first; then the latest started; then by id.
func TestParticipantRunsListByLastActivity(t *testing.T) {
	t.Parallel()
	at := func(s int) time.Time { return time.Date(2026, 12, 2, 9, 0, s, 0, time.UTC) }
	xs := []history.Execution{
		{ID: "exec_A", Started: at(0), Updated: at(50)}, // started first, resumed last
		{ID: "exec_B", Started: at(10), Updated: at(20)},
		{ID: "exec_C", Started: at(30), Updated: at(40)},
		{ID: "exec_D", Started: at(35), Updated: at(40)}, // as recent as C, started later
		{ID: "exec_E", Started: at(35), Updated: at(40)}, // the same times as D
	}
	byLastActivity(xs)
	var got []string
	for _, x := range xs {
		got = append(got, x.ID)
	}
	if want := []string{"exec_A", "exec_E", "exec_D", "exec_C", "exec_B"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}
