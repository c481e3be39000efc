package agentstream

import (
	"runtime"
	"sync"
)

// Budget is one byte allowance shared by at most a number of concurrent runs (of every client
// it is given to with Client.SetBudget): each run takes a permit for its lifetime and its byte
// budget is the allowance's per-run share, so the runs in flight never hold more than the
// whole allowance unread. Safe for concurrent use; Close it when done (clients it was given to
// keep using it).
type Budget struct {
	mu  sync.Mutex
	ptr budgetPtr
}

// NewBudget returns an allowance of totalBytes for up to maxRuns concurrent runs (each run's
// byte budget is totalBytes/maxRuns, at least 1 byte). maxRuns 0 is ErrInvalidArgument.
func NewBudget(totalBytes, maxRuns int) (*Budget, error) {
	if totalBytes < 0 || maxRuns < 0 {
		return nil, invalidArgument("NewBudget: totalBytes and maxRuns must not be negative, got %d and %d", totalBytes, maxRuns)
	}
	p, err := budgetNew(totalBytes, maxRuns)
	if err != nil {
		return nil, err
	}
	b := &Budget{ptr: p}
	runtime.SetFinalizer(b, (*Budget).Close)
	return b, nil
}

func (b *Budget) with(f func(budgetPtr) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ptr == nil {
		return ErrClosed
	}
	return f(b.ptr)
}

// Active is how many runs hold a permit now.
func (b *Budget) Active() (int, error) {
	n := 0
	err := b.with(func(p budgetPtr) error {
		var err error
		n, err = budgetActive(p)
		return err
	})
	return n, err
}

// Close frees the handle. Calling it again is a no-op.
func (b *Budget) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ptr != nil {
		budgetFree(b.ptr)
		b.ptr = nil
		runtime.SetFinalizer(b, nil)
	}
	return nil
}

// SequenceCheck is a consumer's check of a run's sequence numbers (for deliveries that crossed
// a queue, a socket or a retry): it accepts each number once and in order, and counts the
// numbers that went missing. The core's check; safe for concurrent use; Close it when done.
type SequenceCheck struct {
	mu  sync.Mutex
	ptr sequencePtr
}

// NewSequenceCheck returns a check expecting sequence 0.
func NewSequenceCheck() (*SequenceCheck, error) {
	p, err := sequenceCheckNew()
	if err != nil {
		return nil, err
	}
	c := &SequenceCheck{ptr: p}
	runtime.SetFinalizer(c, (*SequenceCheck).Close)
	return c, nil
}

// Accept offers an envelope's numbers: false for a late or duplicate one (drop that delivery);
// a number past the expected one is accepted and the gap counted as missing.
func (c *SequenceCheck) Accept(env *Envelope) (bool, error) {
	var coalesced uint64
	if env.Coalesced != nil {
		coalesced = *env.Coalesced
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ptr == nil {
		return false, ErrClosed
	}
	return sequenceCheckAccept(c.ptr, env.Sequence, coalesced)
}

// Missing is how many numbers were skipped so far (never received, not accounted for by a
// merge).
func (c *SequenceCheck) Missing() (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ptr == nil {
		return 0, ErrClosed
	}
	return sequenceCheckMissing(c.ptr)
}

// Close frees the check. Calling it again is a no-op.
func (c *SequenceCheck) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ptr != nil {
		sequenceCheckFree(c.ptr)
		c.ptr = nil
		runtime.SetFinalizer(c, nil)
	}
	return nil
}
