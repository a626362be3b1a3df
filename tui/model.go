package tui

import (
	"fmt"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/notice"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/engine/world"
)

// Minimum terminal size the explorer draws in.
const (
	MinWidth  = 60
	MinHeight = 16
	// wideWidth is where the panes stop being tabs and become columns.
	wideWidth = 110
	// maxTraceEvents bounds how much of one history the trace holds.
	maxTraceEvents = 50000
	// tracePage is how many events a trace reads at a time: the first page
	// when an execution is selected, one more whenever the selection comes
	// near the end of what is loaded, up to maxTraceEvents.
	tracePage = 4000
	// outboxWindow is how many recent messages the outbox pane reads.
	outboxWindow = 200
	// crmWindow is how many CRM rows the CRM tab reads at most.
	crmWindow = 1000
)

// Options configure the explorer.
type Options struct {
	Source Source
	// Now is the explorer's clock (durations of running executions).
	Now func() time.Time
	// Run starts this scenario as soon as the explorer opens.
	Run string
	// HighContrast picks the projector theme.
	HighContrast bool
	// Title names the database in the status bar.
	Title string
	// OpenLessons opens lesson mode's own database (L); nil turns lesson
	// mode off. It is called once, off the UI goroutine.
	OpenLessons func() (*LessonRoom, error)
	// Lesson opens the explorer in lesson mode.
	Lesson bool
	// Presenter spaces the lesson text out for a projector.
	Presenter bool
	// FlashFor is how long a status message stays in the footer; zero
	// keeps it until the next one. DefaultFlashFor suits people.
	FlashFor time.Duration
	// NoticeWindow is how long the explorer gathers live notices after
	// the first of a burst before it refreshes, so a burst costs one
	// refresh; zero means DefaultNoticeWindow. A negative window takes
	// only the notices already waiting: for a source whose notices come
	// batched already (a Temporal cluster's follower sends one per
	// committed batch), so each shows as soon as it comes.
	NoticeWindow time.Duration
	// Room is the workshop room this explorer hosts: the explorer opens
	// in its room view (P); nil: no room.
	Room RoomReader
	// RoomEvery is how often the room view reads the room; zero means
	// DefaultRoomEvery, a negative period reads it only as the view opens.
	RoomEvery time.Duration
	// RoomJoin is the line participants type to join the room, which the
	// room view shows.
	RoomJoin string
	// RoomMovedFrom is the room's last address when it could not come
	// back there (taken) and listens on another, so participants must
	// join again with RoomJoin: the room view says so until one is active
	// again. Empty: the room is where it was.
	RoomMovedFrom string
}

// DefaultNoticeWindow gathers the live notices of one frame.
const DefaultNoticeWindow = 16 * time.Millisecond

// MaxNoticeWindow is the longest the notice window grows to while notices
// never stop (a receiver storing spans, a room taking 40 participants'
// runs): the window doubles each time the next notice comes within it, and
// falls back to NoticeWindow after a quiet one. A steady stream then costs
// at most about eight refreshes a second instead of one a frame, leaving
// the screen's goroutine and the machine free for the keys; a lone burst
// still shows within a frame.
const MaxNoticeWindow = 128 * time.Millisecond

type pane int

const (
	paneExecs pane = iota
	paneTrace
	paneOutbox
	paneDetail
	paneCount
)

var paneNames = [paneCount]string{"Executions", "Trace", "Outbox", "Detail"}

// Model is the explorer's state. All of it changes only in Update. It
// holds the source and the components; each component owns its state,
// and the Model reads and sets it through their methods.
type Model struct {
	// Context is the theme, keymap, size, focus and the source's roles
	// every component shares.
	*Context
	src Source
	now func() time.Time

	// execs is the executions pane, filter its filter box.
	execs  *execsPane
	filter *filterBox

	// selID is the execution selected, whose trace and deliveries show.
	selID string
	// trace is the trace pane; detail describes its selection.
	trace  *tracePane
	detail *detailPane

	// outbox is the outbox and CRM pane.
	outbox *outboxPane

	// cmp is the comparison of two executions (m, =): tui/diff.go.
	cmp *comparePane
	// timeline is the selected execution on one time axis (w): tui/timeline.go.
	timeline *timelinePane

	// picker is the scenario picker and the catalogue it picks from.
	picker *scenarioPicker
	help   *helpPage
	lesson *lessonPane
	// projector is the workshop room's view (P) and the slide view (s).
	projector
	// msgs is every status message shown, whole (M).
	msgs *messageLog

	// status is the footer: the status message, the source's state and
	// the keys.
	status *statusLine
	// runs is the policy of the runs started here and the run followed.
	runs runState
	// feed is the source's notices, followed live.
	feed noticeFeed
	// modes is the overlay stack: help, filter, picker, confirm, compare,
	// lesson; the top takes keys first.
	modes modeStack
}

// runState is what the explorer keeps of the runs it starts: the policy
// overrides (K, J), the run --run starts as it opens, and the run whose
// execution the selection moves to once the list has it (follow);
// started is the last one, which x kills when the selected execution has
// no worker.
type runState struct {
	keysOn, journalOn *bool
	startRun          string
	follow, started   string
	// mine is every execution run here, which quitting kills.
	mine map[string]bool
}

// noticeFeed is the source's notices as the explorer follows them.
type noticeFeed struct {
	notices <-chan notice.Notice
	// window is the notice window asked for; cur the one in use, grown
	// up to MaxNoticeWindow while notices keep coming (grow).
	window, cur time.Duration
	unsubscribe func()
	// gen counts source switches; results of an older source are dropped.
	gen int
}

type execItem struct {
	x          history.Execution
	duplicates bool
	// possible: the audit of an imported execution grades a repeated
	// effect POSSIBLE (its outcome unknown), with no DUPLICATE, as its
	// record says.
	possible bool
}

// New builds the explorer. Call Close after the program ends.
func New(o Options) *Model {
	if o.Now == nil {
		o.Now = time.Now
	}
	m := &Model{
		src:     o.Source,
		now:     o.Now,
		Context: newContext(o.HighContrast),
		runs:    runState{startRun: o.Run},
		feed:    noticeFeed{window: o.NoticeWindow},
	}
	if m.feed.window == 0 {
		m.feed.window = DefaultNoticeWindow
	}
	m.feed.cur = m.feed.window
	m.status = newStatusLine(m.theme, o.FlashFor)
	m.help = newHelpPage(m.Context, m.helpColumns)
	m.msgs = newMessageLog(m.Context)
	m.filter = newFilterBox(m.Context)
	m.picker = newScenarioPicker(m.Context)
	m.cmp = newComparePane(m.Context)
	m.timeline = newTimelinePane(m.Context, m.pickAttempt)
	m.trace = newTracePane(m.Context, m.linkedAttempt, m.loadMoreTrace)
	m.outbox = newOutboxPane(m.Context, m.selectedAttemptLink, m.inferredEffects, m.revealLinkedAttempt)
	m.lesson = newLessonPane(m.Context, o.Presenter, o.OpenLessons, o.Lesson, m.leaveLesson)
	m.detail = newDetailPane(m.Context, m.trace, m.outbox, m.scenarioOf, m.now)
	m.execs = newExecsPane(m.Context, m.filter, m.now, m.cmp.Marked, m.execsMoved)
	m.room = newRoomPane(m.Context, o.Room, o.RoomEvery, o.RoomJoin)
	m.room.movedFrom = o.RoomMovedFrom
	m.slide = newSlideView(m.Context)
	m.showing(o.Source)
	m.feed.notices, m.feed.unsubscribe = o.Source.Subscribe(4096)
	return m
}

// Close stops following the source.
func (m *Model) Close() {
	if m.feed.unsubscribe != nil {
		m.feed.unsubscribe()
	}
}

// --- messages -------------------------------------------------------------

type execsMsg struct {
	filter string // the filter it answers
	skip   int
	items  []execItem
	total  int
	// all is the length of the whole list when a filter applies (see
	// filterBox.Observe).
	all int
	err error
	// keep is the execution selected when a live read was asked for, sel
	// the selection's index then, and moved keep's index now, when
	// executions arriving above it moved it (else -1).
	keep       string
	sel, moved int
}

type traceMsg struct {
	id        string
	x         history.Execution
	events    []history.Event
	imported  []trace.Event // an imported execution's trace, read whole
	grows     bool          // imported only grows: what the view holds is a prefix of it (GrowingImports)
	msgs      []world.Message
	truncated bool
	from      uint64 // the first seq read for a further page; 0 for a fresh read
	err       error
}

type outboxMsg struct {
	recent []world.Message
	total  int
	// crm says records were read (only while the CRM tab shows); cut says
	// there are more than crmWindow.
	crm     bool
	records []world.Record
	cut     bool
	armed   []fault.Point
	offset  time.Duration
	pace    time.Duration
	// msgs are the messages of execution forID, when it is set.
	forID string
	msgs  []world.Message
	err   error
}

type noticesMsg struct {
	batch  []notice.Notice
	closed bool
	// steady: the batch's first notice came within the window the wait
	// was for, after the last refresh (a stream, not a lone burst).
	steady bool
}

type scenariosMsg struct {
	list []*scenario.Scenario
	err  error
}

type actionMsg struct {
	text string
	err  error
	// selectID moves the selection to this execution.
	selectID string
	// ran is the execution of a run started or resumed here.
	ran string
	// watch: a run started or resumed here. Where the panes are tabs, its
	// trace (with the outbox under it) comes to the front: pressing n on
	// the Executions tab left the room looking at the list.
	watch bool
}

// --- commands ---------------------------------------------------------------

// Init loads everything and starts following the source.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.loadExecs(), m.loadOutbox(), m.waitNotices(), m.loadScenarios()}
	if m.runs.startRun != "" && m.can.run != nil {
		cmds = append(cmds, m.start(m.runs.startRun))
	}
	if m.lesson.StartsOn() {
		cmds = append(cmds, m.startLesson())
	}
	if m.room.On() {
		cmds = append(cmds, m.room.load(true))
		if m.room.Shown() {
			m.modes.push(m.roomMode())
		}
	}
	return m.tag(tea.Batch(cmds...))
}

// loadExecs reads the list's window again. Executions started or
// imported elsewhere meanwhile are listed above the one selected (the list
// is newest first): the selection stays on that execution where they push
// it, rather than pass to whichever now stands at its old place. (A move
// that left the window read asks with the selection on no execution read
// yet: it keeps nothing.)
func (m *Model) loadExecs() tea.Cmd {
	keep := ""
	if x := m.execs.selected(); x != nil && x.x.ID == m.selID {
		keep = m.selID
	}
	src, filter := m.src, m.filter.Text()
	skip, sel, before := m.execs.Window()
	limit := m.execs.pageSize()
	read := func(skip, limit int) ([]history.Execution, int, error) {
		if filter != "" {
			// The host's index answers the filter: the page and the
			// count, never a scan of the executions here.
			return src.FindExecutions(filter, skip, limit)
		}
		return src.Executions(skip, limit)
	}
	return func() tea.Msg {
		list, total, err := read(skip, limit)
		if err == nil && filter != "" && skip > 0 && skip >= total {
			skip = 0
			list, total, err = read(skip, limit)
		}
		moved := -1
		if i := sel - skip; err == nil && keep != "" && total > before && (i < 0 || i >= len(list) || list[i].ID != keep) {
			// New executions are listed first: keep is as many further
			// down as arrived, unless it went (erased) or was restarted.
			to := sel + total - before
			if one, _, err := read(to, 1); err == nil && len(one) == 1 && one[0].ID == keep {
				moved = to
			}
		}
		// The duplicate and possible flags come with each record, as its
		// history recorded it or its importer audited it: no read per row.
		items := make([]execItem, len(list))
		for i, x := range list {
			items[i] = execItem{x: x, duplicates: x.Duplicates, possible: x.Possible && !x.Duplicates}
		}
		all := total
		if err == nil && filter != "" {
			// The whole list's length, to count what the filter hides.
			if _, n, errAll := src.Executions(0, 1); errAll == nil {
				all = n
			}
		}
		return execsMsg{filter: filter, skip: skip, items: items, total: total, all: all, err: err,
			keep: keep, sel: sel, moved: moved}
	}
}

// loadTrace reads an execution's history from its start: the first page,
// or as much as the trace already holds when it is the one shown (a live
// update must not drop what the reader paged in).
func (m *Model) loadTrace(id string) tea.Cmd {
	if id == "" {
		return nil
	}
	limit := tracePage
	if m.trace.Shows(id) {
		limit = max(limit, m.trace.Held())
	}
	return m.readTrace(id, 0, limit)
}

// loadMoreTrace reads the next page of the shown history, once at a time.
func (m *Model) loadMoreTrace() tea.Cmd {
	if id, from, limit, ok := m.trace.nextPage(true); ok {
		return m.readTrace(id, from, limit)
	}
	return nil
}

// readOn reads the page after the last event the trace holds: the next
// page of a long history, or the events a live trace missed (a gap).
func (m *Model) readOn() tea.Cmd {
	if id, from, limit, ok := m.trace.nextPage(false); ok {
		return m.readTrace(id, from, limit)
	}
	return nil
}

// readTrace reads at most limit events of id from seq from through the
// store's cursor; a read from the start (from 0) also reads the execution
// record and the outbox's messages of the execution.
func (m *Model) readTrace(id string, from uint64, limit int) tea.Cmd {
	src := m.src
	return func() tea.Msg {
		var x history.Execution
		var err error
		if from == 0 {
			if x, err = src.Execution(id); err != nil {
				return traceMsg{id: id, from: from, err: err}
			}
			if x.Imported != "" {
				// An imported trace has no history: its spans, translated.
				evs, err := src.ImportedEvents(id)
				g, ok := src.(GrowingImports)
				return traceMsg{id: id, x: x, imported: evs, grows: ok && g.ImportedGrows(id), err: err}
			}
		}
		events, err := src.Events(id, from, limit+1)
		if err != nil {
			return traceMsg{id: id, from: from, err: err}
		}
		truncated := len(events) > limit
		if truncated {
			events = events[:limit]
		}
		msg := traceMsg{id: id, from: from, x: x, events: events, truncated: truncated}
		if from == 0 {
			msg.msgs, msg.err = src.MessagesFor(id)
		}
		return msg
	}
}

// loadOutbox reads the outbox's recent messages, the armed faults and the
// world clock, and the CRM rows only while the CRM tab shows: they are the
// one read here whose size follows the database's, and it runs again after
// every burst of live notices.
func (m *Model) loadOutbox() tea.Cmd { return m.loadOutboxOf("") }

// loadOutboxOf is loadOutbox that also reads the messages of execution id
// (the one selected), when id is not empty.
func (m *Model) loadOutboxOf(id string) tea.Cmd {
	src, crm, faults, world, pacer := m.src, m.outbox.CRM(), m.can.faults, m.can.world, m.can.pace
	return func() tea.Msg {
		recent, total, err := src.RecentMessages(outboxWindow)
		if err != nil {
			return outboxMsg{err: err}
		}
		msg := outboxMsg{recent: recent, total: total, crm: crm}
		if faults != nil {
			msg.armed = faults.Armed()
		}
		if world != nil {
			msg.offset = world.WorldOffset()
		}
		if pacer != nil {
			msg.pace = pacer.Pace()
		}
		if id != "" {
			msg.forID = id
			if msg.msgs, err = src.MessagesFor(id); err != nil {
				return outboxMsg{err: err}
			}
		}
		if crm {
			msg.records, msg.cut, msg.err = loadRecords(src)
		}
		return msg
	}
}

// recordPager is a Source that reads the CRM a page at a time, as
// *engine.Local does.
type recordPager interface {
	RecordsPage(from string, limit int) ([]world.Record, error)
}

// loadRecords reads the first crmWindow CRM rows, through RecordsPage when
// the source has it; cut says there are more.
func loadRecords(src Source) ([]world.Record, bool, error) {
	var records []world.Record
	var err error
	if p, ok := src.(recordPager); ok {
		records, err = p.RecordsPage("", crmWindow+1)
	} else {
		records, err = src.Records()
	}
	if len(records) > crmWindow {
		return records[:crmWindow], true, err
	}
	return records, false, err
}

// loadScenarios reads the catalogue of a source that runs scenarios; one
// that cannot has none.
func (m *Model) loadScenarios() tea.Cmd {
	src := m.can.run
	if src == nil {
		return func() tea.Msg { return scenariosMsg{} }
	}
	return func() tea.Msg {
		list, err := src.Scenarios()
		return scenariosMsg{list: list, err: err}
	}
}

// waitNotices blocks (in its own goroutine) for the next notices and
// gathers what arrives within the notice window (one frame by default), so
// a burst costs one refresh; with a negative window, only what is waiting.
func (m *Model) waitNotices() tea.Cmd {
	ch, window := m.feed.notices, m.feed.cur
	return func() tea.Msg {
		var n notice.Notice
		var ok, steady bool
		if window > 0 {
			// A notice already waiting, or one within the window: the
			// notices are a stream.
			quiet := time.NewTimer(window)
			select {
			case n, ok = <-ch:
				steady = true
			case <-quiet.C:
				n, ok = <-ch
			}
			quiet.Stop()
		} else {
			n, ok = <-ch
		}
		if !ok {
			return noticesMsg{closed: true}
		}
		batch := []notice.Notice{n}
		var deadline <-chan time.Time
		if window > 0 {
			deadline = time.After(window)
		}
		for {
			var more bool
			if deadline == nil {
				select {
				case n, more = <-ch:
				default:
					return noticesMsg{batch: batch, steady: steady}
				}
			} else {
				select {
				case n, more = <-ch:
				case <-deadline:
					return noticesMsg{batch: batch, steady: steady}
				}
			}
			if !more {
				return noticesMsg{batch: batch, closed: true, steady: steady}
			}
			batch = append(batch, n)
		}
	}
}

// grow sets the next notice window after a batch: doubled (up to
// MaxNoticeWindow) while the notices are a steady stream, the asked
// window again after a quiet one.
func (f *noticeFeed) grow(steady bool) {
	switch {
	case f.window <= 0:
		f.cur = f.window
	case steady:
		f.cur = min(2*f.cur, max(MaxNoticeWindow, f.window))
	default:
		f.cur = f.window
	}
}

// runPolicy is the policy overrides of the runs started here (K, J); none
// in lesson mode, where each scenario runs with its own policy.
func (m *Model) runPolicy() (keys, journal *bool) {
	if m.lesson.On() {
		return nil, nil
	}
	return m.runs.keysOn, m.runs.journalOn
}

// start runs scenario name, with the policy overrides set here.
func (m *Model) start(name string) tea.Cmd {
	src := m.can.run
	if src == nil {
		return nil
	}
	keys, journal := m.runPolicy()
	opts := engine.RunOptions{Keys: keys, Journal: journal}
	return func() tea.Msg {
		r, err := src.Start(name, opts)
		if err != nil {
			return actionMsg{err: err}
		}
		if r.Deduplicated {
			return actionMsg{text: fmt.Sprintf("start deduplicated: %s already exists", r.Execution), selectID: r.Execution, ran: r.Execution, watch: true}
		}
		return actionMsg{text: fmt.Sprintf("started %s (run %d of %s)", name, r.Number, r.Execution), selectID: r.Execution, ran: r.Execution, watch: true}
	}
}

// act runs an engine action off the UI goroutine and reports its result.
func act(text string, fn func() error) tea.Cmd {
	return func() tea.Msg {
		if err := fn(); err != nil {
			return actionMsg{err: err}
		}
		return actionMsg{text: text}
	}
}

func (m *Model) selectedExec() *execItem { return m.execs.selected() }

func (m *Model) selectedRow() *node { return m.trace.selected() }

func (m *Model) setFlash(text string, bad bool) {
	m.status.text, m.status.bad = text, bad
	m.status.seq++
	m.msgs.Add(m.now(), text, bad)
}

// showsImported reports whether the trace shown is of an imported
// execution, whose effects the outbox pane infers.
func (m *Model) showsImported() bool {
	return m.trace.Imported()
}

// inferredEffects is the outbox pane's content for an imported execution:
// the effects inferred from its trace (tui/effects.go).
func (m *Model) inferredEffects(width int) ([]inferredLine, bool) {
	if m.showsImported() {
		return m.trace.EffectLines(width, m.now()), true
	}
	return nil, false
}
