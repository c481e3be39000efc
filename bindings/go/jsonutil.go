package agentstream

import (
	"bytes"
	"encoding/json"
)

// objWriter builds a JSON object field by field, in the core's field order. It exists because
// encoding/json's omitempty cannot tell a nil slice/map (field absent) from an empty one
// (present as [] / {}), and the wire shape distinguishes them.
type objWriter struct {
	buf bytes.Buffer
	n   int
	err error
}

func (o *objWriter) key(k string) {
	if o.n == 0 {
		o.buf.WriteByte('{')
	} else {
		o.buf.WriteByte(',')
	}
	o.n++
	kb, _ := json.Marshal(k)
	o.buf.Write(kb)
	o.buf.WriteByte(':')
}

// field writes "k": v.
func (o *objWriter) field(k string, v any) {
	if o.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		o.err = err
		return
	}
	o.key(k)
	o.buf.Write(b)
}

// optString writes "k": *v when v is not nil.
func (o *objWriter) optString(k string, v *string) {
	if v != nil {
		o.field(k, *v)
	}
}

func (o *objWriter) bytes() ([]byte, error) {
	if o.err != nil {
		return nil, o.err
	}
	if o.n == 0 {
		return []byte("{}"), nil
	}
	o.buf.WriteByte('}')
	return o.buf.Bytes(), nil
}

// unmarshalNumbers decodes like json.Unmarshal, but numbers inside `any` values (rawInput,
// rawOutput, extra, details) become json.Number, which keeps them exactly (an int64 token
// count or a uint64 id survives; float64 would round above 2^53).
func unmarshalNumbers(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	return nil
}
