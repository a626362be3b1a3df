package tui

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/engine/gen"
	"github.com/retrylab/retrylab/store"
)

// TestTimelineCoversTheWholeLongHistory: the trace of an execution of
// 10 000 attempts holds its first page only, and the timeline (w) of it
// reads the rest in a command: it lays out every attempt, to the
// execution's end, as one read of the whole history does.
func TestTimelineCoversTheWholeLongHistory(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "gen.db")
	db, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := gen.Generate(context.Background(), db, gen.Options{Executions: 1, AttemptsPerStep: 10000, Seed: 1})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if st.Attempts < 10000 || st.Events <= 2*tracePage {
		t.Fatalf("generated %d attempts in %d events; the test needs 10 000 attempts over several pages", st.Attempts, st.Events)
	}
	h := openHost(t, path)
	defer h.Close()
	m, r, _ := openExplorer(t, h, 160, 48)
	defer m.Close()
	if !m.trace.Partial() {
		t.Fatalf("the trace holds %d events of %d and says it is whole", m.trace.Held(), st.Events)
	}
	r.send(benchKey("w"))
	if !m.timeline.Shown() {
		t.Fatal("w does not open the timeline")
	}
	if v := m.View(); !strings.Contains(v, "reading the rest") {
		t.Errorf("the timeline of the first page does not say more comes:\n%s", v)
	}
	r.runUntil(t, "the whole history laid out", func() bool { return !m.timeline.reading })

	all, err := h.Events(m.selID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := m.trace.Exec()
	want := buildTimeline(newTraceView(x, all))
	got := m.timeline.layout()
	if len(got.Attempts) != len(want.Attempts) || int64(len(got.Attempts)) != st.Attempts || !got.End.Equal(want.End) {
		t.Fatalf("the timeline lays out %d attempts to %s; the whole history has %d (generated %d) to %s",
			len(got.Attempts), got.End, len(want.Attempts), st.Attempts, want.End)
	}
	v := m.View()
	if strings.Contains(v, "reading the rest") {
		t.Errorf("the whole timeline still says more comes:\n%s", v)
	}
	mustShow(t, v, "the whole timeline", fmt.Sprintf("attempt 1/%d", len(want.Attempts)))
	if m.trace.Held() != tracePage {
		t.Errorf("opening the timeline changed the trace pane's pages: it holds %d events", m.trace.Held())
	}
}

// A history longer than the timeline reads (timelineMaxEvents) is laid
// out to there, and the title says more follows; a read for another
// execution, or once the whole came, changes nothing.
func TestTimelineSaysWhereItsReadStopped(t *testing.T) {
	t.Parallel()
	m := open(t, record(t, []string{"naive", "run"}), 160, 45)
	tv := m.trace.shown()
	p := m.timeline
	p.Open(tv, true)
	mustShow(t, p.View(), "the first pages' timeline", "reading the rest")
	p.Whole(wholeTimelineMsg{id: "exec_other", tv: tv, tl: buildTimeline(tv)})
	mustShow(t, p.View(), "after another execution's read", "reading the rest")
	p.Whole(wholeTimelineMsg{id: tv.exec.ID, tv: tv, tl: buildTimeline(tv), cut: true})
	v := p.View()
	mustShow(t, v, "a timeline cut", fmt.Sprintf("first %d events of more", tv.t.Events))
	if strings.Contains(v, "reading the rest") {
		t.Errorf("the cut timeline still says it reads:\n%s", v)
	}
}
