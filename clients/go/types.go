package flotilla

import "encoding/json"

// Shapes of the API's replies (components/schemas in /openapi.json). Money is integer
// micro-dollars (CostMicros, BudgetMicros); times are ISO-8601 strings; tokens are counts.

// Usage is a job's (or subtree's) model usage: tokens, model calls and cost in micro-dollars.
type Usage struct {
	InputTokens      int64 `json:"inputTokens"`
	OutputTokens     int64 `json:"outputTokens"`
	CacheReadTokens  int64 `json:"cacheReadTokens"`
	CacheWriteTokens int64 `json:"cacheWriteTokens"`
	ModelCalls       int64 `json:"modelCalls"`
	CostMicros       int64 `json:"costMicros"`
	EstimatedCalls   int64 `json:"estimatedCalls"`
}

// JobResult is the structured result a job ends with (issue 6).
type JobResult struct {
	Summary      string   `json:"summary,omitempty"`
	Branch       string   `json:"branch,omitempty"`
	Commit       string   `json:"commit,omitempty"`
	ChangedFiles []string `json:"changedFiles,omitempty"`
	NeedsHuman   bool     `json:"needsHuman,omitempty"`
}

// Job is the Job schema. Usage is set by GetJob.
type Job struct {
	ID           int64             `json:"id"`
	ParentID     *int64            `json:"parentId"`
	RootID       int64             `json:"rootId"`
	Agent        string            `json:"agent"`
	AgentVersion string            `json:"agentVersion"`
	Input        map[string]any    `json:"input"`
	Status       string            `json:"status"`
	EndReason    *string           `json:"endReason"`
	Error        *string           `json:"error"`
	Priority     int               `json:"priority"`
	Selector     map[string]string `json:"selector"`
	RunnerID     *int64            `json:"runnerId"`
	Attempt      int               `json:"attempt"`
	BudgetMicros int64             `json:"budgetMicros"`
	SessionID    *string           `json:"sessionId"`
	Result       *JobResult        `json:"result"`
	CreatedAt    string            `json:"createdAt"`
	AssignedAt   *string           `json:"assignedAt"`
	StartedAt    *string           `json:"startedAt"`
	FinishedAt   *string           `json:"finishedAt"`
	Usage        *Usage            `json:"usage,omitempty"`
}

// JobList is a page of jobs, newest first; NextCursor is the Before of the next page.
type JobList struct {
	Jobs       []Job  `json:"jobs"`
	NextCursor *int64 `json:"nextCursor"`
}

// TreeNode is one job of a JobTree with its children.
type TreeNode struct {
	ID           int64      `json:"id"`
	ParentID     *int64     `json:"parentId"`
	Depth        int        `json:"depth"`
	Agent        string     `json:"agent"`
	Status       string     `json:"status"`
	EndReason    *string    `json:"endReason"`
	RunnerID     *int64     `json:"runnerId"`
	RunnerName   *string    `json:"runnerName"`
	BudgetMicros int64      `json:"budgetMicros"`
	Usage        Usage      `json:"usage"`
	Result       *JobResult `json:"result"`
	CreatedAt    string     `json:"createdAt"`
	StartedAt    *string    `json:"startedAt"`
	FinishedAt   *string    `json:"finishedAt"`
	Children     []TreeNode `json:"children"`
}

// JobTree is a job and all its descendants; Total sums the subtree; Jobs counts its nodes.
type JobTree struct {
	RootID int64    `json:"rootId"`
	Jobs   int      `json:"jobs"`
	Total  Usage    `json:"total"`
	Tree   TreeNode `json:"tree"`
}

// Event is one job event (JobEvent); Data's shape depends on Type (message, tool.call,
// tool.result, usage, status, job.finished, ...): decode it with json.Unmarshal.
type Event struct {
	Seq   int64           `json:"seq"`
	JobID int64           `json:"jobId"`
	At    string          `json:"at"`
	Type  string          `json:"type"`
	Data  json.RawMessage `json:"data"`
}

// Runner is a registered runner.
type Runner struct {
	ID              int64             `json:"id"`
	Name            string            `json:"name"`
	Labels          map[string]string `json:"labels"`
	Status          string            `json:"status"`
	Capacity        int               `json:"capacity"`
	RunningJobs     []int64           `json:"runningJobs"`
	Version         *string           `json:"version"`
	LastHeartbeatAt *string           `json:"lastHeartbeatAt"`
	CreatedAt       string            `json:"createdAt"`
}

// RunnerToken is a runner registration token as ListRunnerTokens and RevokeRunnerToken return
// it (RunnerTokenInfo in the spec); never the token itself. Status is live, used, expired or
// revoked (server clock); times are ISO-8601, nil when it did not happen.
type RunnerToken struct {
	ID        int64             `json:"id"`
	Labels    map[string]string `json:"labels"`
	Status    string            `json:"status"`
	CreatedAt string            `json:"createdAt"`
	ExpiresAt string            `json:"expiresAt"`
	UsedAt    *string           `json:"usedAt"`
	RevokedAt *string           `json:"revokedAt"`
}

// CostRow is one group of a CostRollup (Key: job id, agent, runner, day, ...).
type CostRow struct {
	Key              string `json:"key"`
	Calls            int64  `json:"calls"`
	RefusedCalls     int64  `json:"refusedCalls"`
	EstimatedCalls   int64  `json:"estimatedCalls"`
	InputTokens      int64  `json:"inputTokens"`
	OutputTokens     int64  `json:"outputTokens"`
	CacheReadTokens  int64  `json:"cacheReadTokens"`
	CacheWriteTokens int64  `json:"cacheWriteTokens"`
	CostMicros       int64  `json:"costMicros"`
	CostNanos        int64  `json:"costNanos"`
}

// CostRollup is the gateway ledger's calls, tokens and cost per group, biggest first, and the total.
type CostRollup struct {
	By    string    `json:"by"`
	Since string    `json:"since"`
	Rows  []CostRow `json:"rows"`
	Total CostRow   `json:"total"`
}
