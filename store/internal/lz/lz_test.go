package lz

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

var sampleDict = []byte(`{"type":"AttemptStarted","tool":"send_invoice_email","to":"alex@initech.com","subject":"Your February invoice"}` +
	`{"type":"AttemptFinished","outcome":"timeout","error":"no response within 300ms"}`)

func roundTrip(t *testing.T, d *Dict, src []byte) []byte {
	t.Helper()
	enc := d.Encode(nil, src)
	got, err := d.Decode([]byte("prefix"), enc, len(src))
	if err != nil {
		t.Fatalf("decode %q: %v", src, err)
	}
	if !bytes.Equal(got[len("prefix"):], src) || string(got[:len("prefix")]) != "prefix" {
		t.Fatalf("round trip of %q gave %q", src, got)
	}
	return enc
}

func TestRoundTrip(t *testing.T) {
	d := NewDict(sampleDict)
	empty := NewDict(nil)
	cases := [][]byte{
		nil,
		[]byte("a"),
		[]byte("abc"),
		[]byte("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), // a run: an overlapping match
		[]byte(`{"type":"AttemptStarted","tool":"send_invoice_email"}`),
		// a match that starts in the dictionary and runs on into the value
		append(append([]byte{}, sampleDict[len(sampleDict)-10:]...), sampleDict[len(sampleDict)-10:]...),
		bytes.Repeat([]byte(`"to":"alex@initech.com",`), 50),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		b := make([]byte, r.IntN(5000))
		for i := range b {
			b[i] = "abcd\x00\xff"[r.IntN(6)]
		}
		cases = append(cases, b)
	}
	for _, c := range cases {
		roundTrip(t, d, c)
		roundTrip(t, empty, c)
	}
}

// TestDictionaryPays: what the dictionary holds costs a few bytes, not its
// length, and repeats within the value refer back.
func TestDictionaryPays(t *testing.T) {
	d := NewDict(sampleDict)
	src := []byte(`{"type":"AttemptStarted","tool":"send_invoice_email","to":"alex@initech.com","subject":"Your February invoice"}`)
	if enc := roundTrip(t, d, src); len(enc) > 8 {
		t.Errorf("a value the dictionary holds takes %d bytes", len(enc))
	}
	rep := bytes.Repeat([]byte("0123456789abcdef"), 64)
	if enc := roundTrip(t, NewDict(nil), rep); len(enc) > 24 {
		t.Errorf("1 KB of one repeated 16-byte string takes %d bytes", len(enc))
	}
}

// TestDecodeRefusesDamage: truncated, wrong lengths, distances before the
// dictionary and garbage give ErrCorrupt, never a panic.
func TestDecodeRefusesDamage(t *testing.T) {
	d := NewDict(sampleDict)
	src := []byte(`{"type":"AttemptFinished","outcome":"timeout","error":"no response within 300ms"} and more text`)
	enc := d.Encode(nil, src)
	bad := [][]byte{
		enc[:len(enc)-1],
		{0x03, 0xff, 0xff, 0xff, 0xff, 0x0f}, // a distance far before the dictionary
		{0x01, 0x00},                         // distance 0
		{0x80},                               // a truncated uvarint
		{0x40, 'a'},                          // a literal run longer than what follows
		{0x10},                               // a repeat before any distance
		{0x0f, 0xff, 0xff, 0xff, 0xff, 0x0f}, // a match longer than the value
	}
	for _, b := range bad {
		if _, err := d.Decode(nil, b, len(src)); err != ErrCorrupt {
			t.Errorf("decode %x: %v, want ErrCorrupt", b, err)
		}
	}
	for _, n := range []int{-1, 0, len(src) - 1, len(src) + 1} {
		if _, err := d.Decode(nil, enc, n); err != ErrCorrupt {
			t.Errorf("decode with length %d (of %d): %v, want ErrCorrupt", n, len(src), err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	d := NewDict(sampleDict)
	f.Add(d.Encode(nil, []byte(`{"type":"AttemptStarted"}`)), 25)
	f.Add([]byte{0x03, 0x05}, 10)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		if n > 1<<16 {
			return
		}
		out, err := d.Decode(nil, b, n)
		if err == nil && len(out) != n {
			t.Fatalf("decoded %d bytes, said %d", len(out), n)
		}
	})
}

func FuzzRoundTrip(f *testing.F) {
	d := NewDict(sampleDict)
	f.Add([]byte(`{"type":"AttemptStarted","tool":"send_invoice_email"}`))
	f.Add([]byte("aaaaaaaaaaaaaaaaaaa"))
	f.Fuzz(func(t *testing.T, src []byte) {
		got, err := d.Decode(nil, d.Encode(nil, src), len(src))
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("round trip of %q: %q, %v", src, got, err)
		}
	})
}
