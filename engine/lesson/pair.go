package lesson

import (
	"context"
	"errors"
	"fmt"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/diff"
	"github.com/retrylab/retrylab/engine/imports"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/engine/verify"
)

// This file shows each mistake/fix pair of the catalogue as a difference:
// a scenario whose `fixes` names another is the fix, the other the
// mistake, and the diff of their executions says what the fix changed.

// Pair is a mistake and its fix.
type Pair struct {
	Mistake, Fix *scenario.Scenario
}

// PairOf finds the pair a scenario belongs to in the catalogue: as the fix
// (its Fixes names the mistake) or as the mistake (a scenario fixes it).
// ok is false for a scenario in no pair.
func PairOf(cat *scenario.Catalog, scn *scenario.Scenario) (Pair, bool) {
	if scn.Fixes != "" {
		if m, err := cat.Get(scn.Fixes); err == nil {
			return Pair{Mistake: m, Fix: scn}, true
		}
		return Pair{}, false
	}
	all, err := cat.All()
	if err != nil {
		return Pair{}, false
	}
	for _, s := range all {
		if s.Fixes == scn.Name {
			return Pair{Mistake: scn, Fix: s}, true
		}
	}
	return Pair{}, false
}

// DiffLine is the pair's difference in one line, for a lesson step or a
// handout: "diff: key-the-intent: 2 messages to jordan@acme.dev;
// key-the-intent-fixed: 1 — they part at row 1, ...".
func DiffLine(mistake, fix *trace.Trace) string {
	return "diff: " + diff.Compare(mistake, fix, "", "").Line()
}

// Command is the CLI command that shows the pair's difference in full,
// for executions with these ids.
func Command(mistake, fix string) string { return fmt.Sprintf("retrylab diff %s %s", mistake, fix) }

// FoldExecution reads and folds one execution of a host (imports.Fold):
// an engine.Source, or the host itself.
func FoldExecution(h imports.Reader, id string) (*trace.Trace, error) {
	return imports.Fold(h, id, 0)
}

// RunScratch runs a scenario's script on a scratch host and folds the
// execution it ended with: the other half of a pair when the database at
// hand does not hold it.
func RunScratch(ctx context.Context, open verify.Opener, scn *scenario.Scenario) (tr *trace.Trace, err error) {
	h, closeFn, err := open()
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, closeFn()) }()
	out, err := verify.Run(ctx, h, scn, verify.Options{})
	if err != nil {
		return nil, fmt.Errorf("run %s on a scratch database: %w", scn.Name, err)
	}
	if out.Execution == "" {
		return nil, fmt.Errorf("run %s on a scratch database: no execution", scn.Name)
	}
	return FoldExecution(h, out.Execution)
}

// Pairs remembers the executions a walk ran, by scenario, and shows each
// fix beside its mistake. It works on the walk's host right after a step
// ran, before the next step's reset wipes the execution.
type Pairs struct {
	h      *engine.Host
	traces map[string]*trace.Trace
	// scratch, when set, runs a fix's mistake on a scratch database when
	// the walk did not run it (a workshop resumed at the fix).
	scratch verify.Opener
}

// NewPairs follows the steps run on h; scratch may be nil.
func NewPairs(h *engine.Host, scratch verify.Opener) *Pairs {
	return &Pairs{h: h, traces: map[string]*trace.Trace{}, scratch: scratch}
}

// Line keeps the execution a step just ran (out.Execution) and, for a fix,
// returns its diff line beside its mistake's: the one this walk ran, or a
// run on the scratch database. It returns "" for a step that fixes
// nothing, and for a fix whose mistake is at hand nowhere.
func (p *Pairs) Line(ctx context.Context, step Step, out verify.Outcome) (string, error) {
	if out.Execution == "" {
		return "", nil
	}
	fix, err := FoldExecution(p.h, out.Execution)
	if err != nil {
		return "", err
	}
	p.traces[step.Name] = fix
	if step.Scenario == nil || step.Scenario.Fixes == "" {
		return "", nil
	}
	mistake := p.traces[step.Scenario.Fixes]
	if mistake == nil {
		if p.scratch == nil {
			return "", nil
		}
		m, err := p.h.Catalog().Get(step.Scenario.Fixes)
		if err != nil {
			return "", err
		}
		if mistake, err = RunScratch(ctx, p.scratch, m); err != nil {
			return "", err
		}
		p.traces[m.Name] = mistake
	}
	return DiffLine(mistake, fix), nil
}
