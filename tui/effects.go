package tui

import (
	"fmt"
	"strings"

	"github.com/retrylab/retrylab/engine/audit"
)

// effectLines is the outbox pane of an imported execution: no simulated
// provider saw its effects, so they are inferred from its side-effecting
// calls as `retrylab audit` grades them (default effects), with the span
// of each attempt as evidence. Computed from the folded trace, no I/O.
func (tv *traceView) effectLines(width int) []string {
	if tv.effects != nil && tv.effectsAt == tv.t.Events {
		return tv.effects
	}
	pats, _ := audit.ParseEffects(audit.DefaultEffects)
	au := audit.NewAuditor(audit.Options{Effects: pats})
	au.Add(tv.t)
	rep := au.Report()
	var out []string
	for _, f := range rep.Findings {
		out = append(out, fit(fmt.Sprintf("%s %s", strings.ToUpper(string(f.Grade)), f.Tool), width),
			fit("  "+string(f.Args), width), fit("  "+f.Why, width))
		for _, e := range f.Attempts {
			out = append(out, fit(fmt.Sprintf("  %s %s #%d  %s", e.Mark, e.Call, e.Attempt, e.Started.Format("15:04:05.000")), width),
				fit("    span "+e.Ref, width))
		}
		out = append(out, "")
	}
	if len(rep.Findings) == 0 {
		out = append(out, "no repeated side effects", "")
	}
	out = append(out, fmt.Sprintf("%d side-effecting attempts", rep.Attempts),
		fit(fmt.Sprintf("%d duplicate · %d possible · %d absorbed", rep.Counts.Duplicate, rep.Counts.Possible, rep.Counts.Absorbed), width))
	tv.effects, tv.effectsAt = out, tv.t.Events
	return out
}
