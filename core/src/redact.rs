//! Masking secret shapes in tool-call inputs (decisions.md §6).
//!
//! Redaction happens in the core, where events are emitted (the decoder's output, and
//! [`RunStream`](crate::stream::RunStream) for events posted to it directly), before an event is
//! numbered: a transport that redacts has already handed the value to whatever it logs to.
//! [`Redactor::mask_event`] masks EVERY field derived from a tool call's input, wherever it is
//! emitted:
//!
//! | event | masked |
//! |---|---|
//! | `tool_call` | `rawInput` (every string, every object key, the value of a secret-named key), `title`, `content` (text and diffs), `locations` |
//! | `tool_call_update` | `title`, diffs in `content` (`oldText`, `newText`, `path`), `locations`, `rawOutput` (harnesses echo the input in their result records: codex's `command`, opencode's `state.input`); in a result's text, only the secrets this run's inputs held (a result echoing its input) |
//! | `plan` | each entry's `content` (a to-do tool's input restated) |
//! | `user_message_chunk` | a subagent's (`parentToolCallId` set): its text, the prompt of the Task call that started it; any other: only the secrets this run's inputs held |
//! | `error` | its `message`: only the secrets this run's inputs held (an error quoting the call it refused) |
//! | every event | `extra` (claude's `task_description` is a Task call's input) |
//!
//! Hook events (`arguments`, titles, `raw_output`) and the CLI's human view are derived from
//! these events, so they are masked too. Answer text (message and thought chunks) is never
//! altered: deltas that no longer reassemble to the answer are a corrupted answer; neither is a
//! tool result's text, except where it repeats a secret of the run's own inputs. The raw `stdout` and
//! `stderr` channels carry the process's own bytes verbatim to the library's own reader, by
//! design (a consumer that must not see secrets reads `content`); what hands them on to others
//! — the server's streams, a `view` page, the CLI's `--json` — masks them with
//! [`Redactor::mask_raw_text`].
//!
//! **At any depth, failing closed.** A container nested deeper than
//! [`MAX_DEPTH`](crate::raw_json::MAX_DEPTH) inside a masked record is replaced whole by
//! `"[redacted]"`: what is too deep to judge is masked, never passed through.
//!
//! **Derived fields.** A title or a diff is derived from the input, often shortened (`ls
//! ghp_0123…`): a secret cut in half no longer looks like a secret. So every secret masked in a
//! run's inputs is remembered ([`Redactor`], up to [`MAX_KNOWN_SECRETS`] of at least
//! [`MIN_KNOWN_SECRET`] bytes) and masked wherever it appears in a derived field later, and so is
//! its beginning where a field was cut right after it (at `…`).
//!
//! Each match is replaced by the literal [`REDACTED`] (`[redacted]`); the rest of the string is
//! kept. The shapes, all found by small byte scanners (no regex):
//!
//! | shape | example | masked |
//! |---|---|---|
//! | API-key prefixes at a word start: `sk-`/`sk_` (incl. `sk-ant-…`, `sk-proj-…`, `sk_live_…`), `pk_`/`pk-`, `rk_`/`rk-`, `api-`/`api_`, then ≥ 8 of `[A-Za-z0-9_-]` containing a digit (or ≥ 24 without) | `sk-live-01234567890abcdef` | the whole key |
//! | provider tokens: GitHub `ghp_`/`gho_`/`ghu_`/`ghs_`/`ghr_` (≥ 20), `github_pat_` (≥ 20), GitLab `glpat-` (≥ 20), Slack `xoxb-`/`xoxp-`/`xoxa-`/`xoxr-`/`xoxs-` (≥ 10), Google `AIza` (≥ 30), Hugging Face `hf_` (≥ 30) | `ghp_0123…` | the whole token |
//! | AWS access key ids: `AKIA`/`ASIA` + exactly 16 of `[A-Z0-9]` | `AKIAIOSFODNN7EXAMPLE` | the id |
//! | JWTs: `eyJ` + ≥ 10 base64url chars, with up to two more `.`-separated parts | `eyJhbGciOi….eyJzdWIi….sig` | the token |
//! | `Bearer <token>` (any case), token ≥ 8 chars of `[A-Za-z0-9-._~+/=]` with a digit or symbol (or ≥ 20) | `Authorization: Bearer abc123…` | the token (`Bearer ` kept) |
//! | PEM private keys: `-----BEGIN … PRIVATE KEY-----` … `-----END … PRIVATE KEY-----` | | the whole block (to the end of the text when the END line is missing) |
//! | credentials in a URL: `scheme://user:password@host`, or a generated-looking `scheme://token@host` | `postgres://admin:S3cret@db` | the password (the token) |
//! | a value after a secret-named key, as `k=v`, `k: v`, `"k": "v"`, `'k': 'v'`, `--k v`, `--k=v` | `password=hunter2`, `"token": "…"` | the value |
//! | command-line passwords: `-u user:password` / `--user user:password` (curl, wget, …); `-p<password>` of mysql/mariadb tools; `-p <password>` of `sshpass`, `docker`/`podman`/`helm` `login`, `mongo`/`mongosh`; `-a <password>` of `redis-cli` (the tool being the command the option belongs to: looking back past other options and their values, `docker exec db mysql -p…` and prose included) | `mysql -uroot -phunter22`, `curl -u bob:pw` | the password |
//!
//! A key is secret-named when its last word (split on `_` `-` `.` and camelCase) is, or ends
//! with, `password`, `passwd`, `passphrase`, `secret`, `credential(s)`, or is `pwd` or `pass` —
//! then any value of ≥ 3 chars is masked, except `null`/`none`/`true`/`false`/`undefined`,
//! `$VAR` references and `***` — or is, or ends with, `token`, or is `key`, `apikey`,
//! `accesskey`, `secretkey`, `privatekey`, `signature`, `auth` — then the value is masked when it
//! looks generated: ≥ 16 chars of `[A-Za-z0-9+/=_.~-]` mixing at least two of lower case, upper
//! case and digits (long hex and base64 values); for an environment-variable name
//! (`UPPER_SNAKE`, as in `export GITHUB_TOKEN=…`) any ≥ 8 such chars. So
//! `aws_secret_access_key=wJalr…`, `GITHUB_TOKEN=…` and `PGPASSWORD=…` are masked,
//! `sort_key=created_at` is not. In JSON values ([`redact_value`]) the same rule applies to an
//! object member whose key is secret-named: `{"api_key": "…"}` has its value masked whole; an
//! object KEY that holds a secret shape is masked like any string (two keys masked to the same
//! text are told apart by a ` #n` suffix, so no member is lost).
//!
//! Known false positives: a word such as `api-version-2024-01-01` (prefix + digit); a
//! mixed-case identifier of ≥ 16 chars under a `…key`/`…token` name (`cache_key=UserProfile2024v`);
//! any ≥ 3-char value under a password-named key, placeholders included.
//! Known misses: upper-case prefixes (`SK-…`); secrets under names not listed (`DB_URL` holding
//! a bare token); short or single-class values under lower-case `key`/`token` names
//! (`token=abcdefghijklmnopqrst`); a value over 1 KiB under a secret-named key (not judged,
//! which keeps scanning linear); bare long hex/base64 without a key name (deliberately: git SHAs
//! and ids look the same); a secret split across two strings; `-p <password>` of tools not
//! listed (`-p` is a port, a package or a path for most); tool RESULT text; the raw `stdout`
//! line the tool input was decoded from.

mod prefilter;

use std::borrow::Cow;

use serde_json::Value;

use crate::event::{
    ContentBlock, DiffContent, ImageContent, OutputEvent, RawJson, SessionUpdate, ToolCallContent, ToolCallLocation,
};

/// The mask that replaces each secret.
pub const REDACTED: &str = "[redacted]";

/// Whether the run masks tool-call inputs. On by default; a run option turns it off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RedactionPolicy {
    /// Mask secret shapes in tool-call inputs (default true).
    pub enabled: bool,
}

impl Default for RedactionPolicy {
    fn default() -> Self {
        RedactionPolicy { enabled: true }
    }
}

impl RedactionPolicy {
    /// Redaction off: tool-call inputs are delivered exactly as the harness printed them.
    pub fn disabled() -> Self {
        RedactionPolicy { enabled: false }
    }

    /// The policy of an optional `redact` switch, as the bindings take one: absent is the
    /// default (on).
    pub fn from_switch(redact: Option<bool>) -> Self {
        redact.map_or_else(Self::default, |enabled| RedactionPolicy { enabled })
    }

    /// Apply the policy to one content event (a one-event [`Redactor`] when enabled: nothing is
    /// remembered from earlier events; use a `Redactor` for a stream of events).
    pub fn apply(&self, event: &mut OutputEvent) {
        if self.enabled {
            Redactor::new().mask_event(event);
        }
    }
}

/// Mask the tool-call input-derived fields of `event` in place (see the [module docs](self)),
/// remembering nothing: [`Redactor::mask_event`] of a fresh [`Redactor`].
pub fn redact_tool_input(event: &mut OutputEvent) {
    Redactor::new().mask_event(event);
}

/// The most secrets a [`Redactor`] remembers per run (the first ones seen).
pub const MAX_KNOWN_SECRETS: usize = 256;

/// Secrets shorter than this are not remembered (only their shape masks them): masking every
/// occurrence of a three-letter password in later diffs would mask ordinary words.
pub const MIN_KNOWN_SECRET: usize = 6;

/// The masker of one run's events: masks every tool-input-derived field (see the [module
/// docs](self)) and remembers the secrets it masked in the run's inputs, so that later derived
/// fields — a shortened title, a diff, a result record echoing the input — are masked even where
/// the secret no longer has its shape.
#[derive(Debug, Default, Clone)]
pub struct Redactor {
    known: Vec<String>,
    /// A raw line of stdout (0) or stderr (1) opened a PEM private key without closing it: the
    /// lines of its body follow on that stream, each masked whole (see
    /// [`Redactor::mask_raw_stream_text`]). One flag per stream: a line of the other stream
    /// between two body lines neither ends the block nor is taken for part of it.
    in_raw_pem: [bool; 2],
}

impl Redactor {
    /// A redactor that has seen nothing yet.
    pub fn new() -> Self {
        Redactor::default()
    }

    /// The secrets remembered so far (longest first).
    pub fn known_secrets(&self) -> &[String] {
        &self.known
    }

    fn remember(&mut self, secret: &str) {
        // A multi-line secret (a PEM block) may reappear re-wrapped or escaped (`\n` in a
        // JSON text): its long lines are remembered one by one too.
        if secret.contains('\n') {
            for line in secret.lines().map(str::trim).filter(|l| l.len() >= 16 && !l.starts_with("-----")) {
                self.remember_one(line);
            }
        }
        self.remember_one(secret);
    }

    fn remember_one(&mut self, secret: &str) {
        let secret = secret.trim();
        if secret.len() < MIN_KNOWN_SECRET
            || secret.len() > MAX_VALUE
            || secret == REDACTED
            || self.known.len() >= MAX_KNOWN_SECRETS
            || self.known.iter().any(|k| k == secret)
        {
            return;
        }
        self.known.push(secret.to_string());
        // Longest first: a secret that contains another is masked whole.
        self.known.sort_by_key(|k| std::cmp::Reverse(k.len()));
    }

    /// Mask the input-derived fields of `event` in place (see the [module docs](self)).
    pub fn mask_event(&mut self, event: &mut OutputEvent) {
        let subagent = event.parent_tool_call_id.is_some();
        match &mut event.update {
            SessionUpdate::ToolCall(call) => {
                // The input first: what it masks is remembered for the fields derived from it.
                if let Some(raw) = &mut call.raw_input {
                    self.mask_record(raw);
                }
                self.mask_text(&mut call.title);
                if let Some(content) = &mut call.content {
                    for c in content {
                        match c {
                            ToolCallContent::Content { content } => self.mask_block(content),
                            ToolCallContent::Diff(diff) => self.mask_diff(diff),
                        }
                    }
                }
                if let Some(locations) = &mut call.locations {
                    self.mask_locations(locations);
                }
            }
            SessionUpdate::ToolCallUpdate(update) => {
                if let Some(raw) = &mut update.raw_output {
                    self.mask_record(raw);
                }
                if let Some(title) = &mut update.title {
                    self.mask_text(title);
                }
                if let Some(content) = &mut update.content {
                    for c in content {
                        match c {
                            // A result is the harness's text: only a secret this run's inputs
                            // held is masked in it (a result echoing the input), nothing else.
                            ToolCallContent::Content { content: ContentBlock::Text { text } } => {
                                self.mask_known_in(text)
                            }
                            ToolCallContent::Content { content: ContentBlock::Image(_) } => {}
                            ToolCallContent::Diff(diff) => self.mask_diff(diff),
                        }
                    }
                }
                if let Some(locations) = &mut update.locations {
                    self.mask_locations(locations);
                }
            }
            // A subagent's user message is the prompt its Task call was given (a tool input);
            // any other user message, like a result, is masked of this run's input secrets only.
            SessionUpdate::UserMessageChunk { content } if subagent => self.mask_block(content),
            SessionUpdate::UserMessageChunk { content: ContentBlock::Text { text } } => self.mask_known_in(text),
            // A plan is a to-do tool's input (claude's TodoWrite, …) restated.
            SessionUpdate::Plan { entries } => {
                for entry in entries {
                    self.mask_text(&mut entry.content);
                }
            }
            // A harness's error often quotes the call it refused.
            SessionUpdate::Error { message, .. } => self.mask_known_in(message),
            SessionUpdate::UserMessageChunk { content: ContentBlock::Image(_) }
            | SessionUpdate::AgentMessageChunk { .. }
            | SessionUpdate::AgentThoughtChunk { .. }
            | SessionUpdate::Usage { .. } => {}
        }
        // A harness's own fields on the event (claude's `task_description`: a Task call's input).
        if let Some(extra) = &mut event.extra {
            self.mask_record(extra);
        }
    }

    /// Mask the secrets remembered from this run's inputs in `text`, nothing else.
    fn mask_known_in(&self, text: &mut String) {
        if let Cow::Owned(masked) = mask_known(text, &self.known) {
            *text = masked;
        }
    }

    fn mask_block(&mut self, block: &mut ContentBlock) {
        match block {
            ContentBlock::Text { text } => self.mask_text(text),
            ContentBlock::Image(ImageContent { uri, .. }) => {
                if let Some(uri) = uri {
                    self.mask_text(uri);
                }
            }
        }
    }

    fn mask_diff(&mut self, diff: &mut DiffContent) {
        self.mask_text(&mut diff.path);
        if let Some(old) = &mut diff.old_text {
            self.mask_text(old);
        }
        self.mask_text(&mut diff.new_text);
    }

    fn mask_locations(&mut self, locations: &mut [ToolCallLocation]) {
        for l in locations {
            self.mask_text(&mut l.path);
        }
    }

    /// Mask one derived text field: its own secret shapes, then every remembered secret.
    fn mask_text(&mut self, text: &mut String) {
        let masked = match self.mask_str(text) {
            Cow::Owned(m) => Some(m),
            Cow::Borrowed(_) => None,
        };
        if let Some(m) = masked {
            *text = m;
        }
    }

    /// `text` with its own secret shapes masked (and remembered), then every remembered secret.
    fn mask_str<'t>(&mut self, text: &'t str) -> Cow<'t, str> {
        let mut found = Vec::new();
        let masked = redact_collecting(text, &mut found);
        for f in found {
            self.remember(&f);
        }
        let again = match mask_known(&masked, &self.known) {
            Cow::Owned(m) => Some(m),
            Cow::Borrowed(_) => None,
        };
        again.map_or(masked, Cow::Owned)
    }

    /// Mask every string and key of a JSON value in place (see [`redact_value`]), remembering
    /// what it masked, then every remembered secret; whether anything changed.
    fn mask_json(&mut self, value: &mut Value) -> bool {
        let mut found = Vec::new();
        let mut changed = mask_value(value, &mut found);
        for f in found {
            self.remember(&f);
        }
        if !self.known.is_empty() {
            changed |= mask_value_known(value, &self.known);
        }
        changed
    }

    /// Whether `text` may hold something to mask: a secret remembered so far, or what some
    /// mask needs ([`may_hold_secrets`]). Most text holds neither and is not parsed.
    fn may_hold_a_secret(&self, text: &str) -> bool {
        self.known.iter().any(|k| memchr::memmem::find(text.as_bytes(), k.as_bytes()).is_some())
            || may_hold_secrets(text.as_bytes())
    }

    /// Mask raw text a harness printed (a `stdout` line, a piece of `stderr`) for raw channels
    /// that leave the process to others (the server's streams; a library's own reader gets
    /// them verbatim), remembering what it masked. A JSON line is masked as a tool input is —
    /// every string and key, so a secret escaped inside a string (`\"api_key\": \"…\"`) is
    /// found as it would be unescaped — plus every secret remembered from earlier lines (a
    /// tool's result echoing its input), and rewritten (compact) only when something was
    /// masked; other text is masked as [`redact`] does, plus the remembered secrets. A trailing
    /// newline is kept. Borrowed back unchanged when nothing matched. The text is taken as
    /// stdout's ([`mask_raw_stream_text`](Self::mask_raw_stream_text) says which stream).
    pub fn mask_raw_text<'t>(&mut self, text: &'t str) -> Cow<'t, str> {
        self.mask_raw_stream_text(RawStream::Stdout, text)
    }

    /// [`mask_raw_text`](Self::mask_raw_text) of a text printed on `stream`: a PEM key printed
    /// line by line on one stream is followed on that stream only.
    pub fn mask_raw_stream_text<'t>(&mut self, stream: RawStream, text: &'t str) -> Cow<'t, str> {
        let body = text.strip_suffix('\n').unwrap_or(text);
        if memchr::memchr(b'\n', body.as_bytes()).is_none() {
            return self.mask_raw_line(stream, text);
        }
        // Several lines in one item (merged while the reader was behind, or a piece of
        // stderr): each on its own, so that a JSON line is still masked as JSON.
        let mut out: Option<String> = None;
        let mut done = 0;
        for line in text.split_inclusive('\n') {
            match (self.mask_raw_line(stream, line), out.as_mut()) {
                (Cow::Owned(masked), Some(o)) => o.push_str(&masked),
                (Cow::Owned(masked), None) => {
                    // The first change: the lines before it as they were, then this one.
                    let mut o = String::with_capacity(text.len() + masked.len());
                    o.push_str(&text[..done]);
                    o.push_str(&masked);
                    out = Some(o);
                }
                (Cow::Borrowed(_), Some(o)) => o.push_str(line),
                (Cow::Borrowed(_), None) => {}
            }
            done += line.len();
        }
        out.map_or(Cow::Borrowed(text), Cow::Owned)
    }

    /// [`mask_raw_text`](Self::mask_raw_text) of one line (with or without its newline). A
    /// PEM private key printed line by line (`cat key.pem`) is masked across its lines: the
    /// BEGIN line as one text is, then each body line whole, through its END line; a line
    /// that cannot be part of the body ends it (an END line that never comes masks nothing
    /// more).
    fn mask_raw_line<'t>(&mut self, stream: RawStream, text: &'t str) -> Cow<'t, str> {
        let body = text.strip_suffix('\n').unwrap_or(text);
        let newline = if body.len() < text.len() { "\n" } else { "" };
        let in_pem = &mut self.in_raw_pem[stream as usize];
        if *in_pem {
            // Indented as in a YAML or JSON file that embeds the key.
            let line = body.trim();
            let end = line.contains("-----END ");
            *in_pem = !end && is_pem_body_line(line);
            if end || *in_pem {
                return Cow::Owned(format!("{REDACTED}{newline}"));
            }
        }
        if !self.may_hold_a_secret(text) {
            return Cow::Borrowed(text);
        }
        self.in_raw_pem[stream as usize] = pem_left_open(body.as_bytes());
        if let Ok(mut value) = serde_json::from_str::<Value>(body) {
            return if self.mask_json(&mut value) {
                Cow::Owned(value.to_string() + newline)
            } else {
                Cow::Borrowed(text)
            };
        }
        // The text without its newline: a PEM block cut at the line's end masks to the end of
        // the text, which must not take the newline with it.
        match self.mask_str(body) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            Cow::Owned(masked) => Cow::Owned(masked + newline),
        }
    }

    /// Mask a JSON record in place (see [`redact_value`]), remembering what it masked.
    fn mask_record(&mut self, raw: &mut RawJson) {
        if !self.may_hold_a_secret(raw.get()) {
            return;
        }
        let mut value = raw.to_value();
        if self.mask_json(&mut value) {
            *raw = RawJson::from_value(&value);
        }
    }
}

/// `text` with every occurrence of a `known` secret masked, and the beginning of one where the
/// text was cut right after it (at `…`, the mark every shortened title ends with).
fn mask_known<'t>(text: &'t str, known: &[String]) -> Cow<'t, str> {
    if known.is_empty() {
        return Cow::Borrowed(text);
    }
    let b = text.as_bytes();
    let mut spans = Vec::new();
    for k in known {
        for at in memchr::memmem::find_iter(b, k.as_bytes()) {
            spans.push((at, at + k.len()));
        }
    }
    for cut in memchr::memmem::find_iter(b, "…".as_bytes()) {
        let before = &text[..cut];
        let longest = known
            .iter()
            .filter_map(|k| (4..k.len()).rev().find(|&n| k.is_char_boundary(n) && before.ends_with(&k[..n])))
            .max();
        if let Some(n) = longest {
            spans.push((cut - n, cut));
        }
    }
    apply_spans(text, spans)
}

/// [`redact_value`] for a record kept as text: rewritten only when something was masked.
///
/// Most tool inputs hold nothing secret-shaped, so the text is first scanned for what every
/// mask needs ([`may_hold_secrets`]); only when that finds something is it parsed. A record
/// nested past [`MAX_DEPTH`](crate::raw_json::MAX_DEPTH) has its deep containers masked whole.
pub fn redact_raw(raw: &mut RawJson) {
    if let Some((bounded, _)) = raw.normalized(crate::raw_json::DeepContainers::Masked) {
        *raw = bounded;
    }
    if !may_hold_secrets(raw.get().as_bytes()) {
        return;
    }
    let mut value = raw.to_value();
    if mask_value(&mut value, &mut Vec::new()) {
        *raw = RawJson::from_value(&value);
    }
}

/// Mask every string inside a JSON value in place ([`redact`] on each) and every object key,
/// and mask whole the string value of an object member whose key is secret-named (see the
/// module docs).
pub fn redact_value(value: &mut Value) {
    mask_value(value, &mut Vec::new());
}

/// [`redact_value`], pushing each masked secret onto `found`; true when something changed.
/// Iterative over the containers (a value may be as deep as serde_json allows).
fn mask_value(value: &mut Value, found: &mut Vec<String>) -> bool {
    let mut changed = false;
    let mut pending: Vec<&mut Value> = vec![value];
    while let Some(v) = pending.pop() {
        match v {
            Value::String(s) => changed |= replace_collecting(s, found),
            Value::Array(items) => pending.extend(items.iter_mut()),
            Value::Object(members) => {
                if members.keys().any(|k| may_hold_secrets(k.as_bytes())) {
                    changed |= mask_keys(members, found);
                }
                for (key, v) in members.iter_mut() {
                    match v {
                        Value::String(s)
                            if s != REDACTED
                                && key_class(key.as_bytes())
                                    .is_some_and(|c| value_is_secret(c, key.as_bytes(), s.as_bytes())) =>
                        {
                            found.push(std::mem::replace(s, REDACTED.to_string()));
                            changed = true;
                        }
                        other => pending.push(other),
                    }
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    changed
}

/// Mask the keys of `members` that hold a secret shape, keeping order and every member.
fn mask_keys(members: &mut serde_json::Map<String, Value>, found: &mut Vec<String>) -> bool {
    let old = std::mem::take(members);
    let mut changed = false;
    for (key, v) in old {
        let mut key = match redact_collecting(&key, found) {
            Cow::Owned(masked) => {
                changed = true;
                masked
            }
            Cow::Borrowed(_) => key,
        };
        if members.contains_key(&key) {
            let base = key.clone();
            key = (2..).map(|n| format!("{base} #{n}")).find(|k| !members.contains_key(k)).unwrap_or(base);
        }
        members.insert(key, v);
    }
    changed
}

/// Mask every remembered secret in every string and key of `value`; true when something changed.
fn mask_value_known(value: &mut Value, known: &[String]) -> bool {
    let mut changed = false;
    let mut pending: Vec<&mut Value> = vec![value];
    while let Some(v) = pending.pop() {
        match v {
            Value::String(s) => {
                if let Cow::Owned(masked) = mask_known(s, known) {
                    *s = masked;
                    changed = true;
                }
            }
            Value::Array(items) => pending.extend(items.iter_mut()),
            Value::Object(members) => {
                if members.keys().any(|k| matches!(mask_known(k, known), Cow::Owned(_))) {
                    let old = std::mem::take(members);
                    for (key, v) in old {
                        let mut key = mask_known(&key, known).into_owned();
                        if members.contains_key(&key) {
                            let base = key.clone();
                            key = (2..)
                                .map(|n| format!("{base} #{n}"))
                                .find(|k| !members.contains_key(k))
                                .unwrap_or(base);
                        }
                        members.insert(key, v);
                    }
                    changed = true;
                }
                pending.extend(members.values_mut());
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    changed
}

fn replace_collecting(s: &mut String, found: &mut Vec<String>) -> bool {
    if let Cow::Owned(masked) = redact_collecting(s, found) {
        *s = masked;
        return true;
    }
    false
}

/// False only when masking can change nothing in `text`: neither [`redact`] on it as plain
/// text, nor [`redact_value`] on the JSON value it is the text of. A scan for what each mask
/// needs, without parsing.
///
/// Every mask needs, in some (decoded) string: a PEM `-----BEGIN `, a prefixed token at a word
/// start, the word `bearer`, or a secret-named key (its last word `key`, `token`, `password`,
/// …) right before a separator (`=`, `:`, a quote, a blank, a backslash) or at the end of an
/// object key; or a URL with credentials (`://…@`, whose slashes JSON may escape: `:\/\/`,
/// looked for as well). None of the others contain a character JSON escapes, so in JSON text
/// they appear as they are, with two exceptions handled here: any `\uXXXX` escape could spell
/// anything (the text is then parsed), and a short escape before a token (`\nsk-…`) leaves a
/// letter before it in the text where the decoded string has a word boundary (a letter after a
/// backslash counts as one). After a key name, a decoded quote or backslash shows as a
/// backslash in the text.
pub fn may_hold_secrets(text: &[u8]) -> bool {
    static NEEDLES: std::sync::OnceLock<prefilter::Needles> = std::sync::OnceLock::new();
    NEEDLES.get_or_init(|| prefilter::Needles::new(pre_scan_needles())).any_near(text, |j| trigger_at(text, j))
}

/// [`may_hold_secrets`] judging every byte of `text`, without the needle search that narrows
/// down which bytes are judged: slower, and always the same verdict. Public for the tests and
/// the `pre_scan` fuzz target, which compare the two.
#[doc(hidden)]
pub fn may_hold_secrets_judging_every_byte(text: &[u8]) -> bool {
    (0..text.len()).any(|j| trigger_at(text, j))
}

/// Whether a mask may be anchored on byte `j` of `b` (see [`may_hold_secrets`]).
fn trigger_at(b: &[u8], j: usize) -> bool {
    let c = b[j];
    if !ANCHOR[c as usize] {
        return false;
    }
    match c {
        b'\\' => b.get(j + 1) == Some(&b'u') || secret_word_ends_at(b, j),
        b'-' => b[j..].starts_with(PEM_BEGIN) || prefixed_token_ends_at(b, j) || option_at(b, j),
        b'_' => prefixed_token_ends_at(b, j),
        b'A' => prefixed_token_from(b, j),
        b'J' => j >= 2 && prefixed_token_from(b, j - 2),
        b'b' | b'B' => b.len() >= j + 6 && b[j..j + 6].eq_ignore_ascii_case(b"bearer"),
        b':' => url_credentials_at(b, j) || secret_word_ends_at(b, j),
        _ => secret_word_ends_at(b, j),
    }
}

/// The needles every trigger of [`trigger_at`] lies near (see [`prefilter`]), from the same
/// tables the triggers use: the tail of each secret-named key word, each token prefix, `bearer`,
/// the PEM header, `\u`, the password options and `://` (also as JSON may escape it, `:\/\/`).
fn pre_scan_needles() -> Vec<Vec<u8>> {
    let mut needles: Vec<Vec<u8>> = Vec::new();
    needles.extend(SECRET_WORDS.iter().map(|w| w[w.len().saturating_sub(SECRET_WORD_TAIL)..].to_vec()));
    needles.extend(PREFIXES.iter().map(|p| p.prefix.to_vec()));
    needles.extend(PASSWORD_OPTIONS.iter().map(|o| o.to_vec()));
    needles.extend([b"bearer".to_vec(), PEM_BEGIN.to_vec(), b"\\u".to_vec(), b"://".to_vec(), br":\/\/".to_vec()]);
    needles
}

/// The header line every PEM private key begins with.
const PEM_BEGIN: &[u8] = b"-----BEGIN ";

/// The beginnings of the options that may take a password (`-p`, `-u`, `-a`, `--user`; see
/// [`scan_password_options`]). A `--key value` flag needs no entry: its secret-named key is a
/// key word before a blank.
const PASSWORD_OPTIONS: [&[u8]; 4] = [b"-p", b"-u", b"-a", b"--user"];

/// The bytes [`may_hold_secrets`] looks at.
const ANCHOR: [bool; 256] = {
    let mut t = [false; 256];
    let bytes = b"\\-_AJbB\"' =:\t";
    let mut i = 0;
    while i < bytes.len() {
        t[bytes[i] as usize] = true;
        i += 1;
    }
    t
};

/// A command-line option that may take a password (`-p`, `-u`, `-a`, `--user`) at `j`, at a
/// word start (judged on JSON text too: an escape before it leaves a letter).
fn option_at(b: &[u8], j: usize) -> bool {
    let starts_word =
        j == 0 || b[j - 1].is_ascii_whitespace() || matches!(b[j - 1], b'"' | b'\'') || json_word_start(b, j);
    starts_word && PASSWORD_OPTIONS.iter().any(|o| b[j..].starts_with(o))
}

/// `://` at `j` with an `@` within the next [`MAX_VALUE`] bytes: a URL that may carry credentials.
fn url_credentials_at(b: &[u8], j: usize) -> bool {
    // In JSON text the slashes may be escaped (`\/`, as PHP's encoder writes them).
    let scheme_end = if b[j..].starts_with(b"://") {
        3
    } else if b[j..].starts_with(br":\/\/") {
        5
    } else {
        return false;
    };
    memchr::memchr(b'@', &b[j..(j + scheme_end + MAX_VALUE).min(b.len())]).is_some()
}

/// A word boundary before `i` in the decoded string, judged on JSON text: a short escape
/// (`\n`) leaves a letter in the text where the string has a control character.
fn json_word_start(b: &[u8], i: usize) -> bool {
    word_start(b, i) || (i >= 2 && b[i - 2] == b'\\')
}

/// A prefixed token (one of [`PREFIXES`]) at a word start at `i`.
fn prefixed_token_from(b: &[u8], i: usize) -> bool {
    json_word_start(b, i) && prefixed_token_at(b, i).is_some()
}

/// A prefixed token whose prefix (ending in `-` or `_`) ends at `j`.
fn prefixed_token_ends_at(b: &[u8], j: usize) -> bool {
    PREFIXES.iter().any(|p| {
        p.prefix.len() <= j + 1 && {
            let i = j + 1 - p.prefix.len();
            &b[i..=j] == p.prefix && json_word_start(b, i) && token_end(b, j + 1, p).is_some()
        }
    })
}

/// A word that [`key_class`] finds secret-named (case-insensitively) ending right before `j`,
/// where a byte that can follow a key is: `=`, `:`, a quote, a blank or a backslash.
///
/// The eight bytes before `j` are compared at once with each word's last (up to) eight bytes,
/// after OR-ing 0x20 into every byte: that lowercases letters and can only add matches.
fn secret_word_ends_at(b: &[u8], j: usize) -> bool {
    if j == 0 || !SECRET_WORD_LAST[usize::from(b[j - 1] | 0x20)] {
        return false;
    }
    let from = j.saturating_sub(SECRET_WORD_TAIL);
    let mut last = [0u8; SECRET_WORD_TAIL];
    last[SECRET_WORD_TAIL - (j - from)..].copy_from_slice(&b[from..j]);
    let w = u64::from_le_bytes(last) | 0x2020_2020_2020_2020;
    SECRET_WORD_ENDS.iter().any(|&(mask, end)| w & mask == end)
}

/// The secret-named last words of a key (see [`key_class`]), as [`secret_word_ends_at`] and the
/// pre-scan's needles know them.
const SECRET_WORDS: [&[u8]; 12] = [
    b"key",
    b"token",
    b"pass",
    b"passwd",
    b"password",
    b"passphrase",
    b"pwd",
    b"secret",
    b"credential",
    b"credentials",
    b"signature",
    b"auth",
];

/// How many of a secret word's last bytes [`secret_word_ends_at`] compares (one `u64`).
const SECRET_WORD_TAIL: usize = 8;

/// The last letters of [`SECRET_WORDS`] (a quick first test of [`secret_word_ends_at`]).
const SECRET_WORD_LAST: [bool; 256] = {
    let mut t = [false; 256];
    let mut k = 0;
    while k < SECRET_WORDS.len() {
        t[SECRET_WORDS[k][SECRET_WORDS[k].len() - 1] as usize] = true;
        k += 1;
    }
    t
};

/// `(mask, bytes)` of the last (up to) eight bytes of each secret-named last word of a key
/// (see [`key_class`]), placed as the top bytes of a little-endian word.
const SECRET_WORD_ENDS: [(u64, u64); SECRET_WORDS.len()] = {
    let mut out = [(0u64, 0u64); SECRET_WORDS.len()];
    let mut k = 0;
    while k < SECRET_WORDS.len() {
        let w = SECRET_WORDS[k];
        let n = if w.len() < SECRET_WORD_TAIL { w.len() } else { SECRET_WORD_TAIL };
        let mut i = 0;
        while i < n {
            let shift = 8 * (8 - n + i);
            out[k].0 |= 0xff << shift;
            out[k].1 |= (w[w.len() - n + i] as u64) << shift;
            i += 1;
        }
        k += 1;
    }
    out
};

/// Mask the secret shapes in `text` (see the module docs). Borrowed back unchanged when
/// nothing matched.
pub fn redact(text: &str) -> Cow<'_, str> {
    redact_collecting(text, &mut Vec::new())
}

/// The spans of `b` that [`redact`] masks, unsorted and possibly overlapping.
fn secret_spans(b: &[u8]) -> Vec<(usize, usize)> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    if !may_hold_secrets(b) {
        return spans;
    }
    scan_pem(b, &mut spans);
    scan_prefixed(b, &mut spans);
    scan_bearer(b, &mut spans);
    scan_key_values(b, &mut spans);
    scan_flags(b, &mut spans);
    scan_url_credentials(b, &mut spans);
    scan_password_options(b, &mut spans);
    spans
}

/// [`redact`], pushing the text of each masked span onto `found`.
fn redact_collecting<'t>(text: &'t str, found: &mut Vec<String>) -> Cow<'t, str> {
    let spans = secret_spans(text.as_bytes());
    for &(start, end) in &spans {
        if let Some(secret) = text.get(start..end) {
            found.push(secret.to_string());
        }
    }
    apply_spans(text, spans)
}

/// `text` with each of `spans` (merged where they overlap) replaced by [`REDACTED`].
fn apply_spans(text: &str, mut spans: Vec<(usize, usize)>) -> Cow<'_, str> {
    if spans.is_empty() {
        return Cow::Borrowed(text);
    }
    spans.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    let mut i = 0;
    while i < spans.len() {
        let (start, mut end) = spans[i];
        i += 1;
        while i < spans.len() && spans[i].0 <= end {
            end = end.max(spans[i].1);
            i += 1;
        }
        // Every span starts and ends next to an ASCII byte, so these are char boundaries.
        out.push_str(&text[pos..start.max(pos)]);
        out.push_str(REDACTED);
        pos = end.max(pos);
    }
    out.push_str(&text[pos..]);
    Cow::Owned(out)
}

// ---------------------------------------------------------------------------------------------
// Byte classes

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn is_key_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

fn is_upper_digit(c: u8) -> bool {
    c.is_ascii_uppercase() || c.is_ascii_digit()
}

fn is_alnum(c: u8) -> bool {
    c.is_ascii_alphanumeric()
}

fn is_bearer_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

fn is_token_value_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=' | b'_' | b'.' | b'~' | b'-')
}

/// True when position `i` starts a word: the byte before is not `[A-Za-z0-9_]` (a non-ASCII
/// byte counts as a boundary).
fn word_start(b: &[u8], i: usize) -> bool {
    i == 0 || !is_word(b[i - 1])
}

fn run_len(b: &[u8], from: usize, class: fn(u8) -> bool) -> usize {
    b[from.min(b.len())..].iter().take_while(|&&c| class(c)).count()
}

// ---------------------------------------------------------------------------------------------
// PEM private keys

fn scan_pem(b: &[u8], spans: &mut Vec<(usize, usize)>) {
    const BEGIN: &[u8] = b"-----BEGIN ";
    const END: &[u8] = b"-----END ";
    const DASHES: &[u8] = b"-----";
    let mut from = 0;
    while let Some(off) = memchr::memmem::find(&b[from..], BEGIN) {
        let start = from + off;
        let label_at = start + BEGIN.len();
        let Some(label_len) = memchr::memmem::find(&b[label_at..], DASHES) else { break };
        let label = &b[label_at..label_at + label_len];
        if !label.ends_with(b"PRIVATE KEY") || label.contains(&b'\n') {
            from = label_at;
            continue;
        }
        let body = label_at + label_len + DASHES.len();
        let end = memchr::memmem::find(&b[body..], END)
            .and_then(|e| {
                let after = body + e + END.len();
                memchr::memmem::find(&b[after..], DASHES).map(|d| after + d + DASHES.len())
            })
            .unwrap_or(b.len());
        spans.push((start, end));
        from = end;
    }
}

/// The raw stream a text was printed on (see [`Redactor::mask_raw_stream_text`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawStream {
    /// The process's standard output.
    Stdout = 0,
    /// Its standard error.
    Stderr = 1,
}

/// Whether the line `b` opens a PEM private key it does not close (its END line is still to
/// come): its last BEGIN header is followed by nothing but what a body can be printed as (see
/// [`is_pem_body_text`]). A header named in code or a sentence (`grep` output, a log message:
/// text after it that no body has, such as `":` or `in the upload, refused`) opens nothing —
/// the lines after it are not masked as a key's.
fn pem_left_open(b: &[u8]) -> bool {
    let mut spans = Vec::new();
    scan_pem(b, &mut spans);
    let Some(&(start, _)) = spans.last() else { return false };
    if memchr::memmem::find(&b[start..], b"-----END ").is_some() {
        return false;
    }
    // scan_pem found the header's closing dashes after its label.
    let label_at = start + b"-----BEGIN ".len();
    let Some(label_len) = memchr::memmem::find(&b[label_at..], b"-----") else { return false };
    is_pem_body_text(&b[label_at + label_len + b"-----".len()..])
}

/// Whether `line` can be a line of a PEM body: body text, one of the headers of an encrypted
/// key (`Proc-Type: …`, `DEK-Info: …`), or the blank line after them.
fn is_pem_body_line(line: &str) -> bool {
    line.starts_with("Proc-Type:") || line.starts_with("DEK-Info:") || is_pem_body_text(line.as_bytes())
}

/// Whether `b` is nothing but what a PEM body can be printed as: base64 and whitespace, with
/// the quotes, backslash escapes (`\n` in a JSON string, a shell's `echo "…\n…"`) and terminal
/// colour codes (`ESC [ … m`) a key printed by a program can carry. Lenient on purpose: a line
/// wrongly taken for a body is masked (over-masking), one wrongly refused shows a key.
fn is_pem_body_text(b: &[u8]) -> bool {
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            c if c.is_ascii_alphanumeric()
                || c.is_ascii_whitespace()
                || matches!(c, b'+' | b'/' | b'=' | b'"' | b'\'') =>
            {
                i += 1
            }
            b'\\' => i += 2,
            0x1b if b.get(i + 1) == Some(&b'[') => {
                i += 2;
                while b.get(i).is_some_and(|c| (0x20..=0x3f).contains(c)) {
                    i += 1;
                }
                if !b.get(i).is_some_and(|c| (0x40..=0x7e).contains(c)) {
                    return false;
                }
                i += 1;
            }
            _ => return false,
        }
    }
    true
}

// ---------------------------------------------------------------------------------------------
// Prefixed tokens

#[derive(Clone, Copy)]
enum Rule {
    /// At least `min` chars; when `digit_or` is set, a run without a digit needs that length.
    AtLeast { min: usize, digit_or: Option<usize> },
    /// Exactly this many chars, not followed by another alphanumeric.
    Exactly(usize),
    /// A JWT: at least `min` chars, then up to two `.`-separated parts.
    Jwt { min: usize },
}

struct Prefix {
    prefix: &'static [u8],
    class: fn(u8) -> bool,
    rule: Rule,
}

const KEYLIKE: Rule = Rule::AtLeast { min: 8, digit_or: Some(24) };

const PREFIXES: &[Prefix] = &[
    Prefix { prefix: b"sk-", class: is_key_char, rule: KEYLIKE },
    Prefix { prefix: b"sk_", class: is_key_char, rule: KEYLIKE },
    Prefix { prefix: b"pk-", class: is_key_char, rule: KEYLIKE },
    Prefix { prefix: b"pk_", class: is_key_char, rule: KEYLIKE },
    Prefix { prefix: b"rk-", class: is_key_char, rule: KEYLIKE },
    Prefix { prefix: b"rk_", class: is_key_char, rule: KEYLIKE },
    Prefix { prefix: b"api-", class: is_key_char, rule: KEYLIKE },
    Prefix { prefix: b"api_", class: is_key_char, rule: KEYLIKE },
    Prefix { prefix: b"ghp_", class: is_alnum, rule: Rule::AtLeast { min: 20, digit_or: None } },
    Prefix { prefix: b"gho_", class: is_alnum, rule: Rule::AtLeast { min: 20, digit_or: None } },
    Prefix { prefix: b"ghu_", class: is_alnum, rule: Rule::AtLeast { min: 20, digit_or: None } },
    Prefix { prefix: b"ghs_", class: is_alnum, rule: Rule::AtLeast { min: 20, digit_or: None } },
    Prefix { prefix: b"ghr_", class: is_alnum, rule: Rule::AtLeast { min: 20, digit_or: None } },
    Prefix { prefix: b"github_pat_", class: is_word, rule: Rule::AtLeast { min: 20, digit_or: None } },
    Prefix { prefix: b"glpat-", class: is_key_char, rule: Rule::AtLeast { min: 20, digit_or: None } },
    Prefix { prefix: b"xoxb-", class: is_key_char, rule: Rule::AtLeast { min: 10, digit_or: None } },
    Prefix { prefix: b"xoxp-", class: is_key_char, rule: Rule::AtLeast { min: 10, digit_or: None } },
    Prefix { prefix: b"xoxa-", class: is_key_char, rule: Rule::AtLeast { min: 10, digit_or: None } },
    Prefix { prefix: b"xoxr-", class: is_key_char, rule: Rule::AtLeast { min: 10, digit_or: None } },
    Prefix { prefix: b"xoxs-", class: is_key_char, rule: Rule::AtLeast { min: 10, digit_or: None } },
    Prefix { prefix: b"AIza", class: is_key_char, rule: Rule::AtLeast { min: 30, digit_or: None } },
    Prefix { prefix: b"hf_", class: is_alnum, rule: Rule::AtLeast { min: 30, digit_or: None } },
    Prefix { prefix: b"AKIA", class: is_upper_digit, rule: Rule::Exactly(16) },
    Prefix { prefix: b"ASIA", class: is_upper_digit, rule: Rule::Exactly(16) },
    Prefix { prefix: b"eyJ", class: is_key_char, rule: Rule::Jwt { min: 10 } },
];

/// The end of the token starting at `at` (after its prefix) when it satisfies `rule`.
fn token_end(b: &[u8], at: usize, p: &Prefix) -> Option<usize> {
    let len = run_len(b, at, p.class);
    let end = at + len;
    match p.rule {
        Rule::AtLeast { min, digit_or } => {
            let ok = len >= min
                && match digit_or {
                    Some(long) => len >= long || b[at..end].iter().any(u8::is_ascii_digit),
                    None => true,
                };
            ok.then_some(end)
        }
        Rule::Exactly(n) => (len == n && b.get(end).is_none_or(|&c| !is_alnum(c))).then_some(end),
        Rule::Jwt { min } => {
            if len < min {
                return None;
            }
            let mut end = end;
            for _ in 0..2 {
                if b.get(end) != Some(&b'.') {
                    break;
                }
                end += 1 + run_len(b, end + 1, is_key_char);
            }
            Some(end)
        }
    }
}

/// Whether the two bytes at `i` can begin one of [`PREFIXES`] (a quick filter before trying them).
fn may_start_prefix(b: &[u8], i: usize) -> bool {
    let Some(&next) = b.get(i + 1) else { return false };
    match b[i] {
        b's' | b'p' | b'r' => next == b'k',
        b'a' => next == b'p',
        b'g' => matches!(next, b'h' | b'i' | b'l'),
        b'x' => next == b'o',
        b'A' => matches!(next, b'I' | b'K' | b'S'),
        b'h' => next == b'f',
        b'e' => next == b'y',
        _ => false,
    }
}

/// The end of the prefixed token starting at `i`, if one does.
fn prefixed_token_at(b: &[u8], i: usize) -> Option<usize> {
    let rest = &b[i..];
    PREFIXES.iter().filter(|p| rest.starts_with(p.prefix)).find_map(|p| token_end(b, i + p.prefix.len(), p))
}

fn scan_prefixed(b: &[u8], spans: &mut Vec<(usize, usize)>) {
    let mut i = 0;
    while i < b.len() {
        if may_start_prefix(b, i) && word_start(b, i) {
            if let Some(end) = prefixed_token_at(b, i) {
                spans.push((i, end));
                i = end;
                continue;
            }
        }
        i += 1;
    }
}

// ---------------------------------------------------------------------------------------------
// Bearer tokens

fn scan_bearer(b: &[u8], spans: &mut Vec<(usize, usize)>) {
    const WORD: &[u8] = b"bearer";
    let mut i = 0;
    while i + WORD.len() < b.len() {
        if !(b[i..i + WORD.len()].eq_ignore_ascii_case(WORD) && word_start(b, i)) {
            i += 1;
            continue;
        }
        let mut j = i + WORD.len();
        let gap = run_len(b, j, |c| c == b' ' || c == b'\t');
        j += gap;
        let len = run_len(b, j, is_bearer_char);
        let token = &b[j..j + len];
        let looks_generated = token.iter().any(|c| !c.is_ascii_alphabetic()) || len >= 20;
        if gap > 0 && len >= 8 && looks_generated {
            spans.push((j, j + len));
            i = j + len;
        } else {
            i += 1;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Secret-named keys

/// How a secret-named key's value is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyClass {
    /// Password-like: any real value is a secret.
    Password,
    /// Key/token-like: the value is a secret when it looks generated.
    Token,
}

/// The class of a key name, from its last word (split on `_` `-` `.` and camelCase).
fn key_class(key: &[u8]) -> Option<KeyClass> {
    let mut start = 0;
    for i in 1..key.len() {
        let (p, c) = (key[i - 1], key[i]);
        if matches!(p, b'_' | b'-' | b'.') || (p.is_ascii_lowercase() && c.is_ascii_uppercase()) {
            start = i;
        }
    }
    let last = key[start..].to_ascii_lowercase();
    let ends = |words: &[&[u8]]| words.iter().any(|w| last.ends_with(w));
    match last.as_slice() {
        b"pwd" | b"pass" | b"credential" | b"credentials" => Some(KeyClass::Password),
        _ if ends(&[b"password", b"passwd", b"passphrase", b"secret"]) => Some(KeyClass::Password),
        b"key" | b"apikey" | b"accesskey" | b"secretkey" | b"privatekey" | b"signature" | b"auth" => {
            Some(KeyClass::Token)
        }
        _ if ends(&[b"token"]) => Some(KeyClass::Token),
        _ => None,
    }
}

/// An environment-variable name: `UPPER_SNAKE` (`GITHUB_TOKEN`, `export`ed or assigned).
fn is_env_name(key: &[u8]) -> bool {
    key.len() >= 2
        && key.iter().all(|&c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'_')
        && key.iter().any(u8::is_ascii_uppercase)
}

fn value_is_secret(class: KeyClass, key: &[u8], v: &[u8]) -> bool {
    if v == REDACTED.as_bytes() {
        return false;
    }
    match class {
        KeyClass::Password => {
            let lower = v.to_ascii_lowercase();
            v.len() >= 3
                && !matches!(lower.as_slice(), b"null" | b"none" | b"true" | b"false" | b"undefined")
                && !v.starts_with(b"$")
                && !v.iter().all(|&c| c == b'*')
        }
        // An environment variable holding a token holds nothing else: any token-like value.
        KeyClass::Token if is_env_name(key) => v.len() >= 8 && v.iter().all(|&c| is_token_value_char(c)),
        KeyClass::Token => {
            let classes = [
                v.iter().any(u8::is_ascii_lowercase),
                v.iter().any(u8::is_ascii_uppercase),
                v.iter().any(u8::is_ascii_digit),
            ];
            v.len() >= 16 && v.iter().all(|&c| is_token_value_char(c)) && classes.iter().filter(|&&x| x).count() >= 2
        }
    }
}

fn is_value_end(c: u8) -> bool {
    c.is_ascii_whitespace() || matches!(c, b'&' | b';' | b',' | b'"' | b'\'' | b')' | b']' | b'}' | b'>' | b'<' | b'\\')
}

/// Values longer than this are not judged (credentials are far shorter; PEM blocks have their
/// own scanner). It also keeps the scan linear on hostile input such as `password:"` repeated
/// without closing quotes.
const MAX_VALUE: usize = 1024;

/// The value starting at `v` (after the separator and any blanks): `(start, end)`, inside
/// the quotes when quoted (`"…"`, `'…'`, or JSON-escaped `\"…\"`). `None` when it does not
/// end within [`MAX_VALUE`] bytes.
fn value_at(b: &[u8], v: usize, frontier: &mut Frontier) -> Option<(usize, usize)> {
    let c = *b.get(v)?;
    let window = |start: usize| &b[start.min(b.len())..(start + MAX_VALUE + 1).min(b.len())];
    let at_end = |start: usize, len: usize| start + len == b.len();
    if c == b'\\' && matches!(b.get(v + 1), Some(b'"' | b'\'')) {
        let q = b[v + 1];
        let start = v + 2;
        let w = window(start);
        return match w.windows(2).position(|p| p[0] == b'\\' && p[1] == q) {
            Some(len) => Some((start, start + len)),
            None if at_end(start, w.len()) => Some((start, b.len())),
            None => None,
        };
    }
    if c == b'"' || c == b'\'' {
        let start = v + 1;
        let w = window(start);
        let mut k = 0;
        while k < w.len() && w[k] != c {
            k += if w[k] == b'\\' { 2 } else { 1 };
        }
        return if k < w.len() {
            Some((start, start + k))
        } else if at_end(start, w.len()) {
            Some((start, b.len()))
        } else {
            None
        };
    }
    let end = frontier.end_of_run(b, v);
    (end - v <= MAX_VALUE).then_some((v, end))
}

/// The end of unquoted runs (bytes up to the next [`is_value_end`] byte), remembered so that
/// overlapping scans (`key=key=key=…`) never rescan: the frontier only moves forward, which
/// keeps all unquoted scans of one text linear in total.
#[derive(Default)]
struct Frontier {
    /// Bytes `from..to` are known to be inside one run.
    from: usize,
    to: usize,
    /// Where that run ends, once found.
    end: Option<usize>,
}

impl Frontier {
    fn end_of_run(&mut self, b: &[u8], v: usize) -> usize {
        if !(self.from <= v && v <= self.to) {
            *self = Frontier { from: v, to: v, end: None };
        }
        if let Some(end) = self.end {
            return end;
        }
        let limit = (v + MAX_VALUE + 1).min(b.len());
        while self.to < limit && !is_value_end(b[self.to]) {
            self.to += 1;
        }
        if self.to < b.len() && is_value_end(b[self.to]) || self.to == b.len() {
            self.end = Some(self.to);
        }
        self.to
    }
}

fn push_if_secret(b: &[u8], key: &[u8], v: usize, frontier: &mut Frontier, spans: &mut Vec<(usize, usize)>) {
    let Some(class) = key_class(key) else { return };
    if b[v.min(b.len())..].starts_with(REDACTED.as_bytes()) {
        return; // already masked: stay idempotent
    }
    if let Some((start, end)) = value_at(b, v, frontier) {
        if start < end && value_is_secret(class, key, &b[start..end]) {
            spans.push((start, end));
        }
    }
}

fn is_key_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')
}

/// `key=value`, `key: value`, `"key": "value"`, `'key': 'value'`, `--key=value`.
fn scan_key_values(b: &[u8], spans: &mut Vec<(usize, usize)>) {
    let mut frontier = Frontier::default();
    for j in memchr::memchr2_iter(b'=', b':', b) {
        // The key: blanks, then an optional (escaped) closing quote, then name chars.
        let mut e = j;
        while e > 0 && b[e - 1] == b' ' {
            e -= 1;
        }
        if e > 0 && matches!(b[e - 1], b'"' | b'\'') {
            e -= 1;
            if e > 0 && b[e - 1] == b'\\' {
                e -= 1;
            }
        }
        let s = e - b[..e].iter().rev().take_while(|&&c| is_key_name_char(c)).count();
        if s == e || b.get(j + 1) == Some(&b'=') {
            continue;
        }
        let key = b[s..e].strip_prefix(b"--").unwrap_or(&b[s..e]);
        let v = j + 1 + run_len(b, j + 1, |c| c == b' ' || c == b'\t');
        push_if_secret(b, key, v, &mut frontier, spans);
    }
}

/// `--key value` (a space-separated command-line flag).
fn scan_flags(b: &[u8], spans: &mut Vec<(usize, usize)>) {
    let mut frontier = Frontier::default();
    for i in memchr::memmem::find_iter(b, b"--") {
        if i > 0 && !(b[i - 1].is_ascii_whitespace() || matches!(b[i - 1], b'"' | b'\'')) {
            continue;
        }
        let k = i + 2;
        let klen = run_len(b, k, is_key_name_char);
        let after = k + klen;
        if klen == 0 || b.get(after) != Some(&b' ') {
            continue;
        }
        let v = after + run_len(b, after, |c| c == b' ');
        if b.get(v).is_some_and(|&c| c != b'-') {
            push_if_secret(b, &b[k..after], v, &mut frontier, spans);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Credentials in URLs

/// `scheme://user:password@host` (the password) and `scheme://token@host` (a generated-looking
/// token). The authority ends at `/`, `?`, `#`, a blank, a quote or a backslash; the userinfo
/// ends at its last `@` (a raw `@` in a password is common).
fn scan_url_credentials(b: &[u8], spans: &mut Vec<(usize, usize)>) {
    for i in memchr::memmem::find_iter(b, b"://") {
        if i == 0 || !b[i - 1].is_ascii_alphabetic() {
            continue;
        }
        let u = i + 3;
        let window = &b[u..(u + MAX_VALUE).min(b.len())];
        let auth_len = window
            .iter()
            .position(|&c| {
                matches!(c, b'/' | b'?' | b'#' | b'"' | b'\'' | b'\\' | b'<' | b'>') || c.is_ascii_whitespace()
            })
            .unwrap_or(window.len());
        let Some(at) = memchr::memrchr(b'@', &window[..auth_len]) else { continue };
        let userinfo = &window[..at];
        if userinfo.starts_with(REDACTED.as_bytes()) {
            continue;
        }
        match memchr::memchr(b':', userinfo) {
            Some(c) if c + 1 < at && &userinfo[c + 1..] != REDACTED.as_bytes() => spans.push((u + c + 1, u + at)),
            Some(_) => {}
            None if looks_generated(userinfo) || prefixed_token_at(userinfo, 0).is_some() => spans.push((u, u + at)),
            None => {}
        }
    }
}

/// ≥ 16 token chars mixing at least two of lower case, upper case and digits.
fn looks_generated(v: &[u8]) -> bool {
    let classes =
        [v.iter().any(u8::is_ascii_lowercase), v.iter().any(u8::is_ascii_uppercase), v.iter().any(u8::is_ascii_digit)];
    v.len() >= 16 && v.iter().all(|&c| is_token_value_char(c)) && classes.iter().filter(|&&x| x).count() >= 2
}

// ---------------------------------------------------------------------------------------------
// Passwords given as command-line options

/// Tools whose `-p<password>` (glued) is a password.
const GLUED_P: &[&[u8]] = &[
    b"mysql",
    b"mysqldump",
    b"mysqladmin",
    b"mysqlimport",
    b"mysqlshow",
    b"mysqlcheck",
    b"mysqlsh",
    b"mariadb",
    b"mariadb-dump",
    b"mariadb-admin",
    b"sshpass",
];

/// Tools whose `-p <password>` (separated) is a password (`login` subcommands: only then).
const SEPARATE_P: &[&[u8]] =
    &[b"sshpass", b"mongo", b"mongosh", b"mongodump", b"mongorestore", b"mongoexport", b"mongoimport"];
const LOGIN_P: &[&[u8]] = &[b"docker", b"podman", b"helm", b"nerdctl", b"buildah", b"skopeo", b"oras"];

/// Words before the command that do not name it.
const PREFIX_WORDS: &[&[u8]] = &[b"sudo", b"env", b"nohup", b"time", b"exec", b"command", b"doas"];

/// The bytes that end one command and start another (or open a quoted one: `bash -lc 'mysql …'`).
fn is_command_boundary(c: u8) -> bool {
    matches!(c, b';' | b'|' | b'&' | b'\n' | b'(' | b')' | b'`' | b'\'' | b'"')
}

/// The command of the segment `b[from..to]`: its first word, skipping `sudo`, `env`, … and
/// `VAR=value` words; its last path component.
fn command_of(segment: &[u8]) -> Option<&[u8]> {
    segment
        .split(|c| c.is_ascii_whitespace())
        .filter(|w| !w.is_empty())
        .find(|w| !PREFIX_WORDS.contains(w) && !w.contains(&b'='))
        .map(|w| &w[w.iter().rposition(|&c| c == b'/').map_or(0, |p| p + 1)..])
}

/// Whether `cmd` is a tool whose `-p`/`-a` option takes a password.
fn takes_password_option(cmd: &[u8]) -> bool {
    GLUED_P.contains(&cmd) || SEPARATE_P.contains(&cmd) || LOGIN_P.contains(&cmd) || cmd == b"redis-cli"
}

/// The command an option belongs to, looking back over the last few words of `before` (what
/// precedes the option in its segment) past other options and their values: its last path
/// component when it is a tool taking a password option (`docker exec db mysql -u root -p…`;
/// prose: "run mysql -u root -p…"), `None` otherwise (`psql -h mongo -p 5432`: `mongo` is
/// `-h`'s value, `psql` the command). Looking no further keeps the scan linear.
fn tool_named_before(before: &[u8]) -> Option<&[u8]> {
    const WORDS_BACK: usize = 5;
    let mut words = before.rsplit(|c| c.is_ascii_whitespace()).filter(|w| !w.is_empty()).take(WORDS_BACK + 1);
    let mut word = words.next()?;
    for _ in 0..WORDS_BACK {
        let previous = words.next();
        let an_option = word.starts_with(b"-");
        let an_options_value = previous.is_some_and(|p| p.starts_with(b"-") && !p.contains(&b'='));
        if !an_option && !an_options_value {
            let name = &word[word.iter().rposition(|&c| c == b'/').map_or(0, |p| p + 1)..];
            return takes_password_option(name).then_some(name);
        }
        word = previous?;
    }
    None
}

/// The word starting at `at` after blanks: `(start, end)` inside its quotes when quoted; `None`
/// when there is none or it is another option.
fn word_after(b: &[u8], at: usize) -> Option<(usize, usize)> {
    let s = at + run_len(b, at, |c| c == b' ' || c == b'\t');
    match *b.get(s)? {
        q @ (b'\'' | b'"') => {
            let len = memchr::memchr(q, &b[s + 1..(s + 1 + MAX_VALUE).min(b.len())])?;
            Some((s + 1, s + 1 + len))
        }
        b'-' => None,
        _ => {
            let len = run_len(b, s, |c| !c.is_ascii_whitespace() && !is_command_boundary(c));
            (len > 0 && len <= MAX_VALUE).then_some((s, s + len))
        }
    }
}

/// `-u user:password` / `--user user:password` / `-uuser:password` / `--user=user:password`
/// anywhere (a `uid:gid` pair is not a password); `-p`/`-a` passwords of the tools listed
/// above, the tool being the command the option belongs to (which may sit inside quotes:
/// `bash -lc 'mysql -p…'`).
fn scan_password_options(b: &[u8], spans: &mut Vec<(usize, usize)>) {
    let mut push = |start: usize, end: usize| {
        if start < end && &b[start..end] != REDACTED.as_bytes() {
            spans.push((start, end));
        }
    };
    // The command segments, found once: each option looks its segment up (linear overall, also
    // on a hostile `mysql -p mysql -p …`).
    let boundaries: Vec<usize> = (0..b.len()).filter(|&i| is_command_boundary(b[i])).collect();
    let mut next_boundary = 0; // index into `boundaries` of the first one at or after j
    let mut segment: Option<(usize, Option<&[u8]>, bool)> = None; // (start, command, has `login`)
    for j in memchr::memchr_iter(b'-', b) {
        let starts_word = j == 0 || b[j - 1].is_ascii_whitespace() || matches!(b[j - 1], b'"' | b'\'');
        if !starts_word {
            continue;
        }
        let word_len = run_len(b, j, |c| !c.is_ascii_whitespace() && !matches!(c, b'"' | b'\'' | b';' | b'|' | b'&'));
        let word = &b[j..j + word_len];
        let after = j + word_len;
        // -u user:password
        let userpass = if word == b"-u" || word == b"--user" {
            word_after(b, after)
        } else if word.starts_with(b"--user=") {
            Some((j + 7, after))
        } else if word.starts_with(b"-u") && word.len() > 2 && !word.starts_with(b"--") {
            Some((j + 2, after))
        } else {
            None
        };
        if let Some((us, ue)) = userpass {
            if let Some(c) = memchr::memchr(b':', &b[us..ue]) {
                let pass = &b[us + c + 1..ue];
                if !pass.is_empty() && !pass.iter().all(u8::is_ascii_digit) {
                    push(us + c + 1, ue);
                }
            }
            continue;
        }
        let glued_p = word.starts_with(b"-p") && word.len() > 2 && !word.starts_with(b"--");
        if !(glued_p || word == b"-p" || word == b"-a") {
            continue;
        }
        while next_boundary < boundaries.len() && boundaries[next_boundary] < j {
            next_boundary += 1;
        }
        let from = if next_boundary == 0 { 0 } else { boundaries[next_boundary - 1] + 1 };
        if segment.is_none_or(|(start, _, _)| start != from) {
            let to = boundaries.get(next_boundary).copied().unwrap_or(b.len());
            let seg = &b[from..to];
            let login = seg.split(|c| c.is_ascii_whitespace()).any(|w| w == b"login");
            segment = Some((from, command_of(seg), login));
        }
        let Some((_, Some(first), login)) = segment else { continue };
        // The tool named nearest before the option (`docker exec db mysql -p…`, prose: "run
        // mysql -u root -p…"), else the segment's command.
        let cmd = tool_named_before(&b[from..j]).unwrap_or(first);
        if glued_p && GLUED_P.contains(&cmd) {
            push(j + 2, after);
        } else if (word == b"-p" && (SEPARATE_P.contains(&cmd) || (LOGIN_P.contains(&cmd) && login)))
            || (word == b"-a" && cmd == b"redis-cli")
        {
            if let Some((vs, ve)) = word_after(b, after) {
                push(vs, ve);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{ToolCall, ToolCallStatus, ToolCallUpdate, ToolKind};
    use serde_json::json;

    fn r(s: &str) -> String {
        redact(s).into_owned()
    }

    #[test]
    fn pinned_reference_inputs() {
        let masked = r(r#"{"token": "sk-live-01234567890abcdef"}"#);
        assert!(!masked.contains("sk-live") && !masked.contains("0123456789"), "{masked}");
        assert!(masked.contains(REDACTED));
        assert_eq!(masked, r#"{"token": "[redacted]"}"#);
        assert!(matches!(redact("write to ada@example.com"), Cow::Borrowed(_)));
    }

    #[test]
    fn each_shape_is_masked() {
        let cases = [
            ("key sk-ant-api03-AbCdEf123456_xyz-987 end", "key [redacted] end"),
            ("OPENAI_API_KEY=sk-proj-abc123def456", "OPENAI_API_KEY=[redacted]"),
            ("pk_live_51H8abcdefgh", "[redacted]"),
            ("rk_test_0000aaaa1111", "[redacted]"),
            ("use api_9f8e7d6c5b4a", "use [redacted]"),
            ("curl -H 'Authorization: Bearer abc.def-123_456'", "curl -H 'Authorization: Bearer [redacted]'"),
            ("authorization: bearer 0123456789abcdef", "authorization: bearer [redacted]"),
            (
                "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U!",
                "jwt [redacted]!",
            ),
            ("AKIAIOSFODNN7EXAMPLE", "[redacted]"),
            ("id=ASIAY34FZKBOKMUTVV7A,", "id=[redacted],"),
            ("aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key=[redacted]"),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
                "aws_secret_access_key = [redacted]\n",
            ),
            ("GH ghp_0123456789abcdefghijABCDEFGHIJ0123", "GH [redacted]"),
            ("github_pat_11ABCDEFG0123456789_abcdefghijkl", "[redacted]"),
            ("xoxb-1234567890-abcdefghij", "[redacted]"),
            ("password=hunter2 next", "password=[redacted] next"),
            ("DB_PASSWORD: 'correct horse'", "DB_PASSWORD: '[redacted]'"),
            (r#"{"client_secret":"s3cr3t-value"}"#, r#"{"client_secret":"[redacted]"}"#),
            (r#"{\"apiKey\": \"Zm9vYmFyYmF6cXV4MTIzNDU2\"}"#, r#"{\"apiKey\": \"[redacted]\"}"#),
            ("https://x.test/?a=1&token=0a1b2c3d4e5f6a7b8c9d&b=2", "https://x.test/?a=1&token=[redacted]&b=2"),
            ("tool --password hunter22 --verbose", "tool --password [redacted] --verbose"),
            ("tool --api-key=AbCd1234EfGh5678", "tool --api-key=[redacted]"),
            ("export GITHUB_TOKEN=Q2xhdWRlQ29kZTIwMjY", "export GITHUB_TOKEN=[redacted]"),
        ];
        for (input, want) in cases {
            assert_eq!(r(input), want, "{input}");
        }
    }

    #[test]
    fn urls_options_and_environment_names() {
        let cases = [
            (
                "psql postgres://admin:Sup3rS3cretPw@db.internal:5432/app",
                "psql postgres://admin:[redacted]@db.internal:5432/app",
            ),
            (
                "git clone https://x-access-token:gh0-secret-value@github.com/a/b",
                "git clone https://x-access-token:[redacted]@github.com/a/b",
            ),
            ("pull https://AbCdEf0123456789XyZ@git.example.com/r.git", "pull https://[redacted]@git.example.com/r.git"),
            ("mysql -u root -pMyDbPassw0rd appdb", "mysql -u root -p[redacted] appdb"),
            (
                "sudo /usr/bin/mysqldump -uroot -phunter22 db > x.sql",
                "sudo /usr/bin/mysqldump -uroot -p[redacted] db > x.sql",
            ),
            ("sshpass -p 'Hunter2Horse!' ssh admin@host", "sshpass -p '[redacted]' ssh admin@host"),
            // In prose (a prompt echoed on the raw channel): the tool named right before.
            ("Run sshpass -p 'Hunter2Horse!' ssh admin@host", "Run sshpass -p '[redacted]' ssh admin@host"),
            ("please run mysql -u root -pMyDbPassw0rd appdb", "please run mysql -u root -p[redacted] appdb"),
            // The tool nearest the option, not the first command (docker is a login tool).
            ("docker exec -it db mysql -uroot -pS3cret app", "docker exec -it db mysql -uroot -p[redacted] app"),
            ("curl -u alice:W0nderl4nd! https://api.example.com", "curl -u alice:[redacted] https://api.example.com"),
            ("curl --user=bob:pa55word x", "curl --user=bob:[redacted] x"),
            ("echo hi && docker login -p s3cretpass registry.io", "echo hi && docker login -p [redacted] registry.io"),
            ("redis-cli -h r -a Redis-Pass-1 ping", "redis-cli -h r -a [redacted] ping"),
            ("export API_TOKEN=abcdefghijklmnopqrstuv", "export API_TOKEN=[redacted]"),
            ("PGPASSWORD=pgpass99 psql -h db", "PGPASSWORD=[redacted] psql -h db"),
            (r#"{"authToken": "AbCdEfGh12345678IjKl"}"#, r#"{"authToken": "[redacted]"}"#),
        ];
        for (input, want) in cases {
            assert_eq!(r(input), want, "{input}");
            assert!(may_hold_secrets(input.as_bytes()), "{input}");
        }
        for fine in [
            "mkdir -p /tmp/build",
            "cargo test -p agentstream-core",
            "tar -pxvf archive.tar",
            "docker run -u 1000:1000 -p 8080:80 img",
            "psql -h mongo -p 5432 app",
            "docker compose exec mongo ls -p /data",
            "ls -a",
            "see https://example.com/path@v2",
            "export PATH=/usr/local/bin:$PATH",
            "export SORT_KEY=name",
        ] {
            assert_eq!(r(fine), fine, "{fine}");
        }
    }

    #[test]
    fn object_keys_are_masked_and_no_member_is_lost() {
        let mut v = json!({"sk-live-0123456789abcdef": 1, "sk-live-9876543210fedcba": 2, "ok": {"ghp_0123456789abcdefghijABCDEFGHIJ": true}});
        redact_value(&mut v);
        assert_eq!(v, json!({"[redacted]": 1, "[redacted] #2": 2, "ok": {"[redacted]": true}}));
    }

    #[test]
    fn a_redactor_masks_derived_fields_where_the_secret_lost_its_shape() {
        let mut call = OutputEvent::new(SessionUpdate::ToolCall(ToolCall {
            tool_call_id: "t1".into(),
            // A title cut short in the middle of the secret: it no longer looks like one.
            title: "`export GITHUB_TOKEN=Q2xhdWRlQ29kZTI…`".into(),
            tool_name: Some("Bash".into()),
            kind: ToolKind::Execute,
            status: ToolCallStatus::Pending,
            raw_input: Some(json!({"command": "export GITHUB_TOKEN=Q2xhdWRlQ29kZTIwMjY5ZmRh && ./deploy"}).into()),
            content: Some(vec![ToolCallContent::Diff(DiffContent {
                path: "/etc/app.env".into(),
                old_text: Some("TOKEN=old".into()),
                new_text: "uses Q2xhdWRlQ29kZTIwMjY5ZmRh now".into(),
            })]),
            locations: Some(vec![ToolCallLocation { path: "/keys/Q2xhdWRlQ29kZTIwMjY5ZmRh.pem".into(), line: None }]),
        }));
        let mut redactor = Redactor::new();
        redactor.mask_event(&mut call);
        let json = call.to_json();
        assert!(!json.contains("Q2xhdWRlQ29kZT"), "{json}");
        assert!(json.contains("`export GITHUB_TOKEN=[redacted]…`"), "{json}");
        assert_eq!(redactor.known_secrets(), ["Q2xhdWRlQ29kZTIwMjY5ZmRh"]);
        // A later result record that echoes the input is masked too (it has no shape there).
        let mut up = ToolCallUpdate::new("t1");
        up.raw_output = Some(json!({"command": "echo Q2xhdWRlQ29kZTIwMjY5ZmRh", "exit_code": 0}).into());
        let mut done = OutputEvent::new(SessionUpdate::ToolCallUpdate(up));
        redactor.mask_event(&mut done);
        assert!(!done.to_json().contains("Q2xhdWRlQ29kZTIwMjY5ZmRh"), "{}", done.to_json());
    }

    #[test]
    fn an_input_nested_past_the_limit_is_masked_not_passed_through() {
        for depth in [crate::raw_json::MAX_DEPTH + 1, 200, 100_000] {
            let inner = format!(
                "{}{{\"password\":\"hunter2x\",\"k\":\"sk-live-0123456789abcdef\"}}{}",
                "[".repeat(depth),
                "]".repeat(depth)
            );
            let mut raw = RawJson::from_text(format!(r#"{{"command":"ls","deep":{inner}}}"#)).unwrap();
            redact_raw(&mut raw);
            let text = raw.get();
            assert!(!text.contains("hunter2x") && !text.contains("sk-live"), "depth {depth}");
            assert_eq!(raw.to_value()["command"], "ls", "depth {depth}: the shallow part is kept");
        }
    }

    #[test]
    fn pem_blocks() {
        let pem =
            "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nabc\n-----END RSA PRIVATE KEY-----\nafter";
        assert_eq!(r(pem), "before\n[redacted]\nafter");
        let open = "x -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE";
        assert_eq!(r(open), "x [redacted]");
        let public = "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----";
        assert_eq!(r(public), public);
    }

    #[test]
    fn near_misses_are_left_alone() {
        for s in [
            "write to ada@example.com",
            "see api-versioning docs",
            "task-12345678 done",
            "the bearer of bad news",
            "bearer authentication",
            "sort_key=created_at_descending",
            "monkey=bananas1234567890",
            "password=$DB_PASSWORD",
            "password: null",
            "git show 3f2a9c1d0b8e7f6a5d4c3b2a1f0e9d8c7b6a5f4e",
            "run_0190f3a2b4c5000112345678deadbeef",
            "AKIA12345 too short",
            "https://example.com:8080/path",
            "--token-file /etc/token",
            "key: value",
            "token=[redacted]",
            "ünïcödé sk-abc äöü",
        ] {
            assert_eq!(r(s), s, "{s}");
            assert!(matches!(redact(s), Cow::Borrowed(_)));
        }
    }

    #[test]
    fn idempotent_and_unicode_safe() {
        for s in
            ["x password=hunter2 y sk-live-0123456789abc ü", "ßBearer abcdefgh12 é", "é-----BEGIN PRIVATE KEY-----é"]
        {
            let once = r(s);
            assert_eq!(r(&once), once);
        }
    }

    #[test]
    fn hostile_input_stays_linear() {
        for unit in
            ["password:\"", "key=key=", "password=\\\"", "--token ", "Bearer x", "a://", "x://a@", "-u a:", "mysql -p"]
        {
            let s = unit.repeat(200_000);
            let t = std::time::Instant::now();
            let _ = redact(&s);
            assert!(t.elapsed() < std::time::Duration::from_secs(5), "{unit}: {:?}", t.elapsed());
        }
        let long = format!("password=\"{}\"", "x".repeat(MAX_VALUE + 10));
        assert_eq!(r(&long), long, "over-long values are not judged");
        assert_eq!(r("password=hunter2"), "password=[redacted]", "a value ending at the end of the text");
    }

    #[test]
    fn json_values_by_string_and_by_key() {
        let mut v = json!({
            "command": "curl -H 'Authorization: Bearer sk-abcdefgh12345678' https://x",
            "headers": [{"X-Api-Key": "AbCdEfGh12345678Ij"}],
            "password": "hunter2",
            "api_key": "short",
            "count": 3,
            "nested": {"token": "0a1b2c3d4e5f6a7b8c9d0e1f"},
        });
        redact_value(&mut v);
        assert_eq!(
            v,
            json!({
                "command": "curl -H 'Authorization: Bearer [redacted]' https://x",
                "headers": [{"X-Api-Key": "[redacted]"}],
                "password": "[redacted]",
                "api_key": "short",
                "count": 3,
                "nested": {"token": "[redacted]"},
            })
        );
    }

    #[test]
    fn tool_inputs_only() {
        let mut call = OutputEvent::new(SessionUpdate::ToolCall(ToolCall {
            tool_call_id: "sk-live-01234567890abcdef".into(),
            title: "echo sk-live-01234567890abcdef".into(),
            tool_name: Some("Bash".into()),
            kind: ToolKind::Execute,
            status: ToolCallStatus::Pending,
            raw_input: Some(json!({"token": "sk-live-01234567890abcdef"}).into()),
            content: None,
            locations: None,
        }));
        redact_tool_input(&mut call);
        let SessionUpdate::ToolCall(c) = &call.update else { unreachable!() };
        assert_eq!(c.title, "echo [redacted]");
        assert_eq!(c.raw_input.as_ref().map(|r| r.to_value()), Some(json!({"token": "[redacted]"})));
        assert_eq!(c.tool_call_id, "sk-live-01234567890abcdef", "ids are not inputs");

        let mut up = ToolCallUpdate::new("t");
        up.title = Some("password=hunter2".into());
        let mut ev = OutputEvent::new(SessionUpdate::ToolCallUpdate(up));
        redact_tool_input(&mut ev);
        assert!(ev.to_json().contains("password=[redacted]"));

        for text in ["write to ada@example.com", "my key is sk-live-01234567890abcdef"] {
            let mut answer = OutputEvent::new(SessionUpdate::message(text));
            let before = answer.clone();
            redact_tool_input(&mut answer);
            assert_eq!(answer, before, "answer text is never altered");
        }

        let mut off = call.clone();
        let SessionUpdate::ToolCall(c) = &mut off.update else { unreachable!() };
        c.title = "echo sk-live-01234567890abcdef".into();
        let before = off.clone();
        RedactionPolicy::disabled().apply(&mut off);
        assert_eq!(off, before);
        RedactionPolicy::default().apply(&mut off);
        assert_ne!(off, before);
    }

    /// Strings made of the pieces every mask looks for, and of what JSON escapes.
    fn secretish() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        const PIECES: &[&str] = &[
            "sk-",
            "sk_live_",
            "pk_",
            "api-",
            "abc",
            "0123456789",
            "ABCDEFGHIJKLMNOP",
            "password",
            "Password",
            "pwd",
            "api_key",
            "apiKey",
            "X-Api-Key",
            "token",
            "TOKEN",
            "key",
            "secret",
            "credentials",
            "signature",
            "=",
            ":",
            " ",
            "\"",
            "'",
            "\\",
            "\n",
            "\t",
            "\r",
            "/",
            "Bearer ",
            "bearer",
            "-----BEGIN RSA PRIVATE KEY-----",
            "-----END RSA PRIVATE KEY-----",
            "eyJhbGciOiJIUzI1NiJ9",
            ".",
            "AKIA",
            "IOSFODNN7EXAMPLE",
            "ghp_",
            "xoxb-",
            "hf_",
            "AIza",
            "--",
            "hunter2",
            "é",
            "\u{1}",
            "$VAR",
            "null",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "ls -la",
            "List files",
            "command",
            "file_path",
            "/tmp/x.rs",
            "description",
            "://",
            "https://",
            "@",
            "user:",
            "-p",
            "-u",
            "-a",
            "--user",
            "mysql ",
            "sshpass ",
            "redis-cli ",
            "docker login ",
            "; ",
            "PGPASSWORD",
            "GITHUB_TOKEN",
            "authToken",
            "auth",
            "\'",
        ];
        const KEYS: &[&str] = &[
            "api_key",
            "apiKey",
            "password",
            "TOKEN",
            "--token",
            "secret",
            "x.credentials",
            "sort_key",
            "db_pwd",
            "Passphrase",
            "signature",
            "my-pass",
            "credential",
            "PASSWD",
            "monkey",
        ];
        const QUOTES: &[&str] = &["", "\"", "'", "\\\"", "\\'"];
        const SEPS: &[&str] = &["=", ":", " = ", ": ", " "];
        const VALUES: &[&str] =
            &["hunter2", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "null", "$VAR", "AbCd1234EfGh5678"];
        let noise = || proptest::collection::vec(proptest::sample::select(PIECES), 0..3).prop_map(|p| p.concat());
        let select = proptest::sample::select;
        prop_oneof![
            proptest::collection::vec(select(PIECES), 0..7).prop_map(|p| p.concat()),
            // A key-value pair in some syntax, somewhere in the text.
            (noise(), select(KEYS), select(QUOTES), select(SEPS), select(QUOTES), select(VALUES), noise())
                .prop_map(|(a, k, q1, sep, q2, v, z)| format!("{a}{k}{q1}{sep}{q2}{v}{q2}{z}")),
        ]
    }

    fn secretish_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf =
            prop_oneof![Just(Value::Null), any::<i64>().prop_map(Value::from), secretish().prop_map(Value::String)];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::vec((secretish(), inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// `v` as JSON text, each character written plainly or escaped (`\uXXXX`, or `\n`-style
    /// where JSON has one) as `choices` says: the many ways a harness may print the same value.
    fn write_varied(v: &Value, choices: &mut impl Iterator<Item = u8>, out: &mut String) {
        use std::fmt::Write as _;
        let string = |s: &str, choices: &mut dyn Iterator<Item = u8>, out: &mut String| {
            out.push('"');
            for c in s.chars() {
                let pick = choices.next().unwrap_or(0) % 4;
                let short = match c {
                    '"' => Some("\\\""),
                    '\\' => Some("\\\\"),
                    '/' => Some("\\/"),
                    '\n' => Some("\\n"),
                    '\t' => Some("\\t"),
                    '\r' => Some("\\r"),
                    '\u{8}' => Some("\\b"),
                    '\u{c}' => Some("\\f"),
                    _ => None,
                };
                let must_escape = c == '"' || c == '\\' || c < ' ';
                if pick == 0 && (c as u32) < 0x10000 {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                } else if let Some(e) = short.filter(|_| must_escape || pick == 1) {
                    out.push_str(e);
                } else if must_escape {
                    let _ = write!(out, "\\u{:04X}", c as u32);
                } else {
                    out.push(c);
                }
            }
            out.push('"');
        };
        match v {
            Value::String(s) => string(s, choices, out),
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_varied(item, choices, out);
                }
                out.push(']');
            }
            Value::Object(map) => {
                out.push('{');
                for (i, (k, item)) in map.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    string(k, choices, out);
                    out.push_str(": ");
                    write_varied(item, choices, out);
                }
                out.push('}');
            }
            other => out.push_str(&other.to_string()),
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

        /// The pre-scan never skips a record that redaction would change, however it is escaped.
        #[test]
        fn the_json_pre_scan_never_misses_a_mask(
            v in secretish_value(),
            choices in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
            plain in proptest::prelude::any::<bool>(),
        ) {
            let text = if plain {
                serde_json::to_string(&v).unwrap()
            } else {
                // Mostly plain characters, escapes here and there.
                let mut it = choices.iter().map(|&c| if c % 3 == 0 { c } else { 2 }).cycle();
                let mut out = String::new();
                write_varied(&v, &mut it, &mut out);
                out
            };
            let parsed: Value = serde_json::from_str(&text).unwrap();
            proptest::prop_assert_eq!(&parsed, &v, "{}", text);
            let mut masked = parsed.clone();
            redact_value(&mut masked);
            if masked != parsed {
                proptest::prop_assert!(may_hold_secrets(text.as_bytes()), "missed: {}", text);
            }
            let mut raw = RawJson::from_text(text.clone()).unwrap();
            redact_raw(&mut raw);
            proptest::prop_assert_eq!(raw.to_value(), masked);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]

        /// As plain text too: whatever [`redact`] would mask, the pre-scan finds.
        #[test]
        fn the_pre_scan_never_misses_a_mask_in_text(s in secretish()) {
            let mut spans = Vec::new();
            scan_pem(s.as_bytes(), &mut spans);
            scan_prefixed(s.as_bytes(), &mut spans);
            scan_bearer(s.as_bytes(), &mut spans);
            scan_key_values(s.as_bytes(), &mut spans);
            scan_flags(s.as_bytes(), &mut spans);
            scan_url_credentials(s.as_bytes(), &mut spans);
            scan_password_options(s.as_bytes(), &mut spans);
            if !spans.is_empty() {
                proptest::prop_assert!(may_hold_secrets(s.as_bytes()), "missed: {:?}", s);
            }
        }
    }

    /// Bytes that make the needle search's life hard: pieces of needles, case variants, the bytes
    /// that fold onto others (`_` and DEL, `\\` and `|`), escapes and non-ASCII.
    fn needle_soup() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        const PIECES: &[&[u8]] = &[
            b"k",
            b"K",
            b"e",
            b"y",
            b"Y",
            b"to",
            b"ken",
            b"pa",
            b"ss",
            b"wd",
            b"word",
            b"phrase",
            b"cred",
            b"ential",
            b"s",
            b"sig",
            b"nature",
            b"auth",
            b"AUTH",
            b"sk",
            b"pk",
            b"rk",
            b"-",
            b"_",
            b"\x7f",
            b"api",
            b"gh",
            b"p",
            b"github",
            b"_pat_",
            b"gl",
            b"xox",
            b"b",
            b"AI",
            b"za",
            b"hf",
            b"AKIA",
            b"ASIA",
            b"eyJ",
            b"EYj",
            b"--user",
            b"bearer",
            b"BeArEr",
            b"-----BEGIN ",
            b"\\",
            b"|",
            b"u",
            b":",
            b"//",
            b"@",
            b"=",
            b"\"",
            b"'",
            b" ",
            b"\t",
            b"0123456789",
            b"abcdefghij",
            b"\xc3\xa9",
            b"\xff",
        ];
        proptest::collection::vec(proptest::sample::select(PIECES), 0..40).prop_map(|p| p.concat())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(5000))]

        /// Looking only near needles gives the verdict of judging every byte, on any bytes.
        #[test]
        fn the_needle_search_judges_as_every_byte(
            soup in needle_soup(),
            filler in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
            secretish in secretish(),
            at in 0usize..400,
        ) {
            for text in [soup.clone(), filler.clone(), secretish.clone().into_bytes()] {
                proptest::prop_assert_eq!(may_hold_secrets(&text), may_hold_secrets_judging_every_byte(&text), "{:?}", text);
            }
            // Also with the interesting part somewhere inside arbitrary bytes.
            let mut mixed = filler.clone();
            let at = at.min(mixed.len());
            mixed.splice(at..at, soup.iter().chain(secretish.as_bytes()).copied());
            proptest::prop_assert_eq!(may_hold_secrets(&mixed), may_hold_secrets_judging_every_byte(&mixed), "{:?}", mixed);
        }
    }

    #[test]
    fn every_trigger_is_found_near_a_needle_at_every_position() {
        // Each kind of trigger, alone, at every offset in a text of ordinary JSON bytes.
        let triggers: &[&[u8]] = &[
            b"password=",
            b"\"apiKey\":",
            b"PASSPHRASE ",
            b"x.credentials'",
            b"TOKEN\t",
            b"auth\\",
            b"sk-abcd1234",
            b"pk_abcd1234",
            b"github_pat_abcdefghijklmnopqrstu",
            b"glpat-abcdefghijklmnopqrstu",
            b"xoxs-abcdefghij",
            b"AIzaabcdefghijklmnopqrstuvwxyz0123",
            b"hf_abcdefghijklmnopqrstuvwxyz0123",
            b"AKIAABCDEFGHIJKLMNOP",
            b"eyJabcdefghijk",
            b"Bearer",
            b"-----BEGIN ",
            b"\\u0073",
            b"://a@b",
            b"-p",
            b"-u",
            b"-a",
            b"--user",
        ];
        let filler = br#"{"command":"ls -l /tmp","description":"List the files","x":[1,2,3]}"#;
        for trigger in triggers {
            assert!(may_hold_secrets_judging_every_byte(trigger), "{}", String::from_utf8_lossy(trigger));
            for at in 0..=filler.len() {
                let mut text = filler.to_vec();
                text.splice(at..at, std::iter::once(b' ').chain(trigger.iter().copied()));
                assert_eq!(
                    may_hold_secrets(&text),
                    may_hold_secrets_judging_every_byte(&text),
                    "{}",
                    String::from_utf8_lossy(&text)
                );
            }
        }
    }

    #[test]
    fn an_absent_switch_is_the_default_policy() {
        assert_eq!(RedactionPolicy::from_switch(None), RedactionPolicy::default());
        assert!(RedactionPolicy::from_switch(Some(true)).enabled);
        assert_eq!(RedactionPolicy::from_switch(Some(false)), RedactionPolicy::disabled());
    }

    #[test]
    fn a_generated_value_under_an_auth_key_is_masked() {
        // `auth` ends in a letter no other secret word ends in; the pre-scan once skipped it.
        let mut raw = RawJson::from_text(r#"{"auth": "AbCdEf0123456789XyZab", "n": 1}"#.to_string()).unwrap();
        redact_raw(&mut raw);
        assert_eq!(raw.get(), r#"{"auth":"[redacted]","n":1}"#);
        assert_eq!(r("auth=AbCdEf0123456789XyZab"), "auth=[redacted]");
    }

    #[test]
    fn a_diff_header_is_not_a_password_option() {
        // `--- a/file` in a diff starts with `--` at a word start, but only `--user` takes a
        // password: records holding diffs are not parsed for it.
        let record = r#"{"diff":"Index: a.py\n===\n--- a.py\n+++ a.py\n@@ -1 +1 @@\n-x\n+y\n"}"#;
        assert!(!may_hold_secrets(record.as_bytes()));
        assert!(may_hold_secrets(br#"{"command":"curl --user bob:pw x"}"#));
        assert!(may_hold_secrets(br#"{"command":"tool --api-token abc x"}"#));
    }

    #[test]
    fn ordinary_tool_inputs_are_not_parsed() {
        for text in [
            r#"{"command":"ls -la /tmp","description":"List files"}"#,
            r#"{"file_path":"/work/src/main.rs","old_string":"fn main() {\n    println!(\"hi\");\n}","new_string":"x"}"#,
            r#"{"pattern":"TODO","path":"src","output_mode":"content"}"#,
            r#"{"todos":[{"content":"Write the parser","status":"in_progress","activeForm":"Writing"}]}"#,
            r#"{"url":"https://example.com/docs?page=2","prompt":"Summarize the API"}"#,
        ] {
            assert!(!may_hold_secrets(text.as_bytes()), "{text}");
        }
        for text in [
            r#"{"command":"curl -H 'Authorization: Bearer abc'"}"#,
            r#"{"api_key":"x"}"#,
            r#"{"command":"export TOKEN=abc"}"#,
            r#"{"text":"\u0073k-live-0123456789"}"#,
            r#"{"text":"a\nsk-live-0123456789"}"#,
            r#"{"k":"-----BEGIN OPENSSH PRIVATE KEY-----"}"#,
            r#"{"id":"AKIAIOSFODNN7EXAMPLE"}"#,
            // Slashes escaped as PHP's encoder writes them (found by the property test).
            r#"["https:\/\/commandPGPASSWORD@"]"#,
            r#"{"url":"https:\/\/bob:s3cret@db.example.com\/x"}"#,
        ] {
            assert!(may_hold_secrets(text.as_bytes()), "{text}");
        }
        let mut value: serde_json::Value =
            serde_json::from_str(r#"{"url":"https:\/\/bob:s3cret@db.example.com"}"#).unwrap();
        redact_value(&mut value);
        assert!(!value.to_string().contains("s3cret"), "{value}");
    }
}
