package flotilla

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Expected figures come from test/fixtures/agents/hello-py/script.yaml: two model calls of
// 120+160 input and 30+5 output tokens on claude-sonnet-4-5 at $3 / $15 per million tokens
// → 280*3 + 35*15 = 1365 micro-dollars.
const helloCostMicros = 280*3 + 35*15

// recorder notes the method and path of every request the client sends.
type recorder struct {
	mu    chan struct{}
	calls map[string]bool
	next  http.RoundTripper
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu <- struct{}{}
	r.calls[req.Method+" "+req.URL.RequestURI()] = true
	<-r.mu
	return r.next.RoundTrip(req)
}

func TestAgainstARealServer(t *testing.T) {
	srv := startServer(t)
	rec := &recorder{mu: make(chan struct{}, 1), calls: map[string]bool{}, next: http.DefaultTransport}
	c := mustClient(t, srv.URL, srv.Token)
	c.HTTP = &http.Client{Transport: rec}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	t.Run("start a job and follow it to the end", func(t *testing.T) {
		job, err := c.CreateJob(ctx, CreateJobRequest{Agent: "hello-py", Input: map[string]any{}, Labels: map[string]string{}, BudgetUSD: 1})
		if err != nil {
			t.Fatal(err)
		}
		// queued, or already assigned when a runner was free
		if job.Agent != "hello-py" || (job.Status != "queued" && job.Status != "assigned") || job.BudgetMicros != 1_000_000 {
			t.Fatalf("created job: %+v", job)
		}
		var events []Event
		status, err := c.FollowEvents(ctx, job.ID, 0, func(e Event) error { events = append(events, e); return nil })
		if err != nil || status != "succeeded" {
			t.Fatalf("follow: status %q err %v\n%s", status, err, srv.output())
		}
		for i, e := range events {
			if e.Seq != int64(i+1) || e.JobID != job.ID {
				t.Fatalf("event %d has seq %d job %d", i, e.Seq, e.JobID)
			}
		}
		lastEv := events[len(events)-1]
		var fin struct{ Status string }
		_ = json.Unmarshal(lastEv.Data, &fin)
		if lastEv.Type != "job.finished" || fin.Status != "succeeded" {
			t.Fatalf("last event: %s %s", lastEv.Type, lastEv.Data)
		}
		var calls []string
		for _, e := range events {
			if e.Type == "tool.call" {
				var d struct{ Input struct{ Command string } }
				_ = json.Unmarshal(e.Data, &d)
				calls = append(calls, d.Input.Command)
			}
		}
		if strings.Join(calls, "|") != "echo hello > out.txt" {
			t.Fatalf("tool calls: %q", calls)
		}

		var later []int64
		if _, err := c.FollowEvents(ctx, job.ID, 5, func(e Event) error { later = append(later, e.Seq); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(later) != len(events)-5 || later[0] != 6 {
			t.Fatalf("resume after 5 gave seqs %v of %d events", later, len(events))
		}

		got, err := c.GetJob(ctx, job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != "succeeded" || got.Usage == nil || got.Usage.InputTokens != 280 || got.Usage.OutputTokens != 35 || got.Usage.ModelCalls != 2 || got.Usage.CostMicros != helloCostMicros {
			t.Fatalf("job after the end: %+v usage %+v", got, got.Usage)
		}
		if got.Result == nil || strings.Join(got.Result.ChangedFiles, ",") != "out.txt" {
			t.Fatalf("result: %+v", got.Result)
		}
		tree, err := c.JobTree(ctx, job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if tree.RootID != job.ID || tree.Jobs != 1 || tree.Tree.ID != job.ID || len(tree.Tree.Children) != 0 || tree.Total.CostMicros != helloCostMicros {
			t.Fatalf("tree: %+v", tree)
		}
		costs, err := c.Costs(ctx, CostsQuery{By: "job", Root: job.ID, Since: "7d"})
		if err != nil {
			t.Fatal(err)
		}
		if len(costs.Rows) != 1 || costs.Rows[0].Key != strconv.FormatInt(job.ID, 10) || costs.Rows[0].Calls != 2 || costs.Rows[0].CostMicros != helloCostMicros {
			t.Fatalf("costs: %+v", costs)
		}
		list, err := c.ListJobs(ctx, ListJobsQuery{Status: "succeeded", Agent: "hello-py", Limit: 200})
		if err != nil || len(list.Jobs) == 0 || list.Jobs[0].ID != job.ID {
			t.Fatalf("list: %+v %v", list, err)
		}
		runners, err := c.ListRunners(ctx)
		if err != nil || len(runners) != 1 || got.RunnerID == nil || *got.RunnerID != runners[0].ID {
			t.Fatalf("runners: %+v %v", runners, err)
		}
	})

	t.Run("cancel a queued job", func(t *testing.T) {
		// No runner has this label: the job waits in the queue until cancelled.
		job, err := c.CreateJob(ctx, CreateJobRequest{Agent: "hello-py", Labels: map[string]string{"toolchain": "none-such"}, Priority: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ListJobs(ctx, ListJobsQuery{Status: "queued", Before: job.ID + 1, Limit: 5}); err != nil {
			t.Fatal(err)
		}
		cj, err := c.CancelJob(ctx, job.ID)
		if err != nil || (cj.Status != "cancelling" && cj.Status != "cancelled") {
			t.Fatalf("cancel: %+v %v", cj, err)
		}
		status, err := c.FollowEvents(ctx, job.ID, 0, func(Event) error { return nil })
		if err != nil || status != "cancelled" {
			t.Fatalf("follow: %q %v", status, err)
		}
		_, err = c.CancelJob(ctx, job.ID)
		var ae *APIError
		if !errors.Is(err, ErrConflict) || !errors.As(err, &ae) || ae.Status != 409 || ae.Code != "not_cancellable" {
			t.Fatalf("second cancel: %v", err)
		}
	})

	t.Run("typed errors per status", func(t *testing.T) {
		_, err := mustClient(t, srv.URL, "fla_wrong_secret_123").ListJobs(ctx, ListJobsQuery{})
		expectErr(t, err, ErrUnauthorized, 401, "unauthorized", "")
		if strings.Contains(err.Error(), "fla_wrong_secret_123") {
			t.Fatalf("the token leaked into %q", err)
		}
		_, err = c.CreateJob(ctx, CreateJobRequest{Agent: "no-such-agent"})
		expectErr(t, err, ErrNotFound, 404, "unknown_agent", "agent")
		_, err = c.GetJob(ctx, 987654)
		expectErr(t, err, ErrNotFound, 404, "not_found", "")
		_, err = c.CreateJob(ctx, CreateJobRequest{Agent: "hello-py", Input: map[string]any{"repo": 5}})
		expectErr(t, err, ErrInvalidInput, 422, "invalid_input", "input.repo")
		_, err = c.GetJob(ctx, 0)
		expectErr(t, err, ErrBadRequest, 0, "invalid_request", "job id")

		var member struct{ Token string }
		if err := c.do(ctx, "POST", "/api/tokens", map[string]string{"name": "reader", "role": "member"}, &member); err != nil {
			t.Fatal(err)
		}
		mc := mustClient(t, srv.URL, member.Token)
		_, err = mc.CreateJob(ctx, CreateJobRequest{Agent: "hello-py"})
		expectErr(t, err, ErrForbidden, 403, "forbidden", "")
		if _, err := mc.ListJobs(ctx, ListJobsQuery{}); err != nil {
			t.Fatalf("a member may read: %v", err)
		}
	})

	t.Run("list and revoke runner registration tokens", func(t *testing.T) {
		create := func(pool string) int64 {
			var tok struct {
				ID int64 `json:"id"`
			}
			if err := c.do(ctx, "POST", "/api/runner-tokens", map[string]any{"labels": map[string]string{"pool": pool}}, &tok); err != nil {
				t.Fatal(err)
			}
			return tok.ID
		}
		byID := func(all bool) map[int64]RunnerToken {
			list, err := c.ListRunnerTokens(ctx, all)
			if err != nil {
				t.Fatal(err)
			}
			m := map[int64]RunnerToken{}
			for _, tok := range list {
				m[tok.ID] = tok
			}
			return m
		}
		a, b := create("go-a"), create("go-b")
		live := byID(false)
		if got := live[a]; got.Status != "live" || got.Labels["pool"] != "go-a" || got.RevokedAt != nil || got.UsedAt != nil || got.ExpiresAt == "" {
			t.Fatalf("token %d before revoking: %+v", a, got)
		}
		if live[b].Status != "live" {
			t.Fatalf("token %d: %+v", b, live[b])
		}
		revoked, err := c.RevokeRunnerToken(ctx, a)
		if err != nil || revoked.ID != a || revoked.Status != "revoked" || revoked.RevokedAt == nil {
			t.Fatalf("revoke %d: %+v, %v", a, revoked, err)
		}
		again, err := c.RevokeRunnerToken(ctx, a)
		if err != nil || again.RevokedAt == nil || *again.RevokedAt != *revoked.RevokedAt {
			t.Fatalf("revoking again changed it: %+v, %v", again, err)
		}
		live = byID(false)
		if _, ok := live[a]; ok {
			t.Fatalf("revoked token %d still listed as live", a)
		}
		if _, ok := live[b]; !ok {
			t.Fatalf("live token %d not listed", b)
		}
		every := byID(true)
		if every[a].Status != "revoked" || every[b].Status != "live" {
			t.Fatalf("all=true: %+v %+v", every[a], every[b])
		}
		_, err = c.RevokeRunnerToken(ctx, 2000000000)
		expectErr(t, err, ErrNotFound, 404, "not_found", "id")
		_, err = c.RevokeRunnerToken(ctx, 0)
		expectErr(t, err, ErrBadRequest, 0, "invalid_request", "token id")
		var member struct{ Token string }
		if err := c.do(ctx, "POST", "/api/tokens", map[string]string{"name": "go-member", "role": "member"}, &member); err != nil {
			t.Fatal(err)
		}
		mc := mustClient(t, srv.URL, member.Token)
		_, err = mc.ListRunnerTokens(ctx, false)
		expectErr(t, err, ErrForbidden, 403, "forbidden", "")
		_, err = mc.RevokeRunnerToken(ctx, b)
		expectErr(t, err, ErrForbidden, 403, "forbidden", "")
	})

	t.Run("every path and method used is in openapi.json", func(t *testing.T) {
		res, err := http.Get(srv.URL + "/openapi.json")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var spec struct {
			Paths map[string]map[string]struct {
				Parameters []struct{ Name, In string } `json:"parameters"`
			} `json:"paths"`
			Components struct {
				Schemas map[string]struct {
					Properties map[string]any `json:"properties"`
				} `json:"schemas"`
			} `json:"components"`
		}
		if err := json.NewDecoder(res.Body).Decode(&spec); err != nil {
			t.Fatal(err)
		}
		var used []string
		for k := range rec.calls {
			used = append(used, k)
		}
		sort.Strings(used)
		want := []string{"GET /api/costs", "GET /api/jobs", "GET /api/jobs/{id}", "GET /api/jobs/{id}/events", "GET /api/jobs/{id}/tree", "GET /api/runner-tokens", "GET /api/runners", "POST /api/jobs", "POST /api/jobs/{id}/cancel", "POST /api/runner-tokens/{id}/revoke"}
		matched := map[string]bool{}
		for _, call := range used {
			method, uri, _ := strings.Cut(call, " ")
			path, query, _ := strings.Cut(uri, "?")
			if path == "/api/tokens" { // the test's own call (member token), not a client method
				continue
			}
			found := false
			for tmpl, ops := range spec.Paths {
				re := regexp.MustCompile("^" + regexp.MustCompile(`\\\{[^}]+\\\}`).ReplaceAllString(regexp.QuoteMeta(tmpl), "[^/]+") + "$")
				op, ok := ops[strings.ToLower(method)]
				if !ok || !re.MatchString(path) {
					continue
				}
				found = true
				matched[method+" "+tmpl] = true
				names := map[string]bool{}
				for _, p := range op.Parameters {
					if p.In == "query" {
						names[p.Name] = true
					}
				}
				for _, pair := range strings.Split(query, "&") {
					if name, _, _ := strings.Cut(pair, "="); pair != "" && !names[name] {
						t.Errorf("%s %s: query parameter %q is not in the spec", method, tmpl, name)
					}
				}
			}
			if !found {
				t.Errorf("%s %s is not in /openapi.json", method, path)
			}
		}
		for _, w := range want {
			if !matched[w] {
				t.Errorf("the tests never exercised %s", w)
			}
		}
		props := spec.Components.Schemas["CreateJobRequest"].Properties
		for _, f := range []string{"agent", "input", "labels", "budgetUsd", "priority"} {
			if _, ok := props[f]; !ok {
				t.Errorf("CreateJobRequest has no %q in the spec", f)
			}
		}
	})
}

func expectErr(t *testing.T, err error, kind error, status int, code, field string) {
	t.Helper()
	var ae *APIError
	if !errors.Is(err, kind) || !errors.As(err, &ae) || ae.Status != status || ae.Code != code || ae.Field != field {
		t.Fatalf("want %v (%d %s %q), got %#v", kind, status, code, field, err)
	}
}
