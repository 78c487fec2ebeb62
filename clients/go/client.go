// Package flotilla is a client of the Flotilla control plane's API (standard library only).
//
// Paths, bodies and replies are the ones /openapi.json describes (the tests check every
// path and method used here against a running server's spec). Every method returns an
// *APIError on failure; match its kind with errors.Is (ErrUnauthorized, ErrForbidden,
// ErrNotFound, ErrConflict, ErrInvalidInput, ErrServer, ErrNetwork, ...).
package flotilla

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client talks to one Flotilla control plane. Make it with New.
type Client struct {
	// URL is the base URL without a trailing slash, e.g. http://127.0.0.1:8787.
	URL string
	// HTTP is the http.Client used (default: one without a total timeout, so event streams
	// can stay open; use a context to bound a call).
	HTTP *http.Client
	// ReconnectDelay is the first delay before reconnecting a dropped event stream (doubles per
	// failure up to 5 s; the server's retry: overrides it). Default 250 ms.
	ReconnectDelay time.Duration
	// MaxReconnects is how many failed reconnects in a row FollowEvents accepts. Default 10.
	MaxReconnects int
	token         string
}

// New returns a client of the server at baseURL (http or https) sending token (fla_...) as
// Authorization: Bearer. The token never appears in errors. Errors: a baseURL that is not an
// http(s) URL with a host.
func New(baseURL, token string) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("flotilla: url %q must start with http:// or https:// and name a host", baseURL)
	}
	return &Client{URL: strings.TrimRight(baseURL, "/"), HTTP: &http.Client{}, ReconnectDelay: 250 * time.Millisecond, MaxReconnects: 10, token: token}, nil
}

// CreateJobRequest is the body of CreateJob (CreateJobRequest in the spec). BudgetUSD is the
// job tree's budget in dollars (0: the agent's default); Priority -100..100.
type CreateJobRequest struct {
	Agent     string            `json:"agent"`
	Input     map[string]any    `json:"input,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	BudgetUSD float64           `json:"budgetUsd,omitempty"`
	Priority  int               `json:"priority,omitempty"`
}

// CreateJob is POST /api/jobs → the queued job. Errors: ErrNotFound (unknown_agent),
// ErrInvalidInput (the input fails the agent's inputSchema; Field names it), ErrBadRequest,
// ErrForbidden (members may only read); ErrBadRequest before sending when Agent is empty.
func (c *Client) CreateJob(ctx context.Context, req CreateJobRequest) (*Job, error) {
	var job Job
	if req.Agent == "" {
		return nil, &APIError{Code: "invalid_request", Message: "agent must not be empty", Field: "agent", kind: ErrBadRequest}
	}
	return &job, c.do(ctx, "POST", "/api/jobs", req, &job)
}

// GetJob is GET /api/jobs/{id} → the job with its Usage (tokens, model calls, micro-dollars).
func (c *Client) GetJob(ctx context.Context, id int64) (*Job, error) {
	var job Job
	if err := checkID(id, "job id"); err != nil {
		return nil, err
	}
	return &job, c.do(ctx, "GET", fmt.Sprintf("/api/jobs/%d", id), nil, &job)
}

// ListJobsQuery filters ListJobs; zero values are left out. Limit 1..200 (server default 50);
// Before is the previous page's NextCursor.
type ListJobsQuery struct {
	Status string
	Agent  string
	Limit  int
	Before int64
}

// ListJobs is GET /api/jobs → a page of jobs, newest first.
func (c *Client) ListJobs(ctx context.Context, q ListJobsQuery) (*JobList, error) {
	v := url.Values{}
	if q.Status != "" {
		v.Set("status", q.Status)
	}
	if q.Agent != "" {
		v.Set("agent", q.Agent)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Before != 0 {
		v.Set("before", strconv.FormatInt(q.Before, 10))
	}
	path := "/api/jobs"
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	var list JobList
	return &list, c.do(ctx, "GET", path, nil, &list)
}

// JobTree is GET /api/jobs/{id}/tree → the job and all its descendants (status, runner,
// tokens, micro-dollars per node; Total sums the subtree).
func (c *Client) JobTree(ctx context.Context, id int64) (*JobTree, error) {
	var tree JobTree
	if err := checkID(id, "job id"); err != nil {
		return nil, err
	}
	return &tree, c.do(ctx, "GET", fmt.Sprintf("/api/jobs/%d/tree", id), nil, &tree)
}

// CancelJob is POST /api/jobs/{id}/cancel → the job. ErrConflict (not_cancellable) when it already ended.
func (c *Client) CancelJob(ctx context.Context, id int64) (*Job, error) {
	var job Job
	if err := checkID(id, "job id"); err != nil {
		return nil, err
	}
	return &job, c.do(ctx, "POST", fmt.Sprintf("/api/jobs/%d/cancel", id), map[string]any{}, &job)
}

// ListRunners is GET /api/runners → every registered runner.
func (c *Client) ListRunners(ctx context.Context) ([]Runner, error) {
	var body struct {
		Runners []Runner `json:"runners"`
	}
	if err := c.do(ctx, "GET", "/api/runners", nil, &body); err != nil {
		return nil, err
	}
	return body.Runners, nil
}

// ListRunnerTokens is GET /api/runner-tokens[?all=true] (admin) → the runner registration
// tokens, oldest first: only the live ones (unused, not revoked, not expired) unless all is
// true. Errors: ErrForbidden for a member.
func (c *Client) ListRunnerTokens(ctx context.Context, all bool) ([]RunnerToken, error) {
	path := "/api/runner-tokens"
	if all {
		path += "?all=true"
	}
	var body struct {
		Tokens []RunnerToken `json:"tokens"`
	}
	if err := c.do(ctx, "GET", path, nil, &body); err != nil {
		return nil, err
	}
	if body.Tokens == nil {
		return nil, badResponse(200, "GET %s: the reply has no tokens list", path)
	}
	return body.Tokens, nil
}

// RevokeRunnerToken is POST /api/runner-tokens/{id}/revoke (admin) → the token, revoked: no
// runner can register with it any more. Repeating it is fine; a token already used stays used
// (revoke its runner instead). Errors: ErrNotFound for an unknown id, ErrForbidden for a member;
// ErrBadRequest before sending when id is not positive.
func (c *Client) RevokeRunnerToken(ctx context.Context, id int64) (*RunnerToken, error) {
	if err := checkID(id, "token id"); err != nil {
		return nil, err
	}
	var tok RunnerToken
	if err := c.do(ctx, "POST", fmt.Sprintf("/api/runner-tokens/%d/revoke", id), map[string]any{}, &tok); err != nil {
		return nil, err
	}
	return &tok, nil
}

// CostsQuery selects a cost rollup: By is job, tree, agent, runner or day (default agent);
// Since is 30m, 12h, 7d, 2w or an ISO-8601 date (server default 30d); Root limits to one job tree.
type CostsQuery struct {
	By    string
	Since string
	Root  int64
}

// Costs is GET /api/costs → calls, tokens and micro-dollars per group and the total.
func (c *Client) Costs(ctx context.Context, q CostsQuery) (*CostRollup, error) {
	by := q.By
	if by == "" {
		by = "agent"
	}
	switch by {
	case "job", "tree", "agent", "runner", "day":
	default:
		return nil, &APIError{Code: "invalid_request", Message: fmt.Sprintf("by must be one of job, tree, agent, runner, day, got %q", by), Field: "by", kind: ErrBadRequest}
	}
	v := url.Values{"by": {by}}
	if q.Since != "" {
		v.Set("since", q.Since)
	}
	if q.Root != 0 {
		if err := checkID(q.Root, "root"); err != nil {
			return nil, err
		}
		v.Set("root", strconv.FormatInt(q.Root, 10))
	}
	var rollup CostRollup
	return &rollup, c.do(ctx, "GET", "/api/costs?"+v.Encode(), nil, &rollup)
}

func checkID(id int64, field string) error {
	if id <= 0 {
		return &APIError{Code: "invalid_request", Message: fmt.Sprintf("%s must be a positive integer, got %d", field, id), Field: field, kind: ErrBadRequest}
	}
	return nil
}

// open sends one request and returns the 2xx response (the caller closes its body), or the
// typed error of an error reply or of a failure to connect.
func (c *Client) open(ctx context.Context, method, path string, body any, headers map[string]string) (*http.Response, error) {
	var reader io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, &APIError{Code: "invalid_request", Message: fmt.Sprintf("%s %s: the body cannot be encoded: %v", method, path, err), kind: ErrBadRequest}
		}
		reader = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, reader)
	if err != nil {
		return nil, &APIError{Code: "invalid_request", Message: fmt.Sprintf("%s %s: %v", method, path, err), kind: ErrBadRequest}
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("x-flotilla-csrf", "1")
	if c.token != "" {
		req.Header.Set("authorization", "Bearer "+c.token)
	}
	if body != nil {
		req.Header.Set("content-type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	res, err := hc.Do(req)
	if err != nil {
		return nil, networkError("cannot reach the Flotilla server at %s: %v", c.URL, unwrapURLError(err))
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		defer res.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		return nil, errorFromReply(res.StatusCode, b, method+" "+path)
	}
	return res, nil
}

// do sends a JSON request and decodes the JSON reply into out.
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	res, err := c.open(ctx, method, path, body, map[string]string{"accept": "application/json"})
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		return badResponse(res.StatusCode, "%s %s: unexpected reply: %v", method, path, err)
	}
	return nil
}

// unwrapURLError drops the *url.Error wrapper (it repeats the URL; never the token anyway).
func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}
