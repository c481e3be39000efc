//! Decoding a harness CLI's stdout into [`OutputEvent`]s.
//!
//! One stateful [`Decoder`] per run: `feed(bytes)` at any chunking, `finish()` at end of input.
//! Decoders never panic and never fail on a line: a line that is not JSON, not an object, of an
//! unknown type or of an unexpected shape yields no event and is counted in [`DecodeStats`].
//! The one exception is kimi, which prints its failures as plain text on stdout: those lines
//! become `error` updates.
//!
//! Numbers keep the value the harness printed: floats are read with round-trip precision
//! (serde_json's `float_roundtrip`), so a cost such as `total_cost_usd` prints back with the same
//! digits, and values kept verbatim (`rawInput`, `rawOutput`, `extra`) are the printed text.
//!
//! Each harness has its own module, a directory with one job per file: `mod.rs` maps the lines
//! to events (the decoder), `wire.rs` reads the harness's wire format (claude and qwen read the
//! stream-json protocol they share, module `stream_json`), `describe.rs` describes its tool calls
//! (titles, content, locations, diffs). `HARNESSES` below is the one list of harnesses: adding
//! one is an [`Agent`] variant, a decoder module, one registry line, its kind table in
//! [`crate::tools`], its command line in the runner, and golden fixtures — no binding changes
//! (every binding's agent list comes from the core).
//!
//! The cross-harness tool tables and title helpers are in
//! [`crate::tools`]. What the decoders share lives in [`context`] (envelope stamping, the
//! session id), `task_list` (task-list calls and their refusal), `id_set` (the open call ids of
//! one run) and, for reading JSON lines, the crate-private `crate::json` module (the one-pass
//! scanner, borrowed serde types, verbatim records).

use std::ffi::CStr;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::event::OutputEvent;
use crate::framing::{DEFAULT_MAX_LINE_BYTES, Frame, LineFramer};
use crate::redact::RedactionPolicy;
use crate::sanitize::Sanitizer;

pub mod context;
mod id_set;
mod overlapped;
mod task_list;

mod claude;
mod codex;
mod droid;
mod gemini;
mod kimi;
mod opencode;
mod qwen;
mod stream_json;

pub use context::DecodeContext;
pub use overlapped::{
    Blocking, HELPER_ENV, OVERLAP_MIN_BYTES, OverlappedDecoder, PIECE_BYTES, SPIN_BEFORE_PARK, WINDOW_BYTES,
};

/// The harness CLIs agentstream understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Agent {
    /// Claude Code (`claude -p … --output-format stream-json --verbose`).
    Claude,
    /// OpenAI Codex CLI (`codex exec --json`).
    Codex,
    /// Gemini CLI (`gemini -p … --output-format stream-json`).
    Gemini,
    /// Qwen Code (`qwen -p … --output-format stream-json`).
    Qwen,
    /// Kimi CLI (`kimi --print --output-format stream-json`).
    Kimi,
    /// OpenCode (`opencode run --format json`).
    Opencode,
    /// Factory Droid (`droid exec --output-format stream-json`).
    Droid,
}

/// One harness: its agent, its name and its decoder. The ONE list of harnesses: names, the
/// decoder of each, `Agent::ALL` and every binding's agent list come from it. Adding a harness
/// is a variant of [`Agent`], a decoder module, and a line here (plus its fixtures).
struct Harness {
    agent: Agent,
    /// The lowercase name, NUL-terminated (the C ABI hands it out as is).
    name: &'static CStr,
    decoder: fn() -> Box<dyn HarnessDecoder>,
}

fn boxed<D: HarnessDecoder + Default + 'static>() -> Box<dyn HarnessDecoder> {
    Box::new(D::default())
}

/// The registry, in documentation order (the order of `Agent::ALL`).
const HARNESSES: [Harness; 7] = [
    Harness { agent: Agent::Claude, name: c"claude", decoder: boxed::<claude::ClaudeDecoder> },
    Harness { agent: Agent::Codex, name: c"codex", decoder: boxed::<codex::CodexDecoder> },
    Harness { agent: Agent::Gemini, name: c"gemini", decoder: boxed::<gemini::GeminiDecoder> },
    Harness { agent: Agent::Qwen, name: c"qwen", decoder: boxed::<qwen::QwenDecoder> },
    Harness { agent: Agent::Kimi, name: c"kimi", decoder: boxed::<kimi::KimiDecoder> },
    Harness { agent: Agent::Opencode, name: c"opencode", decoder: boxed::<opencode::OpencodeDecoder> },
    Harness { agent: Agent::Droid, name: c"droid", decoder: boxed::<droid::DroidDecoder> },
];

impl Agent {
    /// Every agent, in documentation order.
    pub const ALL: [Agent; HARNESSES.len()] = {
        let mut all = [Agent::Claude; HARNESSES.len()];
        let mut i = 0;
        while i < HARNESSES.len() {
            all[i] = HARNESSES[i].agent;
            i += 1;
        }
        all
    };

    fn harness(self) -> &'static Harness {
        // Every variant has its line (pinned by a test); the first is never reached otherwise.
        HARNESSES.iter().find(|h| h.agent == self).unwrap_or(&HARNESSES[0])
    }

    /// The lowercase name used on the command line and in every binding.
    pub fn name(self) -> &'static str {
        self.harness().name.to_str().unwrap_or_default()
    }

    /// [`Agent::name`] NUL-terminated, for a C ABI that hands out static strings.
    pub fn c_name(self) -> &'static CStr {
        self.harness().name
    }

    /// The valid names joined for error messages: `claude, codex, …`.
    pub fn valid_names() -> String {
        Agent::ALL.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ")
    }
}

impl fmt::Display for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An agent name that is not one of [`Agent::ALL`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownAgent(pub String);

impl fmt::Display for UnknownAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown agent {:?}: expected one of {}", self.0, Agent::valid_names())
    }
}

impl std::error::Error for UnknownAgent {}

impl FromStr for Agent {
    type Err = UnknownAgent;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        Agent::ALL
            .into_iter()
            .find(|a| a.name() == lower || (lower == "claude-code" && *a == Agent::Claude))
            .ok_or_else(|| UnknownAgent(s.to_string()))
    }
}

/// Why a line that did not read as the decoder's struct is unusable, as its [`LineOutcome`].
pub(crate) fn classify_failure(line: &str) -> LineOutcome {
    crate::json::lenient::classify_failure(line).into()
}

impl From<crate::json::Unusable> for LineOutcome {
    fn from(u: crate::json::Unusable) -> Self {
        match u {
            crate::json::Unusable::InvalidJson => LineOutcome::InvalidJson,
            crate::json::Unusable::NotObject => LineOutcome::NotObject,
            crate::json::Unusable::UnexpectedShape => LineOutcome::UnexpectedShape,
        }
    }
}

/// What became of one line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineOutcome {
    /// A known line; it produced zero or more events.
    Decoded,
    /// Empty or whitespace only.
    Blank,
    /// Not valid JSON (kimi: plain-text error output, kept as an `error` update).
    InvalidJson,
    /// Valid JSON, but not an object (`null`, a number, an array, …).
    NotObject,
    /// An object whose `type` (or role) this decoder does not know.
    UnknownType,
    /// A known type whose fields have shapes the decoder could not use.
    UnexpectedShape,
}

/// Per-run decode statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DecodeStats {
    /// Bytes fed.
    pub bytes: u64,
    /// Lines framed (including blank and oversize lines).
    pub lines: u64,
    /// Events produced.
    pub events: u64,
    /// Empty or whitespace-only lines.
    pub blank_lines: u64,
    /// Lines that were not valid JSON.
    pub invalid_json: u64,
    /// Valid JSON lines that were not objects.
    pub non_object: u64,
    /// Objects of a type the decoder does not know.
    pub unknown_type: u64,
    /// Known types with unusable field shapes.
    pub unexpected_shape: u64,
    /// Lines over the maximum length, skipped.
    pub oversize_lines: u64,
    /// Lines with invalid UTF-8 (replaced with U+FFFD).
    pub invalid_utf8_lines: u64,
}

impl DecodeStats {
    /// One line for people: `12 lines, 9 events, 1 invalid JSON, …` (zero counters omitted).
    pub fn summary(&self) -> String {
        let plural = |n: u64, one: &str, many: &str| if n == 1 { format!("1 {one}") } else { format!("{n} {many}") };
        let mut parts = vec![plural(self.lines, "line", "lines"), plural(self.events, "event", "events")];
        for (n, label) in [
            (self.blank_lines, "blank"),
            (self.invalid_json, "invalid JSON"),
            (self.non_object, "non-object JSON"),
            (self.unknown_type, "unknown type"),
            (self.unexpected_shape, "unexpected shape"),
            (self.oversize_lines, "oversize (skipped)"),
            (self.invalid_utf8_lines, "invalid UTF-8 (replaced)"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {label}"));
            }
        }
        parts.join(", ")
    }

    /// Lines that were not the harness's JSON: invalid JSON (for kimi that includes its
    /// plain-text errors), JSON that is not an object, objects of an unknown type or an
    /// unusable shape, and oversize lines.
    pub fn unrecognized_lines(&self) -> u64 {
        [self.invalid_json, self.non_object, self.unknown_type, self.unexpected_shape, self.oversize_lines]
            .iter()
            .fold(0u64, |sum, n| sum.saturating_add(*n))
    }

    /// True when nothing was decoded from input that had something in it: no event came out
    /// and at least one line was not the harness's JSON — another program's output (a wrong
    /// executable, another harness) or no JSON at all. Empty input is not this.
    pub fn nothing_decoded(&self) -> bool {
        self.events == 0 && self.unrecognized_lines() > 0
    }
}

/// A problem with the input worth telling a person about (the run goes on).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Diagnostic {
    /// 1-based line number in the input.
    pub line: u64,
    /// What went wrong and what was done about it.
    pub message: String,
}

/// Options for a [`Decoder`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecoderOptions {
    /// Lines longer than this many bytes are skipped and reported (default 16 MiB).
    pub max_line_bytes: usize,
    /// Whether secret shapes in tool-call inputs are masked (default: on; see
    /// [`redact`](mod@crate::redact)).
    pub redaction: RedactionPolicy,
}

impl Default for DecoderOptions {
    fn default() -> Self {
        DecoderOptions { max_line_bytes: DEFAULT_MAX_LINE_BYTES, redaction: RedactionPolicy::default() }
    }
}

impl DecoderOptions {
    /// These options with another line limit.
    pub fn with_max_line_bytes(mut self, max_line_bytes: usize) -> Self {
        self.max_line_bytes = max_line_bytes;
        self
    }

    /// These options with another redaction policy.
    pub fn with_redaction(mut self, redaction: RedactionPolicy) -> Self {
        self.redaction = redaction;
        self
    }
}

/// Per-harness line decoding. Implementations keep whatever state matching needs.
pub(crate) trait HarnessDecoder: Send {
    /// Decode one complete line (no line ending, valid UTF-8, not blank).
    fn decode_line(&mut self, line: &str, ctx: &mut DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome;

    /// End of input: emit anything held back (e.g. kimi's multi-line plain-text errors).
    fn finish(&mut self, _ctx: &mut DecodeContext, _out: &mut Vec<OutputEvent>) {}

    /// The harness's end-of-run record as people know it (e.g. "`result` line"), which the
    /// decoder reports in [`DecodeContext::final_result_seen`]; `None` for a harness that prints
    /// none (kimi).
    fn final_record(&self) -> Option<&'static str>;

    /// The session id in the harness's stderr text, for harnesses that print it only there
    /// (kimi's "To resume this session: kimi -r <id>").
    fn session_in_stderr<'t>(&self, _text: &'t str) -> Option<&'t str> {
        None
    }
}

fn harness_decoder(agent: Agent) -> Box<dyn HarnessDecoder> {
    (agent.harness().decoder)()
}

/// The stateful decoder of one run. See the module docs.
pub struct Decoder {
    agent: Agent,
    framer: LineFramer,
    harness: Box<dyn HarnessDecoder>,
    ctx: DecodeContext,
    stats: DecodeStats,
    diagnostics: Diagnostics,
    sanitizer: Sanitizer,
    finished: bool,
    /// Input came after `finish` (and the diagnostic saying so was given).
    told_finished: bool,
    /// The end of the stderr seen so far (a session hint may be split across chunks).
    stderr_tail: String,
    /// A session id found only on stderr: reported by [`Decoder::session_id`], never stamped
    /// on events (they are decoded from stdout alone, identically in a run and a replay).
    stderr_session: Option<String>,
}

/// The most diagnostics held between two [`Decoder::take_diagnostics`] calls; past that they
/// are counted (a flood of bad lines must not grow memory; the statistics count every line).
pub const MAX_DIAGNOSTICS: usize = 256;

/// Diagnostics waiting to be taken, bounded by [`MAX_DIAGNOSTICS`].
#[derive(Debug, Default)]
struct Diagnostics {
    kept: Vec<Diagnostic>,
    not_kept: u64,
}

impl Diagnostics {
    fn push(&mut self, d: Diagnostic) {
        if self.kept.len() < MAX_DIAGNOSTICS {
            self.kept.push(d);
        } else {
            self.not_kept += 1;
        }
    }

    fn take(&mut self, line: u64) -> Vec<Diagnostic> {
        let mut out = std::mem::take(&mut self.kept);
        if self.not_kept > 0 {
            out.push(Diagnostic {
                line,
                message: format!(
                    "{} more diagnostics up to here were not kept (at most {MAX_DIAGNOSTICS} are held between two reads; the statistics count every line)",
                    std::mem::take(&mut self.not_kept)
                ),
            });
        }
        out
    }
}

impl fmt::Debug for Decoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Decoder").field("agent", &self.agent).field("stats", &self.stats).finish_non_exhaustive()
    }
}

impl Decoder {
    /// A decoder for `agent` with default options.
    pub fn new(agent: Agent) -> Self {
        Self::with_options(agent, DecoderOptions::default())
    }

    /// A decoder for `agent`.
    pub fn with_options(agent: Agent, options: DecoderOptions) -> Self {
        Decoder {
            agent,
            framer: LineFramer::new(options.max_line_bytes),
            harness: harness_decoder(agent),
            ctx: DecodeContext::default(),
            stats: DecodeStats::default(),
            diagnostics: Diagnostics::default(),
            sanitizer: Sanitizer::new(options.redaction),
            finished: false,
            told_finished: false,
            stderr_tail: String::new(),
            stderr_session: None,
        }
    }

    /// Change the redaction policy for the events decoded from now on (before the first feed,
    /// for a whole run).
    pub fn set_redaction(&mut self, policy: RedactionPolicy) {
        self.sanitizer = Sanitizer::new(policy);
    }

    /// Whether this decoder masks tool inputs.
    pub fn redacts(&self) -> bool {
        self.sanitizer.redacts()
    }

    /// The agent this decoder reads.
    pub fn agent(&self) -> Agent {
        self.agent
    }

    /// Statistics so far.
    pub fn stats(&self) -> &DecodeStats {
        &self.stats
    }

    /// The harness session id, once seen (on stdout, or on stderr for a harness that prints it
    /// only there).
    pub fn session_id(&self) -> Option<&str> {
        self.ctx.session_id.as_deref().or(self.stderr_session.as_deref())
    }

    /// `text` the harness printed (a stderr line a message quotes), masked as this decoder masks
    /// tool inputs: secret shapes and the secrets remembered from the run's inputs; unchanged
    /// when redaction is off.
    pub fn mask_printed_text<'t>(&mut self, text: &'t str) -> std::borrow::Cow<'t, str> {
        self.sanitizer.mask_raw_text(text)
    }

    /// Show the decoder the harness's stderr text (any chunking): a harness that prints its
    /// session id only there (kimi) gets it captured for [`session_id`](Self::session_id), so a
    /// later run can continue the session. Changes no event: events come from stdout alone.
    pub fn observe_stderr(&mut self, text: &str) {
        const KEEP: usize = 512;
        if self.stderr_session.is_some() {
            return;
        }
        self.stderr_tail.push_str(text);
        match self.harness.session_in_stderr(&self.stderr_tail) {
            Some(id) => {
                self.stderr_session = Some(id.to_string());
                self.stderr_tail = String::new();
            }
            None => crate::tail::keep_last(&mut self.stderr_tail, KEEP),
        }
    }

    /// True once the harness printed its end-of-run record (and nothing re-opened the run since);
    /// always true for a harness that prints none (kimi).
    pub fn final_result_seen(&self) -> bool {
        self.harness.final_record().is_none() || self.ctx.final_result_seen
    }

    /// The harness's end-of-run record (e.g. "`result` line") when it prints one and it has not
    /// been seen: an input that ends now did not complete, whatever the exit status
    /// (decisions.md §1). `None` when it was seen, or the harness prints none.
    pub fn missing_final_result(&self) -> Option<&'static str> {
        self.harness.final_record().filter(|_| !self.ctx.final_result_seen)
    }

    /// Why the input is not this harness's output, when nothing was decoded from it
    /// ([`DecodeStats::nothing_decoded`]), in one sentence for people:
    /// `no events decoded: 3 lines were not claude JSON (2 invalid JSON, 1 unknown type)`.
    pub fn unrecognized_output(&self) -> Option<String> {
        let s = &self.stats;
        if !s.nothing_decoded() {
            return None;
        }
        let unrecognized = s.unrecognized_lines();
        let non_blank = s.lines.saturating_sub(s.blank_lines);
        let (count, verb) = match (unrecognized, non_blank) {
            (1, 1) => ("1 line".to_string(), "was"),
            (n, m) if n == m => (format!("{n} lines"), "were"),
            (1, m) => (format!("1 of {m} lines"), "was"),
            (n, m) => (format!("{n} of {m} lines"), "were"),
        };
        let kinds: Vec<String> = [
            (s.invalid_json, "invalid JSON"),
            (s.non_object, "non-object JSON"),
            (s.unknown_type, "unknown type"),
            (s.unexpected_shape, "unexpected shape"),
            (s.oversize_lines, "oversize"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, label)| format!("{n} {label}"))
        .collect();
        // Lines with invalid UTF-8 are counted in a category above too: said apart, as the sign
        // of binary input.
        let binary = match s.invalid_utf8_lines {
            0 => String::new(),
            n => format!("; {n} not valid UTF-8"),
        };
        Some(format!("no events decoded: {count} {verb} not {} JSON ({}{binary})", self.agent, kinds.join(", ")))
    }

    /// Diagnostics so far (oversize lines, invalid UTF-8), oldest first; cleared by the call.
    pub fn take_diagnostics(&mut self) -> Vec<Diagnostic> {
        self.diagnostics.take(self.stats.lines)
    }

    /// True when bytes of an unfinished line are held.
    pub fn has_partial_line(&self) -> bool {
        self.framer.has_partial()
    }

    /// Feed bytes; returns the events of every line completed by them.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<OutputEvent> {
        // Room for a typical event per ~256 input bytes, so a large chunk's events do not move
        // through every power-of-two size of the vector (bounded: a huge feed grows as usual).
        let mut out = Vec::with_capacity((bytes.len() / 256).min(4096));
        self.feed_into(bytes, &mut out);
        out
    }

    /// Feed bytes, appending events to `out`.
    pub fn feed_into(&mut self, bytes: &[u8], out: &mut Vec<OutputEvent>) {
        if self.finished {
            self.fed_after_finish(bytes.len());
            return;
        }
        self.stats.bytes += bytes.len() as u64;
        let Decoder { framer, harness, ctx, stats, diagnostics, sanitizer, .. } = self;
        let mut line = LineState { harness: harness.as_mut(), ctx, stats, diagnostics, sanitizer };
        // Straight into `out`: no per-line buffer to move each event through.
        framer.push(bytes, &mut |frame| {
            line.decode_frame(frame, out);
        });
    }

    /// Feed bytes; `on_line` gets each completed line's text (lossy UTF-8, no line ending; `None`
    /// for a skipped oversize line) and the events decoded from it, in order. The runner uses
    /// this to put each raw line on `stdout` right before its content events.
    pub fn feed_lines(&mut self, bytes: &[u8], on_line: &mut dyn FnMut(Option<&str>, &mut Vec<OutputEvent>)) {
        if self.finished {
            self.fed_after_finish(bytes.len());
            return;
        }
        self.stats.bytes += bytes.len() as u64;
        let Decoder { framer, harness, ctx, stats, diagnostics, sanitizer, .. } = self;
        let mut line = LineState { harness: harness.as_mut(), ctx, stats, diagnostics, sanitizer };
        let mut events = Vec::new();
        framer.push(bytes, &mut |frame| {
            let text = line.decode_frame(frame, &mut events);
            on_line(text.as_deref(), &mut events);
            events.clear();
        });
    }

    /// Input after [`finish`](Self::finish) is not decoded: said once, in a diagnostic.
    fn fed_after_finish(&mut self, bytes: usize) {
        if bytes > 0 && !std::mem::replace(&mut self.told_finished, true) {
            self.diagnostics.push(Diagnostic {
                line: self.stats.lines,
                message: format!(
                    "{bytes} byte(s) fed after finish() were not decoded (nor is anything fed later): a decoder \
                     reads one stream to its end; make a new one for the next"
                ),
            });
        }
    }

    /// End of input: decode a final line without a newline, then flush held-back events.
    pub fn finish(&mut self) -> Vec<OutputEvent> {
        let mut out = Vec::new();
        self.finish_lines(&mut |_, events| out.append(events));
        out
    }

    /// Like [`Decoder::finish`], with the per-line callback of [`Decoder::feed_lines`]. Events
    /// held back until the end are reported with no line text (`None`).
    pub fn finish_lines(&mut self, on_line: &mut dyn FnMut(Option<&str>, &mut Vec<OutputEvent>)) {
        if self.finished {
            return;
        }
        self.finished = true;
        let Decoder { framer, harness, ctx, stats, diagnostics, sanitizer, .. } = self;
        let mut line = LineState { harness: harness.as_mut(), ctx, stats, diagnostics, sanitizer };
        let mut events = Vec::new();
        framer.finish(&mut |frame| {
            let text = line.decode_frame(frame, &mut events);
            on_line(text.as_deref(), &mut events);
            events.clear();
        });
        line.harness.finish(line.ctx, &mut events);
        if !events.is_empty() {
            line.stats.events += events.len() as u64;
            line.sanitize(&mut events, 0);
            on_line(None, &mut events);
        }
    }

    /// Decode one complete line (without its line ending), appending events to `out`. For
    /// callers that frame lines themselves; statistics are updated as for `feed`.
    pub fn decode_line(&mut self, line: &[u8], out: &mut Vec<OutputEvent>) -> LineOutcome {
        let Decoder { harness, ctx, stats, diagnostics, sanitizer, .. } = self;
        let before_counts = *stats;
        let mut state = LineState { harness: harness.as_mut(), ctx, stats, diagnostics, sanitizer };
        state.decode_frame(Frame::Line(line), out);
        let stats = &*state.stats;
        if stats.blank_lines > before_counts.blank_lines {
            LineOutcome::Blank
        } else if stats.invalid_json > before_counts.invalid_json {
            LineOutcome::InvalidJson
        } else if stats.non_object > before_counts.non_object {
            LineOutcome::NotObject
        } else if stats.unknown_type > before_counts.unknown_type {
            LineOutcome::UnknownType
        } else if stats.unexpected_shape > before_counts.unexpected_shape {
            LineOutcome::UnexpectedShape
        } else {
            LineOutcome::Decoded
        }
    }
}

/// The parts of a [`Decoder`] that decoding one line touches (borrowed apart from the framer,
/// which calls back into it).
struct LineState<'d> {
    harness: &'d mut dyn HarnessDecoder,
    ctx: &'d mut DecodeContext,
    stats: &'d mut DecodeStats,
    diagnostics: &'d mut Diagnostics,
    sanitizer: &'d mut Sanitizer,
}

impl LineState<'_> {
    /// Prepare the events from `from` on for delivery ([`Sanitizer`]) and report what had to be
    /// repaired or could not be computed (as diagnostics of the current line).
    fn sanitize(&mut self, events: &mut [OutputEvent], from: usize) {
        let mut repairs = crate::raw_json::Repairs::default();
        for ev in &mut events[from..] {
            repairs += self.sanitizer.event(ev);
        }
        let line = self.stats.lines;
        if !repairs.is_empty() {
            self.diagnostics.push(Diagnostic { line, message: repairs.describe() });
        }
        for what in crate::counters::take_overflows() {
            self.diagnostics.push(Diagnostic {
                line,
                message: format!("{what} does not fit 64 bits (the harness printed a number near 2^64): left out"),
            });
        }
    }

    fn decode_frame<'f>(
        &mut self,
        frame: Frame<'f>,
        events: &mut Vec<OutputEvent>,
    ) -> Option<std::borrow::Cow<'f, str>> {
        let LineState { harness, ctx, stats, diagnostics, .. } = self;
        stats.lines += 1;
        match frame {
            Frame::Oversize { len, terminated } => {
                stats.oversize_lines += 1;
                diagnostics.push(Diagnostic {
                    line: stats.lines,
                    message: format!(
                        "skipped a line of {len} bytes{}: over the maximum line length; raise max_line_bytes to decode it",
                        if terminated { "" } else { " (input ended inside it)" }
                    ),
                });
                None
            }
            Frame::Line(_) | Frame::Text(_) => {
                let text = frame.text().unwrap_or_default();
                if matches!(text, std::borrow::Cow::Owned(_)) {
                    stats.invalid_utf8_lines += 1;
                    diagnostics.push(Diagnostic {
                        line: stats.lines,
                        message: "invalid UTF-8 replaced with U+FFFD".to_string(),
                    });
                }
                if is_blank(&text) {
                    stats.blank_lines += 1;
                    return Some(text);
                }
                let before = events.len();
                let outcome = decode_guarded(*harness, &text, ctx, events);
                stats.events += (events.len() - before) as u64;
                self.sanitize(events, before);
                let stats = &mut *self.stats;
                match outcome {
                    LineOutcome::Decoded | LineOutcome::Blank => {}
                    LineOutcome::InvalidJson => stats.invalid_json += 1,
                    LineOutcome::NotObject => stats.non_object += 1,
                    LineOutcome::UnknownType => stats.unknown_type += 1,
                    LineOutcome::UnexpectedShape => stats.unexpected_shape += 1,
                }
                Some(text)
            }
        }
    }
}

/// A decoder must never take the run down: a panic in harness code (a bug) is contained to the
/// line, counted as an unexpected shape, and the decoder's events for that line are discarded.
fn decode_guarded(
    harness: &mut dyn HarnessDecoder,
    text: &str,
    ctx: &mut DecodeContext,
    events: &mut Vec<OutputEvent>,
) -> LineOutcome {
    let before = events.len();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| harness.decode_line(text, ctx, events))) {
        Ok(outcome) => outcome,
        Err(_) => {
            events.truncate(before);
            LineOutcome::UnexpectedShape
        }
    }
}

/// Decode a whole recorded output at once (tool inputs masked; see [`DecoderOptions`] to turn
/// that off).
pub fn parse(agent: Agent, input: &[u8]) -> Vec<OutputEvent> {
    parse_with_options(agent, input, DecoderOptions::default())
}

/// [`parse`] with the given options (line limit, redaction).
pub fn parse_with_options(agent: Agent, input: &[u8], options: DecoderOptions) -> Vec<OutputEvent> {
    let mut decoder = Decoder::with_options(agent, options);
    let mut events = decoder.feed(input);
    events.extend(decoder.finish());
    events
}

/// Whether `text` is empty or only whitespace (as `str::trim` sees it); a line that starts with
/// a visible ASCII character, as every JSON line does, is answered from its first byte.
#[inline]
pub(crate) fn is_blank(text: &str) -> bool {
    match text.as_bytes().first() {
        Some(c) if c.is_ascii_graphic() => false,
        _ => text.trim().is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_after_finish_is_not_decoded_and_says_so_once() {
        let line = b"{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n";
        let mut d = Decoder::new(Agent::Codex);
        d.feed(line);
        d.finish();
        assert!(d.take_diagnostics().is_empty());
        assert!(d.feed(line).is_empty() && d.feed(line).is_empty());
        assert_eq!(d.stats().lines, 1, "nothing decoded after finish");
        let said = d.take_diagnostics();
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].message.contains("after finish()") && said[0].message.contains("new one"),
            "{}",
            said[0].message
        );
    }

    #[test]
    fn blank_is_what_trim_leaves_empty() {
        for (text, blank) in
            [("", true), (" \t\r", true), ("\u{3000}\u{a0}", true), ("{}", false), (" {", false), ("\u{a0}x", false)]
        {
            assert_eq!(is_blank(text), blank, "{text:?}");
            assert_eq!(text.trim().is_empty(), blank);
        }
    }

    #[test]
    fn the_summary_counts_in_words() {
        let one = DecodeStats { lines: 1, events: 1, ..Default::default() };
        assert_eq!(one.summary(), "1 line, 1 event");
        let many = DecodeStats { lines: 12, events: 0, invalid_json: 2, ..Default::default() };
        assert_eq!(many.summary(), "12 lines, 0 events, 2 invalid JSON");
    }

    #[test]
    fn input_with_nothing_decoded_says_what_it_was() {
        for agent in Agent::ALL {
            let mut d = Decoder::new(agent);
            d.feed(b"\n");
            assert_eq!(d.unrecognized_output(), None, "{agent}: blank lines are no foreign output");
            d.feed(b"{\"type\":\"never-heard-of-it\"}\n[1]\n");
            d.finish();
            let why = d.unrecognized_output().unwrap_or_else(|| panic!("{agent}: {:?}", d.stats()));
            assert_eq!(
                why,
                format!("no events decoded: 2 lines were not {agent} JSON (1 non-object JSON, 1 unknown type)")
            );
            assert!(d.stats().nothing_decoded());
        }
        // Plain text is kimi's way to print a failure: an event, so something was decoded.
        let mut kimi = Decoder::new(Agent::Kimi);
        kimi.feed(b"Error code: 401\n");
        kimi.finish();
        assert_eq!(kimi.unrecognized_output(), None);
        let mut claude = Decoder::new(Agent::Claude);
        claude.feed(b"Error code: 401\n");
        claude.finish();
        assert_eq!(
            claude.unrecognized_output().unwrap(),
            "no events decoded: 1 line was not claude JSON (1 invalid JSON)"
        );
        // Empty input is not foreign output, and decoded input is not either.
        assert_eq!(Decoder::new(Agent::Codex).unrecognized_output(), None);
    }

    #[test]
    fn every_agent_has_one_registry_line() {
        for (i, a) in Agent::ALL.iter().enumerate() {
            assert_eq!(HARNESSES.iter().filter(|h| h.agent == *a).count(), 1, "{a:?}");
            assert_eq!(HARNESSES[i].agent, *a);
            assert_eq!(a.c_name().to_str().unwrap(), a.name());
            assert_eq!(serde_json::to_value(a).unwrap(), a.name(), "the serde name is the registry's");
            assert_eq!(Decoder::new(*a).agent(), *a);
        }
    }

    #[test]
    fn agent_names_round_trip_and_errors_list_the_valid_names() {
        for a in Agent::ALL {
            assert_eq!(a.name().parse::<Agent>().unwrap(), a);
        }
        let err = "cursor".parse::<Agent>().unwrap_err().to_string();
        assert!(err.contains("claude, codex, gemini, qwen, kimi, opencode, droid"), "{err}");
    }

    #[test]
    fn bad_lines_are_counted_not_fatal() {
        for agent in Agent::ALL {
            let mut d = Decoder::new(agent);
            let input = b"null\n42\n[1]\n{not json\n\n   \n{\"type\":\"never-heard-of-it\"}\n\xff\xfe\n";
            let _ = d.feed(input);
            let _ = d.finish();
            let s = d.stats();
            assert_eq!(s.lines, 8, "{agent}");
            assert_eq!(s.blank_lines, 2, "{agent}");
            assert_eq!(s.non_object, 3, "{agent}");
            assert_eq!(s.invalid_utf8_lines, 1, "{agent}");
            if agent != Agent::Kimi {
                assert_eq!(s.invalid_json, 2, "{agent}");
                assert_eq!(s.unknown_type, 1, "{agent}");
            }
        }
    }
}
