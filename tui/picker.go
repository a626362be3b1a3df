package tui

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/list"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/retrylab/retrylab/engine/lesson"
	"github.com/retrylab/retrylab/engine/scenario"
)

// pickerInfoLines is the fewest lines under the scenario list that tell
// what the selected scenario teaches and the keys it needs; it takes more,
// up to the longest teaching, where the screen leaves the list
// pickerListLines.
const (
	pickerInfoLines = 5
	pickerListLines = 12 // its title, its status, four scenarios
)

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

// rankScenarios orders the scenarios a filter text matches, best first,
// as a person reads the list: the name itself, names that begin with it,
// names with a word (after a "-") that begins with it, names that hold it,
// titles that begin with it, titles with a word that begins with it, and
// titles that hold it; within a tier, the catalogue's order. Only when
// nothing matches so do names that hold its letters in order (a typo:
// "nave" finds naive). targets are FilterValues: a name, a space, a title.
// bubbles' fuzzy filter alone matched scattered letters anywhere ("safe"
// found reads-are-free) and ranked short lines first.
func rankScenarios(term string, targets []string) []list.Rank {
	t := strings.ToLower(strings.TrimSpace(term))
	if t == "" {
		return list.DefaultFilter(term, targets)
	}
	names := make([]string, len(targets))
	for i, v := range targets {
		names[i], _, _ = strings.Cut(v, " ")
	}
	const tiers = 7
	var ranked [tiers][]list.Rank
	n := len([]rune(t))
	for i, v := range targets {
		lower := strings.ToLower(v)
		name := strings.ToLower(names[i])
		title := strings.TrimPrefix(lower[len(name):], " ")
		tier, at := matchTier(t, name, title)
		if tier < 0 {
			continue
		}
		if tier >= 4 { // in the title, after the name and its space
			at += len(lower) - len(title)
		}
		from := len([]rune(lower[:at]))
		matched := make([]int, n)
		for k := range matched {
			matched[k] = from + k
		}
		ranked[tier] = append(ranked[tier], list.Rank{Index: i, MatchedIndexes: matched})
	}
	var out []list.Rank
	for _, tier := range ranked {
		out = append(out, tier...)
	}
	if len(out) == 0 {
		return list.DefaultFilter(term, names)
	}
	return out
}

// matchTier is how well t (lower case) matches a scenario's name and
// title (lower case), 0 best, -1 not at all, and the byte where it
// matched: in the name for tiers 0 to 3, in the title for 4 to 6.
func matchTier(t, name, title string) (tier, at int) {
	switch {
	case name == t:
		return 0, 0
	case strings.HasPrefix(name, t):
		return 1, 0
	}
	if at := wordPrefix(name, t); at >= 0 {
		return 2, at
	}
	if at := strings.Index(name, t); at >= 0 {
		return 3, at
	}
	if strings.HasPrefix(title, t) {
		return 4, 0
	}
	if at := wordPrefix(title, t); at >= 0 {
		return 5, at
	}
	if at := strings.Index(title, t); at >= 0 {
		return 6, at
	}
	return -1, 0
}

// wordPrefix is the byte where a word of s begins with t, a word starting
// after a character that is neither a letter nor a digit; -1 if none.
func wordPrefix(s, t string) int {
	for at := 0; at < len(s); {
		i := strings.Index(s[at:], t)
		if i < 0 {
			return -1
		}
		i += at
		if i > 0 {
			if r, _ := utf8.DecodeLastRuneInString(s[:i]); !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				return i
			}
		}
		at = i + 1
	}
	return -1
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
	// info is how many lines tell of the selected scenario (see
	// pickerInfoLines).
	info int
	// keysOn and journalOn are the policy of the run it starts; inLesson
	// says they are the scenario's own, lesson mode's (K and J are off).
	keysOn, journalOn *bool
	inLesson          bool
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
		// While the filter is typed, enter keeps it (the list's own key);
		// a second enter runs the scenario selected.
		{Binding: hint("enter", "keep filter"), enabled: func() bool { return p.list.FilterState() == list.Filtering }},
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

// Open shows the picker over the catalogue, for a run with this policy
// (inLesson: lesson mode's, the scenario's own);
// false when it does not open: before the catalogue is read (it opens
// then: SetCatalogue), or over an empty one (the footer says so).
func (p *scenarioPicker) Open(keysOn, journalOn *bool, inLesson bool) bool {
	if !p.read {
		p.pending = true
		return false
	}
	if len(p.scenarios) == 0 {
		p.pending = false
		return false
	}
	p.list, p.open = newPicker(p.scenarios), true
	p.keysOn, p.journalOn, p.inLesson = keysOn, journalOn, inLesson
	p.SetSize(p.width, p.height)
	return true
}

// SetSize fits the picker, and its list when open, to the screen.
func (p *scenarioPicker) SetSize(width, height int) {
	p.width, p.height = width, height
	if p.open {
		need := pickerInfoLines
		for _, s := range p.scenarios {
			need = max(need, len(scenarioInfo(s, width-2, height, height)))
		}
		// The box's borders, the page line and the policy line.
		p.info = max(pickerInfoLines, min(need, height-4-pickerListLines))
		p.list.SetSize(max(10, width-2), max(4, height-4-p.info))
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
	lines = append(lines, p.pageLine())
	if it, ok := p.list.SelectedItem().(scenarioItem); ok {
		lines = append(lines, scenarioInfo(it.s, p.width-2, p.info, p.info)...)
	}
	for len(lines) < p.height-3 {
		lines = append(lines, "")
	}
	lines = append(lines[:p.height-3], p.lastLine())
	return p.theme.box("Run a scenario", lines, p.width, p.height, true)
}

// lastLine is the picker's last line: while a filter is typed, what enter
// does then (it keeps the filter; a second enter runs the scenario
// selected); else the policy of the run it starts.
func (p *scenarioPicker) lastLine() string {
	if p.list.FilterState() == list.Filtering {
		return p.theme.Bold.Render("enter: keep the filter, then enter: run · esc: clear it")
	}
	how := "(K, J before n)"
	if p.inLesson {
		how = "(lesson mode: the scenario's own)"
	}
	return fmt.Sprintf("this run: keys %s · journal %s %s", short(p.keysOn), short(p.journalOn), how)
}

// pageLine says which page of the list shows, of how many (of the list as
// filtered), when there is more than one; else it is empty.
func (p *scenarioPicker) pageLine() string {
	per := max(1, p.list.Paginator.PerPage)
	pages := (len(p.list.VisibleItems()) + per - 1) / per
	if pages < 2 {
		return ""
	}
	return p.theme.Dim.Render(fmt.Sprintf("  page %d of %d · pgdown/pgup: next/previous page", p.list.Index()/per+1, pages))
}

// ShortHelp is the picker's keys; the list moves on the explorer's.
func (p *scenarioPicker) ShortHelp() []key.Binding { return shortOf(p.bindings()) }

// FullHelp is the picker's keys and the list's movement.
func (p *scenarioPicker) FullHelp() [][]key.Binding {
	return [][]key.Binding{p.ShortHelp(), {p.list.KeyMap.CursorUp, p.list.KeyMap.CursorDown, p.list.KeyMap.NextPage, p.list.KeyMap.PrevPage}}
}

// pickerPolicy is the policy the picker's run takes, and whether it is
// lesson mode's (each scenario's own).
func (m *Model) pickerPolicy() (keysOn, journalOn *bool, inLesson bool) {
	keysOn, journalOn = m.runPolicy()
	return keysOn, journalOn, m.lesson.On()
}

// openPicker shows the picker over the scenario catalogue, or once the
// catalogue is read (no key is dropped).
func (m *Model) openPicker() tea.Cmd {
	switch {
	case m.picker.Open(m.pickerPolicy()):
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
			// The words that fit before " …" (the detail pane has it whole).
			last := out[len(out)-1]
			for lipgloss.Width(last+" …") > width && strings.Contains(last, " ") {
				last = last[:strings.LastIndex(last, " ")]
			}
			out[len(out)-1] = fit(last+" …", width)
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
