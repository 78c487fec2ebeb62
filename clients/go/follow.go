package flotilla

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// FollowEvents follows a job's events over SSE (GET /api/jobs/{id}/events), calling fn with
// each event in seq order, once each, starting after seq `after` (0: from the beginning).
// It returns the job's final status from the server's end event.
//
// When the stream drops before the end event it reconnects with Last-Event-ID = the last seq
// seen (delay doubling from ReconnectDelay up to 5 s); after MaxReconnects failures in a row it
// returns an ErrNetwork error. An error reply (401, 404, ...) returns at once; so does an error
// from fn, or ctx ending (ctx.Err()).
func (c *Client) FollowEvents(ctx context.Context, jobID int64, after int64, fn func(Event) error) (string, error) {
	if err := checkID(jobID, "job id"); err != nil {
		return "", err
	}
	if after < 0 {
		return "", &APIError{Code: "invalid_request", Message: fmt.Sprintf("after must be >= 0 (an event seq), got %d", after), Field: "after", kind: ErrBadRequest}
	}
	path := fmt.Sprintf("/api/jobs/%d/events", jobID)
	last := after
	failures := 0
	delay := c.ReconnectDelay
	maxReconnects := c.MaxReconnects
	problem := ""
	for {
		if failures > 0 {
			if failures > maxReconnects {
				return "", networkError("event stream of job %d kept failing (%d tries): %s", jobID, failures, problem)
			}
			wait := delay << (failures - 1)
			if wait > 5*time.Second || wait <= 0 {
				wait = 5 * time.Second
			}
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(wait):
			}
		}
		headers := map[string]string{"accept": "text/event-stream"}
		if last > 0 {
			headers["last-event-id"] = strconv.FormatInt(last, 10)
		}
		res, err := c.open(ctx, "GET", path, nil, headers)
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			if ae, ok := err.(*APIError); ok && (ae.kind == ErrNetwork || ae.kind == ErrServer || ae.Status == 429) {
				failures++
				problem = ae.Message
				continue
			}
			return "", err
		}
		if ct := res.Header.Get("content-type"); !strings.HasPrefix(ct, "text/event-stream") {
			res.Body.Close()
			return "", badResponse(res.StatusCode, "GET %s: expected an event stream, got %q", path, ct)
		}
		status, done, err := c.readStream(res.Body, path, &last, &delay, &failures, fn)
		res.Body.Close()
		if done || err != nil {
			return status, err
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		problem = status
		failures++
	}
}

// readStream reads one connection's events. done: the end event came (status is the job's);
// otherwise status describes why the stream stopped.
func (c *Client) readStream(body io.Reader, path string, last *int64, delay *time.Duration, failures *int, fn func(Event) error) (string, bool, error) {
	reader := bufio.NewReader(body)
	parser := newSseParser()
	for {
		line, err := reader.ReadString('\n')
		if line != "" {
			ev, ok := parser.feed(line)
			if ok {
				if ev.Retry >= 0 {
					*delay = time.Duration(ev.Retry) * time.Millisecond
				}
				if ev.Event == "end" {
					var end struct {
						Status string `json:"status"`
					}
					_ = json.Unmarshal([]byte(ev.Data), &end)
					return end.Status, true, nil
				}
				if (ev.Event == "job" || ev.Event == "message") && ev.Data != "" {
					var e Event
					if jerr := json.Unmarshal([]byte(ev.Data), &e); jerr != nil || e.Seq <= 0 {
						return "", true, badResponse(200, "GET %s: bad event %s", path, orQ(ev.ID))
					}
					if e.Seq > *last { // else replayed after a reconnect
						*last = e.Seq
						*failures = 0
						if ferr := fn(e); ferr != nil {
							return "", true, ferr
						}
					}
				}
			}
		}
		if err != nil {
			if strings.Contains(err.Error(), "EOF") {
				return "the stream ended before the job did", false, nil
			}
			return "the stream broke: " + err.Error(), false, nil
		}
	}
}

func orQ(s string) string {
	if s == "" {
		return "?"
	}
	return s
}
