package room

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/retrylab/retrylab/store"
)

// The room's collections, in the room's database. This package owns them
// and their encoding (JSON values).
const (
	// BucketParticipants: participant id -> participant.
	BucketParticipants store.Bucket = "room_participants"
	// BucketExecutions: participant id, NUL, execution id -> Execution.
	BucketExecutions store.Bucket = "room_executions"
	// BucketEvents: participant id, NUL, execution id, NUL, 8-byte seq -> the
	// event as the participant recorded it.
	BucketEvents store.Bucket = "room_events"
	// BucketPredictions: participant id -> Predictions.
	BucketPredictions store.Bucket = "room_predictions"
	// BucketAnswers: participant id -> []Answer, in the order the
	// participant finished the lessons.
	BucketAnswers store.Bucket = "room_answers"
	// BucketActivity: participant id -> the room's clock at its last push
	// (8-byte Unix nanoseconds), which orders the room's list.
	BucketActivity store.Bucket = "room_activity"
	// BucketSettings: "room" -> Settings, what a restarted room keeps.
	BucketSettings store.Bucket = "room_settings"
)

// Settings are what a room hosted on a database keeps across its
// restarts: its address and its join code, so participants who joined
// find it again where they left it.
type Settings struct {
	Address string `json:"address"`
	Code    string `json:"code"`
}

var settingsKey = []byte("room")

// LoadSettings reads the settings of the room last hosted on db; ok is
// false when none was.
func LoadSettings(db *store.DB) (st Settings, ok bool, err error) {
	err = db.View(func(tx *store.Tx) error {
		data := tx.Get(BucketSettings, settingsKey)
		if data == nil {
			return nil
		}
		ok = true
		return json.Unmarshal(data, &st)
	})
	if err != nil {
		return Settings{}, false, fmt.Errorf("read the room's settings: %w", err)
	}
	return st, ok, nil
}

// SaveSettings keeps the room's settings in db.
func SaveSettings(db *store.DB, st Settings) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := db.Update(func(tx *store.Tx) error { return tx.Put(BucketSettings, settingsKey, data) }); err != nil {
		return fmt.Errorf("keep the room's settings: %w", err)
	}
	return nil
}

// participant is one participant of the room.
type participant struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	TokenHash []byte    `json:"token_hash"`
	Joined    time.Time `json:"joined"`
	// Left is when the participant left (retrylab leave), by the room's
	// clock; zero while it is in. Its name is free to join again under.
	Left time.Time `json:"left,omitzero"`
}

// Execution is what the room keeps of a participant's execution: its
// record as the participant's database last had it.
type Execution struct {
	ID         string         `json:"id"`
	Scenario   string         `json:"scenario"`
	Status     string         `json:"status"`
	Runs       int            `json:"runs,omitempty"`
	Sends      map[string]int `json:"sends,omitempty"`
	Duplicates bool           `json:"duplicates,omitempty"`
	// Started tells incarnations of one id apart: a participant who reset
	// and ran the scenario again has a new execution under the old id,
	// and the room replaces the old one's events with its.
	Started time.Time `json:"started"`
	Updated time.Time `json:"updated"`
}

// Buckets are the room's collections: the room's host keeps them across
// resets of its world (engine.Config.KeepOnReset).
var Buckets = []store.Bucket{BucketParticipants, BucketExecutions, BucketEvents, BucketPredictions, BucketAnswers, BucketActivity, BucketSettings}

// Predictions is how a participant's predictions in the lessons went.
type Predictions struct {
	Right int `json:"right"`
	Asked int `json:"asked"`
}

func execKey(participant, exec string) []byte {
	return []byte(participant + "\x00" + exec)
}

func eventKey(participant, exec string, seq uint64) []byte {
	return append([]byte(participant+"\x00"+exec+"\x00"), store.U64(seq)...)
}

// participants reads every participant.
func participants(tx *store.Tx) ([]participant, error) {
	var out []participant
	var derr error
	err := tx.Scan(BucketParticipants, nil, false, func(_, v []byte) bool {
		var p participant
		if err := json.Unmarshal(v, &p); err != nil {
			derr = fmt.Errorf("read room participant: %w", err)
			return false
		}
		out = append(out, p)
		return true
	})
	if err == nil {
		err = derr
	}
	return out, err
}

// executionsOf reads a participant's mirrored executions.
func executionsOf(tx *store.Tx, id string) ([]Execution, error) {
	prefix := []byte(id + "\x00")
	var out []Execution
	var derr error
	err := tx.Scan(BucketExecutions, prefix, false, func(k, v []byte) bool {
		if !bytes.HasPrefix(k, prefix) {
			return false
		}
		var x Execution
		if err := json.Unmarshal(v, &x); err != nil {
			derr = fmt.Errorf("read room execution: %w", err)
			return false
		}
		out = append(out, x)
		return true
	})
	if err == nil {
		err = derr
	}
	return out, err
}

// dropEvents deletes a participant's mirrored events of one execution.
func dropEvents(tx *store.Tx, id, exec string) error {
	prefix := []byte(id + "\x00" + exec + "\x00")
	var keys [][]byte
	err := tx.Scan(BucketEvents, prefix, false, func(k, _ []byte) bool {
		if !bytes.HasPrefix(k, prefix) {
			return false
		}
		keys = append(keys, bytes.Clone(k))
		return true
	})
	for _, k := range keys {
		if err == nil {
			err = tx.Delete(BucketEvents, k)
		}
	}
	return err
}

// eventsOf reads a participant's mirrored events of one execution, raw.
func eventsOf(tx *store.Tx, id, exec string, limit int) ([]json.RawMessage, error) {
	prefix := []byte(id + "\x00" + exec + "\x00")
	var out []json.RawMessage
	err := tx.Scan(BucketEvents, prefix, false, func(k, v []byte) bool {
		if !bytes.HasPrefix(k, prefix) || (limit > 0 && len(out) >= limit) {
			return false
		}
		out = append(out, json.RawMessage(bytes.Clone(v)))
		return true
	})
	return out, err
}
