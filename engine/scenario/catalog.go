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
)

// ErrUnknown means no scenario has the requested name.
var ErrUnknown = errors.New("unknown scenario")

// Catalog is the set of scenarios in a file system, one YAML file each.
type Catalog struct {
	fsys fs.FS
}

// NewCatalog reads scenarios from fsys (for example fixtures.FS).
func NewCatalog(fsys fs.FS) *Catalog { return &Catalog{fsys: fsys} }

// All parses every scenario, sorted by lesson order then name.
func (c *Catalog) All() ([]*Scenario, error) {
	names, err := fs.Glob(c.fsys, "*.yaml")
	if err != nil {
		return nil, fmt.Errorf("list scenarios: %w", err)
	}
	out := make([]*Scenario, 0, len(names))
	for _, n := range names {
		s, err := Load(c.fsys, n)
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
	return out, nil
}

// Get finds a scenario by name, or reads it from a file when name is a path
// to a .yaml or .yml file.
func (c *Catalog) Get(name string) (*Scenario, error) {
	if IsPath(name) {
		data, err := os.ReadFile(name)
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
	file := name + ".yaml"
	if _, err := fs.Stat(c.fsys, file); err == nil {
		s, err := Load(c.fsys, file)
		if err != nil {
			return nil, err
		}
		if s.Name != name {
			return nil, fmt.Errorf("%s: name is %q, but the file is named for %q", file, s.Name, name)
		}
		return s, nil
	}
	all, err := c.All()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(all))
	for _, s := range all {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("%w %q (known: %s; or give a path to a .yaml file)", ErrUnknown, name, strings.Join(names, ", "))
}

// IsPath reports whether a scenario name is a file path rather than a name
// in the catalogue.
func IsPath(name string) bool {
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || strings.ContainsRune(name, os.PathSeparator)
}

// Base is the file name of a scenario source, for display.
func Base(s *Scenario) string { return path.Base(s.Source) }
