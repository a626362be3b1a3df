package world

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/retrylab/retrylab/store"
)

// The key store at scale: lookups and replays with many stored keys against
// few, in one run. The databases are generated once into
// $TMPDIR/retrylab-bench and reused. By default the large one holds 10 000
// keys; RETRYLAB_BENCH_FULL=1 makes it 1 000 000 (see BENCHMARKS.md).

type benchClock struct{}

func (benchClock) Now() time.Time { return keyBenchTime.Add(time.Hour) }

// keyBenchTime is when the benchmark keys were stored: an hour before the
// clock above, well inside the retention.
var keyBenchTime = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)

// benchKey is the i-th stored key: 32 hex digits, as large runs use.
func benchKey(i int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "bench-key-%d", i))
	return "ik_" + hex.EncodeToString(sum[:16])
}

// benchSend is the i-th key's request body.
func benchSend(i int) []byte {
	return fmt.Appendf(nil, `{"to":"jordan@acme.dev","subject":"Invoice %d","body":"…"}`, i)
}

// keyStoreDB returns a database whose mail API has stored n keys (and
// delivered their n messages), generating it on first use. Keys are
// inserted in key order so the fill costs sequential writes only.
func keyStoreDB(b *testing.B, n int) string {
	b.Helper()
	dir := filepath.Join(os.TempDir(), "retrylab-bench")
	// v2: the world's records packed (codec.go), not JSON.
	path := filepath.Join(dir, fmt.Sprintf("keys-v2-n%d.db", n))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	order := make([]int, n)
	keys := make([]string, n)
	for i := range n {
		order[i], keys[i] = i, benchKey(i)
	}
	sort.Slice(order, func(x, y int) bool { return keys[order[x]] < keys[order[y]] })
	tmp := fmt.Sprintf("%s.tmp-%d", path, os.Getpid())
	defer os.Remove(tmp)
	db, err := store.Open(tmp, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	const batch = 20000
	for from := 0; from < n; from += batch {
		err := db.Update(func(tx *store.Tx) error {
			for _, i := range order[from:min(from+batch, n)] {
				if _, err := Apply(tx, Call{Service: ServiceMail, Method: http.MethodPost, Path: "/v1/send",
					Body: benchSend(i), Key: keys[i], Dedupe: true, Now: keyBenchTime,
					Attribution: Attribution{Execution: fmt.Sprintf("exec_%07d", i), Step: "step-4", Attempt: 1, Run: 1}}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
	b.Logf("stored %d keys in %s", n, time.Since(start).Round(time.Millisecond))
	return path
}

// keyStore is an opened world over a key store database.
type keyStore struct {
	n      int
	db     *store.DB
	w      *World
	openIn time.Duration
	client *http.Client
}

func openKeyStore(b *testing.B, n int) *keyStore {
	b.Helper()
	path := keyStoreDB(b, n)
	db, err := store.Open(path, store.Options{LockTimeout: 10 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	w, err := New(Config{DB: db, Clock: benchClock{}})
	if err != nil {
		b.Fatal(err)
	}
	open := time.Since(start)
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	ks := &keyStore{n: n, db: db, w: w, openIn: open,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
	b.Cleanup(func() {
		w.Close()
		db.Close()
	})
	return ks
}

func (ks *keyStore) lookup(b *testing.B, i int) {
	k, ok, err := ks.w.LookupKey(benchKey(i))
	if err != nil || !ok || k.Status != http.StatusOK || k.Expired {
		b.Fatalf("lookup %d of %d: %+v %v %v", i, ks.n, k, ok, err)
	}
}

// replay repeats the i-th send with its key: the stored response comes
// back, nothing is sent.
func (ks *keyStore) replay(b *testing.B, i int) {
	req, err := http.NewRequest(http.MethodPost, ks.w.MailURL()+"/v1/send", bytes.NewReader(benchSend(i)))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderIdempotencyKey, benchKey(i))
	resp, err := ks.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get(HeaderIdempotentReplayed) != "true" {
		b.Fatalf("replay %d of %d: %d %s", i, ks.n, resp.StatusCode, body)
	}
}

func pct(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s))*p+0.5) - 1
	return s[max(0, min(i, len(s)-1))]
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// BenchmarkKeyStore looks up and replays random stored keys in a key store
// of 1 000 keys and in a large one, alternating, and reports each p99, the
// ratios, and how long opening the world took on each (it scans the key
// store for requests left in flight). One op is one lookup and one replay
// in each store.
func BenchmarkKeyStore(b *testing.B) {
	large := 10000
	if os.Getenv("RETRYLAB_BENCH_FULL") == "1" {
		large = 1000000
	}
	stores := []*keyStore{openKeyStore(b, 1000), openKeyStore(b, large)}
	r := rand.New(rand.NewPCG(1, 2))
	const minSamples = 200 // for a percentile even with -benchtime 1x
	n := max(b.N, minSamples)
	lookups := [2][]time.Duration{}
	replays := [2][]time.Duration{}
	b.ResetTimer()
	for range n {
		for s, ks := range stores {
			i := r.IntN(ks.n)
			start := time.Now()
			ks.lookup(b, i)
			lookups[s] = append(lookups[s], time.Since(start))
			start = time.Now()
			ks.replay(b, i)
			replays[s] = append(replays[s], time.Since(start))
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(large), "large-keys")
	b.ReportMetric(us(pct(lookups[0], 0.5)), "small-lookup-p50-us")
	b.ReportMetric(us(pct(lookups[1], 0.5)), "large-lookup-p50-us")
	b.ReportMetric(us(pct(replays[0], 0.5)), "small-replay-p50-us")
	b.ReportMetric(us(pct(replays[1], 0.5)), "large-replay-p50-us")
	b.ReportMetric(us(pct(lookups[0], 0.99)), "small-lookup-p99-us")
	b.ReportMetric(us(pct(lookups[1], 0.99)), "large-lookup-p99-us")
	b.ReportMetric(float64(pct(lookups[1], 0.99))/float64(pct(lookups[0], 0.99)), "lookup-large/small")
	b.ReportMetric(us(pct(replays[0], 0.99)), "small-replay-p99-us")
	b.ReportMetric(us(pct(replays[1], 0.99)), "large-replay-p99-us")
	b.ReportMetric(float64(pct(replays[1], 0.99))/float64(pct(replays[0], 0.99)), "replay-large/small")
	b.ReportMetric(float64(stores[0].openIn)/1e6, "small-open-ms")
	b.ReportMetric(float64(stores[1].openIn)/1e6, "large-open-ms")
}
