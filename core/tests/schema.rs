//! The JSON Schema of the event model is generated from the Rust types and checked in at
//! `core/schema/events.schema.json`; this test fails when the types and the file drift apart.
//! Regenerate with `UPDATE_SCHEMA=1 cargo test -p agentstream-core --test schema`.

use std::path::Path;

#[test]
fn checked_in_schema_matches_the_types() {
    let generated = agentstream_core::schema::events_schema_json();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/events.schema.json");
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "core/schema/events.schema.json is out of date: run UPDATE_SCHEMA=1 cargo test -p agentstream-core --test schema"
    );
}
