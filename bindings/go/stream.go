package agentstream

import (
	"context"
	"sync"
)

// Delivery is one thing a Stream hands over, in order: a sequenced item of the run (Item), or
// a hook event derived from the item before it (Hook, with RunOptions.Hooks or OnEvent).
type Delivery struct {
	Item *Envelope
	Hook *AgentEvent
}

// Stream is a run read as a channel of every delivery (every channel's items, and hook events
// with RunOptions.Hooks): the core's iterated run. Read Deliveries until it is closed (after the
// terminal item and its hooks), then Wait. Backpressure comes from the run's own buffer: the
// stream's goroutine pulls from it only as fast as Deliveries is read; a reader that stops
// reading for Limits.Stall (default 30 s) has the run cancelled. Cancelling the context, or
// Close, cancels the run and closes the channel early. It embeds the Run (ID, Wait, Result,
// Cancel, Pressure, Done). Read a Stream to its end, Close it, or cancel its context: one
// dropped otherwise keeps its goroutine and native run waiting for a reader (no finalizer can
// tell a dropped Stream from one whose channel is still being ranged over).
type Stream struct {
	*Run
	ch          chan Delivery
	closing     chan struct{}
	closeOnce   sync.Once
	discard     chan struct{}
	discardOnce sync.Once
}

// Stream starts a run like Start, read as a channel. The client's On handlers are not called:
// every delivery is handed over; OnEvent, if set, is called for each hook event before it is
// handed over.
func (c *Client) Stream(ctx context.Context, opts RunOptions) (*Stream, error) {
	r, err := c.start(ctx, opts, "iterate")
	if err != nil {
		return nil, err
	}
	st := &Stream{Run: r, ch: make(chan Delivery), closing: make(chan struct{}), discard: make(chan struct{})}
	go func() {
		defer close(st.ch)
		r.deliver(st.handOver)
	}()
	return st, nil
}

// handOver gives one delivery to the reader; false when the reader left (Close or ctx).
func (st *Stream) handOver(d taggedDelivery) bool {
	if d.Hook != nil && st.onEvent != nil {
		hook := *d.Hook
		st.call(onEventHandler, "on_event", hook.Sequence, func() error { return st.onEvent(hook) })
	}
	select {
	case st.ch <- Delivery{Item: d.Item, Hook: d.Hook}:
		return true
	case <-st.discard: // Wait was called: nobody reads what is left
		return true
	case <-st.closing:
	case <-st.ctx.Done():
		// The context's reason first (the first reason stands), not "reader left".
		st.cancelledByCtx.Store(true)
		st.Cancel("context canceled: " + st.ctx.Err().Error())
	}
	return false
}

// Wait waits for the run's end and returns its result (see Run.Wait). Deliveries nobody has
// read by then are discarded: read Deliveries to its end first to see them all.
func (st *Stream) Wait(ctx context.Context) (*RunResult, error) {
	st.discardOnce.Do(func() { close(st.discard) })
	return st.Run.Wait(ctx)
}

// Deliveries is the channel of deliveries, closed after the last one (or early, see Stream).
func (st *Stream) Deliveries() <-chan Delivery { return st.ch }

// Close stops reading: an unfinished run is cancelled (reason "reader left"), what is left of
// it is discarded, and the channel is closed. Wait still reports the run. Calling it again is
// a no-op. Close waits for the channel to close, except while OnEvent is running (Close may be
// called from it, on the goroutine that closes the channel): then it returns at once and the
// channel closes as soon as OnEvent returns.
func (st *Stream) Close() error {
	st.closeOnce.Do(func() { close(st.closing) })
	// Told here, not only when the next delivery finds the channel closing: a run that prints
	// nothing more would otherwise go on, and Close wait, until it printed or exited.
	st.mu.Lock()
	if st.ptr != nil {
		_ = runLeave(st.ptr)
	}
	st.mu.Unlock()
	if st.callStarted.Load() != 0 {
		return nil
	}
	<-st.done
	return nil
}
