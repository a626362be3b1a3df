package trace

import (
	"fmt"
	"strconv"
	"strings"
)

// Mark is the glyph a reader tells outcomes apart by. The screen, the CLI
// and the Markdown handout all take glyphs and words from this one table.
type Mark int

// The marks.
const (
	MarkNone       Mark = iota
	MarkOK              // ✓ the attempt (or the execution) succeeded
	MarkTimeout         // ⏱ no answer in time; nothing says the provider acted
	MarkDedup           // ↺ answered from the provider's key store: no new effect
	MarkReplay          // ⟲ answered from the journal: no request sent
	MarkKilled          // ☠ the worker died
	MarkEscalated       // ⚑ an unsafe call's outcome is unknown: a human must look
	MarkAmbiguous       // ◆ the caller never learnt the outcome, but the provider acted
	MarkFailed          // ✖ an error answer, or the execution failed
	MarkRecorded        // ✎ the result is recorded in the journal
	MarkFault           // ⚡ a fault was injected
	MarkRetry           // ↻ the policy will try again
	MarkRunning         // … in flight
	MarkDeleted         // ✂ a journal record deleted by hand
	MarkDuplicates      // ⚠ the provider holds duplicates
	MarkNotKept         // ⋯ attempts the source did not keep
	MarkGap             // ┆ time with no worker running
	MarkClock           // ⏰ the world clock moved; a key expired
	markCount
)

type markInfo struct {
	glyph string
	word  string // what the mark means, as the help legend says it
}

var marks = [markCount]markInfo{
	MarkNone:       {"", ""},
	MarkOK:         {"✓", "ok"},
	MarkTimeout:    {"⏱", "timeout"},
	MarkDedup:      {"↺", "deduplicated by key"},
	MarkReplay:     {"⟲", "replayed from journal"},
	MarkKilled:     {"☠", "worker killed"},
	MarkEscalated:  {"⚑", "escalated"},
	MarkAmbiguous:  {"◆", "unknown to caller; delivered"},
	MarkFailed:     {"✖", "failed"},
	MarkRecorded:   {"✎", "journaled"},
	MarkFault:      {"⚡", "fault injected"},
	MarkRetry:      {"↻", "retry"},
	MarkRunning:    {"…", "in flight"},
	MarkDeleted:    {"✂", "journal record deleted"},
	MarkDuplicates: {"⚠", "duplicates"},
	MarkNotKept:    {"⋯", "attempts the source did not keep"},
	MarkGap:        {"┆", "no worker running"},
	MarkClock:      {"⏰", "world clock moved, key expired"},
}

// Glyph is the mark's one-character sign; "" for MarkNone.
func (m Mark) Glyph() string {
	if m < 0 || m >= markCount {
		return ""
	}
	return marks[m].glyph
}

// Word is what the mark means, in a few words.
func (m Mark) Word() string {
	if m < 0 || m >= markCount {
		return ""
	}
	return marks[m].word
}

// String is the glyph.
func (m Mark) String() string { return m.Glyph() }

// LegendMarks are the marks a legend explains, in the order it lists them.
var LegendMarks = []Mark{MarkOK, MarkTimeout, MarkDedup, MarkReplay, MarkRecorded, MarkKilled, MarkEscalated,
	MarkAmbiguous, MarkFailed, MarkDuplicates}

// Legend is "✓ ok  ⏱ timeout  …" for the given marks (LegendMarks when
// none are given).
func Legend(ms ...Mark) string {
	if len(ms) == 0 {
		ms = LegendMarks
	}
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.Glyph() + " " + m.Word()
	}
	return strings.Join(parts, "  ")
}

// AttemptNumbers are attempt n's number as every view writes it: "3", or
// for a row standing for attempts the source did not keep (notKept of
// them, the last n) their range, "1-2". The trace's "#1-2", show's
// "attempts 1-2" and the audit's "call 5 attempts 1-2" agree.
func AttemptNumbers(n, notKept int) string {
	if notKept > 1 {
		return fmt.Sprintf("%d-%d", n-notKept+1, n)
	}
	return strconv.Itoa(n)
}

// AttemptWords are "attempt 3", or "attempts 1-2" for attempts not kept.
func AttemptWords(n, notKept int) string {
	if notKept > 1 {
		return "attempts " + AttemptNumbers(n, notKept)
	}
	return "attempt " + AttemptNumbers(n, notKept)
}
