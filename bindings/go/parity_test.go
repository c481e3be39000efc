package agentstream

// The API parity table (tests/parity/api.json, see its README) run against the Go API: each
// language-neutral call is mapped to its Go idiom.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

type parityStep struct {
	Call      string          `json:"call"`
	Config    json.RawMessage `json:"config"`
	Channel   string          `json:"channel"`
	Handler   string          `json:"handler"`
	Request   map[string]any  `json:"request"`
	OnEvent   bool            `json:"on_event"`
	SessionID *string         `json:"session_id"`

	Error                string   `json:"error"`
	MessageHas           []string `json:"message_has"`
	Returns              any      `json:"returns"`
	HasReturns           bool     `json:"-"`
	ArgvHas              []string `json:"argv_has"`
	ArgvLacks            []string `json:"argv_lacks"`
	HooksFirst           string   `json:"hooks_first"`
	HandlerCallsAtLeast  int      `json:"handler_calls_at_least"`
	HandlerErrorsAtLeast uint64   `json:"handler_errors_at_least"`
}

type parityCase struct {
	Name    string          `json:"name"`
	Config  json.RawMessage `json:"config"`
	Harness string          `json:"harness"`
	Steps   []json.RawMessage
}

// parityRun is one case's client and what its handlers saw.
type parityRun struct {
	t            *testing.T
	client       *Client
	argvFile     string
	handlerCalls atomic.Int64
	firstHook    string
}

func (p *parityRun) newClient(config json.RawMessage, harness string) error {
	var cfg Config
	if err := json.Unmarshal(config, &cfg); err != nil {
		p.t.Fatalf("the table's config %s does not map onto Config: %v", config, err)
	}
	if harness != "" {
		trace, _ := filepath.Abs(filepath.Join(goldenDir, harness))
		cfg.Bin = fakeHarness(p.t)
		if cfg.Env == nil {
			cfg.Env = map[string]string{}
		}
		cfg.Env["AGENTSTREAM_FAKE_TRACE"] = trace
		cfg.Env["AGENTSTREAM_FAKE_ARGV_FILE"] = p.argvFile
	}
	// Failures are counted in the result (checked); the report itself is tested elsewhere.
	c, err := New(cfg, OnHandlerError(func(*HandlerError) {}))
	if err != nil {
		return err
	}
	p.client = c
	return nil
}

// handler is a Go handler of the channel's type that records (or fails, for "throw").
func (p *parityRun) handler(channel, kind string) any {
	fail := func() error {
		p.handlerCalls.Add(1)
		if kind == "throw" {
			return errors.New("a throwing handler")
		}
		return nil
	}
	switch channel {
	case "content":
		return func(OutputEvent) error { return fail() }
	case "lifecycle":
		return func(LifecycleEvent) error { return fail() }
	default:
		return func(string) error { return fail() }
	}
}

// options maps the table's request onto RunOptions.
func (p *parityRun) options(step parityStep) RunOptions {
	var o RunOptions
	for k, v := range step.Request {
		switch k {
		case "prompt":
			o.Prompt = v.(string)
		case "model":
			o.Model = v.(string)
		case "cwd":
			o.Cwd = v.(string)
		case "resume":
			o.Resume = v.(string)
		case "env":
			o.Env = map[string]string{}
			for name, value := range v.(map[string]any) {
				o.Env[name] = value.(string)
			}
		case "timeout_ms":
			// Go's zero Duration means "no time limit"; the invalid value of the table (0 or
			// less) is a negative Duration in Go.
			ms := v.(float64)
			o.Timeout = time.Duration(ms) * time.Millisecond
			if ms <= 0 {
				o.Timeout = -time.Millisecond
			}
		default:
			p.t.Fatalf("the parity table names a request key this runner does not map: %s", k)
		}
	}
	if step.OnEvent {
		o.OnEvent = func(ev AgentEvent) error {
			if p.firstHook == "" {
				p.firstHook = ev.Type
			}
			return nil
		}
	}
	return o
}

// asJSON is v as the table's JSON values (numbers as float64, absent fields absent).
func asJSON(t *testing.T, v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// matches: every key of want matches in got (nil: absent or null).
func matches(want, got any) bool {
	if w, ok := want.(map[string]any); ok {
		g, _ := got.(map[string]any)
		for k, v := range w {
			if !matches(v, g[k]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(want, got)
}

func (p *parityRun) step(raw json.RawMessage, caseName string) {
	t := p.t
	var step parityStep
	if err := json.Unmarshal(raw, &step); err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(raw, &fields)
	_, step.HasReturns = fields["returns"]
	what := caseName + " / " + step.Call
	callsBefore := p.handlerCalls.Load()
	var got any
	var err error
	switch step.Call {
	case "new":
		err = p.newClient(step.Config, "")
	case "on":
		err = p.client.On(step.Channel, p.handler(step.Channel, step.Handler))
	case "off":
		err = p.client.Off(step.Channel)
	case "run":
		p.firstHook = ""
		var res *RunResult
		res, err = p.client.Run(context.Background(), p.options(step))
		if err == nil {
			got = asJSON(t, res)
		}
	case "status":
		var st Status
		st, err = p.client.Status()
		got = asJSON(t, st)
	case "get_session":
		var id string
		id, err = p.client.Session()
		if id != "" {
			got = id
		}
	case "set_session":
		id := ""
		if step.SessionID != nil {
			id = *step.SessionID
		}
		err = p.client.SetSession(id)
	case "interrupt":
		got = p.client.Interrupt()
	case "kill":
		got = p.client.Kill()
	case "pause":
		err = p.client.Pause()
	case "resume":
		err = p.client.Resume()
	case "argv":
		var argv []any
		data, readErr := os.ReadFile(p.argvFile)
		if readErr != nil || json.Unmarshal(data, &argv) != nil {
			t.Fatalf("%s: no argv file: %v", what, readErr)
		}
		got = argv
	default:
		t.Fatalf("%s: the parity table names a call this runner does not know: %s", what, step.Call)
	}

	if step.Error != "" {
		var e *Error
		if !errors.As(err, &e) || e.Kind != ErrorKind(step.Error) || !errors.Is(err, &Error{Kind: ErrorKind(step.Error)}) {
			t.Fatalf("%s: expected a %s error, got %v", what, step.Error, err)
		}
		for _, needle := range step.MessageHas {
			if !strings.Contains(err.Error(), needle) {
				t.Fatalf("%s: %q not in %v", what, needle, err)
			}
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: unexpected error %v", what, err)
	}
	if step.HasReturns && !matches(step.Returns, got) {
		t.Fatalf("%s: returned %v, expected %v", what, got, step.Returns)
	}
	if n := p.handlerCalls.Load() - callsBefore; step.HandlerCallsAtLeast > 0 && n < int64(step.HandlerCallsAtLeast) {
		t.Fatalf("%s: %d handler calls", what, n)
	}
	if step.HandlerErrorsAtLeast > 0 {
		if n := uint64(got.(map[string]any)["handler_errors"].(float64)); n < step.HandlerErrorsAtLeast {
			t.Fatalf("%s: %d handler errors", what, n)
		}
	}
	if step.HooksFirst != "" && p.firstHook != step.HooksFirst {
		t.Fatalf("%s: first hook %q, expected %q", what, p.firstHook, step.HooksFirst)
	}
	var argv []string
	if step.Call == "argv" {
		for _, a := range got.([]any) {
			argv = append(argv, a.(string))
		}
	}
	contains := func(needle []string) bool {
		for i := 0; i+len(needle) <= len(argv); i++ {
			if reflect.DeepEqual(argv[i:i+len(needle)], needle) {
				return true
			}
		}
		return false
	}
	if len(step.ArgvHas) > 0 {
		// `--opt value` in the table also matches the joined `--opt=value` a harness gets.
		joined := []string{fmt.Sprintf("%s=%s", step.ArgvHas[0], strings.Join(step.ArgvHas[1:], " "))}
		if !contains(step.ArgvHas) && !(len(step.ArgvHas) == 2 && contains(joined)) {
			t.Fatalf("%s: %v not in %v", what, step.ArgvHas, argv)
		}
	}
	for _, lack := range step.ArgvLacks {
		for _, a := range argv {
			if a == lack || strings.HasPrefix(a, lack+"=") {
				t.Fatalf("%s: %s in %v", what, lack, argv)
			}
		}
	}
}

func TestParityTable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "tests", "parity", "api.json"))
	if err != nil {
		t.Fatal(err)
	}
	var table struct {
		Cases []parityCase `json:"cases"`
	}
	if err := json.Unmarshal(data, &table); err != nil {
		t.Fatal(err)
	}
	if len(table.Cases) == 0 {
		t.Fatal("no cases")
	}
	for i, kase := range table.Cases {
		t.Run(kase.Name, func(t *testing.T) {
			p := &parityRun{t: t, argvFile: filepath.Join(t.TempDir(), fmt.Sprintf("argv-%d.json", i))}
			if len(kase.Config) > 0 {
				if err := p.newClient(kase.Config, kase.Harness); err != nil {
					t.Fatal(err)
				}
			}
			defer func() {
				if p.client != nil {
					p.client.Close()
				}
			}()
			for _, step := range kase.Steps {
				p.step(step, kase.Name)
			}
		})
	}
}
