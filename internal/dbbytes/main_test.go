package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/retrylab/retrylab/store"
)

// The report names every collection with its pages, and its lines add up
// to the file's size.
func TestReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "retrylab.db")
	db, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *store.Tx) error {
		for i := range 300 {
			exec := fmt.Sprintf("exec_%04d", i)
			if err := tx.PutExecution(exec, bytes.Repeat([]byte{byte(i)}, 200)); err != nil {
				return err
			}
			if _, err := tx.AppendEvent(exec, func(seq uint64) ([]byte, error) { return []byte(exec), nil }); err != nil {
				return err
			}
		}
		return nil
	})
	if err := errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := report(&out, path, 300); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(path)
	sum := int64(0)
	var file int64
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
		var name string
		var n int64
		fields := strings.Fields(line)
		for i, f := range fields {
			if _, err := fmt.Sscan(f, &n); err == nil {
				name = strings.Join(fields[:i], " ")
				break
			}
		}
		if name == "file" {
			file = n
		} else {
			sum += n
		}
	}
	if file != info.Size() || sum != file {
		t.Errorf("lines add up to %d, file %d, on disk %d:\n%s", sum, file, info.Size(), out.String())
	}
	for _, want := range []string{"executions ", "history_events ", "(300 keys", "growth reserve"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
	if err := report(&out, filepath.Join(t.TempDir(), "missing.db"), 0); err == nil {
		t.Error("a missing file reported")
	}
}
