// Package agentstream decodes the stdout JSONL of coding-agent CLIs (claude, codex, gemini,
// qwen, kimi, opencode, droid) into ACP-style events, through libagentstream's C ABI (cgo).
//
// Decoding a recorded or live output:
//
//	d, err := agentstream.NewDecoder("codex")
//	if err != nil { ... }
//	defer d.Close()
//	events, err := d.Feed(chunk)      // any chunking; call again as bytes arrive
//	tail, err := d.Finish()           // end of input
//	for _, ev := range append(events, tail...) {
//		switch u := ev.Update.(type) {
//		case *agentstream.AgentMessageChunk:
//			fmt.Print(u.Content.Text)
//		case *agentstream.ToolCall:
//			fmt.Println("tool:", u.GetToolName(), u.Kind)
//		}
//	}
//
// Handlers, as in the seed's evolve.on(...):
//
//	s, _ := agentstream.New(agentstream.Config{Type: "claude"})
//	err := s.On("content", func(ev agentstream.OutputEvent) { ... })
//	err = s.On("message", ...) // error: on() supports only "content", "lifecycle", "stdout" and "stderr"
//
// Every failure of the library is an *Error with a Status (errors.Is(err,
// agentstream.ErrInvalidArgument)); a Rust panic inside the library never crosses into Go, it
// becomes an *Error with StatusPanic.
//
// Linking: by default the package links the static library of this repository
// (target/release/libagentstream.a, built by `make build-c`); with -tags agentstream_dynamic it
// links -lagentstream from CGO_LDFLAGS. See docs/go.md.
package agentstream
