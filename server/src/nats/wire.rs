//! What travels over NATS: the events messages, run requests and their answers, run records.
//!
//! # An events message
//!
//! The payload is one or more envelopes exactly as `agentstream run --json` prints them, one per
//! line (`\n` between them; envelope JSON never holds a raw newline). Headers:
//!
//! | header | |
//! |---|---|
//! | `Agentstream-Seq` | the first envelope's `sequence` |
//! | `Agentstream-Last` | the last sequence number the message covers (its last envelope's `sequence + coalesced`) |
//! | `Agentstream-Coalesced` | `i:k,…`: the envelopes (by index in the message) that cover `k` merged numbers; absent when none does |
//! | `Agentstream-Terminal` | `1` when the last envelope is the run's terminal one |
//! | `Agentstream-Received` | when the producer read the envelopes from the run (Unix ms: the SSE `time`) |
//! | `Agentstream-Part` | `k/n`: part k of one envelope too large for one message (split in n); the parts are consecutive |
//! | `Nats-Msg-Id` | `<run>.<seq>` (`.<k>of<n>` for a part; `.lost` for a reaper's terminal): a publish retried after a lost ack is not stored twice |
//!
//! Envelope `sequence`s inside a message follow from `Agentstream-Seq` and the coalesced counts,
//! so a reader places every envelope without parsing its JSON.

use std::collections::HashMap;

use async_nats::HeaderMap;
use bytes::{Bytes, BytesMut};
use serde::{Deserialize, Serialize};

use crate::broker::RunInfo;
use crate::executor::RunRequest;
use crate::frame::Frame;

/// `Agentstream-Seq`.
pub const SEQ: &str = "Agentstream-Seq";
/// `Agentstream-Last`.
pub const LAST: &str = "Agentstream-Last";
/// `Agentstream-Coalesced`.
pub const COALESCED: &str = "Agentstream-Coalesced";
/// `Agentstream-Terminal`.
pub const TERMINAL: &str = "Agentstream-Terminal";
/// `Agentstream-Received`.
pub const RECEIVED: &str = "Agentstream-Received";
/// `Agentstream-Part`.
pub const PART: &str = "Agentstream-Part";
/// The reply subject of a run request (a header of the work-queue message).
pub const REPLY: &str = "Agentstream-Reply";

/// How much longer than the request's `deadline_ms` a serve instance waits for the answer of a
/// worker that took the request off the queue (counted from the same instant). A worker whose
/// start ends later cancels the run it made and refuses it (its client was told the run did not
/// start).
pub const ANSWER_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// How long a serve instance that gave up on an answer keeps listening for it, to cancel a run
/// started after all.
pub const LATE_ANSWER_WATCH: std::time::Duration = std::time::Duration::from_secs(60);

/// One events message to publish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// Its headers (without the publish conditions, which the writer adds).
    pub headers: HeaderMap,
    /// Its payload.
    pub payload: Bytes,
    /// Its `Nats-Msg-Id`.
    pub msg_id: String,
    /// The first sequence it covers.
    pub first: u64,
}

/// Pack frames (consecutive, in order) into messages of at most `max_bytes` of payload; a frame
/// larger than that alone is split into parts.
pub fn pack(run_id: &str, frames: &[Frame], max_bytes: usize) -> Vec<Outgoing> {
    let max_bytes = max_bytes.max(1);
    let mut out = Vec::new();
    let mut start = 0;
    while start < frames.len() {
        let first = &frames[start];
        if first.json.len() > max_bytes {
            let n = first.json.len().div_ceil(max_bytes);
            for (k, chunk) in first.json.chunks(max_bytes).enumerate() {
                let mut h = frame_headers(std::slice::from_ref(first));
                h.insert(PART, format!("{}/{n}", k + 1).as_str());
                out.push(Outgoing {
                    headers: h,
                    payload: first.json.slice_ref(chunk),
                    // With n: a split redone smaller is not taken for the first one's parts.
                    msg_id: format!("{run_id}.{}.{}of{n}", first.sequence, k + 1),
                    first: first.sequence,
                });
            }
            start += 1;
            continue;
        }
        let mut end = start + 1;
        let mut size = first.json.len();
        while end < frames.len() && size + 1 + frames[end].json.len() <= max_bytes {
            size += 1 + frames[end].json.len();
            end += 1;
        }
        let group = &frames[start..end];
        let mut payload = BytesMut::with_capacity(size);
        for (i, f) in group.iter().enumerate() {
            if i > 0 {
                payload.extend_from_slice(b"\n");
            }
            payload.extend_from_slice(&f.json);
        }
        out.push(Outgoing {
            headers: frame_headers(group),
            payload: payload.freeze(),
            msg_id: format!("{run_id}.{}", first.sequence),
            first: first.sequence,
        });
        start = end;
    }
    out
}

fn frame_headers(group: &[Frame]) -> HeaderMap {
    let mut h = HeaderMap::new();
    let (first, last) = (&group[0], &group[group.len() - 1]);
    h.insert(SEQ, first.sequence.to_string().as_str());
    h.insert(LAST, last.last_covered.to_string().as_str());
    let merged: Vec<String> = group
        .iter()
        .enumerate()
        .filter(|(_, f)| f.last_covered > f.sequence)
        .map(|(i, f)| format!("{i}:{}", f.last_covered - f.sequence))
        .collect();
    if !merged.is_empty() {
        h.insert(COALESCED, merged.join(",").as_str());
    }
    if last.terminal {
        h.insert(TERMINAL, "1");
    }
    h.insert(RECEIVED, last.received_ms.to_string().as_str());
    h
}

/// What an events message's headers say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// The first sequence it covers.
    pub first: u64,
    /// The last sequence it covers.
    pub last: u64,
    /// Its last envelope is the terminal one.
    pub terminal: bool,
    /// `(k, n)` for part k of n of one envelope.
    pub part: Option<(u32, u32)>,
}

impl Meta {
    /// Read the headers; `None` when they are not an events message's.
    pub fn of(headers: &HeaderMap) -> Option<Meta> {
        let num = |name: &str| headers.get(name)?.as_str().parse::<u64>().ok();
        let part = match headers.get(PART) {
            None => None,
            Some(v) => {
                let (k, n) = v.as_str().split_once('/')?;
                let (k, n) = (k.parse().ok()?, n.parse().ok()?);
                if k == 0 || k > n {
                    return None;
                }
                Some((k, n))
            }
        };
        let meta = Meta {
            first: num(SEQ)?,
            last: num(LAST)?,
            terminal: headers.get(TERMINAL).is_some_and(|v| v.as_str() == "1"),
            part,
        };
        (meta.last >= meta.first).then_some(meta)
    }

    /// True when this is a part other than the last of a split envelope.
    pub fn is_incomplete_part(&self) -> bool {
        self.part.is_some_and(|(k, n)| k < n)
    }
}

/// Split a whole message (or the joined parts of one envelope) into frames. `None` when the
/// payload does not match the headers (not written by agentstream).
pub fn unpack(headers: &HeaderMap, meta: &Meta, payload: &Bytes) -> Option<Vec<Frame>> {
    let mut merged: HashMap<usize, u64> = HashMap::new();
    if let Some(v) = headers.get(COALESCED) {
        for pair in v.as_str().split(',') {
            let (i, k) = pair.split_once(':')?;
            merged.insert(i.parse().ok()?, k.parse().ok()?);
        }
    }
    let received = headers.get(RECEIVED).and_then(|v| v.as_str().parse().ok()).unwrap_or(0);
    let lines: Vec<&[u8]> =
        if meta.part.is_some() { vec![&payload[..]] } else { payload.split(|b| *b == b'\n').collect() };
    let mut frames = Vec::with_capacity(lines.len());
    let mut sequence = meta.first;
    for (i, line) in lines.iter().enumerate() {
        // Whoever can publish on the subject wrote it: text that is not UTF-8 is no envelope (a
        // WebSocket text message could not carry it). The message is refused like any foreign
        // one; its numbers then reach subscribers as a gap.
        std::str::from_utf8(line).ok()?;
        let last_covered = sequence + merged.get(&i).copied().unwrap_or(0);
        frames.push(Frame {
            sequence,
            last_covered,
            terminal: meta.terminal && i + 1 == lines.len(),
            json: payload.slice_ref(line),
            received_ms: received,
        });
        sequence = last_covered + 1;
    }
    (sequence == meta.last + 1 && !frames.is_empty()).then_some(frames)
}

/// A run request on the work queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkRequest {
    /// Who asked.
    pub tenant: String,
    /// The agent's configured name.
    pub agent: String,
    /// The prompt.
    pub prompt: String,
    /// The model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The session to continue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<String>,
    /// After this (Unix ms) the asking instance has given up: a worker drops the request.
    pub deadline_ms: u64,
}

impl WorkRequest {
    /// The request as the broker's.
    pub fn run_request(&self) -> RunRequest {
        RunRequest {
            agent: self.agent.clone(),
            prompt: self.prompt.clone(),
            model: self.model.clone(),
            resume: self.resume.clone(),
        }
    }
}

/// A worker's answer to a run request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum WorkReply {
    /// Started: the run's record.
    Started(Box<RunInfo>),
    /// Not started.
    Refused {
        /// `unknown_agent`, `invalid` (with `field`), `unavailable` or `backend`.
        kind: String,
        /// The field at fault, for `invalid`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        field: Option<String>,
        /// What went wrong.
        message: String,
    },
}

/// A run record as stored in the runs bucket: the API's record and who owns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredRun {
    /// The tenant.
    pub tenant: String,
    /// The worker that runs it.
    pub owner: String,
    /// The record.
    pub run: RunInfo,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(seq: u64, coalesced: u64, terminal: bool, size: usize) -> Frame {
        let body = format!("{{\"sequence\":{seq}}}");
        let json = format!("{body}{}", " ".repeat(size.saturating_sub(body.len())));
        Frame { sequence: seq, last_covered: seq + coalesced, terminal, json: Bytes::from(json), received_ms: 7 }
    }

    fn roundtrip(frames: &[Frame], max: usize) -> Vec<Outgoing> {
        let out = pack("run_x", frames, max);
        let mut got = Vec::new();
        let mut parts = BytesMut::new();
        for m in &out {
            let meta = Meta::of(&m.headers).unwrap();
            if meta.part.is_some() {
                parts.extend_from_slice(&m.payload);
                if meta.is_incomplete_part() {
                    continue;
                }
                got.extend(unpack(&m.headers, &meta, &std::mem::take(&mut parts).freeze()).unwrap());
            } else {
                got.extend(unpack(&m.headers, &meta, &m.payload).unwrap());
            }
        }
        assert_eq!(got, frames, "what is unpacked is what was packed");
        out
    }

    #[test]
    fn frames_pack_into_ranges_and_back() {
        let frames =
            vec![frame(0, 0, false, 10), frame(1, 3, false, 10), frame(5, 0, false, 10), frame(6, 0, true, 10)];
        let out = roundtrip(&frames, 1 << 20);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].headers.get(COALESCED).unwrap().as_str(), "1:3");
        assert_eq!(out[0].msg_id, "run_x.0");
        let meta = Meta::of(&out[0].headers).unwrap();
        assert_eq!((meta.first, meta.last, meta.terminal), (0, 6, true));
        // Small messages: several, tiling 0..=6.
        let out = roundtrip(&frames, 25);
        let metas: Vec<Meta> = out.iter().map(|m| Meta::of(&m.headers).unwrap()).collect();
        assert!(metas.len() > 1);
        for pair in metas.windows(2) {
            assert_eq!(pair[1].first, pair[0].last + 1, "no gap, no overlap");
        }
    }

    #[test]
    fn a_frame_larger_than_a_message_goes_in_parts() {
        let frames = vec![frame(0, 0, false, 10), frame(1, 0, false, 95), frame(2, 0, true, 10)];
        let out = roundtrip(&frames, 40);
        let parts: Vec<Option<(u32, u32)>> = out.iter().map(|m| Meta::of(&m.headers).unwrap().part).collect();
        assert_eq!(parts, [None, Some((1, 3)), Some((2, 3)), Some((3, 3)), None]);
        assert_eq!(out[2].msg_id, "run_x.1.2of3");
    }

    #[test]
    fn foreign_messages_are_refused() {
        let mut h = HeaderMap::new();
        assert!(Meta::of(&h).is_none());
        h.insert(SEQ, "4");
        h.insert(LAST, "3");
        assert!(Meta::of(&h).is_none(), "last before first");
        h.insert(LAST, "5");
        let meta = Meta::of(&h).unwrap();
        assert!(unpack(&h, &meta, &Bytes::from_static(b"{}")).is_none(), "one line cannot cover 4..=5");
        assert!(unpack(&h, &meta, &Bytes::from_static(b"{}\n{\"a\":\"\xff\"}")).is_none(), "not UTF-8");
        assert_eq!(unpack(&h, &meta, &Bytes::from_static(b"{}\n{}")).map(|f| f.len()), Some(2));
        h.insert(PART, "3/2");
        assert!(Meta::of(&h).is_none());
    }

    #[test]
    fn requests_and_replies_have_one_wire_form() {
        let r = WorkRequest {
            tenant: "a".into(),
            agent: "claude".into(),
            prompt: "hi".into(),
            model: None,
            resume: None,
            deadline_ms: 5,
        };
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(text, r#"{"tenant":"a","agent":"claude","prompt":"hi","deadlineMs":5}"#);
        assert_eq!(serde_json::from_str::<WorkRequest>(&text).unwrap(), r);
        assert!(serde_json::from_str::<WorkRequest>(r#"{"tenant":"a","bin":"/bin/sh"}"#).is_err());
        let refused = WorkReply::Refused { kind: "unavailable".into(), field: None, message: "no".into() };
        let text = serde_json::to_string(&refused).unwrap();
        assert_eq!(text, r#"{"refused":{"kind":"unavailable","message":"no"}}"#);
    }
}
