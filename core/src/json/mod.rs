//! Reading JSON lines: what every harness decoder reads its wire format with (crate-private).
//!
//! The decoders read each line once, with serde_json's exact acceptance rules, keeping strings
//! borrowed from the line and values they only pass on as the printed text. The layers, each
//! using only the ones above it (no import circle):
//!
//! | module | job |
//! |---|---|
//! | [`text`] | bytes: the end of a string's plain run, unescaping a string body, a printed count; the scanner's error type |
//! | [`lenient`] | serde helpers with the decoders' leniency (a field of another shape is `None`, not a failed line), display text of a value, and why an unusable line is unusable ([`Unusable`]) |
//! | [`borrowed`] | serde field types that borrow from the line ([`borrowed::Str`], [`borrowed::CowStr`], [`borrowed::Checked`], …) |
//! | [`tree`] | a borrowed JSON tree ([`tree::Json`]) for records a decoder picks fields out of |
//! | [`scan`] | the one-pass scanner ([`scan::Scan`]) the decoders drive field by field |
//! | [`raw_record`] | verbatim records (`rawInput`, `rawOutput`, usage `extra`) as `RawJson`, without a `Value` tree |
//! | [`in_place`] | serde reading into a struct the caller holds, and the seen-key sets of one-pass readers |
//!
//! `unsafe` is used five times, each block with a SAFETY comment naming the invariant and a
//! test pinning it: [`text::unescape`] (its output is valid UTF-8), [`text::find_special`]'s
//! SSE2 loads (inside the slice), the slices of a string's text between its quotes in
//! [`scan::Scan::str`] and [`scan::JStr::printed`] (cut on character boundaries) and
//! [`raw_record::read_raw_json`] (the text is one whole JSON value without surrounding
//! whitespace). `make test-miri` runs those tests under Miri, which checks every access they
//! make.

pub(crate) mod borrowed;
pub(crate) mod in_place;
pub(crate) mod lenient;
pub(crate) mod raw_record;
pub(crate) mod scan;
pub(crate) mod text;
pub(crate) mod tree;

/// Why a line that did not read as the expected struct is unusable (the decoders report it as
/// their `LineOutcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unusable {
    /// Not valid JSON.
    InvalidJson,
    /// Valid JSON, but not an object.
    NotObject,
    /// An object whose fields have shapes the reader could not use.
    UnexpectedShape,
}
