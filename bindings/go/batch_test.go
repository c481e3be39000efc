package agentstream

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
)

// The fast batch parser agrees with encoding/json on real batches of a real run (items of every
// channel, hooks, escapes in stdout lines), and falls back on anything else.
func TestParseBatchAgreesWithEncodingJSON(t *testing.T) {
	for _, trace := range []string{"s2-bash", "s3-read-edit"} {
		c := fakeClient(t, "claude", trace, nil)
		run, err := c.start(context.Background(), RunOptions{Prompt: "x", Hooks: true}, "iterate")
		if err != nil {
			t.Fatal(err)
		}
		r := run.ptr
		batches := 0
		for {
			kind, data, err := runNextBatch(r, 7, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if kind == nextEnd {
				break
			}
			if kind == nextTimeout {
				continue
			}
			fast, ok := fastBatch(data)
			var slow []taggedDelivery
			if err := json.Unmarshal(data, &slow); err != nil || !ok {
				t.Fatalf("fast %v, slow %v: %s", ok, err, data)
			}
			if !reflect.DeepEqual(fast, slow) {
				t.Fatalf("fast and slow differ on %s", data)
			}
			batches++
		}
		runFree(r)
		if batches == 0 {
			t.Fatal("no batch")
		}
	}
	for _, odd := range []string{`[ ]`, `[{"item": {"runId":"r"}}]`, `[{"item":{"sequence":1,"runId":"r","channel":"stdout","event":"x"}}]`, `[1]`} {
		if _, ok := fastBatch([]byte(odd)); ok {
			t.Fatalf("fast path accepted %s", odd)
		}
	}
	got, err := parseBatch([]byte(`[{"item":{"sequence":3,"runId":"r","channel":"stdout","event":"x\n"}}]`))
	if err != nil || got[0].Item.Sequence != 3 || got[0].Item.RunID != "r" {
		t.Fatalf("the fallback: %+v %v", got, err)
	}
}
