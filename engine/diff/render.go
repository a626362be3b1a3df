package diff

import (
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/internal/plural"
)

// The row markers, in text as well as colour (NO_COLOR shows them too).
const (
	MarkerSame  = "="
	MarkerDiff  = "≠"
	MarkerOnlyA = "<"
	MarkerOnlyB = ">"
)

// Marker is the row's sign: = the same, ≠ they differ, < only in A, > only in B.
func (r Row) Marker() string {
	switch {
	case r.A == nil:
		return MarkerOnlyB
	case r.B == nil:
		return MarkerOnlyA
	case r.Differs:
		return MarkerDiff
	}
	return MarkerSame
}

// Where is the item's place: "r1 t2", "r2".
func (it *Item) Where() string {
	if it == nil || it.Run == 0 {
		return ""
	}
	if it.Turn > 0 {
		return fmt.Sprintf("r%d t%d", it.Run, it.Turn)
	}
	return fmt.Sprintf("r%d", it.Run)
}

// What is the item's subject with its mark where it has no attempts:
// "step-4 send_invoice_email", "⟲ step-4 replayed from journal (run 1)",
// "☠ worker killed".
func (it *Item) What() string {
	if it == nil {
		return ""
	}
	switch it.Kind {
	case KindCall:
		return it.Name()
	case KindReplay:
		s := it.Glyph + " " + it.Call + " " + it.Text
		if it.ResultRun > 0 {
			s += fmt.Sprintf(" (run %d)", it.ResultRun)
		}
		return s
	case KindDeleted:
		return it.Glyph + " " + it.Call + " " + it.Text
	}
	return it.Glyph + " " + it.Text
}

// Tries is the call's attempts with their marks and effects: "#1 ◆ #2 ↺",
// with "+N" after an attempt that caused N effects.
func (it *Item) Tries() string {
	if it == nil || it.Kind != KindCall {
		return ""
	}
	one := func(a Attempt) string {
		s := fmt.Sprintf("#%d %s", a.N, a.Glyph)
		if a.Effects > 0 {
			s += fmt.Sprintf("+%d", a.Effects)
		}
		return s
	}
	var parts []string
	n := len(it.Attempts)
	for i, a := range it.Attempts {
		// A call with many attempts shows its first two and last two and
		// what the ones between ended as, so a row stays one line.
		if n > maxTries && i == 2 {
			parts = append(parts, "…"+between(it.Attempts[2:n-2])+"…")
		}
		if n <= maxTries || i < 2 || i >= n-2 {
			parts = append(parts, one(a))
		}
	}
	return strings.Join(parts, " ")
}

// maxTries is how many attempts a row lists before it sums up the middle.
const maxTries = 6

// between sums up attempts by mark: "12 ⏱ 3 ✖ +2".
func between(as []Attempt) string {
	counts := map[trace.Mark]int{}
	effects := 0
	for _, a := range as {
		counts[a.Mark]++
		effects += a.Effects
	}
	var parts []string
	for m := trace.MarkOK; m <= trace.MarkGap; m++ {
		if counts[m] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[m], m.Glyph()))
		}
	}
	s := strings.Join(parts, " ")
	if effects > 0 {
		s += fmt.Sprintf(" +%d", effects)
	}
	return s
}

// Head is a side's summary line: "exec_7K2Q naive · none · ✓ · 1 run, 1 call, 2 attempts".
func (s Side) Head() string {
	var b strings.Builder
	b.WriteString(s.Execution)
	if s.Scenario != "" {
		b.WriteString(" " + s.Scenario)
	}
	if s.Policy != "" {
		b.WriteString(" · " + s.Policy)
	}
	if s.Glyph != "" {
		b.WriteString(" · " + s.Glyph)
	}
	fmt.Fprintf(&b, " · %s, %s, %s", plural.Count(s.Runs, "run"), plural.Count(s.Calls, "call"), plural.Count(s.Attempts, "attempt"))
	if s.Deduped > 0 {
		fmt.Fprintf(&b, ", %d %s", s.Deduped, trace.MarkDedup.Glyph())
	}
	if s.Replays > 0 {
		fmt.Fprintf(&b, ", %d %s", s.Replays, trace.MarkReplay.Glyph())
	}
	if s.Crashes > 0 {
		fmt.Fprintf(&b, ", %d %s", s.Crashes, trace.MarkKilled.Glyph())
	}
	return b.String()
}

// Legend explains the marks the result uses, in the glyph table's order.
func (r *Result) Legend() string {
	used := map[trace.Mark]bool{}
	add := func(it *Item) {
		if it == nil {
			return
		}
		used[it.Mark] = true
		for _, a := range it.Attempts {
			used[a.Mark] = true
		}
	}
	for _, row := range r.Rows {
		add(row.A)
		add(row.B)
	}
	var ms []trace.Mark
	for m := trace.MarkOK; m <= trace.MarkGap; m++ {
		if used[m] {
			ms = append(ms, m)
		}
	}
	legend := "= same  ≠ differs  < only in A  > only in B  +N effects"
	if len(ms) > 0 {
		legend += "  " + trace.Legend(ms...)
	}
	return legend
}

// Cells is a row as the text table's columns: marker, A's place, subject
// and attempts, B's, and how they differ.
func (r Row) Cells() []string {
	return []string{r.Marker(), r.A.Where(), r.A.What(), r.A.Tries(), r.B.Where(), r.B.What(), r.B.Tries(), r.Why}
}

// Text writes the comparison as aligned columns.
func Text(w io.Writer, r *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "A  %s\nB  %s\n\n", r.A.Head(), r.B.Head())
	table := [][]string{{"", "A", "", "", "B", "", "", ""}}
	for _, row := range r.Rows {
		table = append(table, row.Cells())
	}
	widths := make([]int, len(table[0]))
	for _, cells := range table {
		for i, c := range cells {
			widths[i] = max(widths[i], ansi.StringWidth(c))
		}
	}
	for _, cells := range table {
		var line strings.Builder
		for i, c := range cells {
			if i > 0 {
				line.WriteString("  ")
				if i == 4 {
					line.WriteString("│ ")
				}
			}
			line.WriteString(c)
			if i < len(cells)-1 {
				line.WriteString(strings.Repeat(" ", widths[i]-ansi.StringWidth(c)))
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	fmt.Fprintf(&b, "\n%s\n", r.Parting)
	for _, l := range r.EffectLines {
		fmt.Fprintf(&b, "effects  %s\n", l)
	}
	fmt.Fprintf(&b, "\n%s\n", r.Legend())
	_, err := io.WriteString(w, b.String())
	return err
}

// Markdown writes the comparison for a handout: a table and the effects.
func Markdown(w io.Writer, r *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s vs %s\n\n", r.A.Label, r.B.Label)
	fmt.Fprintf(&b, "- **A** %s\n- **B** %s\n\n", mdCell(r.A.Head()), mdCell(r.B.Head()))
	b.WriteString("| | A | A attempts | B | B attempts | difference |\n|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		place := func(it *Item) string {
			if it == nil {
				return ""
			}
			return it.Where() + " " + it.What()
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", mdCell(row.Marker()), mdCell(place(row.A)), mdCell(row.A.Tries()),
			mdCell(place(row.B)), mdCell(row.B.Tries()), mdCell(row.Why))
	}
	fmt.Fprintf(&b, "\n%s.\n\n", upper(r.Parting))
	for _, l := range r.EffectLines {
		fmt.Fprintf(&b, "- Effects: %s\n", mdCell(l))
	}
	fmt.Fprintf(&b, "\n%s\n", mdCell(r.Legend()))
	_, err := io.WriteString(w, b.String())
	return err
}

// Line is the comparison in one line, for a lesson or a handout:
// "naive: 2 messages to jordan@acme.dev; safe: 1 (they part at ...)".
func (r *Result) Line() string {
	return strings.Join(r.EffectLines, " · ") + " — " + r.Parting
}

func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`).Replace(s)
}

func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
