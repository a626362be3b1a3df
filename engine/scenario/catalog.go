package scenario

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// ErrUnknown means no scenario has the requested name.
var ErrUnknown = errors.New("unknown scenario")

// ErrNoFile means a scenario was named by a path and there is no file there:
// a mistake in the name given, like ErrUnknown.
var ErrNoFile = errors.New("no such scenario file")

// Catalog is the set of scenarios in a file system, one YAML file each.
//
// The file system must not change while the catalogue is in use (fixtures.FS
// is embedded; chaos.FS generates the same file for the same name): each file
// is parsed once and kept, and callers get deep copies of what was parsed, so
// they may change them. Files named by a path (Get("./mine.yaml")) are read
// on every call, so an edited file is seen.
type Catalog struct {
	fsys fs.FS

	mu     sync.Mutex
	parsed map[string]*Scenario // by file name in fsys; never handed out
	all    []*Scenario          // every file, in lesson order, once All has succeeded
}

// NewCatalog reads scenarios from fsys (for example fixtures.FS).
func NewCatalog(fsys fs.FS) *Catalog { return &Catalog{fsys: fsys, parsed: map[string]*Scenario{}} }

// load parses a file of the catalogue, or returns what it parsed before.
// Failures are not kept. c.mu is held.
func (c *Catalog) load(file string) (*Scenario, error) {
	if s, ok := c.parsed[file]; ok {
		return s, nil
	}
	s, err := Load(c.fsys, file)
	if err != nil {
		return nil, err
	}
	c.parsed[file] = s
	return s, nil
}

// All parses every scenario, sorted by lesson order then name.
func (c *Catalog) All() ([]*Scenario, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	all, err := c.loadAll()
	if err != nil {
		return nil, err
	}
	out := make([]*Scenario, len(all))
	for i, s := range all {
		out[i] = s.Clone()
	}
	return out, nil
}

// loadAll is All without the copies. c.mu is held.
func (c *Catalog) loadAll() ([]*Scenario, error) {
	if c.all != nil {
		return c.all, nil
	}
	names, err := fs.Glob(c.fsys, "*.yaml")
	if err != nil {
		return nil, fmt.Errorf("list scenarios: %w", err)
	}
	out := make([]*Scenario, 0, len(names))
	for _, n := range names {
		s, err := c.load(n)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool {
		oi, oj := out[i].Order, out[j].Order
		if (oi == 0) != (oj == 0) {
			return oi != 0
		}
		if oi != oj {
			return oi < oj
		}
		return out[i].Name < out[j].Name
	})
	c.all = out
	return out, nil
}

// Get finds a scenario by name, or reads it from a file when name is a path
// to a .yaml or .yml file.
func (c *Catalog) Get(name string) (*Scenario, error) {
	if IsPath(name) {
		data, err := os.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s", ErrNoFile, name)
		}
		if err != nil {
			return nil, fmt.Errorf("scenario file: %w", err)
		}
		s, err := Parse(name, data)
		if err != nil {
			return nil, err
		}
		s.File = name
		if abs, err := filepath.Abs(name); err == nil {
			s.File = abs
		}
		return s, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	file := name + ".yaml"
	s, ok := c.parsed[file]
	// A name not parsed yet may still be a file (chaos.FS lists no files
	// but opens any name it generates), so look even after All.
	// (Opened once, not stat'ed first: chaos.FS generates a file anew on
	// every open.)
	if !ok && fs.ValidPath(file) {
		loaded, err := c.load(file)
		switch {
		case err == nil:
			s, ok = loaded, true
		case !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
	}
	if ok {
		if s.Name != name {
			return nil, fmt.Errorf("%s: name is %q, but the file is named for %q", file, s.Name, name)
		}
		return s.Clone(), nil
	}
	all, err := c.loadAll()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(all))
	for _, s := range all {
		if s.Name == name {
			return s.Clone(), nil
		}
		names = append(names, s.Name)
	}
	sort.Strings(names)
	if near := Nearest(name, names); len(near) > 0 {
		return nil, fmt.Errorf("%w %q (did you mean %s? `retrylab scenarios` lists them all; or give a path to a .yaml file)", ErrUnknown, name, strings.Join(near, " or "))
	}
	return nil, fmt.Errorf("%w %q (known: %s; or give a path to a .yaml file)", ErrUnknown, name, strings.Join(names, ", "))
}

// IsPath reports whether a scenario name is a file path rather than a name
// in the catalogue.
func IsPath(name string) bool {
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || strings.ContainsRune(name, os.PathSeparator)
}

// Base is the file name of a scenario source, for display.
func Base(s *Scenario) string { return path.Base(s.Source) }
