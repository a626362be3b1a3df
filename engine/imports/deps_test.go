package imports_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/retrylab/retrylab"

// golist runs 'go list' with a template over pkgs, one line a package.
func golist(t *testing.T, format string, pkgs ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-f", format}, pkgs...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", pkgs, err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// The fold knows no source: engine/trace depends on no package of
// retrylab's, even indirectly (issue 20 item 2).
func TestTraceImportsNothingOfRetrylab(t *testing.T) {
	for _, dep := range golist(t, "{{join .Deps \"\\n\"}}", module+"/engine/trace") {
		if strings.HasPrefix(dep, module) {
			t.Errorf("engine/trace depends on %s", dep)
		}
	}
}

// The engine root imports no importer: no package it depends on (but the
// registry itself) imports engine/imports, as every source does to be one.
func TestEngineImportsNoImporter(t *testing.T) {
	deps := golist(t, "{{join .Deps \"\\n\"}}", module+"/engine")
	if len(deps) < 5 {
		t.Fatalf("go list found %d dependencies of the engine", len(deps))
	}
	var mine []string
	for _, d := range deps {
		if strings.HasPrefix(d, module+"/") {
			mine = append(mine, d)
		}
	}
	if !contains(mine, module+"/engine/imports") {
		t.Fatalf("the engine does not reach the registry: %v", mine)
	}
	for _, line := range golist(t, "{{.ImportPath}} {{join .Imports \" \"}}", mine...) {
		f := strings.Fields(line)
		if f[0] != module+"/engine/imports" && contains(f[1:], module+"/engine/imports") {
			t.Errorf("the engine depends on %s, an importer", f[0])
		}
	}
	// The known sources by name too, should one stop importing the
	// registry.
	for _, src := range []string{"/engine/otlp", "/engine/temporal", "/engine/imports/all"} {
		if contains(mine, module+src) {
			t.Errorf("the engine depends on %s", module+src)
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
