package flotilla

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Error kinds, one per HTTP status class the API uses. Match them with errors.Is:
//
//	if errors.Is(err, flotilla.ErrNotFound) { ... }
//
// and read the server's code, message and field with errors.As(err, &apiErr).
var (
	ErrBadRequest   = errors.New("bad request (400)")      // invalid_json, invalid_request
	ErrUnauthorized = errors.New("unauthorized (401)")     // missing or unknown API token
	ErrForbidden    = errors.New("forbidden (403)")        // the token's role may not do this
	ErrNotFound     = errors.New("not found (404)")        // not_found, unknown_agent
	ErrConflict     = errors.New("conflict (409)")         // e.g. not_cancellable
	ErrInvalidInput = errors.New("invalid input (422)")    // input fails the agent's inputSchema
	ErrServer       = errors.New("server error (5xx)")     // the server failed
	ErrNetwork      = errors.New("network error")          // the server could not be reached
	ErrBadResponse  = errors.New("bad response")           // a reply that is not what the API describes
	errOtherStatus  = errors.New("unexpected HTTP status") // any other non-2xx status
)

// APIError is every error of this package: an error reply of the server (its
// {"error":{"code","message","field"}} body, ApiErrorBody in /openapi.json) or a failure to
// reach it. Status is 0 when no reply came. Code is the server's stable code, or the client's
// own: "network", "bad_response", "http_<status>" (an error reply without an error body).
// The message never contains the API token.
type APIError struct {
	Status  int
	Code    string
	Message string
	Field   string
	kind    error
}

func (e *APIError) Error() string {
	field := ""
	if e.Field != "" {
		field = " (field " + e.Field + ")"
	}
	return fmt.Sprintf("%s [%s, HTTP %d]%s", e.Message, e.Code, e.Status, field)
}

// Is makes errors.Is(err, ErrNotFound) (and the other kinds) true for the matching status.
func (e *APIError) Is(target error) bool { return e.kind == target }

// Unwrap returns the error's kind (ErrNotFound, ...).
func (e *APIError) Unwrap() error { return e.kind }

func kindOf(status int) error {
	switch {
	case status == 400:
		return ErrBadRequest
	case status == 401:
		return ErrUnauthorized
	case status == 403:
		return ErrForbidden
	case status == 404:
		return ErrNotFound
	case status == 409:
		return ErrConflict
	case status == 422:
		return ErrInvalidInput
	case status >= 500:
		return ErrServer
	}
	return errOtherStatus
}

// errorFromReply builds the APIError of a non-2xx reply; what is "METHOD /path".
func errorFromReply(status int, body []byte, what string) *APIError {
	var parsed struct {
		Error *struct {
			Code    *string `json:"code"`
			Message *string `json:"message"`
			Field   string  `json:"field"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &parsed) == nil && parsed.Error != nil && parsed.Error.Code != nil && parsed.Error.Message != nil {
		return &APIError{Status: status, Code: *parsed.Error.Code, Message: *parsed.Error.Message, Field: parsed.Error.Field, kind: kindOf(status)}
	}
	snippet := strings.TrimSpace(string(body))
	if len(snippet) > 200 {
		snippet = snippet[:200]
	}
	msg := fmt.Sprintf("%s: HTTP %d", what, status)
	if snippet != "" {
		msg += ": " + snippet
	}
	return &APIError{Status: status, Code: fmt.Sprintf("http_%d", status), Message: msg, kind: kindOf(status)}
}

func networkError(format string, args ...any) *APIError {
	return &APIError{Status: 0, Code: "network", Message: fmt.Sprintf(format, args...), kind: ErrNetwork}
}

func badResponse(status int, format string, args ...any) *APIError {
	return &APIError{Status: status, Code: "bad_response", Message: fmt.Sprintf(format, args...), kind: ErrBadResponse}
}
