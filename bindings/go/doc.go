// Package agentstream runs coding-agent CLIs (claude, codex, gemini, qwen, kimi, opencode,
// droid) and decodes their stdout JSONL into ACP-style events, through libagentstream's C ABI
// (cgo). It holds no behaviour of its own: decoding, sequencing, backpressure, lifecycle, hooks,
// run options and their validation, sessions and handler-failure counting all come from the
// Rust core; this package converts shapes and speaks Go.
//
// Running an agent, as in the seed's evolve.on(...) / run(...):
//
//	c, err := agentstream.New(agentstream.Config{Type: "claude"}) // Bin, Env, Cwd, Model, ...
//	if err != nil { ... }
//	defer c.Close()
//	c.On("content", func(ev agentstream.OutputEvent) { ... }) // on the run's goroutine, in order
//	err = c.On("message", ...) // error: on() supports only "content", "lifecycle", "stdout" and "stderr"
//	res, err := c.Run(ctx, agentstream.RunOptions{
//		Prompt:  "List the files",
//		OnEvent: func(ev agentstream.AgentEvent) error { ...; return nil }, // run.started, tool.started, ...
//	})
//	// res.State is "completed", "failed" or "cancelled"; cancelling ctx cancels the run.
//	res, err = c.Run(ctx, agentstream.RunOptions{Prompt: "Now fix it"}) // continues the conversation
//
// Successive runs continue the harness conversation (Session, SetSession; RunOptions.Resume);
// Start returns a handle at once (background runs) whose Wait gives the result; Status,
// Interrupt, Kill, Pause and Resume control the client. A handler that returns an error or
// panics is reported once (OnHandlerError; by default through log/slog) and counted in
// RunResult.HandlerErrors.
//
// The same run as a channel, with backpressure from the core's buffer:
//
//	st, err := c.Stream(ctx, agentstream.RunOptions{Prompt: "...", Hooks: true})
//	for d := range st.Deliveries() { ... } // d.Item (*Envelope) or d.Hook (*AgentEvent)
//	res, err := st.Wait(ctx)
//
// Decoding a recorded or live output without a process:
//
//	d, err := agentstream.NewDecoder("codex")
//	events, err := d.Feed(chunk) // any chunking
//	tail, err := d.Finish()      // end of input
//
// and Replay(agent, data) for the whole pipeline (items, hooks, outcome) of a recorded output.
//
// Every failure of the library is an *Error whose Kind is one of the core's error table
// (errors.Is(err, agentstream.ErrInvalidArgument)); a Rust panic inside the library never
// crosses into Go, it becomes an *Error of kind "panic".
//
// Linking: the package finds libagentstream through pkg-config (`#cgo pkg-config: agentstream`):
// install the C library (the release tarball, or `make install` from a clone) and point
// PKG_CONFIG_PATH at its lib/pkgconfig when it is not in a system prefix. By default it links
// the shared library; with -tags agentstream_static it links libagentstream.a
// (agentstream-static.pc), so binaries need no .so at run time. See docs/go.md.
package agentstream
