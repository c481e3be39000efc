package agentstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The secret-shape corpus (tests/secrets/corpus.jsonl) through every output path of the Go
// package: Parse, a Decoder, Replay (items and hooks) and a real run of each harness's secret
// trace (tests/secrets/traces/) — content, lifecycle and hook handlers, the stream. The raw
// stdout/stderr channels carry the process's bytes verbatim by design and are not checked;
// with redaction disabled every secret comes through (so the fixtures reach the masked fields).

var secretsDir = filepath.Join("..", "..", "tests", "secrets")

func corpusSecrets(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(secretsDir, "corpus.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var entry struct{ Secrets []string }
		if err := json.Unmarshal(sc.Bytes(), &entry); err != nil {
			t.Fatal(err)
		}
		out = append(out, entry.Secrets...)
	}
	if len(out) < 24 {
		t.Fatalf("corpus: %d secrets", len(out))
	}
	return out
}

// survivors lists the secrets found in v, serialized (also in their JSON-escaped form).
func survivors(t *testing.T, secrets []string, v any) []string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	var out []string
	for _, s := range secrets {
		q, _ := json.Marshal(s)
		if strings.Contains(text, s) || strings.Contains(text, string(q[1:len(q)-1])) {
			out = append(out, s)
		}
	}
	return out
}

func TestEverySecretIsMaskedByParseDecoderAndReplay(t *testing.T) {
	secrets := corpusSecrets(t)
	for _, agent := range agents {
		data, err := os.ReadFile(filepath.Join(secretsDir, "traces", agent+".input.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		events, err := Parse(agent, data)
		if err != nil {
			t.Fatal(err)
		}
		if s := survivors(t, secrets, events); len(s) > 0 {
			t.Errorf("%s: Parse leaks %v", agent, s)
		}
		plain, err := ParseWithOptions(agent, data, DecoderOptions{DisableRedaction: true})
		if err != nil {
			t.Fatal(err)
		}
		if s := survivors(t, secrets, plain); len(s) != len(secrets) {
			t.Errorf("%s: with redaction disabled only %d of %d secrets come through", agent, len(s), len(secrets))
		}
		r, err := Replay(agent, data)
		if err != nil {
			t.Fatal(err)
		}
		var items []Envelope
		for _, e := range r.Items {
			if e.Channel != ChannelStdout && e.Channel != ChannelStderr {
				items = append(items, e)
			}
		}
		if s := survivors(t, secrets, items); len(s) > 0 {
			t.Errorf("%s: Replay items leak %v", agent, s)
		}
		if s := survivors(t, secrets, r.Hooks); len(s) > 0 {
			t.Errorf("%s: Replay hooks leak %v", agent, s)
		}
	}
}

func TestEverySecretIsMaskedInARealRun(t *testing.T) {
	secrets := corpusSecrets(t)
	for _, agent := range agents {
		trace, _ := filepath.Abs(filepath.Join(secretsDir, "traces", agent))
		s, err := New(Config{Type: agent, Bin: fakeHarness(t), Env: map[string]string{"AGENTSTREAM_FAKE_TRACE": trace}})
		if err != nil {
			t.Fatal(err)
		}
		var seen []any
		_ = s.On("content", func(e OutputEvent) { seen = append(seen, e) })
		_ = s.On("lifecycle", func(e LifecycleEvent) { seen = append(seen, e) })
		if _, err := s.Run(context.Background(), RunOptions{Prompt: "x", OnEvent: func(h AgentEvent) error { seen = append(seen, h); return nil }}); err != nil {
			t.Fatal(err)
		}
		if leaked := survivors(t, secrets, seen); len(leaked) > 0 {
			t.Errorf("%s: a run leaks %v", agent, leaked)
		}
		s.Close()
	}
}
