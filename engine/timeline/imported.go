package timeline

import (
	"github.com/retrylab/retrylab/engine/audit"
	"github.com/retrylab/retrylab/engine/trace"
)

// ForImported is the options for an imported trace: no simulated provider
// saw its effects, so the attempts `retrylab audit` finds repeating a side
// effect (its default effects) get ticks on an inferred lane, as the
// explorer's effects pane lists them.
func ForImported(t *trace.Trace) Options {
	pats, err := audit.ParseEffects(audit.DefaultEffects)
	if err != nil {
		return Options{}
	}
	au := audit.NewAuditor(audit.Options{Effects: pats})
	au.Add(t)
	var opt Options
	for _, f := range au.Report().Findings {
		for _, e := range f.Attempts {
			opt.Inferred = append(opt.Inferred, AttemptRef{Call: e.Call, N: e.Attempt})
		}
	}
	return opt
}
