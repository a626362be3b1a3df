package otlp

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"

	"github.com/retrylab/retrylab/store"
)

func TestZZTimeline(t *testing.T) {
	path := os.Getenv("RETRYLAB_TL_FILE")
	if path == "" {
		t.Skip()
	}
	debug.SetMemoryLimit(ImportMemoryLimit)
	for i := 0; i < 2; i++ {
		db, err := store.Open(filepath.Join(t.TempDir(), "x.db"), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		res, err := ImportFile(db, path)
		if err != nil {
			t.Fatal(err)
		}
		t1 := time.Now()
		if os.Getenv("RETRYLAB_TL_BARE") != "" {
			bareDecode(t, path)
		}
		t.Logf("import %v (%d spans) bare %v", t1.Sub(t0), res.Spans, time.Since(t1))
		db.Close()
	}
}
