package agentstream

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Memory is bounded by bytes (issue 24, item 6): with the stream not read, or a handler taking
// 1 ms per event, the runner stops reading the harness's pipes once the byte budget (8 MiB) is
// buffered, so the harness blocks instead of this process growing. Measured as the growth of the
// peak resident set (VmHWM, reset through /proc/self/clear_refs): under the budget plus 64 MiB
// under the three floods, each offered in full and cut short after 1-2 s (without the
// bound each grew past 1 GB in that time).

const memoryBound = (8 + 64) << 20

func statusBytes(t *testing.T, field string) int {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, field) {
			kib, _ := strconv.Atoi(strings.Fields(line)[1])
			return kib << 10
		}
	}
	t.Fatalf("no %s", field)
	return 0
}

func resetPeak(t *testing.T) int {
	t.Helper()
	runtime.GC()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak RSS: %v", err)
	}
	return statusBytes(t, "VmRSS:")
}

func floodSession(t *testing.T, flag, value string) *Client {
	t.Helper()
	trace, _ := filepath.Abs(filepath.Join(goldenDir, "claude", "s1-text"))
	s, err := New(Config{Type: "claude", Bin: fakeHarness(t), Env: map[string]string{"AGENTSTREAM_FAKE_TRACE": trace, flag: value}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestMemoryStaysBoundedWithAPausedStream(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self")
	}
	for _, flood := range [][2]string{
		{"AGENTSTREAM_FAKE_FLOOD_STDERR", strconv.Itoa(1 << 30)},
		{"AGENTSTREAM_FAKE_FLOOD", "3000000"},
	} {
		s := floodSession(t, flood[0], flood[1])
		before := resetPeak(t)
		st, err := s.Stream(context.Background(), RunOptions{Prompt: "x"})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // nothing is read
		grew := statusBytes(t, "VmHWM:") - before
		_ = st.Close()
		if grew >= memoryBound {
			t.Errorf("%s: peak RSS grew by %d MiB", flood[0], grew>>20)
		}
	}
}

func TestMemoryStaysBoundedWithAHandlerTaking1msPerEvent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self")
	}
	s := floodSession(t, "AGENTSTREAM_FAKE_FLOOD_TEXT", "500000000")
	var calls atomic.Int64
	if err := s.On("content", func(OutputEvent) { calls.Add(1); time.Sleep(time.Millisecond) }); err != nil {
		t.Fatal(err)
	}
	before := resetPeak(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = s.Run(ctx, RunOptions{Prompt: "x"})
	grew := statusBytes(t, "VmHWM:") - before
	if calls.Load() < 100 {
		t.Errorf("the handler ran %d times", calls.Load())
	}
	if grew >= memoryBound {
		t.Errorf("peak RSS grew by %d MiB", grew>>20)
	}
}
