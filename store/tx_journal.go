package store

import (
	"bytes"
	"errors"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// --- journal ------------------------------------------------------------

// Journal records. Earlier builds kept each execution's records in a bucket
// of its own under journals (execution id -> bucket of step -> record): with
// one or two records an execution, that bucket's headers cost more than
// its records. Records are now written straight into journals under
// journalKey(exec, step): the execution, NUL, the step. That sorts each
// execution's records after its old bucket (the same id, then NUL) and
// before any other execution, so a walk of journals meets every record of
// an execution together; readers take both layouts, and a record put again
// leaves the old bucket. An execution id holding a NUL (no retrylab id
// does) keeps the old layout.

func journalKey(exec, step string) []byte {
	k := make([]byte, 0, len(exec)+1+len(step))
	k = append(k, exec...)
	k = append(k, 0)
	return append(k, step...)
}

// flatJournals reports whether exec's records take the flat layout.
func flatJournals(exec string) bool { return strings.IndexByte(exec, 0) < 0 }

// PutJournal records a step's result for an execution.
func (t *Tx) PutJournal(exec, step string, record []byte) error {
	if !flatJournals(exec) {
		b, err := t.nested(bucketJournals, exec, true)
		if err != nil {
			return err
		}
		return b.Put([]byte(step), t.seal(bucketJournals, []byte(step), record))
	}
	p, err := t.bucket(bucketJournals)
	if err != nil {
		return err
	}
	if _, err := deleteOldJournal(p, exec, step); err != nil {
		return err
	}
	k := journalKey(exec, step)
	return p.Put(k, t.seal(bucketJournals, k, record))
}

// deleteOldJournal deletes a record of the per-execution layout, and the
// execution's bucket once it is empty.
func deleteOldJournal(p *bolt.Bucket, exec, step string) (bool, error) {
	b := p.Bucket([]byte(exec))
	if b == nil || b.Get([]byte(step)) == nil {
		return false, nil
	}
	if err := b.Delete([]byte(step)); err != nil {
		return false, err
	}
	if k, _ := b.Cursor().First(); k == nil {
		return true, p.DeleteBucket([]byte(exec))
	}
	return true, nil
}

// Journal returns a step's recorded result, or nil.
func (t *Tx) Journal(exec, step string) []byte {
	p, err := t.bucket(bucketJournals)
	if err != nil {
		return nil
	}
	if flatJournals(exec) {
		k := journalKey(exec, step)
		if v := p.Get(k); v != nil {
			v, _ = t.open(bucketJournals, nil, k, v)
			return clone(v)
		}
	}
	if b := p.Bucket([]byte(exec)); b != nil {
		v, _ := t.open(bucketJournals, [][]byte{[]byte(exec)}, []byte(step), b.Get([]byte(step)))
		return clone(v)
	}
	return nil
}

// DeleteJournal removes a step's record and reports whether there was one.
func (t *Tx) DeleteJournal(exec, step string) (bool, error) {
	p, err := t.bucket(bucketJournals)
	if err != nil {
		return false, err
	}
	existed, err := deleteOldJournal(p, exec, step)
	if err != nil || !flatJournals(exec) {
		return existed, err
	}
	k := journalKey(exec, step)
	if p.Get(k) == nil {
		return existed, nil
	}
	return true, p.Delete(k)
}

// deleteJournals removes every record of an execution, in both layouts.
func (t *Tx) deleteJournals(exec string) error {
	p, err := t.bucket(bucketJournals)
	if err != nil {
		return err
	}
	if p.Bucket([]byte(exec)) != nil {
		if err := p.DeleteBucket([]byte(exec)); err != nil {
			return err
		}
	}
	if !flatJournals(exec) {
		return nil
	}
	prefix := journalKey(exec, "")
	c := p.Cursor()
	// Seek again after each delete: a bbolt cursor may skip the key after a
	// deleted one.
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// JournalEntries calls fn for every journal record of every execution, in
// execution id then step order.
func (t *Tx) JournalEntries(fn func(exec, step string, record []byte) bool) error {
	return t.JournalEntriesAfter("", "", fn)
}

// journalEntry is one record met by JournalEntriesAfter.
type journalEntry struct {
	step   string
	record []byte
}

// JournalEntriesAfter is JournalEntries from the record after (exec, step)
// on, so a reader can page through every journal: ("", "") starts at the
// first.
func (t *Tx) JournalEntriesAfter(exec, step string, fn func(exec, step string, record []byte) bool) error {
	p, err := t.bucket(bucketJournals)
	if err != nil {
		return err
	}
	// An execution's records, of either layout, are together: gather them,
	// then hand them out in step order.
	var cur string
	var group []journalEntry
	have := false
	flush := func() bool {
		slices.SortStableFunc(group, func(a, b journalEntry) int { return strings.Compare(a.step, b.step) })
		for i, e := range group {
			if i > 0 && group[i-1].step == e.step {
				continue // put again since: the flat record, first, holds
			}
			if exec != "" && cur == exec && e.step <= step {
				continue
			}
			if !fn(cur, e.step, e.record) {
				return false
			}
		}
		group = group[:0]
		return true
	}
	pc := p.Cursor()
	for k, v := pc.Seek([]byte(exec)); k != nil; k, v = pc.Next() {
		var e string
		var entries []journalEntry
		if i := bytes.IndexByte(k, 0); i >= 0 && v == nil && t.sums() {
			// A flat record's key holds a NUL, a collection's never.
			t.noteDamage(t.Damaged(bucketJournals, nil, k, errNested))
			continue
		} else if i >= 0 && v != nil {
			e = string(k[:i])
			// A damaged record is left out and fails the transaction
			// (see Tx.open).
			if v, ok := t.open(bucketJournals, nil, k, v); ok {
				entries = []journalEntry{{step: string(k[i+1:]), record: clone(v)}}
			}
		} else if i < 0 && v != nil {
			// A record whose key holds no NUL: no build writes one (an
			// execution's own collection is named by its id alone), so
			// its key was damaged.
			t.noteDamage(t.Damaged(bucketJournals, nil, k, errors.New("a record whose key names no step")))
			continue
		} else if b := p.Bucket(k); b != nil {
			e = string(k)
			c := b.Cursor()
			names := [][]byte{clone(k)}
			for sk, sv := c.First(); sk != nil; sk, sv = c.Next() {
				if sv, ok := t.open(bucketJournals, names, sk, sv); ok {
					entries = append(entries, journalEntry{step: string(sk), record: clone(sv)})
				}
			}
		} else {
			continue
		}
		if have && e != cur && !flush() {
			return nil
		}
		cur, have = e, true
		// Flat records come before the old ones of the same step.
		if v != nil {
			group = append(entries, group...)
		} else {
			group = append(group, entries...)
		}
	}
	if have {
		flush()
	}
	return nil
}

// JournalDamaged is Damaged for the journal record of exec's step, in
// whichever layout the file keeps it.
func (t *Tx) JournalDamaged(exec, step string, err error) error {
	if p, perr := t.bucket(bucketJournals); perr == nil && flatJournals(exec) && p.Get(journalKey(exec, step)) != nil {
		return t.Damaged(bucketJournals, nil, journalKey(exec, step), err)
	}
	return t.Damaged(bucketJournals, [][]byte{[]byte(exec)}, []byte(step), err)
}

// ExecutionDamaged is Damaged for the record of execution id.
func (t *Tx) ExecutionDamaged(id string, err error) error {
	d := t.Damaged(bucketExecutions, nil, []byte(id), err)
	d.(*DamagedRecord).Execution = id
	return d
}
