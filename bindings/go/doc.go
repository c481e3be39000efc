// Package agentstream runs coding-agent CLIs (claude, codex, gemini, qwen, kimi, opencode,
// droid) and decodes their stdout JSONL into ACP-style events, through libagentstream's C ABI
// (cgo). It holds no behaviour of its own: decoding, sequencing, backpressure, lifecycle and
// hooks all come from the Rust core.
//
// Running an agent, as in the seed's evolve.on(...) / run(...):
//
//	s, err := agentstream.New(agentstream.Config{Type: "claude"}) // Bin, Env, Cwd, Model, ...
//	if err != nil { ... }
//	defer s.Close()
//	s.On("content", func(ev agentstream.OutputEvent) { ... })    // from the run's thread, in order
//	err = s.On("message", ...) // error: on() supports only "content", "lifecycle", "stdout" and "stderr"
//	res, err := s.Run(ctx, agentstream.RunOptions{
//		Prompt:  "List the files",
//		OnEvent: func(ev agentstream.AgentEvent) { ... }, // hook events: run.started, tool.started, ...
//	})
//	// res.State is "completed", "failed" or "cancelled"; cancelling ctx cancels the run.
//
// The same run as a channel, with backpressure from the core's buffer:
//
//	st, err := s.Stream(ctx, agentstream.RunOptions{Prompt: "...", Hooks: true})
//	for d := range st.Deliveries() { ... } // d.Item (*Envelope) or d.Hook (*AgentEvent)
//	res, err := st.Result()
//
// Decoding a recorded or live output without a process:
//
//	d, err := agentstream.NewDecoder("codex")
//	events, err := d.Feed(chunk) // any chunking
//	tail, err := d.Finish()      // end of input
//
// and Replay(agent, data) for the whole pipeline (items, hooks, outcome) of a recorded output.
//
// Every failure of the library is an *Error with a Status (errors.Is(err,
// agentstream.ErrInvalidArgument)); a Rust panic inside the library never crosses into Go, it
// becomes an *Error with StatusPanic.
//
// Linking: by default the package links the static library of this repository
// (target/release/libagentstream.a, built by `make build-c`) with the header in include/; with
// -tags agentstream_dynamic it links -lagentstream from CGO_LDFLAGS. See docs/go.md.
package agentstream
