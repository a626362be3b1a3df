package tui

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/room"
)

// fakeRoom is a room whose status the test sets; reads counts its reads.
type fakeRoom struct {
	mu    sync.Mutex
	st    room.Status
	err   error
	reads int
	// runs are the participants' runs by name.
	runs map[string]Source
}

func (f *fakeRoom) Participant(name string) (engine.Reader, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if src, ok := f.runs[name]; ok {
		return src, nil
	}
	return nil, fmt.Errorf("%w: %q", room.ErrNoParticipant, name)
}

func (f *fakeRoom) Status() (room.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return f.st, f.err
}

func (f *fakeRoom) set(st room.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st = st
}

// classRoom is a workshop mid-session: two ran naive (one duplicated),
// one the safe agent after naive (its past duplicate is not its latest
// run's), one killed mid-run, one has not run yet.
func classRoom() *fakeRoom {
	return &fakeRoom{st: room.Status{Participants: []room.ParticipantStatus{
		{Name: "ada", Executions: 2, Scenario: "naive", Outcome: "completed", LatestOutbox: 2, LatestDuplicates: 1, Outbox: 2, Duplicates: 1, Predictions: room.Predictions{Right: 1, Asked: 2}},
		{Name: "grace", Executions: 3, Scenario: "safe", Outcome: "completed", LatestOutbox: 1, Outbox: 5, Duplicates: 2, Predictions: room.Predictions{Right: 2, Asked: 2}},
		{Name: "linus", Executions: 1, Scenario: "invoice-crm", Outcome: "killed"},
		{Name: "margaret-hamilton-apollo", Executions: 1, Scenario: "naive", Outcome: "completed", LatestOutbox: 1, Outbox: 1, Predictions: room.Predictions{Right: 0, Asked: 1}},
		{Name: "ken"},
	}, Scenarios: []room.ScenarioTally{
		{Scenario: "crash", Participants: 1, Duplicated: 1},
		{Scenario: "invoice-crm", Participants: 1},
		{Scenario: "naive", Participants: 3, Duplicated: 2},
		{Scenario: "safe", Participants: 1},
	}, Lessons: []room.LessonTally{
		{Lesson: "naive", Asked: 3, Right: 1, Answers: map[string]int{"1": 2, "2": 1}, Actual: 2},
	}}}
}

// roomView runs the explorer hosting r at a size, presses keys once the
// room shows, and returns the final frame.
func roomView(t *testing.T, src Source, r RoomReader, w, h int, keys ...string) string {
	t.Helper()
	m := New(Options{Source: src, Now: fixedNow, Room: r, RoomEvery: time.Hour,
		RoomJoin: "retrylab join http://192.168.1.20:7420 --code K7QX-3M9P --name YOUR-NAME"})
	t.Cleanup(m.Close)
	return viewModel(t, m, w, h, "grace", keys...)
}

// fits fails the test for a frame larger than w×h.
func fits(t *testing.T, v string, w, h int) {
	t.Helper()
	lines := strings.Split(v, "\n")
	if len(lines) > h {
		t.Errorf("%d lines on a %d×%d screen:\n%s", len(lines), w, h, v)
	}
	for _, l := range lines {
		if lipgloss.Width(l) > w {
			t.Errorf("a line %d wide on a %d×%d screen: %q", lipgloss.Width(l), w, h, l)
		}
	}
}

func TestGoldenRoomAt80x24(t *testing.T) {
	t.Parallel()
	v := roomView(t, &snapshot{}, classRoom(), 80, 24)
	mustShow(t, v, "room at 80×24", "Room · 5 participants", "retrylab join http://192.168.1.20:7420 --code K7QX-3M9P --name YOUR-NAME", "ada", "2 ⚠", "1/2", "☠ killed",
		"naive: 2 of 3 sent a duplicate", "crash: 1 of 1 sent a duplicate",
		"lesson naive: 1 of 3 right; 2 said 1, 1 said 2; it was 2", "predictions: 3 of 5 right, from 3 participants")
	fits(t, v, 80, 24)
	golden.RequireEqual(t, []byte(v))
}

func TestGoldenRoomAt160x45(t *testing.T) {
	t.Parallel()
	v := roomView(t, &snapshot{}, classRoom(), 160, 45, "j")
	mustShow(t, v, "room at 160×45", "margaret-hamilton-apollo", "› grace", "invoice-crm: 0 of 1 sent a duplicate")
	fits(t, v, 160, 45)
	golden.RequireEqual(t, []byte(v))
}

// The Class grows to the lines it holds where the rows leave room (a
// lesson, four scenarios and the predictions: six), and gives way to the
// rows on a small screen (four lines at least, the rows scrolling).
func TestRoomClassGrowsWhereThereIsRoom(t *testing.T) {
	t.Parallel()
	all := []string{"lesson naive: 1 of 3 right", "crash: 1 of 1", "invoice-crm: 0 of 1", "naive: 2 of 3", "safe: 0 of 1",
		"predictions: 3 of 5 right, from 3 participants"}
	v := roomView(t, &snapshot{}, classRoom(), 120, 45)
	mustShow(t, v, "room at 120×45", all...)
	fits(t, v, 120, 45)

	// At 80×16 the five rows take what the Class cannot have: it shows
	// five of its six lines, every participant still on screen.
	v = roomView(t, &snapshot{}, classRoom(), 80, 16)
	fits(t, v, 80, 16)
	mustShow(t, v, "room at 80×16", append([]string{"› ada", "ken"}, all[:5]...)...)
	if strings.Contains(v, "predictions: ") {
		t.Errorf("at 80×16 the rows need the screen: the Class should show five lines:\n%s", v)
	}
}

func TestGoldenRoomSlideAt80x24(t *testing.T) {
	t.Parallel()
	v := roomView(t, &snapshot{}, classRoom(), 80, 24, "s")
	mustShow(t, v, "ada's slide", "a d a  ·  n a i v e", "the trace says   ✓ completed", "the outbox says  2 messages  ← duplicate",
		"1 of 2 predictions right")
	fits(t, v, 80, 24)
	golden.RequireEqual(t, []byte(v))
}

func TestGoldenRoomSlideAt160x45(t *testing.T) {
	t.Parallel()
	v := roomView(t, &snapshot{}, classRoom(), 160, 45, "j", "s")
	// grace duplicated before, in naive: her safe run's slide says its own outbox.
	mustShow(t, v, "grace's slide", "g r a c e  ·  s a f e", "the outbox says  1 message  ✓")
	fits(t, v, 160, 45)
	golden.RequireEqual(t, []byte(v))
}

// The slide of a native execution, no room: the article's naive run.
func TestGoldenSlideNaiveAt80x24(t *testing.T) {
	t.Parallel()
	v := view(t, record(t, []string{"naive", "run"}), 80, 24, "duplicate send", "s")
	mustShow(t, v, "naive slide", "n a i v e", "the trace says   ✓ completed", "the outbox says  2 messages  ← duplicate")
	fits(t, v, 80, 24)
	golden.RequireEqual(t, []byte(v))
}

// The room view is live: a participant's run that arrives shows at the
// next read, and P and esc go back and forth to the explorer.
func TestRoomViewFollowsTheRoom(t *testing.T) {
	t.Parallel()
	r := classRoom()
	m := New(Options{Source: &snapshot{}, Now: fixedNow, Room: r, RoomEvery: -1})
	t.Cleanup(m.Close)
	drive(t, m, m.Init())
	_, cmd := m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	drive(t, m, cmd)
	if !strings.Contains(m.View(), "ken") {
		t.Fatalf("the room view is not what opens:\n%s", m.View())
	}
	st := classRoom().st
	st.Participants[4] = room.ParticipantStatus{Name: "ken", Executions: 1, Scenario: "naive", Outcome: "completed", LatestOutbox: 2, LatestDuplicates: 1, Outbox: 2, Duplicates: 1}
	st.Scenarios = slices.Clone(st.Scenarios)
	st.Scenarios[2] = room.ScenarioTally{Scenario: "naive", Participants: 4, Duplicated: 3}
	r.set(st)
	_, cmd = m.Update(roomTickMsg{})
	drive(t, m, cmd)
	if v := m.View(); !strings.Contains(v, "naive: 3 of 4 sent a duplicate") {
		t.Errorf("the room view did not follow ken's run:\n%s", v)
	}
	press(t, m, "P")
	if m.room.Shown() {
		t.Fatal("P should go back to the explorer")
	}
	before := r.reads
	press(t, m, "P")
	if !m.room.Shown() || r.reads != before+1 {
		t.Errorf("P should show the room and read it once: shown %v, reads %d → %d", m.room.Shown(), before, r.reads)
	}
	press(t, m, "esc")
	if m.room.Shown() {
		t.Error("esc should go back to the explorer")
	}
}

// A room that cannot be read says so in the view, and the explorer goes on.
func TestRoomViewSaysAReadFailed(t *testing.T) {
	t.Parallel()
	r := &fakeRoom{err: errors.New("read the room: database closed")}
	m := New(Options{Source: &snapshot{}, Now: fixedNow, Room: r, RoomEvery: -1})
	t.Cleanup(m.Close)
	drive(t, m, m.Init())
	_, cmd := m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	drive(t, m, cmd)
	if v := m.View(); !strings.Contains(v, "the room cannot be read: read the room: database closed") {
		t.Errorf("a failed read should show:\n%s", v)
	}
}

// Without a room, P is neither offered nor run.
func TestNoRoomNoRoomKey(t *testing.T) {
	t.Parallel()
	m := open(t, record(t, []string{"naive", "run"}), 80, 24)
	press(t, m, "P")
	if m.room.Shown() {
		t.Error("P opened a room the explorer does not host")
	}
	for _, col := range m.helpColumns() {
		for _, b := range col {
			if b.Help().Key == "P" {
				t.Error("the help offers P without a room")
			}
		}
	}
}

// The room view's keys reach the room and the source only through the
// commands Update returns, as every other key of the explorer.
func TestRoomKeysDoNoIO(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{160, 45}, {80, 24}} {
		src := &watchedSource{snapshot: record(t, []string{"naive", "run"})}
		r := classRoom()
		m := New(Options{Source: src, Now: fixedNow, Room: r, RoomEvery: -1})
		t.Cleanup(m.Close)
		drive(t, m, m.Init())
		_, cmd := m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		drive(t, m, cmd)
		for _, k := range []string{"j", "j", "s", "j", "s", "k", "P", "s", "esc", "P", "G", "s", "esc", "esc", "s", "s", "P"} {
			src.watch(true)
			before := r.reads
			_, cmd := m.Update(keyMsg(k))
			_ = m.View()
			src.watch(false)
			if len(src.caught) > 0 || r.reads != before {
				t.Fatalf("%dx%d: key %q read in Update or View: source %v, room reads %d → %d", size[0], size[1], k, src.caught, before, r.reads)
			}
			drive(t, m, cmd)
		}
	}
}

// enter opens the selected participant's runs as the room holds them: the
// trace beside the outbox, with its duplicate; P goes back to the room
// and the explorer's own runs.
func TestEnterOpensAParticipantsRuns(t *testing.T) {
	t.Parallel()
	r := classRoom()
	r.runs = map[string]Source{"ada": record(t, []string{"naive", "run"})}
	own := record(t, []string{"safe", "run"})
	m := New(Options{Source: own, Now: fixedNow, Room: r, RoomEvery: -1, Title: "room.db"})
	t.Cleanup(m.Close)
	drive(t, m, m.Init())
	_, cmd := m.Update(tea.WindowSizeMsg{Width: 160, Height: 45})
	drive(t, m, cmd)
	press(t, m, "enter")
	v := m.View()
	if m.room.Shown() {
		t.Fatalf("enter should leave the room view for ada's runs:\n%s", v)
	}
	mustShow(t, v, "ada's runs", "ada's runs, as the room holds them", "Trace  ada · exec_7K2Q · naive", "2 messages ← duplicate send", "◆ timeout")
	if strings.Contains(v, "exec_01H8") {
		t.Errorf("the explorer's own run shows among ada's:\n%s", v)
	}
	press(t, m, "P")
	if !m.room.Shown() {
		t.Fatal("P should go back to the room")
	}
	press(t, m, "P")
	if v := m.View(); !strings.Contains(v, "exec_01H8") || strings.Contains(v, "exec_7K2Q") || strings.Contains(v, "Trace  ada") {
		t.Errorf("after the room, the explorer's own runs should be back:\n%s", v)
	}
	// A participant whose runs cannot be opened: said, and the room stays.
	press(t, m, "P", "j", "enter")
	if !m.room.Shown() || !strings.Contains(m.status.text, "no participant") {
		t.Errorf("grace's runs cannot be opened here: shown %v, flash %q", m.room.Shown(), m.status.text)
	}
}

// The room lists its participants by their last activity, the latest
// first, the selection staying on its participant as they reorder; under
// them, the class's tally of the lesson at hand: the selected
// participant's last, else the last the class reached.
func TestRoomOrdersByActivityAndTalliesTheLesson(t *testing.T) {
	t.Parallel()
	at := func(min int) time.Time { return fixedNow().Add(time.Duration(min) * time.Minute) }
	naive := room.LessonTally{Lesson: "naive", Asked: 3, Right: 2, Answers: map[string]int{"1": 1, "2": 2}, Actual: 2}
	crash := room.LessonTally{Lesson: "crash", Asked: 1, Right: 0, Answers: map[string]int{"1": 1}, Actual: 2}
	r := &fakeRoom{st: room.Status{Participants: []room.ParticipantStatus{
		{Name: "ada", Lesson: "crash", Active: at(3)},
		{Name: "grace", Lesson: "naive", Active: at(5)},
		{Name: "ken", Lesson: "naive", Active: at(1)},
	}, Lessons: []room.LessonTally{naive, crash}}}
	m := New(Options{Source: &snapshot{}, Now: fixedNow, Room: r, RoomEvery: -1})
	t.Cleanup(m.Close)
	drive(t, m, m.Init())
	_, cmd := m.Update(tea.WindowSizeMsg{Width: 100, Height: 24})
	drive(t, m, cmd)
	order := func() string {
		var names []string
		for _, p := range m.room.st.Participants {
			names = append(names, p.Name)
		}
		return strings.Join(names, " ")
	}
	if got := order(); got != "grace ada ken" {
		t.Fatalf("the room's order: %s, want grace ada ken (the latest active first)", got)
	}
	mustShow(t, m.View(), "grace's lesson", "lesson naive: 2 of 3 right; 1 said 1, 2 said 2; it was 2")
	press(t, m, "j") // ada, at crash
	mustShow(t, m.View(), "ada's lesson", "lesson crash: 0 of 1 right; 1 said 1; it was 2")

	// ken runs again: he goes to the top, the selection stays on ada.
	st := r.st
	st.Participants = slices.Clone(st.Participants)
	st.Participants[2].Active = at(9)
	r.set(st)
	_, cmd = m.Update(roomTickMsg{})
	drive(t, m, cmd)
	if got := order(); got != "ken grace ada" {
		t.Errorf("after ken's run: %s, want ken grace ada", got)
	}
	if p := m.room.selected(); p == nil || p.Name != "ada" {
		t.Errorf("the selection moved off ada: %+v", p)
	}
}

// A participant who left says so in its row: its scenario stays, its
// outcome is that it left.
func TestRoomRowSaysLeft(t *testing.T) {
	t.Parallel()
	r := &fakeRoom{st: room.Status{Participants: []room.ParticipantStatus{
		{Name: "ada", Executions: 1, Scenario: "naive", Outcome: "completed", LatestOutbox: 2, LatestDuplicates: 1, Left: true},
		{Name: "grace", Executions: 1, Scenario: "safe", Outcome: "completed", LatestOutbox: 1},
	}}}
	v := roomView(t, &snapshot{}, r, 80, 24)
	fits(t, v, 80, 24)
	for _, l := range strings.Split(v, "\n") {
		if strings.Contains(l, "ada") && (!strings.Contains(l, "naive") || !strings.Contains(l, "⏏ left")) {
			t.Errorf("ada's row should say she left: %q", l)
		}
		if strings.Contains(l, "grace") && strings.Contains(l, "left") {
			t.Errorf("grace's row says she left: %q", l)
		}
	}
}

// A room that could not come back at its last address says so in the room
// view, under the join line, where the teacher looks (the line the command
// printed before the screen opened is covered at once); the notice stays
// until a participant is active again after the room opened (one joined
// at the new address), and not after.
func TestRoomViewSaysTheRoomMoved(t *testing.T) {
	t.Parallel()
	const notice = "⚠ moved from 127.0.0.1:42907 (taken): join again with the line above"
	joined := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	r := &fakeRoom{st: room.Status{Participants: []room.ParticipantStatus{
		{Name: "ada", Executions: 1, Scenario: "naive", Outcome: "completed", LatestOutbox: 2, LatestDuplicates: 1, Active: joined},
		{Name: "grace", Active: joined.Add(-time.Minute)},
	}}}
	m := New(Options{Source: &snapshot{}, Now: fixedNow, Room: r, RoomEvery: -1,
		RoomJoin:      "retrylab join http://127.0.0.1:39739 --code K7QX-3M9P --name YOUR-NAME",
		RoomMovedFrom: "127.0.0.1:42907"})
	t.Cleanup(m.Close)
	v := viewModel(t, m, 80, 24, "grace")
	mustShow(t, v, "a moved room at 80×24", "retrylab join http://127.0.0.1:39739 --code K7QX-3M9P --name YOUR-NAME", notice, "Room · 2 participants")
	fits(t, v, 80, 24)
	if i, j := strings.Index(v, "retrylab join"), strings.Index(v, notice); i < 0 || j < i {
		t.Errorf("the notice is not under the join line:\n%s", v)
	}

	// A read with nobody active since: the notice stays.
	_, cmd := m.Update(roomTickMsg{})
	drive(t, m, cmd)
	mustShow(t, m.View(), "the room read again", notice)

	// grace joins again at the new address: the notice goes.
	st := r.st
	st.Participants = slices.Clone(st.Participants)
	st.Participants[1].Active = joined.Add(time.Minute)
	r.set(st)
	_, cmd = m.Update(roomTickMsg{})
	drive(t, m, cmd)
	if v := m.View(); strings.Contains(v, "moved from") {
		t.Errorf("the notice stayed after grace joined again:\n%s", v)
	}
}
