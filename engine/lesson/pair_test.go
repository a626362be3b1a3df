package lesson_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/lesson"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/engine/verify"
	"github.com/retrylab/retrylab/fixtures"
	"github.com/retrylab/retrylab/internal/testrun"
)

// Every `fixes` of the catalogue names a scenario of the lesson path that
// comes before its fix, and both halves find the pair.
func TestPairsOfTheCatalogue(t *testing.T) {
	cat := scenario.NewCatalog(testrun.QuickTimeouts(t, fixtures.FS))
	all, err := cat.All()
	if err != nil {
		t.Fatal(err)
	}
	pairs := map[string]string{}
	for _, s := range all {
		p, ok := lesson.PairOf(cat, s)
		if s.Fixes != "" {
			if !ok || p.Mistake.Name != s.Fixes || p.Fix != s {
				t.Errorf("%s fixes %q, but its pair is %+v (%v)", s.Name, s.Fixes, p, ok)
				continue
			}
			if p.Mistake.Order == 0 || p.Mistake.Order >= s.Order {
				t.Errorf("%s (order %d) fixes %s (order %d): the mistake must come first in the path", s.Name, s.Order, p.Mistake.Name, p.Mistake.Order)
			}
			pairs[p.Mistake.Name] = s.Name
		}
	}
	for _, name := range []string{"naive", "key-the-intent", "canonicalise", "agent-retry-fresh-step", "regenerated-args", "key-retention"} {
		if pairs[name] == "" {
			t.Errorf("mistake %s has no fix in the catalogue", name)
			continue
		}
		m, _ := cat.Get(name)
		if p, ok := lesson.PairOf(cat, m); !ok || p.Fix.Name != pairs[name] {
			t.Errorf("the mistake %s does not find its fix %s: %+v", name, pairs[name], p)
		}
	}
	if s, _ := cat.Get("crash"); s != nil {
		if _, ok := lesson.PairOf(cat, s); ok {
			t.Errorf("crash is in no pair")
		}
	}
}

// A workshop resumed at a fix: the session never ran the mistake, so it
// runs it on a scratch database to show the difference.
func TestDiffOfAFixRunsTheMistakeOnScratch(t *testing.T) {
	t.Parallel()
	h := openHost(t, filepath.Join(t.TempDir(), "workshop.db"))
	defer h.Close()
	s, err := lesson.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	pairs := lesson.NewPairs(h, verify.Scratch(engine.Config{Scenarios: testrun.QuickTimeouts(t, fixtures.FS), NoSync: true}))
	var step lesson.Step
	for _, st := range s.Path() {
		if st.Name == "key-the-intent-fixed" {
			step = st
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if line, err := pairs.Line(ctx, step, verify.Outcome{}); line != "" || err != nil {
		t.Errorf("before the fix ran: %q, %v; want nothing", line, err)
	}
	out, err := s.Run(ctx, step)
	if err != nil {
		t.Fatal(err)
	}
	line, err := pairs.Line(ctx, step, out)
	if err != nil {
		t.Fatal(err)
	}
	want := "diff: key-the-intent: 2 messages to jordan@acme.dev; key-the-intent-fixed: 1 — they part at row 1, step-4 send_invoice_email: #2 ✓ vs ↺"
	if !strings.HasPrefix(line, want) {
		t.Errorf("diff line\n%q\nwant it to start\n%q", line, want)
	}
	// The workshop's database holds only the fix: the scratch run left
	// nothing in it.
	if list, total, _ := h.Executions(0, 10); total != 1 || list[0].Scenario != "key-the-intent-fixed" {
		t.Errorf("workshop database holds %d executions: %+v", total, list)
	}
}
