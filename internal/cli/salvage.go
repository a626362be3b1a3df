package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/errkind"
	"github.com/retrylab/retrylab/engine/otlp"
	"github.com/retrylab/retrylab/internal/plural"
	"github.com/retrylab/retrylab/store"
)

func (a *app) salvageCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "salvage DB OUT",
		Short: "Copy every readable record of a damaged database into a new one",
		Long: `Copy every record of DB that can still be read into a new database OUT, and
list what could not be read: the way out of a file that 'retrylab check' (or
any command) reports damaged. DB's pages are read one by one, each checked
before it is followed, so a damaged page costs only the records on it and
under it. Records whose checksum does not match, or that retrylab cannot
decode, are left out of OUT too (a history, or an imported trace, is kept
whole or not at all), and listed; the creation order and execution count are
rebuilt, so every command opens OUT. DB is opened read-only and never
written; OUT must not exist, and is left only once complete.

Exit status: 0 when OUT was written (even with records lost: they are
listed), 1 when nothing could be copied.`,
		Example: "  retrylab salvage chaos.db chaos-salvaged.db",
		Args:    exactArgs(2, "DB and OUT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return ownWords(a.salvage(args[0], args[1]))
		},
	}
}

// salvage copies src into dst (store.Salvage), then drops from dst the
// records that do not decode (engine.CheckRecords) and the imported
// executions whose spans do not read whole (otlp.Unreadable), rebuilds
// the executions' creation order and count (store.Tx.RepairExecutions),
// and says what it lost. It works on a file beside dst, renamed to dst
// only once the copy passes the checks: a failure leaves no dst.
func (a *app) salvage(src, dst string) (err error) {
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("salvage: %s exists; name a new file", dst)
	}
	work := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".salvaging")
	_ = os.Remove(work) // left by a salvage killed before it was done
	defer func() {
		if err != nil {
			_ = os.Remove(work)
		}
	}()
	rep, err := store.Salvage(src, work)
	if err != nil {
		return err
	}
	var lost []string
	for round := 0; ; round++ {
		// The copy is read first on its own: a handle that met damage
		// refuses writes, and the drops below are the repair.
		ro, err := store.Open(work, store.Options{ReadOnly: true})
		if err != nil {
			return fmt.Errorf("salvage: open the copy %s: %w", dst, err)
		}
		damaged, err := engine.CheckRecords(ro, a.imports, 0, otlp.CheckRecords)
		var broken []string
		var why []error
		if err == nil {
			err = ro.View(func(tx *store.Tx) error {
				var err error
				broken, why, err = otlp.Unreadable(tx)
				return err
			})
		}
		ro.Close()
		if err != nil {
			return fmt.Errorf("salvage: read the copy %s: %w", dst, err)
		}
		if round > 0 && len(damaged)+len(broken) == 0 {
			break
		}
		if round == maxSalvageRounds {
			return fmt.Errorf("salvage: the copy %s is still damaged after %d rounds of repair: %w", dst, round, errors.Join(append(damaged, why...)...))
		}
		db, err := store.Open(work, store.Options{})
		if err != nil {
			return fmt.Errorf("salvage: open the copy %s: %w", dst, err)
		}
		var dropped []string
		err = db.Update(func(tx *store.Tx) error {
			dropped = dropped[:0]
			for i, id := range broken {
				if err := otlp.DropExecution(tx, id); err != nil {
					return err
				}
				dropped = append(dropped, fmt.Sprintf("dropped imported execution %s (its spans do not read whole: %s)", id, oneLine(why[i].Error())))
			}
			for _, e := range damaged {
				var d *store.DamagedRecord
				if !errors.As(e, &d) {
					dropped = append(dropped, oneLine(e.Error()))
					continue
				}
				var err error
				if d.Execution != "" {
					err = tx.DeleteExecution(d.Execution)
				} else {
					err = tx.DeleteRecord(d.Bucket, d.Names, d.Key)
				}
				if err != nil {
					return err
				}
				what := fmt.Sprintf("%s key %s: %v", d.Bucket, store.QuoteKey(d.Key), d.Err)
				if d.Execution != "" {
					what = fmt.Sprintf("execution %s (its record or history does not decode: %v)", d.Execution, d.Err)
				}
				dropped = append(dropped, "dropped "+what)
			}
			var histories [][]byte
			if round == 0 {
				histories = rep.Histories
			}
			more, err := tx.RepairExecutions(histories)
			dropped = append(dropped, more...)
			return err
		})
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("salvage: drop undecodable records from %s: %w", dst, err)
		}
		lost = append(lost, dropped...)
	}
	if err := publish(work, dst); err != nil {
		return fmt.Errorf("salvage: %w", err)
	}
	fmt.Fprintf(a.out, "salvaged %s in %s from %s into %s\n", plural.Count(rep.Records, "record"), plural.Count(rep.Buckets, "bucket"), src, dst)
	if len(rep.Lost)+len(lost) == 0 {
		fmt.Fprintln(a.out, "nothing was lost")
		return nil
	}
	fmt.Fprintf(a.out, "could not read (%d):\n", len(rep.Lost)+len(lost))
	for _, l := range rep.Lost {
		fmt.Fprintf(a.out, "  %s\n", l)
	}
	for _, l := range lost {
		fmt.Fprintf(a.out, "  %s\n", l)
	}
	return nil
}

// ownWords makes salvage's error the whole line printed, with its exit
// code: it names salvage's own files, not --db, and does not send the user
// to the salvage that just failed (as Main does for a damaged --db).
func ownWords(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: errkind.ExitCode(err), msg: oneLine(err.Error())}
}

// maxSalvageRounds bounds the rounds of check and repair: a drop can
// leave what named the dropped record (an index entry, a history number)
// to drop in the next round; a few rounds suffice.
const maxSalvageRounds = 5

// publish gives the finished copy at work its name dst, which must not
// exist: a hard link, which fails rather than replace a file made
// meanwhile, then the work file removed.
func publish(work, dst string) error {
	if err := os.Link(work, dst); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s exists; name a new file", dst)
		}
		return os.Rename(work, dst)
	}
	return os.Remove(work)
}
