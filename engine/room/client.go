package room

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// ErrWrongCode means the room refused the join code.
var ErrWrongCode = errors.New("the room refused the join code")

// ErrRefused means the room refused a token (401).
var ErrRefused = errors.New("the room refused the token")

// Client talks to a room's HTTP API.
type Client struct {
	// URL is the room's address ("http://127.0.0.1:7420").
	URL string
	// Token is the bearer token: a participant's or the teacher's.
	Token string
	// HTTP is the client used; default: one with a 5s timeout.
	HTTP *http.Client
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 5 * time.Second}
}

// maxAnswer bounds what the client reads of an answer.
const maxAnswer = 16 << 20

// do sends one request and decodes a 2xx JSON answer into out.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.URL, "/")+path, body)
	if err != nil {
		return fmt.Errorf("room %s: %w", c.URL, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return fmt.Errorf("reach the room at %s: %w", c.URL, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("read the room's answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(data, &e)
		if e.Error == "" {
			e.Error = resp.Status
		}
		err := &StatusError{Code: resp.StatusCode, Msg: e.Error}
		if resp.StatusCode == http.StatusUnauthorized {
			return fmt.Errorf("%w: %w", ErrRefused, err)
		}
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("read the room's answer: %w", err)
	}
	return nil
}

// StatusError is a room's refusal: its HTTP status and its message.
type StatusError struct {
	Code int
	Msg  string
}

func (e *StatusError) Error() string { return fmt.Sprintf("the room said %d: %s", e.Code, e.Msg) }

// Join asks the room at c.URL to let name in with code. A wrong code is
// ErrWrongCode.
func (c *Client) Join(ctx context.Context, code, name string) (JoinResponse, error) {
	return c.Rejoin(ctx, code, name, "")
}

// Rejoin is Join with the token this database was given before under
// name: the room gives the participant its place back, the same token,
// where an unproven join of a taken name is refused (409).
func (c *Client) Rejoin(ctx context.Context, code, name, token string) (JoinResponse, error) {
	var out JoinResponse
	err := c.do(ctx, http.MethodPost, "/v1/room/join", JoinRequest{Code: code, Name: name, Token: token}, &out)
	if errors.Is(err, ErrRefused) {
		return out, ErrWrongCode
	}
	return out, err
}

// Leave tells the room the participant of c.Token left.
func (c *Client) Leave(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/v1/room/leave", struct{}{}, nil)
}

// Status reads the room's status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	err := c.do(ctx, http.MethodGet, "/v1/room/status", nil, &st)
	return st, err
}

// Push sends one push and returns once the room stored it.
func (c *Client) Push(ctx context.Context, p PushRequest) (PushResponse, error) {
	var out PushResponse
	err := c.do(ctx, http.MethodPost, "/v1/room/push", p, &out)
	return out, err
}
