package flotilla

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// A small local server that misbehaves on purpose: the first event stream drops after two
// events; the reconnect must carry Last-Event-ID: 2 and the client must yield each event once.
func sseEventText(seq int) string {
	b, _ := json.Marshal(map[string]any{"seq": seq, "jobId": 7, "at": "2026-01-01T00:00:00.000Z", "type": "message", "data": map[string]string{"role": "assistant", "text": fmt.Sprintf("e%d", seq)}})
	return fmt.Sprintf("id: %d\nevent: job\ndata: %s\n\n", seq, b)
}

func TestResumeAndErrors(t *testing.T) {
	var mu sync.Mutex
	var seen []string // Last-Event-ID of each stream request
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/jobs/7/events":
			mu.Lock()
			seen = append(seen, r.Header.Get("last-event-id"))
			auth = append(auth, r.Header.Get("authorization"))
			n := len(seen)
			mu.Unlock()
			w.Header().Set("content-type", "text/event-stream")
			if n == 1 {
				fmt.Fprint(w, ": hello\nretry: 10\n\n"+sseEventText(1)+sseEventText(2)) // then drops
				return
			}
			fmt.Fprint(w, sseEventText(2)+sseEventText(3)+"event: end\ndata: {\"status\":\"succeeded\"}\n\n")
		case "/api/jobs/8/events":
			w.Header().Set("content-type", "application/json")
			w.WriteHeader(503)
			fmt.Fprint(w, `{"error":{"code":"unavailable","message":"try later"}}`)
		default:
			w.Header().Set("content-type", "application/json")
			w.WriteHeader(500)
			fmt.Fprint(w, `{"error":{"code":"internal","message":"it broke"}}`)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("reconnects with Last-Event-ID and yields each event once", func(t *testing.T) {
		c := mustClient(t, srv.URL, "fla_secret")
		c.ReconnectDelay = 10 * time.Millisecond
		var texts []string
		status, err := c.FollowEvents(ctx, 7, 0, func(e Event) error {
			var d struct{ Text string }
			_ = json.Unmarshal(e.Data, &d)
			texts = append(texts, d.Text)
			return nil
		})
		if err != nil || status != "succeeded" || strings.Join(texts, ",") != "e1,e2,e3" {
			t.Fatalf("status %q err %v texts %v", status, err, texts)
		}
		if strings.Join(seen, ",") != ",2" || auth[0] != "Bearer fla_secret" || auth[1] != "Bearer fla_secret" {
			t.Fatalf("Last-Event-ID per request: %q, auth %q", seen, auth)
		}
	})

	t.Run("a 5xx is a server error with the server's code", func(t *testing.T) {
		_, err := mustClient(t, srv.URL, "fla_secret").GetJob(ctx, 1)
		expectErr(t, err, ErrServer, 500, "internal", "")
		if strings.Contains(err.Error(), "fla_secret") {
			t.Fatalf("token leaked: %v", err)
		}
	})

	t.Run("a stream that keeps failing gives up with a network error", func(t *testing.T) {
		c := mustClient(t, srv.URL, "fla_secret")
		c.ReconnectDelay = time.Millisecond
		c.MaxReconnects = 2
		_, err := c.FollowEvents(ctx, 8, 0, func(Event) error { return nil })
		if !errors.Is(err, ErrNetwork) || !strings.Contains(err.Error(), "kept failing (3 tries)") || strings.Contains(err.Error(), "fla_secret") {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("an unreachable server is a network error", func(t *testing.T) {
		_, err := mustClient(t, "http://127.0.0.1:9", "fla_secret").ListJobs(ctx, ListJobsQuery{})
		expectErr(t, err, ErrNetwork, 0, "network", "")
	})

	t.Run("bad urls are refused", func(t *testing.T) {
		for _, u := range []string{"", "ftp://x", "http://"} {
			if _, err := New(u, ""); err == nil {
				t.Errorf("New(%q) should fail", u)
			}
		}
	})
}

func TestSseParser(t *testing.T) {
	p := newSseParser()
	var got []sseEvent
	for _, l := range []string{": c", "id: 4", "event: job", "data: a", "data:b", "", "retry: 50", ""} {
		if ev, ok := p.feed(l); ok {
			got = append(got, ev)
		}
	}
	want := []sseEvent{{Event: "job", Data: "a\nb", ID: "4", Retry: -1}, {Event: "message", Data: "", ID: "", Retry: 50}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %+v want %+v", got, want)
	}
}
