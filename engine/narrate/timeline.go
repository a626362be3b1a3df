package narrate

import (
	"fmt"

	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/timeline"
	"github.com/retrylab/retrylab/engine/trace"
)

// timelineWidth is the width of the handout's timeline: what `show
// --timeline` prints, and what a code block holds without wrapping.
const timelineWidth = 120

// timelineMaxEvents bounds the histories whose timeline the handout draws:
// the picture needs the whole fold in memory, which the rest of the
// handout never holds, and a longer history's lanes are too dense to read
// on paper anyway (`retrylab show --timeline` and the explorer draw it).
const timelineMaxEvents = 20000

// timeline writes the handout's Timeline section: the history read once
// more, folded whole and laid out on one time axis (engine/timeline), as
// a code block of text, then its moments in words.
func (m *mdWriter) timeline(read func(fn func(history.Event) error) error) error {
	if m.t.Events == 0 {
		return nil
	}
	m.f("## Timeline\n\n")
	if m.t.Events > timelineMaxEvents {
		m.f("Left out: %d events are more than a page can draw (see `retrylab show %s --timeline`).\n\n", m.t.Events, m.h.Execution.ID)
		return nil
	}
	t := trace.New(m.h.Execution.ID)
	if err := read(func(ev history.Event) error {
		history.Apply(t, ev)
		return nil
	}); err != nil {
		return fmt.Errorf("timeline: %w", err)
	}
	m.f("```text\n")
	for _, l := range timeline.Build(t, timeline.Options{}).Text(timelineWidth) {
		m.f("%s\n", l)
	}
	m.f("```\n\n")
	return nil
}
