package pack

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// sample is a record of every kind of field a table holds.
type sample struct {
	Old     string // written by older builds only
	Name    string
	Count   int
	At      time.Time
	Done    bool
	Scaled  int // written as Scaled/10 when a multiple of 10
	Refused bool
}

const (
	sOld = iota
	sName
	sCount
	sAt
	sDone
	sScaled
)

var errRefused = errors.New("refused")

var sampleFields = Fields[sample]{
	sOld:   {Get: func(r *Reader, s *sample) { s.Old = r.Str() }},
	sName:  Str(func(s *sample) *string { return &s.Name }),
	sCount: Int(func(s *sample) *int { return &s.Count }),
	sAt:    Time(func(s *sample) *time.Time { return &s.At }),
	sDone:  Flag(func(s *sample) *bool { return &s.Done }),
	sScaled: {
		Has: func(s *sample) bool { return s.Scaled != 0 },
		Put: func(w *Writer, s *sample) error {
			if s.Refused {
				return errRefused
			}
			w.Varint(int64(s.Scaled / 10))
			return nil
		},
		Get: func(r *Reader, s *sample) {
			v := r.Varint()
			if v < 0 {
				r.Fail()
				return
			}
			s.Scaled = int(v) * 10
		},
	},
}

func encodeSample(s sample) ([]byte, error) {
	w := NewWriter()
	b := sampleFields.Bits(&s)
	w.Uvarint(uint64(b))
	if err := sampleFields.Put(w, b, &s); err != nil {
		return nil, err
	}
	return w.Bytes(), nil
}

func decodeSample(v []byte) (sample, error) {
	var s sample
	r := NewReader(v)
	b := r.Bits(sampleFields.Last())
	sampleFields.Get(r, b, &s)
	return s, r.Done()
}

func TestFieldsRoundTrip(t *testing.T) {
	at := time.Date(2026, 6, 1, 9, 30, 0, 0, time.UTC)
	for _, s := range []sample{
		{},
		{Name: "send-invoice"},
		{Count: -3, Done: true},
		{Name: "a", Count: 7, At: at, Done: true, Scaled: 120},
		{At: at, Scaled: 40},
	} {
		t.Run(fmt.Sprintf("%+v", s), func(t *testing.T) {
			v, err := encodeSample(s)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeSample(v)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, s) {
				t.Errorf("round trip: got %+v, want %+v", got, s)
			}
		})
	}
}

// TestFieldsLayout pins the format: field i has bit 1<<i, a field is written
// only when its bit is set, and the values follow in table order.
func TestFieldsLayout(t *testing.T) {
	s := sample{Name: "x", Done: true, Scaled: 30}
	if got, want := sampleFields.Bits(&s), Bit(sName)|Bit(sDone)|Bit(sScaled); got != want {
		t.Fatalf("bits %b, want %b", got, want)
	}
	got, err := encodeSample(s)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter()
	w.Uvarint(1<<sName | 1<<sDone | 1<<sScaled)
	w.Str("x")
	w.Varint(3)
	if want := w.Bytes(); string(got) != string(want) {
		t.Errorf("encoded % x, want % x", got, want)
	}
	if last := sampleFields.Last(); last != 1<<6 {
		t.Errorf("Last() = %d, want %d", last, 1<<6)
	}
}

// TestFieldsOlderRecords reads a field the writer no longer sets.
func TestFieldsOlderRecords(t *testing.T) {
	if b := sampleFields.Bits(&sample{Old: "kept"}); b != 0 {
		t.Fatalf("a field without Has set bits %b", b)
	}
	w := NewWriter()
	w.Uvarint(1<<sOld | 1<<sCount)
	w.Str("old")
	w.Varint(2)
	got, err := decodeSample(w.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if want := (sample{Old: "old", Count: 2}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestFieldsRefuse(t *testing.T) {
	if _, err := encodeSample(sample{Scaled: 10, Refused: true}); !errors.Is(err, errRefused) {
		t.Errorf("a field that cannot be written: err %v, want %v", err, errRefused)
	}
	unknown := NewWriter()
	unknown.Uvarint(1 << 6)
	if _, err := decodeSample(unknown.Bytes()); !errors.Is(err, ErrDamaged) {
		t.Errorf("an unknown bit: err %v, want %v", err, ErrDamaged)
	}
	bad := NewWriter()
	bad.Uvarint(1 << sScaled)
	bad.Varint(-1)
	if _, err := decodeSample(bad.Bytes()); !errors.Is(err, ErrDamaged) {
		t.Errorf("a value the record cannot hold: err %v, want %v", err, ErrDamaged)
	}
}
