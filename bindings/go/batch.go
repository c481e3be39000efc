package agentstream

import (
	"encoding/json"
	"strconv"
)

// taggedDelivery is one element of agentstream_run_next_batch_json's array:
// {"item": <envelope>} or {"hook": <hook event>}.
type taggedDelivery struct {
	Item *Envelope   `json:"item"`
	Hook *AgentEvent `json:"hook"`
}

// parseBatch decodes a delivery batch. The library writes envelopes compactly with their keys
// in a fixed order ({"runId","sequence","channel","event","coalesced"?}), so a single pass can
// cut each envelope's event out as a json.RawMessage without decoding it (encoding/json scans
// every byte twice, and the event is decoded again anyway when it is read). Anything that does
// not match that exact form falls back to encoding/json, so the fast path is an optimization,
// never a second definition of the format.
func parseBatch(data []byte) ([]taggedDelivery, error) {
	if out, ok := fastBatch(data); ok {
		return out, nil
	}
	var batch []taggedDelivery
	err := json.Unmarshal(data, &batch)
	return batch, err
}

type cursor struct {
	b []byte
	i int
}

func (c *cursor) lit(s string) bool {
	if len(c.b)-c.i < len(s) || string(c.b[c.i:c.i+len(s)]) != s {
		return false
	}
	c.i += len(s)
	return true
}

// plainString reads the rest of a string without escapes (after its opening quote).
func (c *cursor) plainString() ([]byte, bool) {
	start := c.i
	for c.i < len(c.b) {
		switch c.b[c.i] {
		case '"':
			s := c.b[start:c.i]
			c.i++
			return s, true
		case '\\':
			return nil, false
		}
		c.i++
	}
	return nil, false
}

func (c *cursor) uint() (uint64, bool) {
	start := c.i
	for c.i < len(c.b) && c.b[c.i] >= '0' && c.b[c.i] <= '9' {
		c.i++
	}
	n, err := strconv.ParseUint(string(c.b[start:c.i]), 10, 64)
	return n, err == nil && c.i > start
}

// value skips one compact JSON value and returns its bytes (not validated: the library wrote
// it, and it is decoded when it is read).
func (c *cursor) value() ([]byte, bool) {
	start := c.i
	if c.i >= len(c.b) {
		return nil, false
	}
	switch c.b[c.i] {
	case '"':
		if !c.skipString() {
			return nil, false
		}
		return c.b[start:c.i], true
	case '{', '[':
		depth := 0
		for c.i < len(c.b) {
			switch c.b[c.i] {
			case '"':
				if !c.skipString() {
					return nil, false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					c.i++
					return c.b[start:c.i], true
				}
			}
			c.i++
		}
		return nil, false
	default: // a number, true, false or null
		for c.i < len(c.b) && c.b[c.i] != ',' && c.b[c.i] != '}' && c.b[c.i] != ']' {
			c.i++
		}
		return c.b[start:c.i], c.i > start
	}
}

// skipString skips a string, the cursor on its opening quote.
func (c *cursor) skipString() bool {
	c.i++
	for c.i < len(c.b) {
		switch c.b[c.i] {
		case '\\':
			c.i += 2
			continue
		case '"':
			c.i++
			return true
		}
		c.i++
	}
	return false
}

func fastBatch(b []byte) ([]taggedDelivery, bool) {
	c := cursor{b: b}
	if !c.lit("[") {
		return nil, false
	}
	out := make([]taggedDelivery, 0, 64)
	var runID string
	if c.lit("]") {
		return out, c.i == len(b)
	}
	for {
		switch {
		case c.lit(`{"item":{"runId":"`):
			id, ok := c.plainString()
			if !ok || !c.lit(`,"sequence":`) {
				return nil, false
			}
			if string(id) != runID {
				runID = string(id)
			}
			seq, ok := c.uint()
			if !ok || !c.lit(`,"channel":"`) {
				return nil, false
			}
			ch, ok := c.plainString()
			if !ok || !c.lit(`,"event":`) {
				return nil, false
			}
			ev, ok := c.value()
			if !ok {
				return nil, false
			}
			env := &Envelope{RunID: runID, Sequence: seq, Channel: Channel(ch), Event: json.RawMessage(ev)}
			if c.lit(`,"coalesced":`) {
				n, ok := c.uint()
				if !ok {
					return nil, false
				}
				env.Coalesced = &n
			}
			if !c.lit("}}") {
				return nil, false
			}
			out = append(out, taggedDelivery{Item: env})
		case c.lit(`{"hook":`):
			raw, ok := c.value()
			if !ok || !c.lit("}") {
				return nil, false
			}
			var h AgentEvent
			if err := h.UnmarshalJSON(raw); err != nil {
				return nil, false
			}
			out = append(out, taggedDelivery{Hook: &h})
		default:
			return nil, false
		}
		if c.lit("]") {
			return out, c.i == len(b)
		}
		if !c.lit(",") {
			return nil, false
		}
	}
}
