package engine_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const enginePath = "github.com/retrylab/retrylab/engine"

// imports lists the packages a directory's non-test Go files import.
func imports(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s (%v)", dir, err)
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// TestEngineIsNotAHub: what crosses the runtime API (wire), what the host
// publishes (notice) and the lesson progress (lesson) live outside package
// engine, so the worker and the narration do not import the engine at all,
// the leaf packages import nothing that could import it back, and the
// engine's API no longer declares those types (issue 9 item 5).
func TestEngineIsNotAHub(t *testing.T) {
	for _, dir := range []string{"agent", "narrate", "wire", "notice", "trace", "history", "world", "check"} {
		if got := imports(t, dir); slices.Contains(got, enginePath) {
			t.Errorf("engine/%s imports %s", dir, enginePath)
		}
	}
	// The leaves reach only data packages, never a package that imports
	// the engine.
	leafOK := map[string]bool{enginePath + "/fault": true, enginePath + "/history": true,
		enginePath + "/scenario": true, enginePath + "/world": true}
	for _, dir := range []string{"wire", "notice"} {
		for _, p := range imports(t, dir) {
			if strings.HasPrefix(p, "github.com/retrylab/") && !leafOK[p] {
				t.Errorf("leaf engine/%s imports %s", dir, p)
			}
		}
	}
	// The engine declares none of the moved types or lesson state.
	moved := map[string]string{"Notice": "notice", "Plan": "wire", "AttemptRequest": "wire", "AttemptGrant": "wire",
		"HeaderRun": "wire", "EnvWorker": "wire", "LessonState": "lesson", "LessonAnswer": "lesson"}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					var names []*ast.Ident
					switch s := s.(type) {
					case *ast.TypeSpec:
						names = []*ast.Ident{s.Name}
					case *ast.ValueSpec:
						names = s.Names
					}
					for _, n := range names {
						if pkg, ok := moved[n.Name]; ok {
							t.Errorf("engine/%s declares %s, which belongs to engine/%s", name, n.Name, pkg)
						}
					}
				}
			case *ast.FuncDecl:
				if strings.Contains(d.Name.Name, "Lesson") || d.Name.Name == "World" {
					t.Errorf("engine/%s declares %s: lesson state and the world belong to their packages", name, d.Name.Name)
				}
			}
		}
	}
}
