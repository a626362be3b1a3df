package jsonstream

import (
	"bytes"
	"encoding/json"
	"testing"
)

type doc struct {
	Name  string            `json:"name"`
	Items []json.RawMessage `json:"items"`
	Empty []int             `json:"empty"`
	Meta  map[string]any    `json:"meta"`
}

// An object written a field and an element at a time is the bytes the
// indented encoder writes for the whole: escapes, nesting, empty arrays,
// an empty object.
func TestObjectAsTheEncoder(t *testing.T) {
	d := doc{
		Name:  "a<b>&\"c\" é\u2028",
		Items: []json.RawMessage{json.RawMessage(`{"x":[1,2,{"y":"<z>"}]}`), json.RawMessage(`"s"`), json.RawMessage(`[]`)},
		Empty: []int{},
		Meta:  map[string]any{"k": []string{"v", "w"}, "n": nil},
	}
	var want bytes.Buffer
	if err := Write(&want, d); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	o := NewObject(&got)
	o.Field("name", d.Name)
	o.Array("items")
	for _, it := range d.Items {
		if err := o.Elem(it); err != nil {
			t.Fatal(err)
		}
	}
	o.Array("empty")
	o.Field("meta", d.Meta)
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("wrote\n%s\nwant\n%s", got.String(), want.String())
	}

	var empty bytes.Buffer
	if err := NewObject(&empty).Close(); err != nil || empty.String() != "{}\n" {
		t.Errorf("an empty object: %q, %v", empty.String(), err)
	}
}
