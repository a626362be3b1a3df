package world

import "github.com/retrylab/retrylab/store"

// The world's collections in the store. The world owns them and their
// encodings (JSON records; 8-byte sequence keys for the ledgers); the store
// creates each on its first write.
const (
	BucketOutbox       store.Bucket = "world_outbox"     // 8-byte seq -> delivered message
	BucketKeys         store.Bucket = "world_keys"       // idempotency key -> stored response
	BucketCRM          store.Bucket = "world_crm"        // record id -> record
	BucketCRMWrites    store.Bucket = "world_crm_writes" // 8-byte seq -> write
	BucketMeta         store.Bucket = "world_meta"       // clock offset, settings, per-execution indexes
	BucketKeysInFlight store.Bucket = "world_keys_in_flight"
)

// Buckets are every collection of the world: what a reset of the world
// clears.
var Buckets = []store.Bucket{BucketOutbox, BucketKeys, BucketCRM, BucketCRMWrites, BucketMeta, BucketKeysInFlight}
