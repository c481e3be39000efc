//! `../shared/conformance/real-traces/score_traces.py` runs `agentstream parse` on every real
//! trace and must pass every check, with every expectation file scored (the scorer passes over a
//! trace it cannot find). The shared folder must be there (`AGENTSTREAM_WITHOUT_SHARED=1` skips
//! the test knowingly). `AGENTSTREAM_SCORE_ONLY=claude,codex` limits the run while a decoder is
//! being worked on.

// Printing is this file's report: clippy.toml's rule against prints is for the commands.
#![allow(clippy::disallowed_macros)]

use std::path::Path;
use std::process::Command;

#[test]
fn every_real_trace_check_passes() {
    let scorer = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/real-traces/score_traces.py");
    if !scorer.exists() {
        assert!(
            std::env::var_os("AGENTSTREAM_WITHOUT_SHARED").is_some_and(|v| v == "1"),
            "{} is missing: the shared conformance data lives beside the repo (AGENTSTREAM_WITHOUT_SHARED=1 skips this test)",
            scorer.display()
        );
        eprintln!("SKIP (AGENTSTREAM_WITHOUT_SHARED=1): {} not present", scorer.display());
        return;
    }
    let only = std::env::var("AGENTSTREAM_SCORE_ONLY").ok();
    let bin = env!("CARGO_BIN_EXE_agentstream");
    let mut cmd = Command::new("python3");
    cmd.arg(&scorer).arg("--cmd").arg(format!("{bin} parse --agent {{cli}} {{path}}")).arg("-v");
    if let Some(only) = &only {
        for o in only.split(',') {
            cmd.arg("--only").arg(o);
        }
    }
    let out = cmd.output().expect("python3");
    let report = String::from_utf8_lossy(&out.stdout);
    let score = report.lines().find_map(|l| l.strip_prefix("score: ")).expect("scorer printed no score");
    let (checks, traces) = score.split_once(" checks, ").expect("`P/T checks, p/t traces …`");
    let (passed, total) = checks.split_once('/').unwrap();
    assert_eq!(passed, total, "real-trace checks failing:\n{report}");
    assert!(total.parse::<usize>().unwrap() > 0, "no check was scored (AGENTSTREAM_SCORE_ONLY={only:?}?):\n{report}");
    if only.is_none() {
        let scored: usize =
            traces.split_once('/').and_then(|(_, t)| t.split(' ').next()?.parse().ok()).expect("traces");
        assert_eq!(scored, expectation_files(&scorer), "every expectation's trace was found and scored:\n{report}");
    }
}

/// How many traces the scorer's expectations name (`expect/<cli>/<scenario>.json`).
fn expectation_files(scorer: &Path) -> usize {
    let expect = scorer.with_file_name("expect");
    let clis = std::fs::read_dir(&expect).unwrap_or_else(|e| panic!("{}: {e}", expect.display()));
    clis.flatten()
        .filter(|cli| !cli.file_name().to_string_lossy().starts_with(['_', '.']))
        .filter_map(|cli| std::fs::read_dir(cli.path()).ok())
        .flat_map(|files| files.flatten())
        .filter(|f| f.path().extension().is_some_and(|x| x == "json"))
        .count()
}
