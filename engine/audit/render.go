package audit

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/retrylab/retrylab/engine/trace"
	"github.com/retrylab/retrylab/internal/jsonstream"
	"github.com/retrylab/retrylab/internal/plural"
)

// stamp is how evidence times are printed: UTC to the microsecond.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z") }

func (r Report) summary() string {
	return fmt.Sprintf("%d duplicate, %d possible, %d absorbed", r.Counts.Duplicate, r.Counts.Possible, r.Counts.Absorbed)
}

// Text writes the report for a terminal.
func (r Report) Text(w io.Writer) error { return ListingOf(r).Text(w) }

// Markdown writes the report as a Markdown document, for a CI summary or a
// pull request.
func (r Report) Markdown(w io.Writer) error { return ListingOf(r).Markdown(w) }

// JSON writes the report as encoding/json writes it indented by two spaces
// without HTML escaping (the CLI's --json), byte for byte, but a finding at
// a time: a report of a quarter of a million findings is some 190 MB of
// JSON, which an encoder of the whole report would hold in memory before
// writing any of it.
func (r Report) JSON(w io.Writer) error { return ListingOf(r).JSON(w) }

// Text writes the listed report for a terminal, a finding at a time.
func (l *Listing) Text(w io.Writer) error {
	r := l.head
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "audit of %s: %s (effects: %s; reads never count)\n",
		plural.Count(r.Executions, "execution"), plural.Count(r.Attempts, "side-effecting attempt"), strings.Join(r.Effects, ","))
	err := l.each(func(_ int, f *Finding) error {
		fmt.Fprintf(bw, "\n%-9s %s %s\n          %s\n", strings.ToUpper(string(f.Grade)), f.Tool, f.Args, f.Why)
		width := 0
		for _, e := range f.Attempts {
			width = max(width, utf8.RuneCountInString(e.Outcome))
		}
		for _, e := range f.Attempts {
			pad := strings.Repeat(" ", width-utf8.RuneCountInString(e.Outcome))
			fmt.Fprintf(bw, "  %s %s%s  %s  %s  call %s %s  ref %s", e.Mark, e.Outcome, pad, stamp(e.Started), e.Execution, e.Call, e.Which(), e.Ref)
			if e.Key != "" {
				fmt.Fprintf(bw, "  key %s", e.Key)
			}
			if e.Error != "" {
				fmt.Fprintf(bw, "  error %q", trace.Headline(e.Error)) // whole in --json
			}
			bw.WriteByte('\n')
		}
		return nil
	})
	if err != nil {
		bw.Flush()
		return err
	}
	fmt.Fprintf(bw, "\n%s\n", r.summary())
	return bw.Flush()
}

// Markdown writes the listed report as a Markdown document, a finding at a
// time.
func (l *Listing) Markdown(w io.Writer) error {
	r := l.head
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# Effect audit\n\n%s, %s. Effects: %s (reads never count).\n\n**%s**\n",
		plural.Count(r.Executions, "execution"), plural.Count(r.Attempts, "side-effecting attempt"), code(strings.Join(r.Effects, ", ")), r.summary())
	err := l.each(func(i int, f *Finding) error {
		fmt.Fprintf(bw, "\n## %d. %s: %s\n\nArguments: %s\n\n%s.\n\n", i, f.Grade, code(f.Tool), code(string(f.Args)), upperFirst(f.Why))
		bw.WriteString("| outcome | started (UTC) | execution | call | attempt | span / ref | key |\n")
		bw.WriteString("|---|---|---|---|---|---|---|\n")
		for _, e := range f.Attempts {
			out := e.Mark + " " + e.Outcome
			if e.Error != "" {
				out += ": " + trace.Headline(e.Error)
			}
			fmt.Fprintf(bw, "| %s | %s | %s | %s | %s | %s | %s |\n", cell(out), stamp(e.Started), code(e.Execution),
				code(e.Call), trace.AttemptNumbers(e.Attempt, e.NotKept), code(e.Ref), code(e.Key))
		}
		return nil
	})
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

// JSON writes the listed report as Report.JSON does, a finding at a time.
func (l *Listing) JSON(w io.Writer) error {
	r := l.head
	o := jsonstream.NewObject(w)
	o.Field("effects", r.Effects)
	o.Field("executions", r.Executions)
	o.Field("side_effecting_attempts", r.Attempts)
	if l.nilFindings {
		o.Field("findings", nil)
	} else {
		o.Array("findings")
		if err := l.each(func(_ int, f *Finding) error { return o.Elem(f) }); err != nil {
			o.Flush()
			return err
		}
	}
	o.Field("counts", r.Counts)
	return o.Close()
}

func code(s string) string {
	if s == "" {
		return ""
	}
	s = strings.ReplaceAll(s, "`", "'")
	return "`" + cell(s) + "`"
}

func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
