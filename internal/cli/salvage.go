package cli

import (
	"errors"
	"fmt"

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
under it. Records that bbolt reads but retrylab cannot decode are left out of
OUT too (a history is kept whole or not at all), and listed. DB is opened
read-only and never written; OUT must not exist.

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
// records that do not decode (engine.CheckRecords), and says what it lost.
func (a *app) salvage(src, dst string) error {
	rep, err := store.Salvage(src, dst)
	if err != nil {
		return err
	}
	// The copy is read first on its own: a handle that met damage
	// refuses writes, and the drops below are the repair.
	ro, err := store.Open(dst, store.Options{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("salvage: open the copy %s: %w", dst, err)
	}
	damaged, err := engine.CheckRecords(ro, a.imports, 0, otlp.CheckRecords)
	ro.Close()
	if err != nil {
		return fmt.Errorf("salvage: read the copy %s: %w", dst, err)
	}
	db, err := store.Open(dst, store.Options{})
	if err != nil {
		return fmt.Errorf("salvage: open the copy %s: %w", dst, err)
	}
	defer db.Close()
	dropped := 0
	var lost []string
	if len(damaged) > 0 {
		err = db.Update(func(tx *store.Tx) error {
			dropped, lost = 0, lost[:0]
			for _, e := range damaged {
				var d *store.DamagedRecord
				if !errors.As(e, &d) {
					lost = append(lost, oneLine(e.Error()))
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
				dropped++
				what := fmt.Sprintf("%s key %s: %v", d.Bucket, store.QuoteKey(d.Key), d.Err)
				if d.Execution != "" {
					what = fmt.Sprintf("execution %s (its record or history does not decode: %v)", d.Execution, d.Err)
				}
				lost = append(lost, "dropped "+what)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("salvage: drop undecodable records from %s: %w", dst, err)
		}
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
