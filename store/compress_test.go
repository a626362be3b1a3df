package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The dictionary is part of the format: a chunk compressed with it reads
// back only with the same bytes.
func TestChunkDictionaryIsFrozen(t *testing.T) {
	sum := sha256.Sum256(chunkDictText)
	if got := hex.EncodeToString(sum[:]); got != "57a35e713e86d797198a7fe9cc77921fa23e6f06feb637389e191102288d454b" {
		t.Fatalf("chunkdict.bin changed (sha256 %s): files written with the old one would not read", got)
	}
	if chunkDict == nil || !bytes.Equal(chunkDict.Bytes()[1:], chunkDictText) {
		t.Fatal("s2 did not take chunkdict.bin whole as the dictionary")
	}
}

// encode is encodeChunk with a scratch of its own.
func encode(t testing.TB, plain []byte) []byte {
	t.Helper()
	var scratch []byte
	stored, err := encodeChunk(&scratch, plain, false)
	if err != nil {
		t.Fatal(err)
	}
	return stored
}

// What the dictionary holds costs a few bytes, not its length: a chunk
// that repeats 1 KB of it is stored in a handful.
func TestChunkDictionaryPays(t *testing.T) {
	plain := chunkDictText[8000:9024]
	if stored := encode(t, plain); len(stored) > 16 || stored[0] != compressedChunk {
		t.Fatalf("1 KB of the dictionary is stored in %d bytes", len(stored))
	}
}

// A chunk that compression would not shorten is stored plain, unless it
// starts with a 0 byte (an empty first event), which marks a compressed
// chunk: that one is stored compressed whatever it costs.
func TestIncompressibleChunks(t *testing.T) {
	noise := make([]byte, 600)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range noise {
		noise[i] = byte(r.Uint32())
	}
	plain := append(binary.AppendUvarint(nil, uint64(len(noise))), noise...)
	if stored := encode(t, plain); !bytes.Equal(stored, plain) {
		t.Fatalf("incompressible chunk stored in %d bytes, first %d", len(stored), stored[0])
	}
	plain = append([]byte{0}, plain...)
	stored := encode(t, plain)
	if stored[0] != compressedChunk {
		t.Fatalf("a chunk starting with an empty event is stored plain")
	}
	if got, err := decodeChunk(stored, true, false); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("round trip: %v", err)
	}
}

// Truncated, lengthened or garbled chunks, and lengths past any chunk's,
// give ErrCorrupt, never a panic or a huge allocation.
func TestDecodeChunkRefusesDamage(t *testing.T) {
	plain := benchChunk()
	stored := encode(t, plain)
	lenBytes := binary.AppendUvarint(nil, uint64(len(plain)))
	body := stored[1+len(lenBytes):]
	bad := map[string][]byte{
		"truncated":                    stored[:len(stored)-1],
		"only the tag":                 {compressedChunk},
		"a truncated length":           {compressedChunk, 0x80},
		"a longer length":              slices.Concat([]byte{compressedChunk}, binary.AppendUvarint(nil, uint64(len(plain)+1)), body),
		"a shorter length":             slices.Concat([]byte{compressedChunk}, binary.AppendUvarint(nil, uint64(len(plain)-1)), body),
		"2 GB claimed":                 slices.Concat([]byte{compressedChunk}, binary.AppendUvarint(nil, 1<<31), body),
		"a copy before the dictionary": {compressedChunk, 8, 0x03, 0xff, 0xff, 0xff, 0x0f},
	}
	for name, b := range bad {
		if _, err := decodeChunk(b, true, false); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

// eventLike is an event that resembles its neighbours, as a history's do.
func eventLike(seq uint64) []byte {
	return fmt.Appendf(nil, `{"seq":%d,"type":"AttemptStarted","tool":"send_invoice_email","request":{"to":"alex@initech.com"}}`, seq)
}

// storedChunks returns exec's chunks as the bucket holds them.
func storedChunks(t *testing.T, db *DB, exec string) (keys, values [][]byte) {
	t.Helper()
	keys, values, _ = storedChunksIn(t, db, exec)
	return keys, values
}

// storedChunksIn is storedChunks, and whether exec's last chunk is in
// history_tails. Every chunk but the last must be in history_events, and
// no key there may follow the tail's.
func storedChunksIn(t *testing.T, db *DB, exec string) (keys, values [][]byte, inTails bool) {
	t.Helper()
	err := db.View(func(tx *Tx) error {
		events, prefix, err := tx.historyPrefix(exec, false)
		if err != nil || prefix == nil {
			return fmt.Errorf("no history %s (%v)", exec, err)
		}
		if err := tx.historyChunks(&chunkCursor{c: events.Cursor()}, prefix, 0, func(k, v []byte) (bool, error) {
			keys, values = append(keys, clone(k)), append(values, clone(v))
			return true, nil
		}); err != nil {
			return err
		}
		tk, _, _, err := tx.storedTail(prefix)
		if err != nil {
			return err
		}
		inTails = tk != nil
		n := 0
		c := events.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if tk != nil && bytes.Compare(k, tk) >= 0 {
				return fmt.Errorf("%s: chunk %x in history_events at or after its tail %x", exec, k, tk)
			}
			n++
		}
		if inTails && n != len(keys)-1 || !inTails && n != len(keys) {
			return fmt.Errorf("%s: %d chunks in history_events of %d (tail in history_tails: %v)", exec, n, len(keys), inTails)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys, values, inTails
}

func readAll(t *testing.T, db *DB, exec string, from uint64) (seqs []uint64, data [][]byte) {
	t.Helper()
	err := db.View(func(tx *Tx) error {
		return tx.Events(exec, from, func(seq uint64, d []byte) bool {
			seqs, data = append(seqs, seq), append(data, d)
			return true
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return seqs, data
}

// form says which form a stored chunk is in: "sealed" (what encodeChunk
// stores of its events), "tail" (what encodeTail stores), "both" when the
// two are the same bytes, or "other".
func form(t *testing.T, stored []byte) string {
	t.Helper()
	plain, err := decodeChunk(stored, true, true)
	if err != nil {
		t.Fatal(err)
	}
	var scratch []byte
	sealed, err := encodeChunk(&scratch, plain, true)
	if err != nil {
		t.Fatal(err)
	}
	tail, err := encodeTail(&scratch, plain, true)
	if err != nil {
		t.Fatal(err)
	}
	switch isSealed, isTail := bytes.Equal(stored, sealed), bytes.Equal(stored, tail); {
	case isSealed && isTail:
		return "both"
	case isSealed:
		return "sealed"
	case isTail:
		return "tail"
	}
	return "other"
}

// A history's full chunks are stored sealed, a third of their plain size or
// less for events that repeat each other; its last chunk is stored as a
// growing tail (S2's fast encoder), whether appended in one transaction or
// one by one, and sealed once its history is (in the appending transaction
// or a later one, from a kept tail or one read from the bucket). Events
// that do not compress make a plain tail, which stays plain sealed. A
// growing tail, a plain one and a sealed one read back identically, byte
// for byte, from any sequence number.
func TestTailsGrowFastAndAreSealed(t *testing.T) {
	db, path := newDB(t)
	event := func(exec string, seq uint64) []byte {
		if exec == "noise" {
			return noiseEvent(seq)
		}
		return eventLike(seq)
	}
	appendLike := func(tx *Tx, exec string) error {
		_, err := tx.AppendEvent(exec, func(seq uint64) ([]byte, error) { return event(exec, seq), nil })
		return err
	}
	err := db.Update(func(tx *Tx) error {
		for range 100 {
			if err := errors.Join(appendLike(tx, "many"), appendLike(tx, "sealed in it"), appendLike(tx, "noise")); err != nil {
				return err
			}
		}
		return tx.SealHistory("sealed in it")
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		if err := db.Update(func(tx *Tx) error { return errors.Join(appendLike(tx, "single"), appendLike(tx, "reopened")) }); err != nil {
			t.Fatal(err)
		}
	}
	counts := map[string]int{"many": 100, "single": 50, "sealed in it": 100, "noise": 100, "reopened": 50}
	// readEvery reads exec from every sequence number, checking each event.
	readEvery := func(exec string) (plain int, all [][][]byte) {
		n := counts[exec]
		for from := range uint64(n + 2) {
			seqs, data := readAll(t, db, exec, from)
			want := max(int(from), 1)
			if len(seqs) != max(0, n-want+1) {
				t.Fatalf("%s from %d: %d events, want %d", exec, from, len(seqs), n-want+1)
			}
			for i, seq := range seqs {
				if seq != uint64(want+i) || !bytes.Equal(data[i], event(exec, seq)) {
					t.Fatalf("%s from %d: event %d is %d %q", exec, from, i, seq, data[i])
				}
				if from == 0 {
					plain += len(data[i]) + 1
				}
			}
			all = append(all, data)
		}
		return plain, all
	}
	// checkStored checks the form of exec's chunks and returns their
	// stored bytes.
	checkStored := func(exec string, tail string) int {
		stored := 0
		keys, values, inTails := storedChunksIn(t, db, exec)
		if len(keys) < 2 {
			t.Fatalf("%s: %d chunks, want a full one and a tail", exec, len(keys))
		}
		// A growing tail lies in history_tails, a sealed history's last
		// chunk among its chunks.
		if inTails != (tail == "tail") {
			t.Errorf("%s: last chunk in history_tails: %v, want %v", exec, inTails, tail == "tail")
		}
		for i, v := range values {
			want := "sealed"
			if i == len(values)-1 {
				want = tail
			}
			if exec == "noise" {
				want = "both" // stored plain
			}
			if got := form(t, v); got != want {
				t.Errorf("%s chunk %d of %d (%x): %s, want %s", exec, i+1, len(keys), keys[i], got, want)
			}
			stored += len(v)
		}
		return stored
	}
	// sealedAs checks what HistorySealed says of exec.
	sealedAs := func(exec string, want bool) {
		t.Helper()
		if err := db.View(func(tx *Tx) error {
			if got, err := tx.HistorySealed(exec); err != nil || got != want {
				return fmt.Errorf("HistorySealed(%s) = %v, %v; want %v", exec, got, err, want)
			}
			return nil
		}); err != nil {
			t.Error(err)
		}
	}
	before := map[string][][][]byte{}
	for exec := range counts {
		checkStored(exec, map[bool]string{true: "sealed", false: "tail"}[exec == "sealed in it"])
		// noise's tail is plain, as sealed, but not yet among its chunks.
		sealedAs(exec, exec == "sealed in it")
		_, before[exec] = readEvery(exec)
	}
	if v := storedLast(t, db, "noise"); v[0] == compressedChunk {
		t.Fatalf("an incompressible tail is stored compressed")
	}
	// "reopened" is sealed by a handle that did not append to it: its tail
	// is read from the bucket.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDB(t, path, Options{})
	if err := db.Update(func(tx *Tx) error { return tx.SealHistory("reopened") }); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *Tx) error {
		return errors.Join(tx.SealHistory("many"), tx.SealHistory("single"), tx.SealHistory("noise"), tx.SealHistory("no such history"))
	}); err != nil {
		t.Fatal(err)
	}
	sealedAs("no such history", true)
	for exec := range counts {
		sealedAs(exec, true)
		stored := checkStored(exec, "sealed")
		plain, after := readEvery(exec)
		if !reflect.DeepEqual(after, before[exec]) {
			t.Errorf("%s reads differently sealed", exec)
		}
		if stored*3 > plain && exec != "noise" {
			t.Errorf("%s: %d plain bytes stored in %d", exec, plain, stored)
		}
	}
	// An append after the seal stores the tail as a growing tail again;
	// the next seal seals it.
	if err := db.Update(func(tx *Tx) error { return appendLike(tx, "many") }); err != nil {
		t.Fatal(err)
	}
	counts["many"]++
	checkStored("many", "tail")
	readEvery("many")
	if err := db.Update(func(tx *Tx) error { return tx.SealHistory("many") }); err != nil {
		t.Fatal(err)
	}
	checkStored("many", "sealed")
	readEvery("many")
}

// noiseEvent is an event of 90 random bytes: no compression shortens a
// chunk of them.
func noiseEvent(seq uint64) []byte {
	r := rand.New(rand.NewPCG(seq, 99))
	b := make([]byte, 90)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// storedLast is exec's last chunk as the bucket holds it.
func storedLast(t *testing.T, db *DB, exec string) []byte {
	t.Helper()
	_, values := storedChunks(t, db, exec)
	return values[len(values)-1]
}

// A chunk an older build wrote is plain: it reads as it is, an append to
// its history makes it a growing tail, and a seal seals it.
func TestPlainChunksOfOlderFiles(t *testing.T) {
	db, _ := newDB(t)
	var plain []byte
	for seq := uint64(1); seq <= 3; seq++ {
		plain = binary.AppendUvarint(plain, uint64(len(eventLike(seq))))
		plain = append(plain, eventLike(seq)...)
	}
	err := db.Update(func(tx *Tx) error {
		events, prefix, err := tx.historyPrefix("old", true)
		if err != nil {
			return err
		}
		// Followed by its sum, as a writer's open of the older file
		// leaves it.
		return events.Put(appendSeqKey(prefix, 1), appendChunkSum(clone(plain), 0))
	})
	if err != nil {
		t.Fatal(err)
	}
	if seqs, _ := readAll(t, db, "old", 2); !slices.Equal(seqs, []uint64{2, 3}) {
		t.Fatalf("a plain chunk from 2: %v", seqs)
	}
	if got := appendEvents(t, db, "old", 1); !slices.Equal(got, []uint64{4}) {
		t.Fatalf("append after a plain chunk: %v", got)
	}
	for _, want := range []string{"tail", "sealed"} {
		if want == "sealed" {
			if err := db.Update(func(tx *Tx) error { return tx.SealHistory("old") }); err != nil {
				t.Fatal(err)
			}
		}
		keys, values, inTails := storedChunksIn(t, db, "old")
		if len(keys) != 1 || form(t, values[0]) != want || inTails != (want == "tail") {
			t.Fatalf("after the append: %d chunks, %s (in history_tails: %v), want %s", len(keys), form(t, values[0]), inTails, want)
		}
		seqs, data := readAll(t, db, "old", 0)
		if !slices.Equal(seqs, []uint64{1, 2, 3, 4}) || !bytes.Equal(data[2], eventLike(3)) || !bytes.Equal(data[3], payload("old", 4, 32)) {
			t.Fatalf("after the append (%s): %v", want, seqs)
		}
	}
}

// What a transaction appended is read back inside it, and survives a
// Clear of other collections before its commit; a history deleted in it
// leaves nothing behind.
func TestAppendsSeenInTheirTransaction(t *testing.T) {
	db, _ := newDB(t)
	err := db.Update(func(tx *Tx) error {
		for range 5 {
			if _, err := tx.AppendEvent("x", func(seq uint64) ([]byte, error) { return eventLike(seq), nil }); err != nil {
				return err
			}
			if _, err := tx.AppendEvent("gone", func(seq uint64) ([]byte, error) { return eventLike(seq), nil }); err != nil {
				return err
			}
		}
		n := 0
		if err := tx.Events("x", 3, func(seq uint64, data []byte) bool { n++; return bytes.Equal(data, eventLike(seq)) }); err != nil {
			return err
		}
		if n != 3 || tx.LastSeq("x") != 5 {
			return fmt.Errorf("inside the transaction: %d events from 3, last %d", n, tx.LastSeq("x"))
		}
		if _, err := tx.AppendEvent("x", func(seq uint64) ([]byte, error) { return eventLike(seq), nil }); err != nil {
			return err
		}
		if err := tx.Clear("other"); err != nil {
			return err
		}
		return tx.DeleteExecution("gone")
	})
	if err != nil {
		t.Fatal(err)
	}
	if seqs, _ := readAll(t, db, "x", 0); !slices.Equal(seqs, []uint64{1, 2, 3, 4, 5, 6}) {
		t.Fatalf("after the commit: %v", seqs)
	}
	if seqs, _ := readAll(t, db, "gone", 0); len(seqs) != 0 {
		t.Fatalf("a deleted history: %v", seqs)
	}
}

// A damaged chunk, compressed or plain, fails the read and the next append
// with ErrCorrupt.
func TestDamagedChunkIsErrCorrupt(t *testing.T) {
	for _, want := range []string{"plain", "tail", "sealed"} {
		t.Run(want, func(t *testing.T) { damagedChunk(t, want) })
	}
}

// damagedChunk damages a history's chunk stored in the form want on disk,
// as nothing but damage can while a handle holds the file's lock, and opens
// it again.
func damagedChunk(t *testing.T, want string) {
	db, path := newDB(t)
	for range 3 {
		if err := db.Update(func(tx *Tx) error {
			_, err := tx.AppendEvent("x", func(seq uint64) ([]byte, error) {
				if want == "plain" {
					return noiseEvent(seq), nil
				}
				return eventLike(seq), nil
			})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if want == "sealed" {
		if err := db.Update(func(tx *Tx) error { return tx.SealHistory("x") }); err != nil {
			t.Fatal(err)
		}
	}
	keys, values, inTails := storedChunksIn(t, db, "x")
	got := form(t, values[0])
	if want == "plain" && (values[0][0] == compressedChunk || got != "both") || want != "plain" && got != want {
		t.Fatalf("chunk stored %s (first byte %d), want %s", got, values[0][0], want)
	}
	damaged := append(clone(values[0][:len(values[0])-2]), 0xff)
	if err := db.Update(func(tx *Tx) error {
		if inTails { // a growing tail: in history_tails, after its first sequence number
			return tx.tx.Bucket([]byte(bucketHistoryTails)).Put(keys[0][:historyKeyLen], append(clone(keys[0][historyKeyLen:]), damaged...))
		}
		return tx.tx.Bucket([]byte(bucketHistoryEvents)).Put(keys[0], damaged)
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// A writer's open refuses it by the chunk's checksum; one that does
	// not check (a file too large to walk) meets it on the read.
	if _, err := Open(path, Options{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "damaged record in history_") {
		t.Fatalf("a writer's open of a damaged chunk: %v", err)
	}
	db = openDB(t, path, Options{CheckUpTo: -1, WalkUpTo: -1})
	err := db.View(func(tx *Tx) error { return tx.Events("x", 0, func(uint64, []byte) bool { return true }) })
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("reading a damaged chunk: %v", err)
	}
	err = db.Update(func(tx *Tx) error {
		_, err := tx.AppendEvent("x", func(uint64) ([]byte, error) { return []byte("e"), nil })
		return err
	})
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("appending after a damaged chunk: %v", err)
	}
}

// A chunk of the gen mix's kind: events that repeat each other, with times
// and numbers that do not.
func benchChunk() []byte {
	var plain []byte
	for seq := uint64(1); len(plain) < chunkMax-200; seq++ {
		ev := fmt.Appendf(nil, "\xc1%c\x14%08x step-%d send_invoice_email ik_%016x{\"to\":\"alex@initech.com\",\"subject\":\"Your February invoice\"}",
			byte(seq), seq*2654435761, seq%3, seq*0x9E3779B97F4A7C15)
		plain = binary.AppendUvarint(plain, uint64(len(ev)))
		plain = append(plain, ev...)
	}
	return plain
}

func BenchmarkEncodeChunk(b *testing.B) {
	plain := benchChunk()
	b.SetBytes(int64(len(plain)))
	var out, scratch []byte
	for b.Loop() {
		var err error
		if out, err = encodeChunk(&scratch, plain, false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(out))/float64(len(plain)), "ratio")
}

func BenchmarkDecodeChunk(b *testing.B) {
	plain := benchChunk()
	stored := encode(b, plain)
	b.SetBytes(int64(len(plain)))
	for b.Loop() {
		if _, err := decodeChunk(stored, true, false); err != nil {
			b.Fatal(err)
		}
	}
}

// What encodeChunk and encodeTail store, decodeChunk reads back byte for
// byte, through S2 and the dictionary. testdata/fuzz/FuzzChunkRoundTrip keeps the input
// that caught a wrong escape of long repeats in the codec S2 replaced.
func FuzzChunkRoundTrip(f *testing.F) {
	f.Add(eventLike(1))
	f.Add(benchChunk())
	f.Add([]byte{0, 0, 0})
	f.Add(chunkDictText[100:900])
	f.Fuzz(func(t *testing.T, plain []byte) {
		stored := encode(t, plain)
		got, err := decodeChunk(stored, true, false)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("round trip of %q: %q, %v", plain, got, err)
		}
		var scratch []byte
		if stored, err = encodeTail(&scratch, plain, false); err != nil {
			t.Fatal(err)
		}
		got, err = decodeChunk(stored, true, false)
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("round trip of %q as a tail: %q, %v", plain, got, err)
		}
	})
}

// Whatever a damaged file holds, decodeChunk returns a chunk of the length
// the stored one claims, or ErrCorrupt, and never panics.
func FuzzDecodeChunk(f *testing.F) {
	f.Add(encode(f, benchChunk()))
	f.Add([]byte{compressedChunk, 10, 0x03, 0x05})
	f.Fuzz(func(t *testing.T, stored []byte) {
		got, err := decodeChunk(stored, true, false)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode %x: %v", stored, err)
			}
			return
		}
		if len(stored) > 0 && stored[0] == compressedChunk {
			if n, _ := binary.Uvarint(stored[1:]); uint64(len(got)) != n {
				t.Fatalf("decoded %d bytes, the chunk said %d", len(got), n)
			}
		}
	})
}

// A v5 file keeps a history's growing tail among its chunks in
// history_events. It reads as it is; the history's next append moves it to
// history_tails, or, when the event does not fit, seals it where it is and
// begins a tail in history_tails; either way every event reads back in
// order, and a seal moves the tail back among the chunks.
func TestTailsOfV5FilesMove(t *testing.T) {
	for _, full := range []bool{false, true} {
		db, _ := newDB(t)
		n := uint64(3)
		if full {
			n = uint64(chunkMax / (len(eventLike(10)) + 1)) // as many as fit
		}
		var plain []byte
		for seq := uint64(1); seq <= n; seq++ {
			plain = binary.AppendUvarint(plain, uint64(len(eventLike(seq))))
			plain = append(plain, eventLike(seq)...)
		}
		err := db.Update(func(tx *Tx) error {
			events, prefix, err := tx.historyPrefix("v5", true)
			if err != nil {
				return err
			}
			var scratch []byte
			stored, err := encodeTail(&scratch, plain, true) // sealed with its sum by a writer's open
			if err != nil {
				return err
			}
			return events.Put(appendSeqKey(prefix, 1), stored)
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, inTails := storedChunksIn(t, db, "v5"); inTails {
			t.Fatalf("full %v: a v5 tail read in history_tails before any append", full)
		}
		if err := db.View(func(tx *Tx) error {
			if sealed, err := tx.HistorySealed("v5"); err != nil || sealed {
				return fmt.Errorf("HistorySealed = %v, %v; want a growing tail", sealed, err)
			}
			if last := tx.LastSeq("v5"); last != n {
				return fmt.Errorf("LastSeq = %d, want %d", last, n)
			}
			return nil
		}); err != nil {
			t.Fatalf("full %v: %v", full, err)
		}
		err = db.Update(func(tx *Tx) error {
			_, err := tx.AppendEvent("v5", func(seq uint64) ([]byte, error) { return eventLike(seq), nil })
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		keys, values, inTails := storedChunksIn(t, db, "v5")
		wantChunks := map[bool]int{false: 1, true: 2}[full]
		if len(keys) != wantChunks || !inTails || form(t, values[len(values)-1]) != "tail" || full && form(t, values[0]) != "sealed" {
			t.Fatalf("full %v: after an append %d chunks (tail in history_tails: %v), want %d", full, len(keys), inTails, wantChunks)
		}
		seqs, data := readAll(t, db, "v5", 0)
		if len(seqs) != int(n)+1 {
			t.Fatalf("full %v: %d events read, want %d", full, len(seqs), n+1)
		}
		for i, seq := range seqs {
			if seq != uint64(i+1) || !bytes.Equal(data[i], eventLike(seq)) {
				t.Fatalf("full %v: event %d is %d %q", full, i, seq, data[i])
			}
		}
		if err := db.Update(func(tx *Tx) error { return tx.SealHistory("v5") }); err != nil {
			t.Fatal(err)
		}
		if keys, values, inTails := storedChunksIn(t, db, "v5"); len(keys) != wantChunks || inTails || form(t, values[len(values)-1]) != "sealed" {
			t.Fatalf("full %v: sealed, %d chunks (tail in history_tails: %v)", full, len(keys), inTails)
		}
		if got, _ := readAll(t, db, "v5", 0); len(got) != int(n)+1 {
			t.Fatalf("full %v: sealed, %d events read", full, len(got))
		}
	}
}

// A damaged value in history_tails (empty, a bad sequence number, cut
// short, a chunk that does not decode) is ErrCorrupt for every reader and
// for an append, never a panic.
func TestDamagedTailIsErrCorrupt(t *testing.T) {
	for name, damage := range map[string]func(v []byte) []byte{
		"empty":        func([]byte) []byte { return []byte{} },
		"length byte":  func(v []byte) []byte { return append([]byte{9}, v[1:]...) },
		"no chunk":     func(v []byte) []byte { return v[:1+int(v[0])] },
		"chunk broken": func(v []byte) []byte { return append(clone(v[:len(v)-2]), 0xff) },
	} {
		t.Run(name, func(t *testing.T) {
			db, _ := newDB(t)
			appendSized(t, db, "x", 40, 50, 60)
			if err := db.Update(func(tx *Tx) error {
				tails := tx.tx.Bucket([]byte(bucketHistoryTails))
				_, prefix, err := tx.historyPrefix("x", false)
				if err != nil {
					return err
				}
				v := tails.Get(prefix)
				if v == nil {
					return fmt.Errorf("no tail in history_tails")
				}
				return tails.Put(prefix, damage(clone(v)))
			}); err != nil {
				t.Fatal(err)
			}
			// A fresh handle: the tail kept from the commit is not used.
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := Open(db.Path(), Options{}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "damaged record in history_tails") {
				t.Errorf("a writer's open of a damaged tail: %v", err)
			}
			db = openDB(t, db.Path(), Options{CheckUpTo: -1, WalkUpTo: -1})
			defer db.Close()
			err := db.View(func(tx *Tx) error { return tx.Events("x", 0, func(uint64, []byte) bool { return true }) })
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("Events: %v, want ErrCorrupt", err)
			}
			err = db.View(func(tx *Tx) error { _, err := tx.HistorySealed("x"); return err })
			if name != "chunk broken" && !errors.Is(err, ErrCorrupt) {
				t.Errorf("HistorySealed: %v, want ErrCorrupt", err)
			}
			err = db.Update(func(tx *Tx) error {
				_, err := tx.AppendEvent("x", func(uint64) ([]byte, error) { return []byte("e"), nil })
				return err
			})
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("AppendEvent: %v, want ErrCorrupt", err)
			}
		})
	}
}
