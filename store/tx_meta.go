package store

// --- metadata -----------------------------------------------------------

// Meta reads a value the layers above keep about the database itself (which
// indexes are built, say), or nil. ClearAll keeps these.
func (t *Tx) Meta(key string) []byte {
	b, err := t.bucket(bucketMeta)
	if err != nil {
		return nil
	}
	return clone(b.Get([]byte("x:" + key)))
}

// SetMeta stores a value about the database itself.
func (t *Tx) SetMeta(key string, value []byte) error {
	b, err := t.bucket(bucketMeta)
	if err != nil {
		return err
	}
	return b.Put([]byte("x:"+key), value)
}
