// Package execindex finds executions by the explorer's filter. It holds the
// filter's matching rule, defined once (Query.Match), and Index: a compact
// in-memory copy of what the rule reads of every execution record, which
// answers a filter over a million executions without reading the store.
package execindex

import (
	"strings"

	"github.com/retrylab/retrylab/engine/history"
)

// markerStatus is the status each list marker stands for.
var markerStatus = map[string]history.Status{
	"✓": history.StatusCompleted, "●": history.StatusRunning, "☠": history.StatusKilled,
	"⚑": history.StatusEscalated, "✖": history.StatusFailed,
}

// Query is a parsed filter. The zero Query matches every execution.
type Query struct {
	text     string         // folded text to look for in the fields
	status   history.Status // a status marker: this status, no duplicate, no possible one
	marker   bool           // status is set
	dups     bool           // the ⚠ marker or a word for it: a duplicate delivery
	possible bool           // the ◇ marker or a word for it: a possible duplicate
}

// Parse reads a filter as the explorer's user types it: a list marker (⚠,
// ◇, ✓, ☠, ●, ⚑, ✖; "!" or a prefix of "duplicates" of three letters or
// more for ⚠, "?" or a prefix of "possible" of three letters or more for
// ◇), or text to find in the id, scenario, status or policy, ignoring
// case. Leading and trailing spaces do not count.
func Parse(text string) Query {
	t := strings.TrimSpace(text)
	if st, ok := markerStatus[t]; ok {
		return Query{status: st, marker: true}
	}
	if wantsDuplicates(t) {
		return Query{dups: true}
	}
	if wantsPossible(t) {
		return Query{possible: true}
	}
	return Query{text: Fold(t)}
}

// wantsDuplicates says whether a filter asks for executions whose
// deliveries include a duplicate: the ⚠ marker, or a word for it (a
// terminal seldom types ⚠).
func wantsDuplicates(t string) bool {
	t = strings.ToLower(t)
	return t == "⚠" || t == "!" || (len(t) >= 3 && strings.HasPrefix("duplicates", t))
}

// wantsPossible says whether a filter asks for imported executions whose
// audit found a possible duplicate: the ◇ marker, or a word for it.
func wantsPossible(t string) bool {
	t = strings.ToLower(t)
	return t == "◇" || t == "?" || (len(t) >= 3 && strings.HasPrefix("possible", t))
}

// Fold is the form text is compared in: case does not count.
func Fold(s string) string { return strings.ToLower(s) }

// All reports whether q matches every execution (an empty filter).
func (q Query) All() bool { return !q.marker && !q.dups && !q.possible && q.text == "" }

// Match says whether x answers q: its id, scenario, status or policy
// (in words: PolicyWords) contains the text, or x shows the marker in the
// list (a duplicate delivery shows ⚠, which outranks a possible one, ◇,
// which outranks the status badge).
func (q Query) Match(x history.Execution) bool {
	switch {
	case q.marker:
		return x.Status == q.status && !x.Duplicates && !x.Possible
	case q.dups:
		return x.Duplicates
	case q.possible:
		return x.Possible && !x.Duplicates
	}
	return q.matchField(x.ID) || q.matchField(x.Scenario) || q.matchField(string(x.Status)) || q.matchField(x.PolicyWords())
}

// matchField is the rule for one field: it contains the text, folded.
func (q Query) matchField(s string) bool { return strings.Contains(Fold(s), q.text) }
