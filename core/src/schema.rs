//! JSON Schema of the event model, generated from the Rust types (feature `schema`).
//!
//! The checked-in copy at `core/schema/events.schema.json` is what other languages read to
//! check their own type declarations; a test keeps it in sync with the types.

use schemars::JsonSchema;

/// Every top-level wire type, by the name other languages use for it.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct AgentstreamEvents {
    output_event: crate::event::OutputEvent,
    lifecycle_event: crate::lifecycle::LifecycleEvent,
    decode_stats: crate::decode::DecodeStats,
    agent: crate::decode::Agent,
}

/// The schema document, pretty-printed with a trailing newline.
pub fn events_schema_json() -> String {
    let schema = schemars::schema_for!(AgentstreamEvents);
    let mut text = serde_json::to_string_pretty(&schema).expect("schema serializes");
    text.push('\n');
    text
}
