package fetch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Window is what a search asks for: traces that started between Start and
// End, Limit of them at most.
type Window struct {
	Start, End time.Time
	Limit      int
}

// Searcher is a tracing backend's query API: a search that answers trace
// ids, and the URL each trace is fetched from by id.
type Searcher interface {
	// Search is the ids of the traces in w that match, in the order the
	// backend answers, each once.
	Search(ctx context.Context, w Window) ([]string, error)
	// TraceURL is where the trace with id is fetched whole.
	TraceURL(id string) string
}

// Tempo is Grafana Tempo's HTTP API at Base (http://tempo:3200): its
// search (GET /api/search?q=TRACEQL&start=&end=&limit=, times in Unix
// seconds, answering {"traces": [{"traceID": ...}]}) and its trace by id
// (GET /api/traces/{id}, API v1's {"batches": ...}).
type Tempo struct {
	Base string
	// TraceQL is the query; empty asks for the most recent traces.
	TraceQL string
	Client  Client
}

// TraceURL is Base/api/traces/{id}.
func (t Tempo) TraceURL(id string) string { return apiURL(t.Base, "/api/traces/"+url.PathEscape(id)) }

// SearchURL is the search's request for w.
func (t Tempo) SearchURL(w Window) string {
	q := url.Values{}
	if t.TraceQL != "" {
		q.Set("q", t.TraceQL)
	}
	q.Set("start", strconv.FormatInt(w.Start.Unix(), 10))
	q.Set("end", strconv.FormatInt(w.End.Unix(), 10))
	if w.Limit > 0 {
		q.Set("limit", strconv.Itoa(w.Limit))
	}
	return apiURL(t.Base, "/api/search") + "?" + q.Encode()
}

// Search asks Tempo's search for the traces in w that match TraceQL.
func (t Tempo) Search(ctx context.Context, w Window) ([]string, error) {
	var answer struct {
		Traces []struct {
			TraceID string `json:"traceID"`
		} `json:"traces"`
	}
	u := t.SearchURL(w)
	if err := t.Client.getJSON(ctx, u, &answer); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(answer.Traces))
	for _, tr := range answer.Traces {
		ids = append(ids, tr.TraceID)
	}
	return checkIDs(u, ids, w.Limit)
}

// Jaeger is Jaeger's query API v1 at Base (http://jaeger:16686): its
// search (GET /api/traces?service=S&start=&end=&limit=, times in
// microseconds since the Unix epoch, answering {"data": [{"traceID": ...,
// "spans": ...}]}) and its trace by id (GET /api/traces/{id}).
type Jaeger struct {
	Base string
	// Service is the service whose traces are searched; Jaeger needs one.
	Service string
	Client  Client
}

// TraceURL is Base/api/traces/{id}.
func (j Jaeger) TraceURL(id string) string { return apiURL(j.Base, "/api/traces/"+url.PathEscape(id)) }

// SearchURL is the search's request for w.
func (j Jaeger) SearchURL(w Window) string {
	q := url.Values{}
	q.Set("service", j.Service)
	q.Set("start", strconv.FormatInt(w.Start.UnixMicro(), 10))
	q.Set("end", strconv.FormatInt(w.End.UnixMicro(), 10))
	if w.Limit > 0 {
		q.Set("limit", strconv.Itoa(w.Limit))
	}
	return apiURL(j.Base, "/api/traces") + "?" + q.Encode()
}

// Search asks Jaeger for Service's traces in w. Its answer holds the
// traces whole; only their ids are kept, and each is fetched on its own
// (TraceURL), so that each is imported whole or not at all.
func (j Jaeger) Search(ctx context.Context, w Window) ([]string, error) {
	var answer struct {
		Data []struct {
			TraceID string `json:"traceID"`
		} `json:"data"`
	}
	u := j.SearchURL(w)
	if err := j.Client.getJSON(ctx, u, &answer); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(answer.Data))
	for _, tr := range answer.Data {
		ids = append(ids, tr.TraceID)
	}
	return checkIDs(u, ids, w.Limit)
}

// apiURL joins a backend's base URL and an API path.
func apiURL(base, path string) string { return strings.TrimRight(base, "/") + path }

// getJSON fetches u and decodes its JSON into v.
func (c Client) getJSON(ctx context.Context, u string, v any) error {
	body, err := c.Get(ctx, u)
	if err != nil {
		return err
	}
	defer body.Close()
	if err := json.NewDecoder(body).Decode(v); err != nil {
		return fmt.Errorf("%s: not a search answer: %w", Redact(u), err)
	}
	return nil
}

// checkIDs keeps each id once, the first limit of them (all for 0), and
// refuses an id that is not hex: it is put in a URL's path.
func checkIDs(u string, ids []string, limit int) ([]string, error) {
	seen := make(map[string]bool, len(ids))
	out := ids[:0]
	for i, id := range ids {
		if id == "" || len(id) > 32 || strings.Trim(strings.ToLower(id), "0123456789abcdef") != "" {
			return nil, fmt.Errorf("%s: trace %d of the answer has id %q, not 1 to 32 hex digits", Redact(u), i+1, id)
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, id)
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// DefaultTries is how many times a Follower answers a trace whose import
// fails (Failed) before it gives it up.
const DefaultTries = 3

// Follower asks a search again and again for the traces of the last Since,
// and answers each trace once, or again at the next searches while its
// import fails (Failed), Tries times in all: the live-following form of a
// search.
type Follower struct {
	Searcher Searcher
	Since    time.Duration
	Limit    int
	// Tries bounds how many times a trace is answered while its import
	// fails; zero means DefaultTries.
	Tries int
	seen  map[string]bool
	tries map[string]int // failed imports, by id
}

// Poll searches the window that ends at now and answers the ids it has
// not answered before, and those whose import failed fewer than Tries
// times (Failed). A failed search answers none and forgets nothing.
func (f *Follower) Poll(ctx context.Context, now time.Time) ([]string, error) {
	ids, err := f.Searcher.Search(ctx, Window{Start: now.Add(-f.Since), End: now, Limit: f.Limit})
	if err != nil {
		return nil, err
	}
	if f.seen == nil {
		f.seen = map[string]bool{}
	}
	var fresh []string
	for _, id := range ids {
		if !f.seen[id] {
			f.seen[id] = true
			fresh = append(fresh, id)
		}
	}
	return fresh, nil
}

// Failed says the import of the trace id, answered by Poll, failed: the
// next Poll that finds it answers it again, unless it has failed Tries
// times. It returns how many tries are left (0: given up).
func (f *Follower) Failed(id string) (left int) {
	most := f.Tries
	if most <= 0 {
		most = DefaultTries
	}
	if f.tries == nil {
		f.tries = map[string]int{}
	}
	f.tries[id]++
	if left = most - f.tries[id]; left > 0 {
		delete(f.seen, id)
	}
	return max(left, 0)
}
