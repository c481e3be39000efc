//! What the integration tests that read `../shared/` (another folder beside the repo, never
//! copied into it) share.

use std::path::{Path, PathBuf};

/// `../shared/<sub>`, or `None` when the caller said the shared data may be missing
/// (`AGENTSTREAM_WITHOUT_SHARED=1`). Missing otherwise is a failure, not a silent pass.
pub fn shared(sub: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared").join(sub);
    if dir.exists() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("AGENTSTREAM_WITHOUT_SHARED").is_some_and(|v| v == "1"),
        "{} is missing: the shared data lives beside the repo (AGENTSTREAM_WITHOUT_SHARED=1 skips this test)",
        dir.display()
    );
    eprintln!("SKIP (AGENTSTREAM_WITHOUT_SHARED=1): {} not present", dir.display());
    None
}
