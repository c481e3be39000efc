//! Droid decoder (stub: every object line counts as an unknown type until implemented).

use serde::Deserialize;

use super::context::DecodeContext;
use super::json::parse_line;
use super::{HarnessDecoder, LineOutcome};
use crate::event::OutputEvent;

/// Stateful droid line decoder.
#[derive(Debug, Default)]
pub(crate) struct DroidDecoder {}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", default, borrow, with = "super::json::opt_string")]
    _kind: Option<std::borrow::Cow<'a, str>>,
}

impl HarnessDecoder for DroidDecoder {
    fn decode_line(&mut self, line: &str, _ctx: &mut DecodeContext, _out: &mut Vec<OutputEvent>) -> LineOutcome {
        match parse_line::<Line<'_>>(line) {
            Ok(_) => LineOutcome::UnknownType,
            Err(outcome) => outcome,
        }
    }
}
