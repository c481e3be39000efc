package agentstream

import (
	"bytes"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

var goldenDir = filepath.Join("..", "..", "tests", "golden")

// goldenCase is one tests/golden/<agent>/<case>.input.jsonl.
type goldenCase struct {
	Agent, Name, Input string
}

func goldenCases(t testing.TB) []goldenCase {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(goldenDir, "*", "*.input.jsonl"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden cases under %s (%v)", goldenDir, err)
	}
	sort.Strings(paths)
	var out []goldenCase
	for _, p := range paths {
		out = append(out, goldenCase{
			Agent: filepath.Base(filepath.Dir(p)),
			Name:  strings.TrimSuffix(filepath.Base(p), ".input.jsonl"),
			Input: p,
		})
	}
	return out
}

func (c goldenCase) sibling(suffix string) string {
	return strings.TrimSuffix(c.Input, ".input.jsonl") + suffix
}

// jsonLines returns the non-blank lines of a JSONL file (a missing file fails the test: every
// golden case has its expected and hooks files).
func jsonLines(t testing.TB, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) > 0 {
			out = append(out, line)
		}
	}
	return out
}

// jsonEqual compares two JSON texts semantically: key order ignored, strings after unescaping,
// numbers by value (exactly, through big.Float).
func jsonEqual(a, b []byte) bool {
	va, err1 := decodeAny(a)
	vb, err2 := decodeAny(b)
	return err1 == nil && err2 == nil && valuesEqual(va, vb)
}

func decodeAny(b []byte) (any, error) {
	var v any
	err := unmarshalNumbers(b, &v)
	return v, err
}

func valuesEqual(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		fx, _, err1 := big.ParseFloat(string(x), 10, 256, big.ToNearestEven)
		fy, _, err2 := big.ParseFloat(string(y), 10, 256, big.ToNearestEven)
		return err1 == nil && err2 == nil && fx.Cmp(fy) == 0
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !valuesEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !valuesEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(a, b)
	}
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	return b
}

// xorshift64* for reproducible chunkings (the same generator as the Rust and C tests).
type rng uint64

func (r *rng) next() uint64 {
	x := uint64(*r)
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	*r = rng(x)
	return x * 0x2545F4914F6CDD1D
}
