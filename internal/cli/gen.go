package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine/gen"
	"github.com/retrylab/retrylab/internal/dur"
	"github.com/retrylab/retrylab/internal/plural"
	"github.com/retrylab/retrylab/store"
)

func (a *app) genCmd() *cobra.Command {
	var opts gen.Options
	cmd := &cobra.Command{
		Use:   "gen",
		Short: "Fill a database with synthetic histories, for benchmarks and trying the explorer at scale",
		Long: `Write --executions synthetic executions into the database, each making
--attempts-per-step attempts per tool call. They mix the catalogue's shapes:
naive (a lost response and a keyless retry: two invoices), safe (the key
absorbs the retry, the journal answers a rerun), crash then resume after a gap
(a second send, or a replayed key), invoice-crm (journaled email, a kill, the
email replayed and the CRM row written once), an unsafe tool that escalates,
and a retry policy that gives up. Every attempt carries its fault and outcome;
the outbox, key store, CRM and journal hold what the simulated providers
would have, attributed to the attempts, so the explorer, 'retrylab show' and
'retrylab check' read them like recorded runs. Their scenario names start
with "gen-".

Writes are batched: many executions per fsynced transaction. At the end the
file is rewritten compactly (into a new file beside it, fsynced and renamed
over it: a kill at any moment leaves the old file or the new one). The output
is the same for the same --seed. The database must not be open in another
retrylab.`,
		Example: "  retrylab gen --db big.db --executions 10000 --attempts-per-step 50\n  retrylab --db big.db",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runGen(opts)
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.Executions, "executions", 1000, "number of executions to generate")
	f.IntVar(&opts.AttemptsPerStep, "attempts-per-step", 3, "attempts each tool call makes")
	f.Uint64Var(&opts.Seed, "seed", 1, "seed of the histories (the same seed gives the same database)")
	f.IntVar(&opts.BatchEvents, "batch-events", gen.DefaultBatchEvents, "events per transaction, at most")
	return cmd
}

func (a *app) runGen(opts gen.Options) error {
	if opts.Executions < 1 {
		return &exitError{code: 2, msg: "gen: --executions must be at least 1"}
	}
	if opts.AttemptsPerStep < 1 {
		return &exitError{code: 2, msg: "gen: --attempts-per-step must be at least 1"}
	}
	if opts.BatchEvents < 1 {
		return &exitError{code: 2, msg: "gen: --batch-events must be at least 1"}
	}
	db, err := store.Open(a.dbPath, store.Options{})
	if err != nil {
		if errors.Is(err, store.ErrLocked) {
			return fmt.Errorf("gen: %w; close the explorer or host on it first", err)
		}
		return err
	}
	defer db.Close()

	// Ctrl-C (or q on the progress display) stops the job cleanly.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	fmt.Fprintf(a.out, "gen: %s, %s per step, seed %d, into %s\n",
		plural.Count(opts.Executions, "execution"), plural.Count(opts.AttemptsPerStep, "attempt"), opts.Seed, a.dbPath)
	start := time.Now()
	var st gen.Stats
	if onTerminal(a.out) {
		st, err = withProgress(ctx, cancel, a.out, func(report func(float64, ...string)) (gen.Stats, error) {
			opts.Progress = func(p gen.Progress) {
				report(float64(p.Done)/float64(max(p.Total, 1)), progressLine(p, time.Since(start)), "ctrl+c stops after the current transaction")
			}
			return gen.Generate(ctx, db, opts)
		})
	} else {
		every := max(opts.Executions/20, 1)
		next := every
		opts.Progress = func(p gen.Progress) {
			if p.Done < next && p.Done != p.Total {
				return
			}
			for next <= p.Done {
				next += every
			}
			fmt.Fprintf(a.out, "gen: %s\n", progressLine(p, time.Since(start)))
		}
		st, err = gen.Generate(ctx, db, opts)
	}
	if err != nil {
		if ctx.Err() != nil {
			return &exitError{code: 130, msg: fmt.Sprintf("gen: interrupted after %s; what was committed stays in %s", plural.Count(st.Executions, "execution"), a.dbPath)}
		}
		return fmt.Errorf("gen: %w", err)
	}
	// A bbolt file never shrinks: the pages gen's last commits freed, the
	// slack of pages split by random keys and the room the file grew into
	// would stay. Rewrite it compactly (a new file, renamed into place).
	if err := db.CompactAndClose(); err != nil {
		return fmt.Errorf("gen: %w", err)
	}
	elapsed := time.Since(start)
	var size int64
	if info, err := os.Stat(a.dbPath); err == nil {
		size = info.Size()
	}
	fmt.Fprintf(a.out, "\ngen: wrote %s in %s (%.0f events/s); %s is %s\n", plural.Count(st.Executions, "execution"),
		dur.Text(elapsed.Round(time.Millisecond)), float64(st.Events)/max(elapsed.Seconds(), 1e-9), a.dbPath, byteSize(size))
	fmt.Fprintf(a.out, "  attempts %d · events %d (%s encoded) · outbox messages %d · CRM writes %d · journal records %d\n",
		st.Attempts, st.Events, byteSize(st.Bytes), st.Messages, st.CRMWrites, st.Journal)
	fmt.Fprintf(a.out, "  shapes: %s\n  status: %s\n", counts(st.ByShape), counts(st.ByStatus))
	fmt.Fprintf(a.out, "\nexplore it: retrylab --db %s\ncheck it:   retrylab check --db %s\n", a.dbPath, a.dbPath)
	return nil
}

func progressLine(p gen.Progress, elapsed time.Duration) string {
	return fmt.Sprintf("%d/%d %s · %s · %s · %s · %.0f events/s",
		p.Done, p.Total, plural.Noun(p.Total, "execution"), plural.Count(p.Stats.Attempts, "attempt"),
		plural.Count(p.Stats.Events, "event"), plural.Count(p.Stats.Messages, "message"),
		float64(p.Stats.Events)/max(elapsed.Seconds(), 1e-9))
}

// counts renders a tally as "a 3 · b 2", largest first.
func counts[K ~string](m map[K]int) string {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, " · ")
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
