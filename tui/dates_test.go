package tui

import (
	"strings"
	"testing"
	"time"
)

// An execution that did not start today (by the explorer's clock) is
// listed with its date, and the Detail's times of it carry their date too;
// today's keep their time of day alone.
func TestListAndDetailDateWhatIsNotToday(t *testing.T) {
	t.Parallel()
	snap := article(t)
	old := &snap.execs[len(snap.execs)-1] // exec_7K2Q, the naive run
	shift := time.Date(2025, 3, 14, 9, 2, 11, 0, time.UTC).Sub(old.Started)
	old.Started, old.Updated = old.Started.Add(shift), old.Updated.Add(shift)
	evs := append(snap.events[old.ID][:0:0], snap.events[old.ID]...)
	for i := range evs {
		evs[i].Time = evs[i].Time.Add(shift)
	}
	snap.events[old.ID] = evs

	m := open(t, snap, 160, 45)
	v := m.View()
	mustShow(t, v, "the list", "journal  09:03:00", "none  2025-03-14 09:02")
	if strings.Contains(v, "2026-06-30") {
		t.Errorf("today's executions are dated:\n%s", v)
	}
	mustShow(t, v, "today's detail", "ExecutionCompleted at 09:03:54.800")

	press(t, m, "shift+tab", "G", "tab", "G")
	if m.selID != old.ID {
		t.Fatalf("selected %s, want %s", m.selID, old.ID)
	}
	mustShow(t, m.View(), "the old execution's detail", "ExecutionCompleted at 2025-03-14 09:02:")
}

func TestListTime(t *testing.T) {
	t.Parallel()
	today := time.Date(2026, 6, 30, 18, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		started time.Time
		want    string
	}{
		{time.Date(2026, 6, 30, 9, 2, 11, 0, time.UTC), "09:02:11"},
		{time.Date(2026, 6, 29, 23, 59, 59, 0, time.UTC), "2026-06-29 23:59"},
		{time.Date(2025, 3, 14, 9, 2, 11, 0, time.UTC), "2025-03-14 09:02"},
	} {
		if got := listTime(c.started, today); got != c.want {
			t.Errorf("listTime(%s) = %q, want %q", c.started, got, c.want)
		}
	}
	// Started 23:30 UTC on the 29th is the 30th at 01:30 where the clock
	// is two hours ahead: today, there.
	east := time.FixedZone("UTC+2", 2*60*60)
	if got := listTime(time.Date(2026, 6, 29, 23, 30, 0, 0, time.UTC), time.Date(2026, 6, 30, 9, 0, 0, 0, east)); got != "23:30:00" {
		t.Errorf("an execution of today in the clock's zone is dated: %q", got)
	}
	if got := listTime(time.Date(2025, 3, 14, 9, 2, 11, 0, time.UTC), time.Time{}); got != "09:02:11" {
		t.Errorf("with no clock: %q", got)
	}
}
