package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// RepairExecutions makes what the store keeps about the executions beside
// their records consistent with the records, in a copy salvage made
// (CheckExecutionIndex's checks): it drops, whole, each execution whose
// history number is not valid (never given, or given to another execution
// too: its history cannot be told) or whose history lost a chunk (broken:
// history numbers, SalvageReport.Histories), deletes the history numbers of
// executions that have no record, and rebuilds the creation order and the
// execution count from the records. It returns one line for each execution
// dropped.
func (t *Tx) RepairExecutions(broken [][]byte) ([]string, error) {
	var lost []string
	drop, err := t.unsureHistories(broken)
	if err != nil {
		return nil, err
	}
	for _, d := range drop {
		if err := t.DeleteExecution(d[0]); err != nil {
			return nil, err
		}
		lost = append(lost, fmt.Sprintf("dropped execution %s (%s)", d[0], d[1]))
	}
	return lost, t.rebuildOrder()
}

// unsureHistories are the executions (id, why) whose history cannot be
// read whole, and it deletes the history numbers of executions that have
// no record.
func (t *Tx) unsureHistories(broken [][]byte) ([][2]string, error) {
	hids := t.root(bucketHistoryIDs)
	execs := t.root(bucketExecutions)
	if hids == nil {
		return nil, nil
	}
	isBroken := map[string]bool{}
	for _, h := range broken {
		isBroken[string(h)] = true
	}
	owners := map[string][]string{}
	var orphans [][]byte
	var drop [][2]string
	last := hids.Sequence()
	c := hids.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		switch {
		case execs == nil || execs.Get(k) == nil:
			orphans = append(orphans, clone(k))
		case v == nil || len(v) != historyKeyLen:
			drop = append(drop, [2]string{string(k), "its history number is damaged"})
		case binary.BigEndian.Uint32(v) == 0 || uint64(binary.BigEndian.Uint32(v)) > last:
			drop = append(drop, [2]string{string(k), "its history number was never given"})
		case isBroken[string(v)]:
			drop = append(drop, [2]string{string(k), "a chunk of its history is damaged"})
		default:
			owners[string(v)] = append(owners[string(v)], string(k))
		}
	}
	for _, k := range orphans {
		if err := hids.Delete(k); err != nil {
			return nil, err
		}
	}
	for _, ids := range owners {
		if len(ids) > 1 {
			for _, id := range ids {
				drop = append(drop, [2]string{id, "its history number is another execution's too"})
			}
		}
	}
	return drop, nil
}

// rebuildOrder rewrites the creation order from the records: the order's
// entries that name an execution with a record, each once, in their
// order, then the executions it lost, by id; positions 1 to n, no holes;
// and the count of executions. A consistent order comes out as it was,
// renumbered.
func (t *Tx) rebuildOrder() error {
	order, execs, err := t.executionBuckets()
	if err != nil {
		return err
	}
	var ids [][]byte
	seen := map[string]bool{}
	c := order.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v != nil && !seen[string(v)] && execs.Get(v) != nil {
			seen[string(v)] = true
			ids = append(ids, clone(v))
		}
	}
	ec := execs.Cursor()
	for k, v := ec.First(); k != nil; k, v = ec.Next() {
		if v != nil && !seen[string(k)] {
			seen[string(k)] = true
			ids = append(ids, clone(k))
		}
	}
	if same := order.Stats().KeyN == len(ids); same {
		// Already consistent and dense: leave it (and its holes) be.
		i := 0
		for k, v := c.First(); k != nil && same; k, v = c.Next() {
			same = bytes.Equal(v, ids[i])
			i++
		}
		if same && t.ExecutionCount() == len(ids) {
			return nil
		}
	}
	for _, b := range []Bucket{bucketExecOrder, bucketExecOrderHoles} {
		if t.tx.Bucket([]byte(b)) != nil {
			if err := t.tx.DeleteBucket([]byte(b)); err != nil {
				return err
			}
		}
	}
	if order, err = t.tx.CreateBucket([]byte(bucketExecOrder)); err != nil {
		return err
	}
	order.FillPercent = appendFill
	for i, id := range ids {
		if err := order.Put(U64(uint64(i+1)), id); err != nil {
			return err
		}
	}
	if err := order.SetSequence(uint64(len(ids))); err != nil {
		return err
	}
	if _, err := t.tx.CreateBucket([]byte(bucketExecOrderHoles)); err != nil {
		return err
	}
	meta, err := t.bucket(bucketMeta)
	if err != nil {
		return err
	}
	return meta.Put([]byte("exec_count"), U64(uint64(len(ids))))
}
