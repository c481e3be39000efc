//! Ending the runs of workers that died: when a run's lease expires, any process may append its
//! terminal envelope (`run_failed`) and finish its record. Several may try at once; the
//! terminal is published with `Nats-Expected-Last-Subject-Sequence`, so exactly one terminal is
//! appended — by one reaper, or by the worker itself if it was only slow — and only the
//! process whose terminal was stored writes the final record (compare-and-set on its revision).

use std::sync::Arc;
use std::time::Duration;

use agentstream_core::DecodeStats;
use agentstream_core::lifecycle::{AgentState, LifecycleEvent, LifecycleReason, SandboxState};
use agentstream_core::runner::RunResult;
use agentstream_core::stream::{Envelope, Pressure, StreamItem};
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::message::{PublishMessage, StreamMessage};

use super::log::tail;
use super::registry::Shared;
use super::wire::{self, StoredRun};
use crate::broker::RunStatus;
use crate::frame::{Frame, now_ms};

/// End the run whose record is at `key` (`<tenant>.<run>`) if it is running and its lease is
/// gone. Safe to call from every process at once, and again.
pub(super) async fn reap(shared: Arc<Shared>, key: String) {
    for _ in 0..5 {
        match reap_once(&shared, &key).await {
            Ok(true) => return,
            Ok(false) => tokio::time::sleep(Duration::from_millis(100)).await, // raced: look again
            Err(_) => return, // NATS unreachable: the next sweep tries again
        }
    }
}

/// `Ok(true)`: nothing (more) to do; `Ok(false)`: raced with another writer, try again.
async fn reap_once(shared: &Shared, key: &str) -> Result<bool, String> {
    let cluster = &shared.cluster;
    let settings = &cluster.settings;
    let lease_key = format!("run.{key}");
    match cluster.leases.get(&lease_key).await {
        Ok(Some(_)) => return Ok(true), // renewed meanwhile: alive
        Ok(None) => {}
        Err(e) => return Err(e.to_string()),
    }
    let Some((mut stored, revision)) = shared.read(key).await? else { return Ok(true) };
    if stored.run.status != RunStatus::Running {
        return Ok(true);
    }
    let run_id = stored.run.id.clone();
    let subject = settings.events_subject(&stored.tenant, &run_id);
    let last = tail(cluster, &subject).await?;
    if let Some(t) = &last
        && t.meta.terminal
    {
        let terminal = LastTerminal::of(&t.message);
        let reason = terminal.reason;
        let status = match reason.as_deref() {
            Some("run_complete") => RunStatus::Completed,
            Some("run_interrupted") => RunStatus::Cancelled,
            _ => RunStatus::Failed,
        };
        let why = if terminal.by_reaper {
            // Another reaper (another instance's sweep) appended it and has not recorded the
            // end yet: the same account of the run as that reaper's, whichever writes first.
            lease_expired(&stored, settings)
        } else {
            // The worker appended the terminal but died before recording how the run ended.
            format!(
                "the worker {:?} stopped before recording this run's result (the run had ended: {})",
                stored.owner,
                reason.as_deref().unwrap_or("unknown")
            )
        };
        finish_record(&mut stored, status, t.meta.last, why);
        return Ok(shared.write(key, &stored, revision).await?.is_some() || ended(shared, key).await);
    }
    // Where the terminal goes: after the last whole envelope (an envelope whose last parts never
    // came is replaced). With nothing left of the run in the stream (retention removed it), after
    // the last one its record knows of: subscribers that read that far take it as the next.
    let sequence = match &last {
        None => stored.run.last_sequence.map_or(0, |l| l + 1),
        Some(t) if t.meta.is_incomplete_part() => t.meta.first,
        Some(t) => t.meta.last + 1,
    };
    let terminal = LifecycleEvent::local(
        LifecycleReason::RunFailed,
        SandboxState::Error,
        AgentState::Error,
        agentstream_core::time::now_iso8601(),
    );
    let envelope = Envelope::new(run_id.as_str(), sequence, StreamItem::Lifecycle(terminal));
    let frame = Frame::of(&envelope, now_ms());
    let msg = wire::pack(&run_id, std::slice::from_ref(&frame), usize::MAX).remove(0);
    let mut publish = PublishMessage::build()
        .payload(msg.payload)
        .message_id(format!("{run_id}.{sequence}{REAPER_MESSAGE_SUFFIX}"))
        .expected_last_subject_sequence(last.as_ref().map_or(0, |t| t.stream_seq));
    for (name, values) in msg.headers.iter() {
        for v in values {
            publish = publish.header(name.clone(), v.clone());
        }
    }
    let stored_terminal = match cluster.js.send_publish(subject, publish).await {
        Ok(ack) => ack.await,
        Err(e) => Err(e),
    };
    match stored_terminal {
        Ok(_) => {}
        Err(e) if e.kind() == PublishErrorKind::WrongLastSequence => return Ok(false),
        Err(e) => return Err(e.to_string()),
    }
    let why = lease_expired(&stored, settings);
    finish_record(&mut stored, RunStatus::Failed, sequence, why);
    // Our terminal stands, so the record is ours to finish, over any progress a slow worker
    // wrote meanwhile (retrying through lost answers; the next sweep tries again after that).
    let mut revision = revision;
    for _ in 0..10 {
        match shared.write(key, &stored, revision).await {
            Ok(Some(_)) => return Ok(true),
            Ok(None) => match shared.read(key).await {
                Ok(Some((s, rev))) if s.run.status == RunStatus::Running => revision = rev,
                _ => return Ok(true),
            },
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    Ok(true)
}

async fn ended(shared: &Shared, key: &str) -> bool {
    matches!(shared.read(key).await, Ok(Some((s, _))) if s.run.status != RunStatus::Running)
}

/// The message id suffix of a terminal a reaper appends (`<run>.<sequence>.lost`).
const REAPER_MESSAGE_SUFFIX: &str = ".lost";

/// The terminal at the end of a run's stream: its reason, and whether a reaper appended it.
struct LastTerminal {
    reason: Option<String>,
    by_reaper: bool,
}

impl LastTerminal {
    /// The terminal in `message` (a run's last message, holding its terminal envelope): its
    /// lifecycle reason (the message's last line) and whether its message id is a reaper's.
    fn of(message: &StreamMessage) -> LastTerminal {
        let by_reaper = message
            .headers
            .get(async_nats::header::NATS_MESSAGE_ID)
            .is_some_and(|id| id.as_str().ends_with(REAPER_MESSAGE_SUFFIX));
        let reason = message.payload.split(|b| *b == b'\n').next_back().and_then(|line| {
            let v: serde_json::Value = serde_json::from_slice(line).ok()?;
            v["event"]["reason"].as_str().map(str::to_string)
        });
        LastTerminal { reason, by_reaper }
    }
}

/// Why a reaper ended a run: its worker stopped renewing the lease.
fn lease_expired(stored: &StoredRun, settings: &super::NatsSettings) -> String {
    format!(
        "the worker {:?} running this run stopped renewing its lease for {} s (it stopped, or lost its \
         connection to NATS); the run was ended as failed, and what it printed before is kept",
        stored.owner,
        settings.lease.as_secs()
    )
}

fn finish_record(stored: &mut StoredRun, status: RunStatus, last_sequence: u64, why: String) {
    let run = &mut stored.run;
    let ended_ms = agentstream_core::time::now_millis();
    let duration_ms = parse_iso_millis(&run.created_at).map_or(0, |created| (ended_ms - created).max(0) as u64);
    let state = match status {
        RunStatus::Completed => "completed",
        RunStatus::Cancelled => "cancelled",
        _ => "failed",
    };
    let result: Option<RunResult> = serde_json::from_value(serde_json::json!({
        "run_id": run.id,
        "state": state,
        "usage": {},
        "pressure": Pressure::default(),
        "stats": DecodeStats::default(),
        "last_sequence": last_sequence,
        "duration_ms": duration_ms,
        "error": why,
    }))
    .ok();
    run.status = status;
    run.ended_at = Some(agentstream_core::time::iso8601_from_millis(ended_ms));
    run.last_sequence = Some(last_sequence);
    run.result = result;
}

/// `2026-12-04T14:03:47.138Z` → Unix milliseconds (the records' own format, UTC).
fn parse_iso_millis(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let ms = if b[19] == b'.' { num(20..23).unwrap_or(0) } else { 0 };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + h) * 60 + mi) * 60_000 + sec * 1000 + ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times_round_trip() {
        for ms in [0i64, 1_796_393_542_648, 951_782_400_000 /* 2000-02-29 */] {
            let text = agentstream_core::time::iso8601_from_millis(ms);
            assert_eq!(parse_iso_millis(&text), Some(ms), "{text}");
        }
        assert_eq!(parse_iso_millis("yesterday"), None);
    }

    #[test]
    fn a_reaped_record_says_why() {
        let mut stored = StoredRun {
            tenant: "a".into(),
            owner: "w1".into(),
            run: serde_json::from_value(serde_json::json!({
                "id": "run_1", "agent": "claude", "prompt": "p", "status": "running",
                "createdAt": agentstream_core::time::iso8601_from_millis(agentstream_core::time::now_millis() - 1500)
            }))
            .unwrap(),
        };
        finish_record(&mut stored, RunStatus::Failed, 7, "lost".into());
        let run = &stored.run;
        assert_eq!((run.status, run.last_sequence), (RunStatus::Failed, Some(7)));
        let result = run.result.as_ref().unwrap();
        assert_eq!(result.error.as_deref(), Some("lost"));
        assert!(result.duration_ms >= 1500);
    }
}
