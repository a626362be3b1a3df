package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/list"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/retrylab/retrylab/engine/lesson"
	"github.com/retrylab/retrylab/engine/scenario"
)

// pickerInfoLines is how many lines under the scenario list tell what the
// selected scenario teaches and the keys it needs.
const pickerInfoLines = 7

// scenarioItem is a scenario in the picker.
type scenarioItem struct{ s *scenario.Scenario }

func (i scenarioItem) Title() string       { return i.s.Name }
func (i scenarioItem) Description() string { return i.s.Title }
func (i scenarioItem) FilterValue() string { return i.s.Name + " " + i.s.Title }

// newPicker builds the scenario picker: bubbles' list, filtered as you
// type after /, paged, with its own q and help turned off (q types into
// the filter; the explorer's help is ?).
func newPicker(scenarios []*scenario.Scenario) list.Model {
	items := make([]list.Item, len(scenarios))
	for i, s := range scenarios {
		items[i] = scenarioItem{s}
	}
	d := list.NewDefaultDelegate()
	d.SetSpacing(0)
	l := list.New(items, d, 0, 0)
	l.Filter = rankScenarios
	l.Title = pickerTitle
	l.SetShowHelp(false)
	// The status bar counts the items and the filtered; the page dots
	// count pages of the unfiltered list while a filter shows.
	l.SetShowPagination(false)
	l.KeyMap.Quit.SetEnabled(false)
	l.KeyMap.ForceQuit.SetEnabled(false)
	l.KeyMap.ShowFullHelp.SetEnabled(false)
	l.KeyMap.CloseFullHelp.SetEnabled(false)
	return l
}

// rankScenarios orders the scenarios a filter text matches, best first:
// names that begin with it, names that hold it, titles that hold it, then
// names and at last whole lines that hold its letters in order, best
// scored first (bubbles' fuzzy filter). targets are FilterValues: a name,
// a space, a title. The fuzzy filter alone ranked a long line below a
// short one whatever matched, so "jour" put safe (whose title ends in "a
// journal") above journal-deleted.
func rankScenarios(term string, targets []string) []list.Rank {
	t := strings.ToLower(strings.TrimSpace(term))
	if t == "" {
		return list.DefaultFilter(term, targets)
	}
	names := make([]string, len(targets))
	for i, v := range targets {
		names[i], _, _ = strings.Cut(v, " ")
	}
	var tiers [5][]list.Rank
	seen := make([]bool, len(targets))
	add := func(tier, i int, matched []int) {
		if !seen[i] {
			seen[i] = true
			tiers[tier] = append(tiers[tier], list.Rank{Index: i, MatchedIndexes: matched})
		}
	}
	runes := func(from, n int) []int {
		out := make([]int, n)
		for k := range out {
			out[k] = from + k
		}
		return out
	}
	n := len([]rune(t))
	for i, v := range targets {
		lower := strings.ToLower(v)
		name := strings.ToLower(names[i])
		switch {
		case strings.HasPrefix(name, t):
			add(0, i, runes(0, n))
		case strings.Contains(name, t):
			add(1, i, runes(len([]rune(name[:strings.Index(name, t)])), n))
		case strings.Contains(lower[len(name):], t):
			at := len(name) + strings.Index(lower[len(name):], t)
			add(2, i, runes(len([]rune(lower[:at])), n))
		}
	}
	for _, r := range list.DefaultFilter(term, names) {
		add(3, r.Index, r.MatchedIndexes)
	}
	for _, r := range list.DefaultFilter(term, targets) {
		add(4, r.Index, r.MatchedIndexes)
	}
	var out []list.Rank
	for _, tier := range tiers {
		out = append(out, tier...)
	}
	return out
}

// scenarioPicker is the scenario picker (n): bubbles' list over the
// catalogue, what the selected scenario teaches and the keys it needs, and
// the policy the run will have. enter picks (pickedMsg), esc closes or
// clears the list's filter first; the rest goes to the list.
type scenarioPicker struct {
	*Context
	list list.Model
	open bool
	// seq numbers the list's filter texts; see pickerMsg.
	seq           int
	width, height int
	// keysOn and journalOn are the policy of the run it starts.
	keysOn, journalOn *bool
	// scenarios is the catalogue, once read (read); pending remembers an
	// n pressed before it came, and typeahead the keys typed after that n
	// (the picker's filter, enter), replayed into the picker when it opens:
	// no key is dropped.
	scenarios     []*scenario.Scenario
	read, pending bool
	typeahead     []tea.KeyMsg
}

func newScenarioPicker(ctx *Context) *scenarioPicker { return &scenarioPicker{Context: ctx} }

// pickedMsg is the scenario the picker's enter chose, to start.
type pickedMsg struct{ name string }

// bindings are the picker's keys, declared once: enter runs the scenario
// selected (not while a filter is typed: the list takes it), esc closes
// (once the list's filter is cleared: the list clears it first); / is the
// list's own, listed here. Every other key goes to the list.
func (p *scenarioPicker) bindings() []binding {
	return []binding{
		{Binding: hint("enter", "run"), enabled: func() bool { return p.list.FilterState() != list.Filtering },
			action: func(tea.KeyMsg) tea.Cmd {
				it, ok := p.list.SelectedItem().(scenarioItem)
				if !ok {
					return nil
				}
				p.open = false
				return func() tea.Msg { return pickedMsg{name: it.s.Name} }
			}},
		{Binding: key.NewBinding(key.WithHelp("/", "filter"))},
		{Binding: hint("esc", "cancel"), enabled: func() bool { return p.list.FilterState() == list.Unfiltered },
			action: func(tea.KeyMsg) tea.Cmd {
				p.open = false
				return nil
			}},
	}
}

// Shown says the picker is open.
func (p *scenarioPicker) Shown() bool { return p.open }

// SetCatalogue takes the catalogue read; true when an n pressed before it
// came waits to open the picker.
func (p *scenarioPicker) SetCatalogue(list []*scenario.Scenario) (openNow bool) {
	p.scenarios, p.read = list, true
	openNow, p.pending = p.pending, false
	return openNow
}

// Pending says an n waits for the catalogue to open the picker.
func (p *scenarioPicker) Pending() bool { return p.pending }

// Queue keeps a key typed while the picker waits to open (Pending); esc
// gives the wait up, as it would close the picker.
func (p *scenarioPicker) Queue(msg tea.KeyMsg) {
	if msg.String() == "esc" {
		p.pending, p.typeahead = false, nil
		return
	}
	p.typeahead = append(p.typeahead, msg)
}

// TakeQueued hands over the keys typed while the picker waited to open.
func (p *scenarioPicker) TakeQueued() []tea.KeyMsg {
	q := p.typeahead
	p.typeahead = nil
	return q
}

// Empty says the catalogue is read and has no scenario.
func (p *scenarioPicker) Empty() bool { return p.read && len(p.scenarios) == 0 }

// Scenario is the catalogue's scenario named name, if read.
func (p *scenarioPicker) Scenario(name string) *scenario.Scenario {
	for _, s := range p.scenarios {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Open shows the picker over the catalogue, for a run with this policy;
// false when it does not open: before the catalogue is read (it opens
// then: SetCatalogue), or over an empty one (the footer says so).
func (p *scenarioPicker) Open(keysOn, journalOn *bool) bool {
	if !p.read {
		p.pending = true
		return false
	}
	if len(p.scenarios) == 0 {
		p.pending = false
		return false
	}
	p.list, p.open = newPicker(p.scenarios), true
	p.keysOn, p.journalOn = keysOn, journalOn
	p.SetSize(p.width, p.height)
	return true
}

// SetSize fits the picker, and its list when open, to the screen.
func (p *scenarioPicker) SetSize(width, height int) {
	p.width, p.height = width, height
	if p.open {
		p.list.SetSize(max(10, width-2), max(4, height-2-pickerInfoLines))
		// The list pads every line to its widest, the title: a title wider
		// than the box cut every line of the list with "…" (below 64
		// columns; the list keeps two more cells of its own). The footer
		// says the keys too.
		p.list.Title = pickerTitle
		if lipgloss.Width(p.list.Styles.TitleBar.Render(p.list.Styles.Title.Render(pickerTitle))) > width-4 {
			p.list.Title = pickerTitleShort
		}
	}
}

// The picker's titles: with its keys, and without them where that is too wide.
const (
	pickerTitle      = "Run which scenario? enter: run · /: filter · esc: cancel"
	pickerTitleShort = "Run which scenario?"
)

// Update: a key (see scenarioPicker), or the list's own answer to a
// filter text (pickerMsg), which only the newest text's is applied.
func (p *scenarioPicker) Update(msg tea.Msg) tea.Cmd {
	if !p.open {
		return nil
	}
	switch msg := msg.(type) {
	case pickerMsg:
		if msg.seq != p.seq {
			return nil
		}
		var cmd tea.Cmd
		p.list, cmd = p.list.Update(msg.msg)
		return p.tag(cmd)
	case tea.KeyMsg:
		if cmd, ok := dispatch(p.bindings(), msg); ok {
			return cmd
		}
		before := p.list.FilterValue()
		var cmd tea.Cmd
		p.list, cmd = p.list.Update(msg)
		if p.list.FilterValue() != before {
			p.seq++ // answers for the filter as it was are stale now
		}
		return p.tag(cmd)
	}
	return nil
}

// pickerMsg is a picker list's own message (its filter's matches), tagged
// with the filter text's number. The list filters each key in a command of
// its own, and answers for an older text may come back last: only the
// newest text's are applied.
type pickerMsg struct {
	seq int
	msg tea.Msg
}

// tag tags the list's filter answers with the filter's number.
func (p *scenarioPicker) tag(cmd tea.Cmd) tea.Cmd {
	seq := p.seq
	return wrapMsgs(cmd, func(msg tea.Msg) tea.Msg {
		if _, ok := msg.(list.FilterMatchesMsg); ok {
			return pickerMsg{seq: seq, msg: msg}
		}
		return msg
	})
}

// View is the list, then what the selected scenario teaches and the keys
// it needs, then the run's policy.
func (p *scenarioPicker) View() string {
	lines := strings.Split(p.list.View(), "\n")
	lines = append(lines, "")
	if it, ok := p.list.SelectedItem().(scenarioItem); ok {
		lines = append(lines, scenarioInfo(it.s, p.width-2, pickerInfoLines-2, 3)...)
	}
	for len(lines) < p.height-3 {
		lines = append(lines, "")
	}
	lines = append(lines[:p.height-3], fmt.Sprintf("this run: keys %s · journal %s (K, J before n)", short(p.keysOn), short(p.journalOn)))
	return p.theme.box("Run a scenario", lines, p.width, p.height, true)
}

// ShortHelp is the picker's keys; the list moves on the explorer's.
func (p *scenarioPicker) ShortHelp() []key.Binding { return shortOf(p.bindings()) }

// FullHelp is the picker's keys and the list's movement.
func (p *scenarioPicker) FullHelp() [][]key.Binding {
	return [][]key.Binding{p.ShortHelp(), {p.list.KeyMap.CursorUp, p.list.KeyMap.CursorDown, p.list.KeyMap.NextPage, p.list.KeyMap.PrevPage}}
}

// openPicker shows the picker over the scenario catalogue, or once the
// catalogue is read (no key is dropped).
func (m *Model) openPicker() tea.Cmd {
	switch {
	case m.picker.Open(m.runs.keysOn, m.runs.journalOn):
		m.modes.push(m.pickerMode())
		// Keys typed while it waited for the catalogue go to it now.
		var cmds []tea.Cmd
		for _, k := range m.picker.TakeQueued() {
			cmd, _ := m.modes.key(k)
			cmds = append(cmds, cmd)
		}
		return tea.Batch(cmds...)
	case m.picker.Pending():
		m.modes.push(m.pickerWaitMode())
	case m.picker.Empty():
		m.setFlash("no scenarios in the catalogue", true)
	}
	return nil
}

// scenarioInfo says what a scenario teaches and the explorer keys its
// script needs ("keys: n (run the scenario) → A …"), wrapped to width, in
// at most room lines of which the teaching takes at most teach.
func scenarioInfo(s *scenario.Scenario, width, room, teach int) []string {
	keys := "keys: " + byHand(lesson.NewStep(s))
	if len(s.Expect.Script) == 0 {
		keys = "keys: n (run the scenario)"
	}
	keyLines := strings.Split(wrapText(keys, width), "\n")
	teaches := strings.Join(strings.Fields(s.Teaches), " ")
	if teaches == "" {
		teaches = s.Title
	}
	teach = min(teach, room-len(keyLines))
	var out []string
	for _, l := range strings.Split(wrapText("teaches: "+teaches, width), "\n") {
		if len(out) == teach {
			out[len(out)-1] = fit(out[len(out)-1]+" …", width)
			break
		}
		out = append(out, l)
	}
	return append(out, keyLines...)
}

// scenarioOf is the catalogue's scenario of the execution in the trace.
func (m *Model) scenarioOf() *scenario.Scenario {
	x, ok := m.trace.Exec()
	if !ok {
		return nil
	}
	return m.picker.Scenario(x.Scenario)
}
