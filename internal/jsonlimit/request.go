package jsonlimit

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// BadBody is a request body refused before anything was done with it (too
// large, nested too deep, not JSON): the client's fault, a 400.
type BadBody struct{ Err error }

func (b *BadBody) Error() string { return b.Err.Error() }
func (b *BadBody) Unwrap() error { return b.Err }

// ReadRequest reads r's body, at most max bytes; a longer one is a
// *BadBody.
func ReadRequest(r *http.Request, max int) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r.Body, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > max {
		return nil, &BadBody{errors.New("body too large")}
	}
	return data, nil
}

// DecodeRequest decodes r's JSON body, at most max bytes and MaxDepth
// levels deep, into v. Every refusal is a *BadBody.
func DecodeRequest(r *http.Request, max int, v any) error {
	data, err := ReadRequest(r, max)
	if err != nil {
		var bad *BadBody
		if errors.As(err, &bad) {
			return err
		}
		return &BadBody{err}
	}
	if err := Check(data); err != nil {
		return &BadBody{err}
	}
	if err := json.Unmarshal(data, v); err != nil {
		return &BadBody{err}
	}
	return nil
}

// Status is the HTTP status of an error a request led to: 400 for a body
// refused unread (*BadBody), otherwise as given.
func Status(err error, otherwise int) int {
	var bad *BadBody
	if errors.As(err, &bad) {
		return http.StatusBadRequest
	}
	return otherwise
}
