package pack

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func TestStringsRoundTrip(t *testing.T) {
	seeds := []string{"ik_0123456789abcdef0123456789abcdef", "exec_00D9ZK7Z"}
	strs := []string{"", "step-4", "hello", "ik_0123456789abcdef0123456789abcdef", "exec_00D9ZK7Z",
		"inv_00D9ZK7Z", "crm PUT /v1/records/inv_00D9ZK7Z", "msg_3def2b", "5d12bed49e8ca02c46ffabe7e8b3897dbcb21f62e067169c6d42d71292529341",
		"hello", "abc", "ik_ABC", "Your May invoice", "ticket_", "a_b", "\u2026", "é\x00\xff",
		"exec_4414E58B", "exec_7K2Q", "ZZZZZZZZZZZZZZZZZ", "exec_I", "0", "exec_0"}
	w := NewWriter(seeds...)
	for _, s := range strs {
		w.Str(s)
	}
	r := NewReader(w.Bytes(), seeds...)
	for _, want := range strs {
		if got := r.Str(); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if err := r.Done(); err != nil {
		t.Fatal(err)
	}
	// Short forms are taken: a seed is one byte, a 64-digit hex string 34.
	w = NewWriter(seeds...)
	w.Str(seeds[0])
	w.Str("inv_00D9ZK7Z")
	if n := len(w.Bytes()); n != 1+1+2 {
		t.Errorf("a seed and a prefix+suffix take %d bytes, want 4", n)
	}
	w = NewWriter()
	w.Str("exec_4414E58B")
	if n := len(w.Bytes()); n != 1+1+1+5 {
		t.Errorf("exec_4414E58B takes %d bytes, want 8", n)
	}
	w = NewWriter()
	w.Str(strs[7])
	if n := len(w.Bytes()); n != 1+1+1+3 {
		t.Errorf("msg_3def2b takes %d bytes, want 6", n)
	}
}

func TestTimesRoundTrip(t *testing.T) {
	base := time.Date(2026, 6, 1, 9, 0, 5, 499684881, time.UTC)
	times := []time.Time{base, base, {}, base.Add(time.Second), base.In(time.FixedZone("", 3600)),
		base.In(time.FixedZone("", 3600)), time.Date(3000, 1, 2, 3, 4, 5, 6, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 1, time.FixedZone("", -7200))}
	w := NewWriter()
	for _, tm := range times {
		w.Time(tm)
	}
	r := NewReader(w.Bytes())
	for _, want := range times {
		got := r.Time()
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		if !bytes.Equal(gj, wj) {
			t.Errorf("got %s, want %s", gj, wj)
		}
		// As encoding/json would give it back.
		var viaJSON time.Time
		_ = json.Unmarshal(wj, &viaJSON)
		if got != viaJSON && !want.IsZero() {
			t.Errorf("got %#v, encoding/json gives %#v", got, viaJSON)
		}
	}
	if err := r.Done(); err != nil {
		t.Fatal(err)
	}
}

// jsonSamples are values the JSON block must give back as encoding/json
// would store them.
var jsonSamples = []string{
	`{"deduplicated":false,"idempotency_key":"ik_0123","message_id":"msg_a1748d","status":"sent"}`,
	`{"created":true,"deduplicated":false,"fields":{"customer":"lee@hooli.xyz","invoice":"May","message_id":"msg_0ff455"},"id":"inv_00D9ZK7Z","version":1}`,
	`{ "a" : [1, 2.5e3, -0, "x\"y\\u00e9", null, true, {}, []], "b<>&": "<tag>" }`,
	`"just a string"`, `12`, `null`, `[]`, `{}`, `[[[["deep"]]]]`, `{"":""}`, `"\u2028"`,
	`{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":{"j":{"k":{"l":{"m":{"n":{"o":{"p":{"q":{"r":{"s":{"t":{"u":{"v":{"w":{"x":{"y":{"z":{"0":{"1":{"2":{"3":{"4":{"5":{"6":{"7":1}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}`,
}

func TestJSONRoundTrip(t *testing.T) {
	for _, s := range jsonSamples {
		checkJSON(t, s)
	}
	w := NewWriter()
	if err := w.JSON(json.RawMessage(`{"a":`)); err == nil {
		t.Error("a broken value was taken")
	}
}

func checkJSON(t *testing.T, s string) {
	t.Helper()
	want, err := json.Marshal(struct {
		V json.RawMessage `json:"v"`
	}{json.RawMessage(s)})
	if err != nil {
		return // not JSON: the writer must refuse it too
	}
	w := NewWriter("seed")
	if err := w.JSON(json.RawMessage(s)); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	r := NewReader(w.Bytes(), "seed")
	v := r.JSON()
	if err := r.Done(); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	got, _ := json.Marshal(struct {
		V json.RawMessage `json:"v"`
	}{v})
	if !bytes.Equal(got, want) {
		t.Errorf("%s: got %s, want %s", s, got, want)
	}
}

func FuzzStrings(f *testing.F) {
	f.Add("exec_4414E58B", "inv_4414E58B")
	f.Add("ik_00ff", "msg_3def2b")
	f.Fuzz(func(t *testing.T, a, b string) {
		w := NewWriter(a)
		w.Str(b)
		w.Str(a + b)
		k := AppendString(nil, b)
		k = AppendString(k, a)
		r := NewReader(w.Bytes(), a)
		if got := r.Str(); got != b {
			t.Fatalf("got %q, want %q", got, b)
		}
		if got := r.Str(); got != a+b {
			t.Fatalf("got %q, want %q", got, a+b)
		}
		if err := r.Done(); err != nil {
			t.Fatal(err)
		}
		gb, rest, err := ReadString(k)
		ga, rest2, err2 := ReadString(rest)
		if gb != b || ga != a || len(rest2) != 0 || err != nil || err2 != nil {
			t.Fatalf("keys: %q %q %q %v %v", gb, ga, rest2, err, err2)
		}
	})
}

func FuzzJSON(f *testing.F) {
	for _, s := range jsonSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if json.Valid([]byte(s)) {
			checkJSON(t, s)
		}
	})
}

func TestDamagedRecordsAreRefused(t *testing.T) {
	w := NewWriter("k")
	w.Str("hello")
	w.Time(time.Unix(1, 2))
	_ = w.JSON(json.RawMessage(`{"a":[1,"b"]}`))
	full := w.Bytes()
	for n := range len(full) {
		r := NewReader(full[:n], "k")
		r.Str()
		r.Time()
		r.JSON()
		if err := r.Done(); !errors.Is(err, ErrDamaged) {
			t.Errorf("cut at %d: %v", n, err)
		}
	}
	if r := NewReader([]byte(`{"a":1}`)); r.Err() == nil {
		t.Error("JSON read as packed")
	}
}

// goldenRecord writes one of each block with fixed values.
func goldenRecord() []byte {
	w := NewWriter("ik_0123456789abcdef0123456789abcdef", "exec_00D9ZK7Z")
	w.Uvarint(300)
	w.Varint(-2)
	for _, s := range []string{"step-4", "send_invoice_email", "jordan@acme.dev", "exec_4414E58B", "inv_00D9ZK7Z",
		"msg_3def2b", "crm PUT /v1/records/inv_00D9ZK7Z", "Your March invoice", "plain", "plain",
		"5d12bed49e8ca02c46ffabe7e8b3897dbcb21f62e067169c6d42d71292529341", "ik_0123456789abcdef0123456789abcdef"} {
		w.Str(s)
	}
	t := time.Date(2026, 6, 1, 9, 0, 5, 499684881, time.UTC)
	w.Time(t)
	w.Time(t)
	w.Time(t.In(time.FixedZone("", 3600)).Add(time.Second))
	w.Time(time.Time{})
	_ = w.JSON(json.RawMessage(`{"created":true,"fields":{"customer":"jordan@acme.dev","n":[1,2.5,null]},"id":"inv_00D9ZK7Z","<&>":"\u00e9"}`))
	return w.Bytes()
}

// goldenHex is goldenRecord as this format writes it. Databases hold
// records in this format: if this test fails, the format changed, and files
// written before would no longer read. Add to the table; never change it.
const goldenHex = "c3ac0203081266452c210247150b0d221d103def2b1d316d3b4d6172636820696e766f69636529706c61696e3b8502005d12bed49e8ca02c46ffabe7e8b3897dbcb21f62e067169c6d42d7129252934103021128dfa16ce9b418010611f279dd6ce9b418a038001240014e420a460066096e0f01560119322e3501523c001b91015c75303033635c75303032365c753030336500315c7530306539"

func TestTheFormatStaysTheSame(t *testing.T) {
	got := hex.EncodeToString(goldenRecord())
	if got != goldenHex {
		t.Errorf("the packed format changed: records written before would not read as they did\n got %s\nwant %s", got, goldenHex)
	}
	// And the record reads as what was written.
	data, _ := hex.DecodeString(goldenHex)
	r := NewReader(data, "ik_0123456789abcdef0123456789abcdef", "exec_00D9ZK7Z")
	if r.Uvarint() != 300 || r.Varint() != -2 {
		t.Error("numbers")
	}
	for _, want := range []string{"step-4", "send_invoice_email", "jordan@acme.dev", "exec_4414E58B", "inv_00D9ZK7Z",
		"msg_3def2b", "crm PUT /v1/records/inv_00D9ZK7Z", "Your March invoice", "plain", "plain",
		"5d12bed49e8ca02c46ffabe7e8b3897dbcb21f62e067169c6d42d71292529341", "ik_0123456789abcdef0123456789abcdef"} {
		if got := r.Str(); got != want {
			t.Errorf("read %q, want %q", got, want)
		}
	}
	for _, want := range []string{"2026-06-01T09:00:05.499684881Z", "2026-06-01T09:00:05.499684881Z",
		"2026-06-01T10:00:06.499684881+01:00", "0001-01-01T00:00:00Z"} {
		if got := r.Time().Format(time.RFC3339Nano); got != want {
			t.Errorf("read time %s, want %s", got, want)
		}
	}
	if got, want := string(r.JSON()), `{"created":true,"fields":{"customer":"jordan@acme.dev","n":[1,2.5,null]},"id":"inv_00D9ZK7Z","\u003c\u0026\u003e":"\u00e9"}`; got != want {
		t.Errorf("read %s, want %s", got, want)
	}
	if err := r.Done(); err != nil {
		t.Error(err)
	}
}
