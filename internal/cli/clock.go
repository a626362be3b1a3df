package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/internal/dur"
)

func (a *app) clockCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "clock",
		Short: "Show the world clock, or advance it: idempotency keys expire on it",
		Long: `The simulated providers keep their own clock, the world clock, which runs
ahead of real time by an offset kept in the database. Idempotency keys expire
on it (after 24h unless a scenario says otherwise), so advancing it shows
what a long pause does, as in key-retention:

  retrylab run key-retention      # the worker dies after the send (exit 137)
  retrylab clock advance 25h      # the execution waits 25 hours for a human
  retrylab resume                 # the key has expired: a second invoice

Without a subcommand it prints the offset. 'retrylab reset' sets it back to 0.
It works through the explorer when that has the database open, as its A key
does.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Printing the offset only reads: it neither writes to the
			// file nor creates one (withReader). Where there is no file
			// the clock has not been moved: its offset is 0, as it
			// always printed.
			show := func(offset time.Duration) {
				fmt.Fprintf(a.out, "world clock %s: the providers' clock runs %s ahead of real time\n",
					offsetLabel(offset), offsetText(offset))
			}
			if _, err := os.Stat(a.dbPath); errors.Is(err, fs.ErrNotExist) {
				show(0)
				return nil
			}
			return a.withReader(func(h engine.Service) error {
				show(h.WorldOffset())
				return nil
			})
		},
	}
	cmd.AddCommand(&cobra.Command{
		Use:     "advance DURATION",
		Short:   "Move the world clock forward (25h, 90m, 2d)",
		Example: "  retrylab clock advance 25h\n  retrylab clock advance 2d",
		Args:    exactArgs(1, "DURATION"),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := parseAdvance(args[0])
			if err != nil {
				return &exitError{code: 2, msg: "clock advance: " + err.Error()}
			}
			return a.withService(func(h engine.Service) error {
				if err := h.AdvanceClock(d); err != nil {
					return err
				}
				fmt.Fprintf(a.out, "world clock advanced %s: now %s (keys stored more than their retention ago have expired)\n",
					offsetText(d), offsetLabel(h.WorldOffset()))
				return nil
			})
		},
	})
	return cmd
}

// maxAdvanceDays is the most whole days a time.Duration holds.
const maxAdvanceDays = int(math.MaxInt64 / int64(24*time.Hour))

// parseAdvance reads a positive duration: Go's forms (25h, 90m, 1h30m) or
// whole days (2d).
func parseAdvance(s string) (time.Duration, error) {
	var d time.Duration
	var err error
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		n, err = strconv.Atoi(days)
		// Past about 292 years a time.Duration wraps round: refuse it
		// rather than move the clock by whatever the wrap gives.
		if err == nil && (n > maxAdvanceDays || n < -maxAdvanceDays) {
			return 0, fmt.Errorf("%q is too far: at most %dd", s, maxAdvanceDays)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		d, err = time.ParseDuration(s)
	}
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (e.g. 25h, 90m, 2d)", s)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q: the world clock only moves forward (give a positive duration)", s)
	}
	return d, nil
}

// offsetText writes a duration to the second as people write it ("25h",
// "1h30m"); no offset is "0h".
func offsetText(d time.Duration) string {
	d = d.Round(time.Second)
	if d == 0 {
		return "0h" // the clock's unit, as in +25h
	}
	return dur.Text(d)
}

// offsetLabel is the offset as the explorer's status bar shows it: +25h.
func offsetLabel(d time.Duration) string { return "+" + offsetText(d) }
