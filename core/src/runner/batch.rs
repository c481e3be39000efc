//! A batch of deliveries as ONE JSON text, for bindings that pull batches across a boundary
//! where a call per delivery is costly (the C ABI used from Go, C#, Java; JSON strings into
//! Node). Each delivery is tagged by its kind so the host never guesses:
//!
//! ```json
//! [{"item": {"runId": "run_…", "sequence": 0, "channel": "lifecycle", "event": {…}}},
//!  {"hook": {"type": "run.started", "run_id": "run_…", …}}]
//! ```
//!
//! `item` holds an [`Envelope`](crate::stream::Envelope) in its wire form, `hook` a
//! [`HookEvent`](crate::HookEvent) in its canonical (C/Go) form; the order is delivery order.

use super::handle::Delivery;

impl Delivery {
    /// Append this delivery as tagged JSON (`{"item": …}` or `{"hook": …}`) to `out`.
    pub fn write_tagged_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(match self {
            Delivery::Item(_) => b"{\"item\":",
            Delivery::Hook(_) => b"{\"hook\":",
        });
        // Envelopes and hook events always serialize (string keys, finite numbers only).
        let written = match self {
            Delivery::Item(env) => serde_json::to_writer(&mut *out, env),
            Delivery::Hook(hook) => serde_json::to_writer(&mut *out, hook),
        };
        written.expect("deliveries always serialize");
        out.push(b'}');
    }

    /// This delivery as tagged JSON text.
    pub fn to_tagged_json(&self) -> String {
        let mut out = Vec::with_capacity(256);
        self.write_tagged_json(&mut out);
        String::from_utf8(out).expect("serde_json writes UTF-8")
    }
}

/// Append `batch` as one JSON array of tagged deliveries (`[]` when empty) to `out`.
pub fn write_deliveries_json(batch: &[Delivery], out: &mut Vec<u8>) {
    out.push(b'[');
    for (i, d) in batch.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        d.write_tagged_json(out);
    }
    out.push(b']');
}

/// `batch` as one JSON array of tagged deliveries.
pub fn deliveries_to_json(batch: &[Delivery]) -> String {
    let mut out = Vec::with_capacity(64 + batch.len() * 256);
    write_deliveries_json(batch, &mut out);
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::{ReplayOptions, replay};
    use crate::{Agent, HookEvent};
    use serde_json::Value;

    #[test]
    fn a_batch_is_an_array_of_tagged_wire_forms_in_order() {
        let input = b"{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n{\"type\":\"item.completed\",\"item\":{\"id\":\"i\",\"type\":\"agent_message\",\"text\":\"hi\"}}\n";
        let r = replay(Agent::Codex, input, &ReplayOptions::default());
        let mut batch: Vec<Delivery> = r.items.iter().cloned().map(Delivery::Item).collect();
        batch.extend(r.hooks.iter().cloned().map(Delivery::Hook));
        let parsed: Vec<Value> = serde_json::from_str(&deliveries_to_json(&batch)).unwrap();
        assert_eq!(parsed.len(), batch.len());
        for (v, d) in parsed.iter().zip(&batch) {
            let obj = v.as_object().unwrap();
            assert_eq!(obj.len(), 1, "one tag per delivery: {v}");
            match d {
                Delivery::Item(env) => {
                    assert_eq!(obj["item"], serde_json::from_str::<Value>(&env.to_json()).unwrap());
                }
                Delivery::Hook(h) => {
                    assert_eq!(serde_json::from_value::<HookEvent>(obj["hook"].clone()).unwrap(), *h);
                }
            }
            assert_eq!(serde_json::from_str::<Value>(&d.to_tagged_json()).unwrap(), *v);
        }
        assert_eq!(deliveries_to_json(&[]), "[]");
    }
}
