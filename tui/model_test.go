package tui

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"reflect"
	"strings"
	"testing"
)

// TestModelIsSmall: the explorer's Model holds the source and its
// components, whose state is their own; it stays at most 20 fields.
func TestModelIsSmall(t *testing.T) {
	const most = 20
	if n := reflect.TypeOf(Model{}).NumField(); n > most {
		t.Errorf("tui.Model has %d fields; at most %d: give the new state to the component it belongs to", n, most)
	}
}

// TestOverlayOnTopTakesKeysFirst: the help opened while a question waits
// is not reachable (the question takes every key), and a filter opened
// over lesson mode takes the keys the lesson would.
func TestOverlayOnTopTakesKeysFirst(t *testing.T) {
	t.Parallel()
	snap := record(t, []string{"naive", "run"})
	m := open(t, snap, 160, 36)
	press(t, m, "R")
	if m.modes.confirm == nil {
		t.Fatal("R asks first")
	}
	press(t, m, "?")
	if m.help.open || m.modes.confirm != nil {
		t.Fatalf("? answered the question (help open %v, question %v)", m.help.open, m.modes.confirm != nil)
	}
	press(t, m, "/", "n")
	if !m.filter.open || m.picker.open || m.filter.text != "n" {
		t.Fatalf("n in the filter box typed (box open %v, picker open %v, text %q)", m.filter.open, m.picker.open, m.filter.text)
	}
	press(t, m, "esc", "?")
	if !m.help.open {
		t.Fatal("? after the box closed opens the help")
	}
	press(t, m, "n")
	if m.help.open || m.picker.open {
		t.Fatalf("n on the help closes the help only (help %v, picker %v)", m.help.open, m.picker.open)
	}
	if len(m.modes.stack) != 0 {
		t.Errorf("closed overlays stay on the stack: %d", len(m.modes.stack))
	}
}

// TestModelKeepsOutOfComponents: no method of the Model reads or sets a
// private field of a component (the panes and overlays that implement
// component): it asks them through their methods, and each owns its state.
func TestModelKeepsOutOfComponents(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	files := pkgs["tui"].Files
	components := map[string]bool{"execsPane": true, "filterBox": true, "tracePane": true, "detailPane": true,
		"outboxPane": true, "comparePane": true, "scenarioPicker": true, "helpPage": true, "lessonPane": true}
	// fields[type] are the named fields of each component's struct.
	fields := map[string]map[string]bool{}
	// modelFields[name] is the component type of a Model field.
	modelFields := map[string]string{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, fl := range st.Fields.List {
				for _, name := range fl.Names {
					if components[ts.Name.Name] {
						if fields[ts.Name.Name] == nil {
							fields[ts.Name.Name] = map[string]bool{}
						}
						fields[ts.Name.Name][name.Name] = true
					}
					if ts.Name.Name == "Model" {
						if star, ok := fl.Type.(*ast.StarExpr); ok {
							if id, ok := star.X.(*ast.Ident); ok && components[id.Name] {
								modelFields[name.Name] = id.Name
							}
						}
					}
				}
			}
			return true
		})
	}
	if len(modelFields) < 9 {
		t.Fatalf("found %d component fields of Model, want the 9 components: %v", len(modelFields), modelFields)
	}
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(fd.Recv.List[0].Names) == 0 {
				continue
			}
			star, ok := fd.Recv.List[0].Type.(*ast.StarExpr)
			if !ok || star.X.(*ast.Ident).Name != "Model" {
				continue
			}
			recv := fd.Recv.List[0].Names[0].Name
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				outer, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				inner, ok := outer.X.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := inner.X.(*ast.Ident); !ok || id.Name != recv {
					return true
				}
				if typ, ok := modelFields[inner.Sel.Name]; ok && fields[typ][outer.Sel.Name] {
					t.Errorf("%s: Model.%s reaches into %s.%s", fset.Position(outer.Pos()), fd.Name.Name, typ, outer.Sel.Name)
				}
				return true
			})
		}
	}
}

// A help of one page says "any key: close": space and j close it too,
// where on a help of pages they turn the page.
func TestOnePageHelpClosesOnAnyKey(t *testing.T) {
	t.Parallel()
	m := open(t, record(t, []string{"naive", "run"}), 200, 80)
	for _, k := range []string{" ", "j", "down"} {
		press(t, m, "?")
		if !m.help.open || len(m.help.pages()) != 1 {
			t.Fatalf("the help at 200x80: open %v, %d pages, want one", m.help.open, len(m.help.pages()))
		}
		press(t, m, k)
		if m.help.open {
			t.Errorf("%q on a help of one page leaves it open", k)
		}
	}
}
