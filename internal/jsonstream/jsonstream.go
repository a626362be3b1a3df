// Package jsonstream writes a JSON object a field, and an array's element,
// at a time, byte for byte as encoding/json's Encoder with a two-space
// indent and no HTML escaping writes the whole object: for documents too
// large to build in memory first (a long history, the whole state, an
// audit's report).
package jsonstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
)

// Write writes v whole as one document, as an Object writes it a piece at
// a time: indented by two spaces, no HTML escaping, a newline at the end.
func Write(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Object is a JSON object being written. Its methods' write errors are
// kept by the buffered writer and returned by the next Flush or Close.
type Object struct {
	w       *bufio.Writer
	buf     bytes.Buffer
	enc     *json.Encoder
	fields  int
	inArray bool
	elems   int
}

// NewObject starts an object on w.
func NewObject(w io.Writer) *Object {
	o := &Object{w: bufio.NewWriterSize(w, 64<<10)}
	o.enc = json.NewEncoder(&o.buf)
	o.enc.SetEscapeHTML(false)
	return o
}

// encode is v's JSON as it stands at a depth whose lines begin with
// prefix, without the encoder's newline; valid until the next call.
func (o *Object) encode(prefix string, v any) ([]byte, error) {
	o.buf.Reset()
	o.enc.SetIndent(prefix, "  ")
	if err := o.enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(o.buf.Bytes(), []byte("\n")), nil
}

// next ends the array being written, if any, and begins field name.
func (o *Object) next(name string) error {
	o.endArray()
	if o.fields == 0 {
		o.w.WriteString("{\n  ")
	} else {
		o.w.WriteString(",\n  ")
	}
	o.fields++
	key, err := o.encode("", name)
	if err != nil {
		return err
	}
	o.w.Write(key)
	o.w.WriteString(": ")
	return nil
}

func (o *Object) endArray() {
	if !o.inArray {
		return
	}
	if o.elems > 0 {
		o.w.WriteString("\n  ")
	}
	o.w.WriteString("]")
	o.inArray = false
}

// Field writes the next field: name and v, whole.
func (o *Object) Field(name string, v any) error {
	if err := o.next(name); err != nil {
		return err
	}
	b, err := o.encode("  ", v)
	if err != nil {
		return err
	}
	_, err = o.w.Write(b)
	return err
}

// Array begins the next field, an array whose elements Elem writes; an
// array with none is [].
func (o *Object) Array(name string) error {
	if err := o.next(name); err != nil {
		return err
	}
	o.w.WriteString("[")
	o.inArray, o.elems = true, 0
	return nil
}

// Elem writes the next element of the array Array began.
func (o *Object) Elem(v any) error {
	b, err := o.encode("    ", v)
	if err != nil {
		return err
	}
	if o.elems == 0 {
		o.w.WriteString("\n    ")
	} else {
		o.w.WriteString(",\n    ")
	}
	o.elems++
	_, err = o.w.Write(b)
	return err
}

// Flush writes out what is buffered, so a reader sees the document so far.
func (o *Object) Flush() error { return o.w.Flush() }

// Close ends the object and flushes it.
func (o *Object) Close() error {
	if o.fields == 0 {
		o.w.WriteString("{}\n")
		return o.w.Flush()
	}
	o.endArray()
	o.w.WriteString("\n}\n")
	return o.w.Flush()
}
