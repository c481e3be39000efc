package agentstream

import (
	"encoding/json"
	"runtime"
	"runtime/cgo"
	"sync"
)

// DecoderOptions configures a Decoder.
type DecoderOptions struct {
	// MaxLineBytes: a longer line is skipped, counted (DecodeStats.OversizeLines) and reported
	// as a Diagnostic, so memory stays bounded. 0 means the default (16 MiB).
	MaxLineBytes int
	// DisableRedaction delivers tool-call inputs as the harness printed them; by default secret
	// shapes in them (and in every field derived from them) are masked, as in a run.
	DisableRedaction bool
}

// Decoder turns one harness CLI's stdout (one run) into OutputEvents. Feed it bytes at any
// chunking, then call Finish at end of input. Bad lines are never an error: they are counted
// in Stats. A Decoder is safe for concurrent use (calls are serialized); Close it when done
// (a finalizer frees a forgotten one).
type Decoder struct {
	mu    sync.Mutex
	ptr   decoderPtr
	agent string
}

// NewDecoder returns a decoder for agent: "claude", "codex", "gemini", "qwen", "kimi",
// "opencode" or "droid" (case-insensitive). An unknown name is an *Error (ErrInvalidArgument)
// whose message lists the valid names.
func NewDecoder(agent string) (*Decoder, error) {
	return NewDecoderWithOptions(agent, DecoderOptions{})
}

// NewDecoderWithOptions is NewDecoder with options.
func NewDecoderWithOptions(agent string, opts DecoderOptions) (*Decoder, error) {
	if opts.MaxLineBytes < 0 {
		return nil, invalidArgument("MaxLineBytes must not be negative, got %d (0 for the default)", opts.MaxLineBytes)
	}
	p, err := decoderNew(agent, opts.MaxLineBytes, !opts.DisableRedaction)
	if err != nil {
		return nil, err
	}
	d := &Decoder{ptr: p, agent: agent}
	runtime.SetFinalizer(d, (*Decoder).Close)
	return d, nil
}

// Parse decodes a whole recorded output at once (secret shapes in tool-call inputs masked).
func Parse(agent string, data []byte) ([]OutputEvent, error) {
	return ParseWithOptions(agent, data, DecoderOptions{})
}

// ParseWithOptions is Parse with decoder options (e.g. DisableRedaction).
func ParseWithOptions(agent string, data []byte, opts DecoderOptions) ([]OutputEvent, error) {
	d, err := NewDecoderWithOptions(agent, opts)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	events, err := d.Feed(data)
	if err != nil {
		return nil, err
	}
	tail, err := d.Finish()
	return append(events, tail...), err
}

// Feed decodes data and returns the events of every line it completed, in order (nil when
// none). A line may span calls.
//
// (Implementation note: one library callback per event measured faster than one JSON array
// per call decoded by encoding/json, which scans every byte several times; see
// BenchmarkDecoderFeed and BenchmarkDecoderFeedJSONArray.)
func (d *Decoder) Feed(data []byte) ([]OutputEvent, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.feedLocked(data)
}

// Finish ends the input: it decodes a final line without a newline and flushes events held
// back until the end. Later Feeds decode nothing.
func (d *Decoder) Finish() ([]OutputEvent, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.finishLocked()
}

// feedJSONArray is Feed through agentstream_decoder_feed_json (one JSON array per call).
func (d *Decoder) feedJSONArray(data []byte) ([]OutputEvent, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ptr == nil {
		return nil, ErrClosed
	}
	js, err := decoderFeedJSON(d.ptr, data)
	runtime.KeepAlive(data)
	if err != nil {
		return nil, err
	}
	return decodeEvents(js)
}

// finishJSONArray is Finish through agentstream_decoder_finish_json.
func (d *Decoder) finishJSONArray() ([]OutputEvent, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ptr == nil {
		return nil, ErrClosed
	}
	js, err := decoderFinishJSON(d.ptr)
	if err != nil {
		return nil, err
	}
	return decodeEvents(js)
}

// FeedFunc is Feed handing each event to fn, in order, on this goroutine, instead of
// returning a slice. fn runs once the library call has returned, as ordinary Go code: it may
// panic (the panic leaves FeedFunc; the events after it are not delivered), call
// runtime.Goexit or t.FailNow, and the decoder stays usable. fn must not call methods of the
// same Decoder (they wait for this call: a deadlock).
func (d *Decoder) FeedFunc(data []byte, fn func(OutputEvent)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	events, err := d.feedLocked(data)
	for _, ev := range events {
		fn(ev)
	}
	return err
}

// FinishFunc is Finish with the delivery of FeedFunc.
func (d *Decoder) FinishFunc(fn func(OutputEvent)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	events, err := d.finishLocked()
	for _, ev := range events {
		fn(ev)
	}
	return err
}

// feedLocked decodes data through the library's callback (one per event, each copied and
// unmarshalled on this goroutine). No user code runs while the library is on the stack: a
// Goexit there would skip its frames.
func (d *Decoder) feedLocked(data []byte) ([]OutputEvent, error) {
	events, err := d.collectLocked(func(p decoderPtr, h uintptr) error { return decoderFeedCallback(p, data, h) })
	runtime.KeepAlive(data)
	return events, err
}

// finishLocked is feedLocked for Finish.
func (d *Decoder) finishLocked() ([]OutputEvent, error) {
	return d.collectLocked(decoderFinishCallback)
}

// collectLocked makes one library call that hands each event to goAgentstreamDecoderEvent
// through a cgo.Handle, and returns the events it collected.
func (d *Decoder) collectLocked(call func(decoderPtr, uintptr) error) ([]OutputEvent, error) {
	if d.ptr == nil {
		return nil, ErrClosed
	}
	st := &feedState{}
	h := cgo.NewHandle(st)
	err := call(d.ptr, uintptr(h))
	h.Delete()
	return st.finish(err)
}

// Stats returns the decode statistics so far.
func (d *Decoder) Stats() (DecodeStats, error) {
	var s DecodeStats
	js, err := d.withPtr(decoderStatsJSON)
	if err == nil {
		err = json.Unmarshal(js, &s)
	}
	return s, err
}

// Diagnostics returns (and clears) the problems found since the last call: over-long lines,
// invalid UTF-8.
func (d *Decoder) Diagnostics() ([]Diagnostic, error) {
	var out []Diagnostic
	js, err := d.withPtr(decoderDiagnosticsJSON)
	if err == nil {
		err = json.Unmarshal(js, &out)
	}
	return out, err
}

// SessionID returns the harness's session id and true once one was seen.
func (d *Decoder) SessionID() (string, bool, error) {
	b, err := d.withPtr(decoderSessionID)
	if err != nil || b == nil {
		return "", false, err
	}
	return string(b), true, nil
}

// Agent is the agent name the decoder was created with.
func (d *Decoder) Agent() string { return d.agent }

// Close frees the decoder. Calling it again is a no-op; other methods then return ErrClosed.
func (d *Decoder) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ptr != nil {
		decoderFree(d.ptr)
		d.ptr = nil
		runtime.SetFinalizer(d, nil)
	}
	return nil
}

func (d *Decoder) withPtr(f func(decoderPtr) ([]byte, error)) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ptr == nil {
		return nil, ErrClosed
	}
	return f(d.ptr)
}

func decodeEvents(js []byte) ([]OutputEvent, error) {
	if len(js) <= 2 { // "[]"
		return nil, nil
	}
	var events []OutputEvent
	if err := json.Unmarshal(js, &events); err != nil {
		return nil, err
	}
	return events, nil
}

// feedState is what the library's event callback reaches through its cgo.Handle: the events
// of one call, decoded into Go values.
type feedState struct {
	events     []OutputEvent
	stopped    bool
	err        error
	panicked   bool
	panicValue any
}

// finish is the call's outcome once the library returned: its events, or the first error (a
// panic while copying an event is re-raised here, outside the library's frames).
func (st *feedState) finish(callErr error) ([]OutputEvent, error) {
	if st.panicked {
		panic(st.panicValue)
	}
	if callErr != nil {
		return st.events, callErr
	}
	return st.events, st.err
}
