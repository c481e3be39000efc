//! The end of `agentstream parse`: what is said on stderr about the decode, and the exit code.

use std::process::ExitCode;

use agentstream_core::Decoder;

/// Diagnostics printed at most; the rest are counted (binary input has one per line).
const MAX_DIAGNOSTICS: usize = 10;

/// Report the finished decode. Input that is not the harness's output at all (nothing decoded,
/// some line not its JSON) gets ONE line saying so and exit 1 — per-line diagnostics would
/// bury it; otherwise the diagnostics (at most [`MAX_DIAGNOSTICS`]), the summary, and exit 0.
pub fn finish(decoder: &mut Decoder) -> ExitCode {
    let agent = decoder.agent();
    let diagnostics = decoder.take_diagnostics();
    if let Some(why) = decoder.unrecognized_output() {
        stderr_line!("agentstream parse ({agent}): {why}");
        return ExitCode::FAILURE;
    }
    for d in diagnostics.iter().take(MAX_DIAGNOSTICS) {
        stderr_line!("agentstream parse: line {}: {}", d.line, d.message);
    }
    match diagnostics.len().saturating_sub(MAX_DIAGNOSTICS) {
        0 => {}
        1 => stderr_line!("agentstream parse: … 1 more diagnostic"),
        n => stderr_line!("agentstream parse: … {n} more diagnostics"),
    }
    stderr_line!("agentstream parse ({agent}): {}", decoder.stats().summary());
    ExitCode::SUCCESS
}
