package tui

import (
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/world"
)

// watchedSource is a snapshot that notes every call made while watching
// is on: Update and View run with it on, commands with it off.
type watchedSource struct {
	*snapshot
	mu       sync.Mutex
	watching bool
	caught   []string
}

func (w *watchedSource) note(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watching {
		w.caught = append(w.caught, name)
	}
}

func (w *watchedSource) watch(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watching = on
}

func (w *watchedSource) Execution(id string) (history.Execution, error) {
	w.note("Execution")
	return w.snapshot.Execution(id)
}
func (w *watchedSource) Executions(skip, limit int) ([]history.Execution, int, error) {
	w.note("Executions")
	return w.snapshot.Executions(skip, limit)
}
func (w *watchedSource) Events(id string, from uint64, limit int) ([]history.Event, error) {
	w.note("Events")
	return w.snapshot.Events(id, from, limit)
}
func (w *watchedSource) MessagesFor(id string) ([]world.Message, error) {
	w.note("MessagesFor")
	return w.snapshot.MessagesFor(id)
}
func (w *watchedSource) RecentMessages(limit int) ([]world.Message, int, error) {
	w.note("RecentMessages")
	return w.snapshot.RecentMessages(limit)
}
func (w *watchedSource) Records() ([]world.Record, error) {
	w.note("Records")
	return w.snapshot.Records()
}
func (w *watchedSource) Subscribe(n int) (<-chan notice.Notice, func()) {
	w.note("Subscribe")
	return w.snapshot.Subscribe(n)
}
func (w *watchedSource) Scenarios() ([]*scenario.Scenario, error) {
	w.note("Scenarios")
	return w.snapshot.Scenarios()
}
func (w *watchedSource) Start(name string, o engine.RunOptions) (*engine.Run, error) {
	w.note("Start")
	return w.snapshot.Start(name, o)
}
func (w *watchedSource) Resume(id string) (*engine.Run, error) {
	w.note("Resume")
	return w.snapshot.Resume(id)
}
func (w *watchedSource) Kill(id string) error { w.note("Kill"); return w.snapshot.Kill(id) }
func (w *watchedSource) Arm(p fault.Point)    { w.note("Arm"); w.snapshot.Arm(p) }
func (w *watchedSource) Disarm()              { w.note("Disarm"); w.snapshot.Disarm() }
func (w *watchedSource) Armed() []fault.Point { w.note("Armed"); return w.snapshot.Armed() }
func (w *watchedSource) DeleteJournal(id, step string) error {
	w.note("DeleteJournal")
	return w.snapshot.DeleteJournal(id, step)
}
func (w *watchedSource) AdvanceClock(d time.Duration) error {
	w.note("AdvanceClock")
	return w.snapshot.AdvanceClock(d)
}
func (w *watchedSource) WorldOffset() time.Duration {
	w.note("WorldOffset")
	return w.snapshot.WorldOffset()
}
func (w *watchedSource) ResetWorld() error { w.note("ResetWorld"); return w.snapshot.ResetWorld() }
func (w *watchedSource) Running() []string { w.note("Running"); return w.snapshot.Running() }
func (w *watchedSource) Reset() error      { w.note("Reset"); return w.snapshot.Reset() }

// TestUpdateAndViewDoNoIO: every key of the explorer, in every pane and
// box, reaches the source only through the commands Update returns: not
// in Update, not in View (the package doc's promise).
func TestUpdateAndViewDoNoIO(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{160, 44}, {80, 24}} {
		src := &watchedSource{snapshot: record(t, []string{"naive", "run"}, []string{"safe", "run", "run"})}
		fl := newFakeLessons(t)
		openRoom, _ := lessonRoom(t, fl)
		m := New(Options{Source: src, Now: fixedNow, OpenLessons: openRoom})
		t.Cleanup(m.Close)
		drive(t, m, m.Init())
		_, cmd := m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		drive(t, m, cmd)
		keys := []string{
			"j", "k", "tab", "j", "enter", "l", "h", "f", "f", "tab", "j", "o", "j", "o", "tab", "j", "shift+tab",
			"shift+tab", "shift+tab", "j", "m", "k", "=", "j", "esc",
			"t", "T", "c", "C", "esc", "x", "r", "K", "J", "A",
			"R", "n", "R", "y", "D", "y", "E", "j",
			"/", "s", "a", "enter", "/", "esc", "esc",
			"n", "j", "esc", "n", "enter",
			"?", "j", "k", "x",
			"L", "1", "enter", "n", "enter", "esc",
			"q",
		}
		for _, k := range keys {
			src.watch(true)
			_, cmd := m.Update(keyMsg(k))
			_ = m.View()
			src.watch(false)
			if len(src.caught) > 0 {
				t.Fatalf("%dx%d: key %q reached the source in Update or View: %v", size[0], size[1], k, src.caught)
			}
			drive(t, m, cmd)
		}
	}
}
