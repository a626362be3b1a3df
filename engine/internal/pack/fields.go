package pack

import "time"

// Fields is the table of a record's optional fields, the declarative form
// of its field bits: field i has bit 1<<i, and the fields whose bits are
// set are written, and read, in the order of the table. One table serves
// both ways, so a record's writer and reader cannot disagree on a bit or
// on the order of its values.
//
// A record is its bits (a uvarint, Bits), whatever the record puts before
// its fields (the world's records put their attribution there), then its
// fields (Put, Get).
type Fields[T any] []Field[T]

// Field is one optional field of a record of type T.
type Field[T any] struct {
	// Has reports whether the writer sets the field's bit. Nil for a
	// field the writer leaves out (the reader still takes it from records
	// older builds wrote).
	Has func(v *T) bool
	// Put writes the field's value. Nil when the bit alone is the value.
	Put func(w *Writer, v *T) error
	// Get reads the field's value into v; a value v cannot hold is
	// r.Fail().
	Get func(r *Reader, v *T)
}

// Bit is the bit of the field at place i of a table.
func Bit(i int) Bits { return 1 << i }

// Last is the first bit past the table's fields: a record with a bit at or
// past it holds a field the reader does not know (see Cursor.Bits).
func (fs Fields[T]) Last() uint64 { return 1 << len(fs) }

// Bits are the bits of the fields v has.
func (fs Fields[T]) Bits(v *T) Bits {
	var b Bits
	for i := range fs {
		if has := fs[i].Has; has != nil && has(v) {
			b |= Bit(i)
		}
	}
	return b
}

// Put writes the values of v's fields whose bits are set in b, in table
// order. It stops at the first field that cannot be written.
func (fs Fields[T]) Put(w *Writer, b Bits, v *T) error {
	for i := range fs {
		if b&Bit(i) == 0 || fs[i].Put == nil {
			continue
		}
		if err := fs[i].Put(w, v); err != nil {
			return err
		}
	}
	return nil
}

// Get reads into v the fields whose bits are set in b, in table order. A
// problem sticks in r (r.Err, r.Done).
func (fs Fields[T]) Get(r *Reader, b Bits, v *T) {
	for i := range fs {
		if b&Bit(i) != 0 && fs[i].Get != nil {
			fs[i].Get(r, v)
		}
	}
}

// Str is the field of a string, set when it is not empty.
func Str[T any](field func(v *T) *string) Field[T] {
	return Field[T]{
		Has: func(v *T) bool { return *field(v) != "" },
		Put: func(w *Writer, v *T) error { w.Str(*field(v)); return nil },
		Get: func(r *Reader, v *T) { *field(v) = r.Str() },
	}
}

// Int is the field of an int, set when it is not 0, written as a varint.
func Int[T any](field func(v *T) *int) Field[T] {
	return Field[T]{
		Has: func(v *T) bool { return *field(v) != 0 },
		Put: func(w *Writer, v *T) error { w.Varint(int64(*field(v))); return nil },
		Get: func(r *Reader, v *T) { *field(v) = r.Int() },
	}
}

// Time is the field of a time, set when it is not the zero time.
func Time[T any](field func(v *T) *time.Time) Field[T] {
	return Field[T]{
		Has: func(v *T) bool { return !field(v).IsZero() },
		Put: func(w *Writer, v *T) error { w.Time(*field(v)); return nil },
		Get: func(r *Reader, v *T) { *field(v) = r.Time() },
	}
}

// Flag is the field of a bool: its bit is its value, and nothing is
// written.
func Flag[T any](field func(v *T) *bool) Field[T] {
	return Field[T]{
		Has: func(v *T) bool { return *field(v) },
		Get: func(_ *Reader, v *T) { *field(v) = true },
	}
}
