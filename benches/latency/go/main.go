// Command latency is the Go handler of the latency benchmark (benches/latency/run.py): one run of
// the paced emitter with an On("content", ...) handler, as a Go user writes it. The handler reads
// CLOCK_MONOTONIC first (clock_gettime through cgo: Go's own monotonic clock is the same one but
// has no absolute reading), then the stamps "@@<line>:<ns>;" in the event's text, and records
// now - stamp.
//
//	latency EMITTER OUT_FILE     writes "<line> <latency ns>" per stamp; prints "state <state>"
package main

// #include <time.h>
// static long long monotonic_ns(void) {
//     struct timespec ts;
//     clock_gettime(CLOCK_MONOTONIC, &ts);
//     return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
// }
import "C"

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	agentstream "github.com/agentstream/agentstream/bindings/go"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: latency EMITTER OUT_FILE")
		os.Exit(2)
	}
	var lines, latencies []int64
	client, err := agentstream.New(agentstream.Config{Type: "claude", Bin: os.Args[1]})
	if err != nil {
		panic(err)
	}
	defer client.Close()
	err = client.On("content", func(ev agentstream.OutputEvent) {
		now := int64(C.monotonic_ns())
		chunk, ok := ev.Update.(*agentstream.AgentMessageChunk)
		if !ok {
			return
		}
		for _, token := range strings.Split(chunk.Content.Text, "@@")[1:] {
			line, rest, _ := strings.Cut(token, ":")
			stamp, _, _ := strings.Cut(rest, ";")
			n, err1 := strconv.ParseInt(line, 10, 64)
			ns, err2 := strconv.ParseInt(stamp, 10, 64)
			if err1 == nil && err2 == nil {
				lines = append(lines, n)
				latencies = append(latencies, now-ns)
			}
		}
	})
	if err != nil {
		panic(err)
	}
	res, err := client.Run(context.Background(), agentstream.RunOptions{Prompt: "latency"})
	if err != nil {
		panic(err)
	}
	f, err := os.Create(os.Args[2])
	if err != nil {
		panic(err)
	}
	w := bufio.NewWriter(f)
	for i := range lines {
		fmt.Fprintf(w, "%d %d\n", lines[i], latencies[i])
	}
	if err := w.Flush(); err != nil {
		panic(err)
	}
	f.Close()
	fmt.Println("state", res.State)
}
