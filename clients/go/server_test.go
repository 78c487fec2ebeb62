package flotilla

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// testServer is a real `flotilla up --port 0` (any free port) with a temp data dir, the test
// agents and a local runner, on the offline scripted model. The repository root is
// $FLOTILLA_ROOT or two folders up; bin/flotilla.js needs dist/ (npx tsc -p tsconfig.build.json).
type testServer struct {
	URL, Token string
	cmd        *exec.Cmd
	mu         sync.Mutex
	out        strings.Builder
}

func (s *testServer) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

func startServer(t *testing.T) *testServer {
	t.Helper()
	root := os.Getenv("FLOTILLA_ROOT")
	if root == "" {
		root, _ = filepath.Abs(filepath.Join("..", ".."))
	}
	data := filepath.Join(t.TempDir(), "data")
	cmd := exec.Command("node", filepath.Join(root, "bin", "flotilla.js"), "up", "--port", "0", "--data", data,
		"--agents", filepath.Join(root, "test", "fixtures", "agents"))
	env := []string{"ANTHROPIC_API_KEY=", "FLOTILLA_HEARTBEAT_INTERVAL_MS=1000"}
	for _, kv := range os.Environ() {
		// Only the flags above count: no FLOTILLA_* setting or DATABASE_URL from the caller's shell.
		k, _, _ := strings.Cut(kv, "=")
		if k == "ANTHROPIC_API_KEY" || k == "DATABASE_URL" || strings.HasPrefix(k, "FLOTILLA_") {
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = env
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot start flotilla up: %v", err)
	}
	s := &testServer{cmd: cmd}
	urlCh := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`server on (http://\S+)`)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.out.WriteString(line + "\n")
			s.mu.Unlock()
			if m := re.FindStringSubmatch(line); m != nil {
				select {
				case urlCh <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	select {
	case s.URL = <-urlCh:
	case <-time.After(60 * time.Second):
		t.Fatalf("flotilla up did not start within 60 s:\n%s", s.output())
	}
	tok, err := os.ReadFile(filepath.Join(data, "admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	s.Token = strings.TrimSpace(string(tok))
	c := mustClient(t, s.URL, s.Token)
	waitFor(t, "the local runner", 60*time.Second, func() bool {
		rs, err := c.ListRunners(context.Background())
		return err == nil && len(rs) == 1 && rs[0].Status == "online"
	})
	return s
}

func mustClient(t *testing.T, url, token string) *Client {
	t.Helper()
	c, err := New(url, token)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func waitFor(t *testing.T, what string, timeout time.Duration, fn func() bool) {
	t.Helper()
	end := time.Now().Add(timeout)
	for time.Now().Before(end) {
		if fn() {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s", timeout, what)
}
