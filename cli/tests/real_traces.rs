//! `../shared/conformance/real-traces/score_traces.py` runs `agentstream parse` on every real
//! trace and must pass every check. Skips with a message where the shared folder is absent.
//! `AGENTSTREAM_SCORE_ONLY=claude,codex` limits the run while a decoder is being worked on.

use std::path::Path;
use std::process::Command;

#[test]
fn every_real_trace_check_passes() {
    let scorer = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/real-traces/score_traces.py");
    if !scorer.exists() {
        eprintln!("SKIP: {} not present", scorer.display());
        return;
    }
    let bin = env!("CARGO_BIN_EXE_agentstream");
    let mut cmd = Command::new("python3");
    cmd.arg(&scorer).arg("--cmd").arg(format!("{bin} parse --agent {{cli}} {{path}}")).arg("-v");
    if let Ok(only) = std::env::var("AGENTSTREAM_SCORE_ONLY") {
        for o in only.split(',') {
            cmd.arg("--only").arg(o);
        }
    }
    let out = cmd.output().expect("python3");
    let report = String::from_utf8_lossy(&out.stdout);
    let score = report.lines().find_map(|l| l.strip_prefix("score: ")).expect("scorer printed no score");
    let (passed, total) = score.split_once(" checks").unwrap().0.split_once('/').unwrap();
    assert_eq!(passed, total, "real-trace checks failing:\n{report}");
}
