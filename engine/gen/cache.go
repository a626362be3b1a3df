package gen

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/retrylab/retrylab/store"
)

// FormatVersion changes whenever Generate's output changes, so cached
// databases from an older generator are not reused.
const FormatVersion = 9 // 3: the compact event encoding; 4: and effects recorded in the histories; 5: the world and journals packed; 6: compressed history chunks (store schema v5); 7: the chunks compressed by S2 (a cached v6 file holds chunks this build cannot read); 8: store schema v6 (growing tails in a bucket of their own: a cached v8 file is refused by a build of schema v5, so the two do not share files); 9: store schema v7 (records sealed with checksums: a cached v8 file would be sealed by the first writer to open it, and not measured as this build writes)

// Cached returns the path of a database under dir holding what Generate
// writes with opts into an empty database, and what it wrote. Only the
// first call generates: later calls, from this process or another, reuse
// the file, whose name carries the options and FormatVersion, and read the
// Stats kept beside it. The database is written to a temporary file and
// renamed into place, so an interrupted or concurrent caller never finds
// half a database. opts.Progress is called only while generating.
func Cached(ctx context.Context, dir string, opts Options) (string, Stats, error) {
	start := opts.Start
	if start.IsZero() {
		start = DefaultStart
	}
	name := fmt.Sprintf("gen-v%d-e%d-a%d-s%d-t%d.db", FormatVersion, opts.Executions, opts.AttemptsPerStep, opts.Seed, start.Unix())
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err == nil {
		var st Stats
		if data, err := os.ReadFile(path + ".json"); err == nil {
			_ = json.Unmarshal(data, &st) // the stats are informative only
		}
		return path, st, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", Stats{}, fmt.Errorf("cache directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, name+".tmp-*")
	if err != nil {
		return "", Stats{}, fmt.Errorf("cache %s: %w", name, err)
	}
	tmpPath := tmp.Name()
	tmp.Close()
	defer os.Remove(tmpPath) // a no-op once renamed
	db, err := store.Open(tmpPath, store.Options{})
	if err != nil {
		return "", Stats{}, err
	}
	st, err := Generate(ctx, db, opts)
	if err != nil {
		db.Close()
		return "", Stats{}, err
	}
	// As `retrylab gen` leaves its file: compacted.
	if err := db.CompactAndClose(); err != nil {
		return "", Stats{}, err
	}
	if data, err := json.Marshal(st); err == nil {
		if err := os.WriteFile(path+".json", data, 0o644); err != nil {
			return "", Stats{}, fmt.Errorf("cache %s: %w", name, err)
		}
	}
	if err := os.Rename(tmpPath, path); err != nil {
		return "", Stats{}, fmt.Errorf("cache %s: %w", name, err)
	}
	return path, st, nil
}

// CacheDir is where benchmarks keep generated databases between runs:
// retrylab-bench under the system's temporary directory.
func CacheDir() string { return filepath.Join(os.TempDir(), "retrylab-bench") }
