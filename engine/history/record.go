package history

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/retrylab/retrylab/engine/internal/pack"
)

// The compact encoding of an execution record, which EncodeExecution writes
// since schema v5 of the store. (Before it, a record was a JSON object of
// about 330 bytes; DecodeExecution reads both, so older databases open.)
//
//	0xC2                 the magic byte: no JSON text starts with it
//	uvarint              which fields follow (the r* bits), then each of
//	                     them in bit order
//
// Strings are as in an event (compact.go: the table, text, hex); Started is
// its Unix nanoseconds as 8 little-endian bytes, Updated a zigzag varint of
// nanoseconds after Started, Ended one after Updated. A record whose times
// do not fit that form (outside 1678-2261, or not all in one zone offset)
// is stored as JSON, as before.

// recordMagic starts every compactly encoded execution record.
const recordMagic = 0xC2

// Record field bits.
const (
	rID = 1 << iota
	rScenario
	rSource
	rImported
	rKeys     // Policy.Keys
	rJournal  // Policy.Journal
	rStatus   // Status
	rRuns     // Runs
	rStarted  // Started
	rUpdated  // Updated (needs Started)
	rEnded    // Ended (needs Updated)
	rZone     // the times' zone offset in seconds, when not 0
	rStartKey // StartKey
	rError
	rSends
	rDuplicates
	rPossible
	rLast
)

// EncodeExecution is the stored form of an execution record: the compact
// encoding, or JSON for a record whose times it cannot hold.
func EncodeExecution(x Execution) ([]byte, error) {
	if b, ok := encodeRecord(x); ok {
		return b, nil
	}
	b, err := json.Marshal(x)
	if err != nil {
		return nil, fmt.Errorf("encode execution %s: %w", x.ID, err)
	}
	return b, nil
}

// DecodeExecution reads a stored execution record in either encoding.
func DecodeExecution(data []byte) (Execution, error) {
	if len(data) > 0 && data[0] == recordMagic {
		return decodeRecord(data)
	}
	var x Execution
	if err := json.Unmarshal(data, &x); err != nil {
		return Execution{}, fmt.Errorf("decode execution: %w", err)
	}
	return x, nil
}

// recordTimes reports whether x's times fit the compact form, and their
// zone offset.
func recordTimes(x Execution) (offset int, ok bool) {
	first := true
	for _, t := range []time.Time{x.Started, x.Updated, x.Ended} {
		if t.IsZero() {
			continue
		}
		if !pack.FitsNanos(t) {
			return 0, false
		}
		// A zone is kept as encoding/json keeps it: its offset.
		_, off := t.Zone()
		if first {
			offset, first = off, false
		} else if off != offset {
			return 0, false
		}
	}
	// Updated is stored after Started, Ended after Updated.
	if x.Started.IsZero() && (!x.Updated.IsZero() || !x.Ended.IsZero()) ||
		x.Updated.IsZero() && !x.Ended.IsZero() {
		return 0, false
	}
	return offset, true
}

func encodeRecord(x Execution) ([]byte, bool) {
	offset, ok := recordTimes(x)
	if !ok {
		return nil, false
	}
	var bits pack.Bits
	set := bits.Set
	set(rID, x.ID != "")
	set(rScenario, x.Scenario != "")
	set(rSource, x.Source != "")
	set(rImported, x.Imported != "")
	set(rKeys, x.Policy.Keys)
	set(rJournal, x.Policy.Journal)
	set(rStatus, x.Status != "")
	set(rRuns, x.Runs != 0)
	set(rStarted, !x.Started.IsZero())
	set(rUpdated, !x.Updated.IsZero())
	set(rEnded, !x.Ended.IsZero())
	set(rZone, offset != 0)
	set(rStartKey, x.StartKey != "")
	set(rError, x.Error != "")
	set(rSends, len(x.Sends) != 0)
	set(rDuplicates, x.Duplicates)
	set(rPossible, x.Possible)

	w := compactWriter{}
	b := make([]byte, 0, 96)
	b = append(b, recordMagic)
	b = binary.AppendUvarint(b, uint64(bits))
	for bit := pack.Bits(1); bit < rLast; bit <<= 1 {
		if bits&bit == 0 {
			continue
		}
		switch bit {
		case rID:
			b = w.str(b, x.ID, false)
		case rScenario:
			b = w.str(b, x.Scenario, false)
		case rSource:
			b = w.str(b, x.Source, false)
		case rImported:
			b = w.str(b, x.Imported, false)
		case rStatus:
			b = w.str(b, string(x.Status), false)
		case rRuns:
			b = binary.AppendVarint(b, int64(x.Runs))
		case rStarted:
			b = pack.AppendNanos(b, x.Started)
		case rUpdated:
			b = binary.AppendVarint(b, x.Updated.UnixNano()-x.Started.UnixNano())
		case rEnded:
			b = binary.AppendVarint(b, x.Ended.UnixNano()-x.Updated.UnixNano())
		case rZone:
			b = binary.AppendVarint(b, int64(offset))
		case rStartKey:
			b = w.str(b, x.StartKey, false)
		case rError:
			b = w.str(b, x.Error, false)
		case rSends:
			intents := make([]string, 0, len(x.Sends))
			for k := range x.Sends {
				intents = append(intents, k)
			}
			sort.Strings(intents)
			b = binary.AppendUvarint(b, uint64(len(intents)))
			for _, k := range intents {
				// An intent is a recipient and a subject: stored as two
				// strings, so either may be a table entry.
				to, subject, found := strings.Cut(k, "\n")
				if !found {
					b = binary.AppendUvarint(b, 0)
					b = w.str(b, k, false)
				} else {
					b = binary.AppendUvarint(b, 1)
					b = w.str(b, to, false)
					b = w.str(b, subject, false)
				}
				b = binary.AppendVarint(b, int64(x.Sends[k]))
			}
		}
	}
	return b, true
}

func decodeRecord(data []byte) (Execution, error) {
	r := newCompactReader(data)
	var x Execution
	bits := r.Bits(rLast)
	if bits&rUpdated != 0 && bits&rStarted == 0 || bits&rEnded != 0 && bits&rUpdated == 0 ||
		bits&rZone != 0 && bits&rStarted == 0 {
		r.Fail()
	}
	var offset int64
	// inZone puts a time in its zone as encoding/json reads an offset: UTC
	// for none.
	inZone := func(t time.Time) time.Time {
		if offset == 0 {
			return t.UTC()
		}
		return pack.InZone(t, offset)
	}
	var updated int64
	for bit := pack.Bits(1); bit < rLast && r.Err() == nil; bit <<= 1 {
		if bits&bit == 0 {
			continue
		}
		switch bit {
		case rID:
			x.ID = r.str()
		case rScenario:
			x.Scenario = r.str()
		case rSource:
			x.Source = r.str()
		case rImported:
			x.Imported = r.str()
		case rKeys:
			x.Policy.Keys = true
		case rJournal:
			x.Policy.Journal = true
		case rStatus:
			x.Status = Status(r.str())
		case rRuns:
			x.Runs = r.Int()
		case rStarted:
			x.Started = r.Nanos()
		case rUpdated:
			updated = x.Started.UnixNano() + r.Varint()
			x.Updated = time.Unix(0, updated)
		case rEnded:
			x.Ended = time.Unix(0, updated+r.Varint())
		case rZone:
			if offset = r.Varint(); !pack.ValidOffset(offset) {
				r.Fail()
			}
		case rStartKey:
			x.StartKey = r.str()
		case rError:
			x.Error = r.str()
		case rSends:
			n := r.Uvarint()
			if n == 0 || n > uint64(r.Left()) {
				r.Fail()
				break
			}
			x.Sends = make(map[string]int, n)
			for range n {
				var k string
				switch r.Uvarint() {
				case 0:
					k = r.str()
				case 1:
					k = r.str() + "\n" + r.str()
				default:
					r.Fail()
				}
				x.Sends[k] = r.Int()
			}
		case rDuplicates:
			x.Duplicates = true
		case rPossible:
			x.Possible = true
		}
	}
	if err := r.Done(); err != nil {
		return Execution{}, fmt.Errorf("decode execution: %w", err)
	}
	x.Started, x.Updated, x.Ended = zeroOr(x.Started, inZone), zeroOr(x.Updated, inZone), zeroOr(x.Ended, inZone)
	return x, nil
}

// zeroOr keeps a zero time zero and puts the others in their zone.
func zeroOr(t time.Time, in func(time.Time) time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return in(t)
}
