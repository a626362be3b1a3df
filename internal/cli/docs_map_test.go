package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/retrylab/retrylab/engine/imports/all"
)

// docsCommandText is what docs/cli.md says of the command at path (as
// "retrylab room status"): every line that names it, or, for the root,
// the whole page.
func docsCommandText(page, path string) string {
	if path == "retrylab" {
		return page
	}
	var out []string
	for _, l := range strings.Split(page, "\n") {
		if strings.Contains(l, path) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// mentionsFlag reports whether text names the flag as written on a
// command line: --name, or -x for its shorthand, not as part of a longer
// flag's name.
func mentionsFlag(text, flag string) bool {
	return regexp.MustCompile(regexp.QuoteMeta(flag) + `($|[^a-z0-9-])`).MatchString(text)
}

// visible is every command of the tree under cmd that --help lists, cmd
// included: not hidden, not cobra's help.
func visible(cmd *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{cmd}
	for _, sub := range cmd.Commands() {
		if sub.Hidden || sub.Name() == "help" {
			continue
		}
		out = append(out, visible(sub)...)
	}
	return out
}

// docs/cli.md is the map of the commands: every command of the tree the
// binary builds, and every flag --help lists, is on it, so that neither
// can be added without the page saying so. A command's flags are looked
// for on the lines that name the command (its row of the table).
func TestCLIMapNamesEveryCommandAndFlag(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	root := newRootCmd(all.Registry())
	// cobra adds these when it runs: the map names them as --help does.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	cmds := visible(root)
	if len(cmds) < 25 {
		t.Fatalf("the tree has %d commands; the walk lost some", len(cmds))
	}
	for _, cmd := range cmds {
		path := cmd.CommandPath()
		if !strings.Contains(page, "`"+path) && path != "retrylab" {
			t.Errorf("docs/cli.md does not name `%s`", path)
			continue
		}
		text := docsCommandText(page, path)
		cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Name == "help" {
				return
			}
			if !mentionsFlag(text, "--"+f.Name) {
				t.Errorf("docs/cli.md's lines on `%s` do not mention --%s", path, f.Name)
			}
			if f.Shorthand != "" && !mentionsFlag(text, "-"+f.Shorthand) {
				t.Errorf("docs/cli.md's lines on `%s` do not mention -%s (--%s)", path, f.Shorthand, f.Name)
			}
		})
	}
}

// The map's check finds what it guards: a flag named only as part of a
// longer one is not named, and a command's lines are its own.
func TestCLIMapCheckCatchesWhatItGuards(t *testing.T) {
	if mentionsFlag("`--otlp-grpc ADDR`", "--otlp") {
		t.Error("--otlp counted as named by --otlp-grpc")
	}
	if !mentionsFlag("[--otlp ADDR]", "--otlp") || !mentionsFlag("`-j`/`--jobs`", "-j") {
		t.Error("a named flag was not found")
	}
	if got := docsCommandText("| `retrylab run X [--slow]` |\n| `retrylab lesson [--from]` |", "retrylab run"); strings.Contains(got, "--from") {
		t.Errorf("run's lines include lesson's: %q", got)
	}
}
