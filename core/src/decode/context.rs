//! What every harness decoder shares: the run's sticky facts and envelope stamping.

use crate::event::{OutputEvent, RawJson, SessionUpdate, SharedStr};

/// Facts of a run that outlive one line.
#[derive(Debug, Default, Clone)]
pub struct DecodeContext {
    /// The harness's session/thread id, once seen; stamped on every later event.
    pub session_id: Option<SharedStr>,
    /// The model named on the harness's init line (gemini, droid): stamped where a line names none.
    pub init_model: Option<SharedStr>,
    /// The last model a line named: consecutive lines name the same one.
    pub models: LastStr,
    /// The last message id a line named: the lines of one LLM message repeat it.
    pub message_ids: LastStr,
    /// The last parent tool call id a subagent line named.
    pub parents: LastStr,
    /// The harness printed its end-of-run record (claude/qwen/gemini `result`, codex
    /// `turn.completed` / `turn.failed`, opencode's last `step_finish`, droid `completion`) and
    /// nothing has re-opened the run since (claude's second `system/init` after a background
    /// task). A harness that exits 0 without it did not complete.
    pub final_result_seen: bool,
}

impl DecodeContext {
    /// Remember the session id if none was seen yet (the first one wins). An id a later run
    /// could not be given back on the harness's command line is not one: empty, holding a NUL,
    /// or starting with `-` (which the harness would read as an option).
    pub fn see_session(&mut self, id: Option<&str>) {
        let resumable = |id: &&str| !id.is_empty() && !id.contains('\0') && !id.starts_with('-');
        if self.session_id.is_none() {
            if let Some(id) = id.filter(resumable) {
                self.session_id = Some(id.into());
            }
        }
    }
}

/// The last value of one envelope fact, shared: a line repeating it costs a comparison and a
/// reference-count bump instead of an allocation per event.
#[derive(Debug, Default, Clone)]
pub struct LastStr(Option<SharedStr>);

impl LastStr {
    /// `text` as a shared string, reusing the previous one when it is the same text.
    pub fn share(&mut self, text: &str) -> SharedStr {
        match &self.0 {
            Some(last) if **last == *text => last.clone(),
            _ => {
                let new: SharedStr = text.into();
                self.0 = Some(new.clone());
                new
            }
        }
    }

    /// [`LastStr::share`] for an optional value.
    pub fn share_opt(&mut self, text: Option<&str>) -> Option<SharedStr> {
        text.map(|t| self.share(t))
    }
}

/// The event for `update`, stamped with the run's facts only (session id, init model): for
/// harnesses whose lines carry no envelope, there is nothing per line to clone.
#[inline]
pub(crate) fn session_event(ctx: &DecodeContext, update: SessionUpdate) -> OutputEvent {
    let mut event = OutputEvent::new(update);
    event.session_id = ctx.session_id.clone();
    event.model = ctx.init_model.clone();
    event
}

/// The envelope facts of one wire line; every event decoded from the line carries them.
#[derive(Debug, Default, Clone)]
pub struct Envelope {
    /// The line's timestamp, ISO 8601 where the harness prints one.
    pub timestamp: Option<SharedStr>,
    /// The model named on the line.
    pub model: Option<SharedStr>,
    /// The LLM message the line belongs to.
    pub message_id: Option<SharedStr>,
    /// On a subagent's line: the parent's tool call id.
    pub parent_tool_call_id: Option<SharedStr>,
    /// Other facts of the line (e.g. `stop_reason`), as a JSON object's text.
    pub extra: Option<RawJson>,
}

impl Envelope {
    /// No envelope facts (a line that carries none): shared, so nothing is built and dropped
    /// per line.
    pub const NONE: &'static Envelope =
        &Envelope { timestamp: None, model: None, message_id: None, parent_tool_call_id: None, extra: None };

    /// Build the event for `update`, stamped with this envelope and the run's session id.
    pub fn event(&self, ctx: &DecodeContext, update: SessionUpdate) -> OutputEvent {
        OutputEvent {
            session_id: ctx.session_id.clone(),
            update,
            timestamp: self.timestamp.clone(),
            model: self.model.clone().or_else(|| ctx.init_model.clone()),
            message_id: self.message_id.clone(),
            parent_tool_call_id: self.parent_tool_call_id.clone(),
            extra: self.extra.clone(),
        }
    }

    /// Build the event for `update`, moving this envelope's facts into it (for a line's last event).
    pub fn into_event(self, ctx: &DecodeContext, update: SessionUpdate) -> OutputEvent {
        OutputEvent {
            session_id: ctx.session_id.clone(),
            update,
            timestamp: self.timestamp,
            model: self.model.or_else(|| ctx.init_model.clone()),
            message_id: self.message_id,
            parent_tool_call_id: self.parent_tool_call_id,
            extra: self.extra,
        }
    }

    /// Push the event for `update` onto `out`, moving this envelope into it (a line's last event).
    pub fn emit_last(self, ctx: &DecodeContext, update: SessionUpdate, out: &mut Vec<OutputEvent>) {
        out.push(self.into_event(ctx, update));
    }

    /// Push the event for `update` onto `out`.
    pub fn emit(&self, ctx: &DecodeContext, update: SessionUpdate, out: &mut Vec<OutputEvent>) {
        out.push(self.event(ctx, update));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_value_is_the_same_shared_string() {
        let mut last = LastStr::default();
        let a = last.share("claude-sonnet");
        let b = last.share("claude-sonnet");
        assert!(SharedStr::ptr_eq(&a, &b));
        let c = last.share("claude-opus");
        assert_eq!(&*c, "claude-opus");
        assert!(!SharedStr::ptr_eq(&a, &c));
        assert!(SharedStr::ptr_eq(&c, &last.share("claude-opus")));
        assert_eq!(last.share_opt(None), None);
        assert_eq!(last.share_opt(Some("x")).as_deref(), Some("x"));
    }

    #[test]
    fn events_carry_the_runs_facts_and_the_lines_envelope() {
        let mut ctx = DecodeContext::default();
        for not_an_id in ["", "a\0b", "--yolo"] {
            ctx.see_session(Some(not_an_id));
            assert_eq!(ctx.session_id, None, "{not_an_id:?} is not an id a later run could resume");
        }
        ctx.see_session(Some("s1"));
        ctx.see_session(Some("s2"));
        ctx.init_model = Some("init-model".into());
        let env = Envelope { timestamp: Some("t".into()), message_id: Some("m".into()), ..Envelope::default() };
        let first = env.event(&ctx, SessionUpdate::message("a"));
        let last = env.into_event(&ctx, SessionUpdate::message("b"));
        for ev in [&first, &last] {
            assert_eq!(ev.session_id.as_deref(), Some("s1"), "the first session id wins");
            assert_eq!(ev.model.as_deref(), Some("init-model"));
            assert_eq!((ev.timestamp.as_deref(), ev.message_id.as_deref()), (Some("t"), Some("m")));
        }
        assert!(SharedStr::ptr_eq(first.session_id.as_ref().unwrap(), last.session_id.as_ref().unwrap()));
    }
}
