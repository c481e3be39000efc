//! Masking secret shapes in tool-call inputs (decisions.md §6).
//!
//! Redaction happens in the core, before an event is numbered: a transport that redacts has
//! already handed the value to whatever it logs to. It applies to tool-call INPUTS only —
//! `rawInput` and `title` of `tool_call` events (and the `title` of `tool_call_update`, which
//! re-titles the same call), and the diffs in the `content` of either (an edit's text IS its
//! input) — via [`redact_tool_input`]. Answer text is never altered: deltas
//! that no longer reassemble to the answer are a corrupted answer.
//!
//! Each match is replaced by the literal [`REDACTED`] (`[redacted]`); the rest of the string is
//! kept. The shapes, all found by small byte scanners (no regex):
//!
//! | shape | example | masked |
//! |---|---|---|
//! | API-key prefixes at a word start: `sk-`/`sk_` (incl. `sk-ant-…`, `sk-proj-…`), `pk_`/`pk-`, `rk_`/`rk-`, `api-`/`api_`, then ≥ 8 of `[A-Za-z0-9_-]` containing a digit (or ≥ 24 without) | `sk-live-01234567890abcdef` | the whole key |
//! | provider tokens: GitHub `ghp_`/`gho_`/`ghu_`/`ghs_`/`ghr_` (≥ 20), `github_pat_` (≥ 20), GitLab `glpat-` (≥ 20), Slack `xoxb-`/`xoxp-`/`xoxa-`/`xoxr-`/`xoxs-` (≥ 10), Google `AIza` (≥ 30), Hugging Face `hf_` (≥ 30) | `ghp_0123…` | the whole token |
//! | AWS access key ids: `AKIA`/`ASIA` + exactly 16 of `[A-Z0-9]` | `AKIAIOSFODNN7EXAMPLE` | the id |
//! | JWTs: `eyJ` + ≥ 10 base64url chars, with up to two more `.`-separated parts | `eyJhbGciOi….eyJzdWIi….sig` | the token |
//! | `Bearer <token>` (any case), token ≥ 8 chars of `[A-Za-z0-9-._~+/=]` with a digit or symbol (or ≥ 20) | `Authorization: Bearer abc123…` | the token (`Bearer ` kept) |
//! | PEM private keys: `-----BEGIN … PRIVATE KEY-----` … `-----END … PRIVATE KEY-----` | | the whole block (to the end of the text when the END line is missing) |
//! | a value after a secret-named key, as `k=v`, `k: v`, `"k": "v"`, `'k': 'v'`, `--k v`, `--k=v` | `password=hunter2`, `"token": "…"` | the value |
//!
//! A key is secret-named when its last word (split on `_` `-` `.` and camelCase) is
//! `password`, `passwd`, `pwd`, `pass`, `passphrase`, `secret`, `credential(s)` — then any
//! value of ≥ 3 chars is masked, except `null`/`none`/`true`/`false`/`undefined`, `$VAR`
//! references and `***` — or `key`, `token`, `apikey`, `accesskey`, `secretkey`, `privatekey`,
//! `signature` — then the value is masked when it looks generated: ≥ 16 chars of
//! `[A-Za-z0-9+/=_.~-]` mixing at least two of lower case, upper case and digits (long hex and
//! base64 values). So `aws_secret_access_key=wJalr…` and `GITHUB_TOKEN=…` are masked,
//! `sort_key=created_at` is not. In JSON values ([`redact_value`]) the same rule applies to an
//! object member whose key is secret-named: `{"api_key": "…"}` has its value masked whole.
//!
//! Known false positives: a word such as `api-version-2024-01-01` (prefix + digit); a
//! mixed-case identifier of ≥ 16 chars under a `…key`/`…token` name (`cache_key=UserProfile2024v`);
//! any ≥ 3-char value under a password-named key, placeholders included.
//! Known misses: upper-case prefixes (`SK-…`); secrets under names not listed (`DB_URL` with a
//! password inside the URL, `auth=`); short or single-class values under `key`/`token`
//! names (`token=abcdefghijklmnopqrst`); a value over 1 KiB under a secret-named key (not
//! judged, which keeps scanning linear); bare long hex/base64 without a key name (deliberately:
//! git SHAs and ids look the same); a secret split across two strings; tool RESULTS (only
//! inputs are masked) and the raw `stdout` line the tool input was decoded from.

use std::borrow::Cow;

use serde_json::Value;

use crate::event::{OutputEvent, RawJson, SessionUpdate, ToolCallContent};

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

    /// Apply the policy to one content event ([`redact_tool_input`] when enabled).
    pub fn apply(&self, event: &mut OutputEvent) {
        if self.enabled {
            redact_tool_input(event);
        }
    }
}

/// Mask the tool-call inputs of `event` in place: `rawInput` (every string inside, see
/// [`redact_value`]) and `title` of a `tool_call`, `title` of a `tool_call_update`, and the
/// old and new text of the diffs in the `content` of either (an edit's text is its input).
/// Nothing else is touched: message, thought and user text, tool results, plans, errors and
/// usage are delivered as they are.
pub fn redact_tool_input(event: &mut OutputEvent) {
    match &mut event.update {
        SessionUpdate::ToolCall(call) => {
            replace_if_owned(&mut call.title);
            if let Some(raw) = &mut call.raw_input {
                redact_raw(raw);
            }
            redact_diffs(call.content.as_deref_mut());
        }
        SessionUpdate::ToolCallUpdate(update) => {
            if let Some(title) = &mut update.title {
                replace_if_owned(title);
            }
            redact_diffs(update.content.as_deref_mut());
        }
        _ => {}
    }
}

fn redact_diffs(content: Option<&mut [ToolCallContent]>) {
    for item in content.into_iter().flatten() {
        if let ToolCallContent::Diff(diff) = item {
            replace_if_owned(&mut diff.new_text);
            if let Some(old) = &mut diff.old_text {
                replace_if_owned(old);
            }
        }
    }
}

fn replace_if_owned(s: &mut String) -> bool {
    if let Cow::Owned(masked) = redact(s) {
        *s = masked;
        return true;
    }
    false
}

/// [`redact_value`] for a record kept as text: rewritten only when something was masked.
///
/// Most tool inputs hold nothing secret-shaped, so the text is first scanned for what every
/// mask needs ([`may_hold_secrets`]); only when that finds something is it parsed.
pub fn redact_raw(raw: &mut RawJson) {
    if !may_hold_secrets(raw.get().as_bytes()) {
        return;
    }
    let mut value = raw.to_value();
    if redact_value_changed(&mut value) {
        *raw = RawJson::from_value(&value);
    }
}

/// Mask every string inside a JSON value in place ([`redact`] on each), and mask whole the
/// string value of an object member whose key is secret-named (see the module docs).
pub fn redact_value(value: &mut Value) {
    redact_value_changed(value);
}

fn redact_value_changed(value: &mut Value) -> bool {
    match value {
        Value::String(s) => replace_if_owned(s),
        Value::Array(items) => items.iter_mut().fold(false, |changed, v| redact_value_changed(v) | changed),
        Value::Object(members) => {
            let mut changed = false;
            for (key, v) in members.iter_mut() {
                match v {
                    Value::String(s) if key_class(key.as_bytes()).is_some_and(|c| value_is_secret(c, s.as_bytes())) => {
                        *s = REDACTED.to_string();
                        changed = true;
                    }
                    other => changed |= redact_value_changed(other),
                }
            }
            changed
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

/// False only when masking can change nothing in `text`: neither [`redact`] on it as plain
/// text, nor [`redact_value`] on the JSON value it is the text of. A scan for what each mask
/// needs, without parsing.
///
/// Every mask needs, in some (decoded) string: a PEM `-----BEGIN `, a prefixed token at a word
/// start, the word `bearer`, or a secret-named key (its last word `key`, `token`, `password`,
/// …) right before a separator (`=`, `:`, a quote, a blank, a backslash) or at the end of an
/// object key. None of these contain a character JSON escapes, so in JSON text they appear as
/// they are, with two exceptions handled here: any `\uXXXX` escape could spell anything (the
/// text is then parsed), and a short escape before a token (`\nsk-…`) leaves a letter before it
/// in the text where the decoded string has a word boundary (a letter after a backslash counts
/// as one). After a key name, a decoded quote or backslash shows as a backslash in the text.
pub fn may_hold_secrets(text: &[u8]) -> bool {
    let b = text;
    // One pass; each trigger is anchored on one byte of it (most bytes are none of these).
    for (j, &c) in b.iter().enumerate() {
        if !ANCHOR[c as usize] {
            continue;
        }
        let found = match c {
            b'\\' => b.get(j + 1) == Some(&b'u') || secret_word_ends_at(b, j),
            b'-' => b[j..].starts_with(b"-----BEGIN ") || prefixed_token_ends_at(b, j),
            b'_' => prefixed_token_ends_at(b, j),
            b'A' => prefixed_token_from(b, j),
            b'J' => j >= 2 && prefixed_token_from(b, j - 2),
            b'b' | b'B' => b.len() >= j + 6 && b[j..j + 6].eq_ignore_ascii_case(b"bearer"),
            _ => secret_word_ends_at(b, j),
        };
        if found {
            return true;
        }
    }
    false
}

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
    if j == 0 || !matches!(b[j - 1] | 0x20, b'y' | b'n' | b's' | b'd' | b'e' | b't' | b'l') {
        return false;
    }
    let from = j.saturating_sub(8);
    let mut last = [0u8; 8];
    last[8 - (j - from)..].copy_from_slice(&b[from..j]);
    let w = u64::from_le_bytes(last) | 0x2020_2020_2020_2020;
    SECRET_WORD_ENDS.iter().any(|&(mask, end)| w & mask == end)
}

/// `(mask, bytes)` of the last (up to) eight bytes of each secret-named last word of a key
/// (see [`key_class`]), placed as the top bytes of a little-endian word.
const SECRET_WORD_ENDS: [(u64, u64); 11] = {
    const WORDS: [&[u8]; 11] = [
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
    ];
    let mut out = [(0u64, 0u64); 11];
    let mut k = 0;
    while k < WORDS.len() {
        let w = WORDS[k];
        let n = if w.len() < 8 { w.len() } else { 8 };
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
    let b = text.as_bytes();
    if !may_hold_secrets(b) {
        return Cow::Borrowed(text);
    }
    let mut spans: Vec<(usize, usize)> = Vec::new();
    scan_pem(b, &mut spans);
    scan_prefixed(b, &mut spans);
    scan_bearer(b, &mut spans);
    scan_key_values(b, &mut spans);
    scan_flags(b, &mut spans);
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
    match last.as_slice() {
        b"password" | b"passwd" | b"pwd" | b"pass" | b"passphrase" | b"secret" | b"credential" | b"credentials" => {
            Some(KeyClass::Password)
        }
        b"key" | b"token" | b"apikey" | b"accesskey" | b"secretkey" | b"privatekey" | b"signature" => {
            Some(KeyClass::Token)
        }
        _ => None,
    }
}

fn value_is_secret(class: KeyClass, v: &[u8]) -> bool {
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
        if start < end && value_is_secret(class, &b[start..end]) {
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
        for unit in ["password:\"", "key=key=", "password=\\\"", "--token ", "Bearer x"] {
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

        let diff = |old: Option<&str>, new: &str| {
            ToolCallContent::Diff(crate::event::DiffContent {
                path: "/p/.env".into(),
                old_text: old.map(str::to_string),
                new_text: new.into(),
            })
        };
        let mut write = call.clone();
        let SessionUpdate::ToolCall(c) = &mut write.update else { unreachable!() };
        c.content = Some(vec![diff(Some("API_KEY=sk-live-01234567890abcdef\n"), "API_KEY=$KEY\npassword=hunter2\n")]);
        redact_tool_input(&mut write);
        let SessionUpdate::ToolCall(c) = &write.update else { unreachable!() };
        assert_eq!(
            c.content,
            Some(vec![diff(Some("API_KEY=[redacted]\n"), "API_KEY=$KEY\npassword=[redacted]\n")]),
            "an edit's text is its input"
        );
        let mut up = ToolCallUpdate::new("t");
        up.content = Some(vec![diff(None, "token: sk-live-01234567890abcdef")]);
        let mut ev = OutputEvent::new(SessionUpdate::ToolCallUpdate(up));
        redact_tool_input(&mut ev);
        assert!(ev.to_json().contains("token: [redacted]"), "{}", ev.to_json());

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
            if !spans.is_empty() {
                proptest::prop_assert!(may_hold_secrets(s.as_bytes()), "missed: {:?}", s);
            }
        }
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
        ] {
            assert!(may_hold_secrets(text.as_bytes()), "{text}");
        }
    }
}
