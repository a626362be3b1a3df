package chaos_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/retrylab/retrylab/engine/agent"
	"github.com/retrylab/retrylab/engine/chaos"
	"github.com/retrylab/retrylab/engine/check"
	"github.com/retrylab/retrylab/engine/control"
	"github.com/retrylab/retrylab/engine/fault"
	"github.com/retrylab/retrylab/engine/history"
	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/internal/testrun"
)

// TestMain lets the runner start this very test binary as its hosts, and
// the hosts start it as their workers.
func TestMain(m *testing.M) {
	agent.MainForTests()
	chaos.MainIfHost()
	testrun.WaitBound(8)
	os.Exit(m.Run())
}

func TestGenerateIsDeterministic(t *testing.T) {
	t.Parallel()
	for i := range 50 {
		a, b := chaos.Generate(7, i, nil), chaos.Generate(7, i, nil)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("run %d planned twice differently: %+v %+v", i, a, b)
		}
	}
	if reflect.DeepEqual(chaos.Generate(7, 3, nil), chaos.Generate(8, 3, nil)) {
		t.Fatal("two seeds plan the same run")
	}
	// A fixed policy changes the policy and nothing else.
	p := history.Policy{Keys: true}
	a, b := chaos.Generate(7, 3, nil), chaos.Generate(7, 3, &p)
	b.Policy = a.Policy
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("--policy changed the plan: %+v %+v", a, b)
	}
}

// TestPlansCoverEverything: 400 runs reach every template, every fault
// point, every policy, kills from outside and key expiry.
func TestPlansCoverEverything(t *testing.T) {
	t.Parallel()
	templates := map[chaos.Template]bool{}
	points := map[fault.Point]bool{}
	policies := map[string]bool{}
	kills, expiries := 0, 0
	for i := range 400 {
		s := chaos.Generate(1, i, nil)
		templates[s.Template] = true
		policies[s.Policy.String()] = true
		for _, f := range s.Faults {
			points[f.Point] = true
		}
		if s.KillAfter > 0 {
			kills++
		}
		if s.ExpireKeys {
			expiries++
		}
		if s.Timeout < 100*time.Millisecond || (s.Timeout > 200*time.Millisecond && !s.ExpireKeys) ||
			s.Interval < 10*time.Millisecond || s.Interval > 20*time.Millisecond {
			t.Fatalf("run %d: timeout %s, interval %s", i, s.Timeout, s.Interval)
		}
	}
	if len(templates) != len(chaos.Templates) || len(points) != len(fault.All()) || len(policies) != 4 || kills == 0 || expiries == 0 {
		t.Fatalf("templates %v, points %v, policies %v, kills %d, expiries %d", templates, points, policies, kills, expiries)
	}
}

// TestScenariosParse: every generated scenario is a valid scenario file,
// served by the catalogue under its name, and inside the model.
func TestScenariosParse(t *testing.T) {
	t.Parallel()
	cat := scenario.NewCatalog(chaos.FS{Seed: 3})
	for i := range 100 {
		spec := chaos.Generate(3, i, nil)
		s, err := cat.Get(spec.Name())
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if s.Name != spec.Name() || s.Execution != spec.Execution() || s.Policy.KeyDigits != 32 || len(s.Faults) != len(spec.Faults) {
			t.Fatalf("run %d: %+v", i, s)
		}
		plan, ok := chaos.Resolve(s.Name)
		if !ok {
			t.Fatalf("run %d: name %q not resolved", i, s.Name)
		}
		var inj []check.Injection
		for _, f := range s.Faults {
			inj = append(inj, check.Injection{Step: f.Step, Attempt: f.Attempt, Point: f.Point})
		}
		if _, err := check.Predict(plan, spec.Policy, inj); err != nil && !errors.Is(err, check.ErrUnmodelled) {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	if _, err := cat.Get("chaos1-4-0"); err == nil {
		t.Fatal("another seed's scenario served")
	}
}

func TestRefusesADatabaseInUse(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "chaos.db")
	if _, err := chaos.Run(context.Background(), chaos.Config{DB: db, Seed: 1, Runs: 3, HostKills: 0}); err != nil {
		t.Fatal(err)
	}
	_, err := chaos.Run(context.Background(), chaos.Config{DB: db, Seed: 2, Runs: 3, HostKills: 0})
	if !errors.Is(err, chaos.ErrNotFresh) {
		t.Fatalf("got %v, want ErrNotFresh", err)
	}
	t.Log(err)
}

// TestChaos200 is the acceptance run: 200 executions with random faults,
// worker kills (crash faults and from outside) and five host kills, every
// killed execution resumed to its end, then the checker. It must pass.
func TestChaos200(t *testing.T) {
	t.Parallel()
	runChaos(t, chaos.Config{Seed: 1, Runs: 200, Concurrency: 8, HostKills: 5}, true)
}

func runChaos(t *testing.T, cfg chaos.Config, wantOK bool) *chaos.Result {
	t.Helper()
	cfg.DB = filepath.Join(t.TempDir(), "chaos.db")
	var lines []string
	cfg.Progress = func(p chaos.Progress) { lines = append(lines, p.Line) }
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := chaos.Run(ctx, cfg)
	if err != nil {
		t.Fatalf("%v\n%s", err, strings.Join(lines, "\n"))
	}
	var out bytes.Buffer
	res.Report.Write(&out, 30)
	t.Logf("%d runs in %s\n%s", res.Runs, time.Since(start).Round(time.Millisecond), out.String())
	if res.Report.OK() != wantOK {
		t.Fatalf("check passed: %v, want %v", res.Report.OK(), wantOK)
	}
	if res.Runs != cfg.Runs || res.Report.Executions != cfg.Runs {
		t.Fatalf("%d runs acknowledged, %d executions checked; want %d", res.Runs, res.Report.Executions, cfg.Runs)
	}
	if cfg.HostKills > 0 && (res.HostKills != cfg.HostKills || res.Hosts != cfg.HostKills+1) {
		t.Fatalf("%d hosts, %d host kills; want %d kills", res.Hosts, res.HostKills, cfg.HostKills)
	}
	return res
}

// TestChaosCatchesKeysDerivedFromTheAttempt breaks the agent on purpose:
// every key mixes in the attempt number, so a retry carries a new key and the
// provider sends again. Under keys+journal the checker must find the
// duplicates and fail.
func TestChaosCatchesKeysDerivedFromTheAttempt(t *testing.T) {
	t.Parallel()
	p := history.Policy{Keys: true, Journal: true}
	cfg := chaos.Config{Seed: 6, Runs: 60, Concurrency: 8, Policy: "keys+journal", HostKills: 0, Bug: chaos.BugKeyFromAttempt}
	// The plan must hold keyed steps whose first attempt takes effect and is
	// then retried (a lost response) or run again (a crash before recording).
	exposed := 0
	for i := range cfg.Runs {
		s := chaos.Generate(cfg.Seed, i, &p)
		for _, f := range s.Faults {
			if (f.Point == fault.TimeoutAfterEffect || f.Point == fault.CrashAfterEffect) && f.Attempt == 1 &&
				s.KillAfter == 0 && !s.ExpireKeys && s.Template != chaos.TemplateUnsafeSend && (f.Step == "send" || f.Step == "create") {
				exposed++
			}
		}
	}
	if exposed < 3 {
		t.Fatalf("seed %d plans only %d exposed runs; pick another", cfg.Seed, exposed)
	}
	res := runChaos(t, cfg, false)
	dup := 0
	for _, v := range res.Report.Violations {
		if v.Kind == "duplicated" {
			dup++
		}
	}
	if dup < exposed || res.Report.ByPolicy["keys+journal"].Classes[check.Duplicated] < exposed {
		t.Fatalf("%d duplicated violations, want at least %d: %v", dup, exposed, res.Report.Violations)
	}
}

// A chaos run interrupted (Ctrl-C cancels its context, and the runner
// kills its host) leaves no host announcement beside the database, which
// would name a dead process to every later command.
func TestInterruptedChaosLeavesNoHostFile(t *testing.T) {
	t.Parallel()
	cfg := chaos.Config{Seed: 3, Runs: 200, Concurrency: 4, DB: filepath.Join(t.TempDir(), "chaos.db")}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg.Progress = func(p chaos.Progress) {
		if p.Runs >= 1 {
			cancel()
		}
	}
	if _, err := chaos.Run(ctx, cfg); err == nil {
		t.Fatal("an interrupted chaos run reports no error")
	}
	if _, err := os.Stat(control.HostFile(cfg.DB)); err == nil {
		t.Errorf("the interrupted run left %s behind", control.HostFile(cfg.DB))
	}
}
