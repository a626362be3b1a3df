package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/retrylab/retrylab/engine"
	"github.com/retrylab/retrylab/engine/fetch"
	"github.com/retrylab/retrylab/internal/plural"
)

// authEnv names the environment variable whose value, when set and no
// --header gives one, is sent as the Authorization header of every
// request 'import' makes to a URL.
const authEnv = "RETRYLAB_FETCH_AUTHORIZATION"

// fetchFlags are import's flags for URLs and searches.
type fetchFlags struct {
	headers []string
	timeout time.Duration
	maxMiB  int64

	tempo, jaeger  string
	query, service string
	since          time.Duration
	limit          int
	follow         bool
	every          time.Duration
}

// add declares the flags on cmd.
func (f *fetchFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringArrayVar(&f.headers, "header", nil, "send this header with every request to a URL, 'Name: value' (repeatable); $"+authEnv+" is the Authorization header when none is given")
	fl.DurationVar(&f.timeout, "timeout", fetch.DefaultTimeout, "the longest a request to a URL may take, its answer read whole")
	fl.Int64Var(&f.maxMiB, "max-mib", fetch.DefaultMaxBytes>>20, "the largest answer read from a URL, in MiB")
	fl.StringVar(&f.tempo, "tempo", "", "search Grafana Tempo at this URL (http://tempo:3200) with --query and import each trace it finds")
	fl.StringVar(&f.jaeger, "jaeger", "", "search Jaeger's query API at this URL (http://jaeger:16686) for --service's traces and import each")
	fl.StringVar(&f.query, "query", "", "the TraceQL of a --tempo search ('{ span.gen_ai.operation.name = \"execute_tool\" }'); none asks for the latest traces")
	fl.StringVar(&f.service, "service", "", "the service whose traces a --jaeger search finds")
	fl.DurationVar(&f.since, "since", time.Hour, "search the traces of this long ago until now")
	fl.IntVar(&f.limit, "limit", 20, "import at most this many traces a search finds")
	fl.BoolVar(&f.follow, "follow", false, "keep searching, every --every, and import each new trace as it is found, until interrupted")
	fl.DurationVar(&f.every, "every", 15*time.Second, "how often --follow searches again")
}

// searching reports whether the flags ask for a search.
func (f *fetchFlags) searching() bool { return f.tempo != "" || f.jaeger != "" }

// client is the HTTP client the flags describe.
func (f *fetchFlags) client() (fetch.Client, error) {
	c := fetch.Client{Timeout: f.timeout, MaxBytes: f.maxMiB << 20, Header: http.Header{}}
	if f.timeout <= 0 {
		return c, usageError(fmt.Sprintf("--timeout %v: give a duration above zero", f.timeout))
	}
	if f.maxMiB <= 0 {
		return c, usageError(fmt.Sprintf("--max-mib %d: give a size above zero", f.maxMiB))
	}
	for _, h := range f.headers {
		name, value, ok := strings.Cut(h, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, " \t\r\n") || strings.ContainsAny(value, "\r\n") {
			return c, usageError(fmt.Sprintf("--header %q: write it as 'Name: value'", h))
		}
		c.Header.Add(name, strings.TrimSpace(value))
	}
	if v := os.Getenv(authEnv); v != "" && c.Header.Get("Authorization") == "" {
		if strings.ContainsAny(v, "\r\n") {
			return c, fmt.Errorf("$%s holds a line break: give the header's value alone ('Bearer …')", authEnv)
		}
		c.Header.Set("Authorization", v)
	}
	return c, nil
}

// searchOnly are the flags that only a search (--tempo, --jaeger) reads.
var searchOnly = []string{"query", "service", "since", "limit", "follow", "every"}

// checkUnused refuses a search's flag given without a search: it would be
// ignored without a word.
func (f *fetchFlags) checkUnused(cmd *cobra.Command) error {
	if f.searching() {
		if !f.follow && cmd.Flags().Changed("every") {
			return usageError("--every is how often --follow searches: give --follow with it")
		}
		return nil
	}
	for _, name := range searchOnly {
		if cmd.Flags().Changed(name) {
			return usageError(fmt.Sprintf("--%s is for a search: give --tempo URL or --jaeger URL with it", name))
		}
	}
	return nil
}

// searcher is the search the flags ask for; a flag given wrongly is a
// usage error (exit 2).
func (f *fetchFlags) searcher(c fetch.Client) (fetch.Searcher, error) {
	s, err := f.search(c)
	if err != nil {
		return nil, usageError(err.Error())
	}
	return s, nil
}

// search is searcher, its refusals in plain errors.
func (f *fetchFlags) search(c fetch.Client) (fetch.Searcher, error) {
	switch {
	case f.tempo != "" && f.jaeger != "":
		return nil, errors.New("--tempo and --jaeger: search one backend at a time")
	case f.limit <= 0:
		return nil, fmt.Errorf("--limit %d: give a number above zero", f.limit)
	case f.since <= 0:
		return nil, fmt.Errorf("--since %v: give a duration above zero", f.since)
	case f.follow && f.every <= 0:
		return nil, fmt.Errorf("--every %v: give a duration above zero", f.every)
	case f.tempo != "":
		if f.service != "" {
			return nil, errors.New("--service is a --jaeger search's: write it into --query for Tempo ('{ resource.service.name = \"S\" }')")
		}
		if _, err := fetch.CheckURL(f.tempo); err != nil {
			return nil, fmt.Errorf("--tempo %w", err)
		}
		return fetch.Tempo{Base: f.tempo, TraceQL: f.query, Client: c}, nil
	default:
		if f.query != "" {
			return nil, errors.New("--query is a --tempo search's TraceQL: a --jaeger search takes --service")
		}
		if f.service == "" {
			return nil, errors.New("--jaeger: name the service whose traces to import with --service")
		}
		if _, err := fetch.CheckURL(f.jaeger); err != nil {
			return nil, fmt.Errorf("--jaeger %w", err)
		}
		return fetch.Jaeger{Base: f.jaeger, Service: f.service, Client: c}, nil
	}
}

// fetchErr adds to a refusal for want of credentials how to give them.
func fetchErr(err error) error {
	var se *fetch.StatusError
	if errors.As(err, &se) && se.Unauthorized() {
		return fmt.Errorf("%w (give --header 'Authorization: Bearer …' or $%s)", err, authEnv)
	}
	if errors.Is(err, fetch.ErrTooLarge) && !strings.Contains(err.Error(), "--max-mib") {
		return fmt.Errorf("%w (--max-mib)", err)
	}
	return err
}

// errInterrupted is what an import interrupted by Ctrl-C (or SIGTERM)
// returns: exit 130, and no line, as for an interrupted run.
var errInterrupted = &exitError{code: 130}

// importURL fetches one URL and imports what it answers, sniffed as a
// file is, whole or not at all. The URL is named, and stored as the
// executions' source, with any password in it redacted.
func (a *app) importURL(ctx context.Context, t engine.Traces, c fetch.Client, u string) (string, engine.ImportResult, error) {
	name := fetch.Redact(u)
	body, err := c.Get(ctx, u)
	if err != nil {
		return name, engine.ImportResult{}, fetchErr(err)
	}
	defer body.Close()
	res, err := t.ImportStream(name, body)
	if full, ok := body.(interface{ AtLimit() bool }); err != nil && ok && full.AtLimit() {
		// The answer filled --max-mib: that is why it failed, whichever
		// bound of the importer's it met first (its own is 512 MiB too).
		limit := c.MaxBytes
		if limit <= 0 {
			limit = fetch.DefaultMaxBytes
		}
		err = fmt.Errorf("%s: %w", name, fetchErr(fetch.TooLarge(limit)))
	}
	return name, res, err
}

// importSearch imports each trace a search finds, one import per trace:
// a trace that fails is said on a line and leaves nothing behind, and the
// others are imported all the same. With --follow it searches again every
// --every until interrupted, and a trace that failed is tried again when a
// later search finds it, fetch.DefaultTries times in all. It says how many
// traces were imported and how many failed, and errInterrupted when
// interrupted.
func (a *app) importSearch(ctx context.Context, t engine.Traces, c fetch.Client, f *fetchFlags) (imported, failed int, err error) {
	s, err := f.searcher(c)
	if err != nil {
		return 0, 0, err
	}
	follower := &fetch.Follower{Searcher: s, Since: f.since, Limit: f.limit}
	for round := 0; ; round++ {
		ids, err := follower.Poll(ctx, time.Now())
		switch {
		case ctx.Err() != nil:
			return imported, failed, errInterrupted
		case err != nil && !f.follow:
			return imported, failed, fetchErr(err)
		case err != nil:
			failed++ // the next search may do better
			fmt.Fprintf(a.errOut, "retrylab: import %s\n", oneLine(fetchErr(err).Error()))
		case len(ids) == 0 && round == 0:
			fmt.Fprintf(a.out, "no traces found in the last %v\n", f.since)
		}
		for i, id := range ids {
			a.searchProgress(i, len(ids), fetch.Redact(s.TraceURL(id)))
			name, res, err := a.importURL(ctx, t, c, s.TraceURL(id))
			a.searchProgress(-1, 0, "")
			switch {
			case ctx.Err() != nil:
				return imported, failed, errInterrupted
			case err != nil:
				failed++
				msg := oneLine(err.Error())
				if f.follow {
					if left := follower.Failed(id); left > 0 {
						msg += fmt.Sprintf(" (tried again when a later search finds it, %s left)", plural.Count(left, "attempt"))
					} else {
						msg += fmt.Sprintf(" (given up after %s)", plural.Count(fetch.DefaultTries, "attempt"))
					}
				}
				fmt.Fprintf(a.errOut, "retrylab: import %s\n", msg)
			default:
				imported++
				a.printImported(name, res)
			}
		}
		if !f.follow {
			return imported, failed, nil
		}
		select {
		case <-ctx.Done():
			return imported, failed, errInterrupted
		case <-time.After(f.every):
		}
	}
}

// searchProgress shows, on a terminal, which of a search's traces is being
// fetched (i of n); i < 0 clears the line, which is done before the
// trace's own line is printed. Off a terminal it says nothing: each
// trace's line on standard output is the progress.
func (a *app) searchProgress(i, n int, u string) {
	if !onTerminal(a.errOut) {
		return
	}
	if i < 0 {
		fmt.Fprint(a.errOut, "\r\033[K")
		return
	}
	fmt.Fprintf(a.errOut, "\r\033[Kfetching trace %d of %d: %s", i+1, n, u)
}
