package history

import (
	"encoding/json"
	"fmt"

	"github.com/retrylab/retrylab/engine/internal/pack"
)

// A journal record is stored packed (engine/internal/pack) since the JSON
// object earlier builds wrote (180-280 bytes) repeated its field names, its
// step (the key it is stored under) and its key inside the result. Readers
// take both: DecodeJournal a JSON object or a packed record, which starts
// with pack.Magic. A packed record is its field bits (a uvarint), then the
// fields whose bits are set, in bit order; the step and the execution are
// the record's seeds, so a result that names them (an "inv_" id beside
// "exec_...", say) refers to them.

// Journal record bits.
const (
	jStep     = 1 << iota // the record's Step, when it is not the step it is stored under
	jTool                 //
	jKey                  //
	jAttempt              //
	jRun                  //
	jResult               // absent: JSON null
	jRecorded             //
	jLast
)

// EncodeJournal is the stored form of execution exec's journal record rec,
// stored under step (rec.Step, as a rule).
func EncodeJournal(exec, step string, rec JournalRecord) ([]byte, error) {
	w := pack.NewWriter(step, exec)
	var b pack.Bits
	set := b.Set
	set(jStep, rec.Step != step)
	set(jTool, rec.Tool != "")
	set(jKey, rec.Key != "")
	set(jAttempt, rec.Attempt != 0)
	set(jRun, rec.Run != 0)
	set(jResult, len(rec.Result) != 0 && string(rec.Result) != "null")
	set(jRecorded, !rec.Recorded.IsZero())
	w.Uvarint(uint64(b))
	if b&jStep != 0 {
		w.Str(rec.Step)
	}
	if b&jTool != 0 {
		w.Str(rec.Tool)
	}
	if b&jKey != 0 {
		w.Str(rec.Key)
	}
	if b&jAttempt != 0 {
		w.Varint(int64(rec.Attempt))
	}
	if b&jRun != 0 {
		w.Varint(int64(rec.Run))
	}
	if b&jResult != 0 {
		if err := w.JSON(rec.Result); err != nil {
			return nil, fmt.Errorf("encode journal record of %s %s: result: %w", exec, rec.Step, err)
		}
	}
	if b&jRecorded != 0 {
		w.Time(rec.Recorded)
	}
	return w.Bytes(), nil
}

// DecodeJournal reads the journal record stored for execution exec's step,
// packed or JSON.
func DecodeJournal(exec, step string, data []byte) (JournalRecord, error) {
	var rec JournalRecord
	if !pack.Is(data) {
		if err := json.Unmarshal(data, &rec); err != nil {
			return JournalRecord{}, fmt.Errorf("decode journal record of %s %s: %w", exec, step, err)
		}
		return rec, nil
	}
	r := pack.NewReader(data, step, exec)
	b := r.Bits(jLast)
	rec.Step = step
	if b&jStep != 0 {
		rec.Step = r.Str()
	}
	if b&jTool != 0 {
		rec.Tool = r.Str()
	}
	if b&jKey != 0 {
		rec.Key = r.Str()
	}
	if b&jAttempt != 0 {
		rec.Attempt = r.Int()
	}
	if b&jRun != 0 {
		rec.Run = r.Int()
	}
	rec.Result = json.RawMessage("null")
	if b&jResult != 0 {
		rec.Result = r.JSON()
	}
	if b&jRecorded != 0 {
		rec.Recorded = r.Time()
	}
	if err := r.Done(); err != nil {
		return JournalRecord{}, fmt.Errorf("decode journal record of %s %s: %w", exec, step, err)
	}
	return rec, nil
}

// JournalJSON is a stored journal record as the JSON object the journal API
// serves: a JSON record as stored, a packed one as encoding/json writes the
// record it holds (the text it was packed from).
func JournalJSON(exec, step string, data []byte) ([]byte, error) {
	if !pack.Is(data) {
		return data, nil
	}
	rec, err := DecodeJournal(exec, step, data)
	if err != nil {
		return nil, err
	}
	return json.Marshal(rec)
}
