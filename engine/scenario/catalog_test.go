package scenario_test

import (
	"errors"
	"io/fs"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/retrylab/retrylab/engine/scenario"
	"github.com/retrylab/retrylab/fixtures"
)

// countingFS counts the opens of each file that exists (a parse each).
type countingFS struct {
	fs.FS
	mu    sync.Mutex
	opens map[string]int
}

func (c *countingFS) Open(name string) (fs.File, error) {
	f, err := c.FS.Open(name)
	if err == nil && name != "." {
		c.mu.Lock()
		c.opens[name]++
		c.mu.Unlock()
	}
	return f, err
}

// Stat answers without an open, as embed.FS does, so Open counts reads.
func (c *countingFS) Stat(name string) (fs.FileInfo, error) { return fs.Stat(c.FS, name) }

// TestCatalogParsesEachFileOnce: a checker resolves every execution's
// scenario, most of them not in the catalogue; each lookup used to parse
// every file again.
func TestCatalogParsesEachFileOnce(t *testing.T) {
	cfs := &countingFS{FS: fixtures.FS, opens: map[string]int{}}
	cat := scenario.NewCatalog(cfs)
	for range 5 {
		if _, err := cat.Get("gen-s1-x"); !errors.Is(err, scenario.ErrUnknown) {
			t.Fatalf("unknown name: %v", err)
		}
		if s, err := cat.Get("naive"); err != nil || s.Name != "naive" {
			t.Fatalf("naive: %v", err)
		}
		if all, err := cat.All(); err != nil || len(all) < 20 {
			t.Fatalf("all: %d, %v", len(all), err)
		}
	}
	for name, n := range cfs.opens {
		if n > 1 {
			t.Errorf("%s opened %d times", name, n)
		}
	}
	if cfs.opens["naive.yaml"] != 1 {
		t.Errorf("naive.yaml opened %d times", cfs.opens["naive.yaml"])
	}
}

// TestCatalogHandsOutCopies: what a caller changes in a scenario it got
// (tests break properties, runs override the policy) does not reach the next
// caller, and a copy is equal to a fresh parse in every field.
func TestCatalogHandsOutCopies(t *testing.T) {
	cat := scenario.NewCatalog(fixtures.FS)
	all, err := cat.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		fresh, err := scenario.Load(fixtures.FS, s.Name+".yaml")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(s, fresh) {
			t.Errorf("%s: the catalogue's copy differs from a fresh parse", s.Name)
		}
		// Change everything a caller can reach.
		s.Policy.Keys = !s.Policy.Keys
		s.Policy.Retry.NonRetryable = append(s.Policy.Retry.NonRetryable, "x")
		on := true
		s.Policy.Canonical = &on
		for name, tool := range s.Tools {
			tool.Kind = "changed"
			s.Tools[name] = tool
		}
		for i := range s.Turns {
			for j := range s.Turns[i].Calls {
				c := &s.Turns[i].Calls[j]
				c.Step = "changed"
				for k := range c.Args {
					c.Args[k] = "changed"
				}
				if c.AgentRetry != nil {
					c.AgentRetry.FreshStep = !c.AgentRetry.FreshStep
					for k := range c.AgentRetry.Args {
						c.AgentRetry.Args[k] = "changed"
					}
				}
			}
		}
		s.Faults = append(s.Faults, scenario.Fault{Step: "changed"})
		for i := range s.Faults {
			s.Faults[i].Attempt = 99
		}
		for k := range s.Expect.Outbox {
			s.Expect.Outbox[k] = 99
		}
		if s.Expect.CRMRows != nil {
			*s.Expect.CRMRows = 99
		}
		again, err := cat.Get(s.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(again, fresh) {
			t.Errorf("%s: a change to one caller's copy reached the catalogue", s.Name)
		}
	}
}

// TestCatalogUnknownAfterAll: an unknown name is still an error naming the
// known ones, and a scenario whose name is not its file's is still found.
func TestCatalogUnknownAfterAll(t *testing.T) {
	fsys := fstest.MapFS{"file.yaml": {Data: []byte(minimal)}}
	cat := scenario.NewCatalog(fsys)
	for range 2 {
		if s, err := cat.Get("minimal"); err != nil || s.Name != "minimal" {
			t.Fatalf("minimal: %v", err)
		}
		if _, err := cat.Get("other"); !errors.Is(err, scenario.ErrUnknown) || !strings.Contains(err.Error(), "known: minimal") {
			t.Fatalf("other: %v", err)
		}
	}
}

// hiddenFS opens its one file but lists none, as chaos.FS generates files
// on demand.
type hiddenFS struct{ data []byte }

func (h hiddenFS) Open(name string) (fs.File, error) {
	if name == "minimal.yaml" {
		return fstest.MapFS{name: {Data: h.data}}.Open(name)
	}
	return fstest.MapFS{}.Open(name)
}

// TestCatalogFindsUnlistedFiles: after All (which lists nothing here), a
// name is still looked up in the file system.
func TestCatalogFindsUnlistedFiles(t *testing.T) {
	cat := scenario.NewCatalog(hiddenFS{data: []byte(minimal)})
	if all, err := cat.All(); err != nil || len(all) != 0 {
		t.Fatalf("all: %d, %v", len(all), err)
	}
	if s, err := cat.Get("minimal"); err != nil || s.Name != "minimal" {
		t.Fatalf("minimal after All: %v", err)
	}
}

// A path with no file is ErrNoFile, said with the path as given; a file
// that cannot be read for another reason (here a directory) is not.
func TestCatalogPathWithNoFile(t *testing.T) {
	cat := scenario.NewCatalog(fixtures.FS)
	missing := t.TempDir() + "/missing.yaml"
	_, err := cat.Get(missing)
	if !errors.Is(err, scenario.ErrNoFile) || err.Error() != "no such scenario file: "+missing {
		t.Errorf("Get(%s): %v, want ErrNoFile", missing, err)
	}
	if _, err := cat.Get(t.TempDir() + "/"); err == nil || errors.Is(err, scenario.ErrNoFile) {
		t.Errorf("Get(a directory): %v, want an error other than ErrNoFile", err)
	}
}
