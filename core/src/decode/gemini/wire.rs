//! Reading Gemini CLI's wire format: the line structs, read in one pass by the scanner with the
//! leniency each field needs. What the lines mean is in [`super`].

use std::borrow::Cow;

use serde_json::Value;

use crate::decode::LineOutcome;
use crate::decode::classify_failure;
use crate::event::TokenUsage;
use crate::json::borrowed::may_hold_surrogates;
use crate::json::lenient::Obj;
use crate::json::raw_record::{Counters, read_counters};
use crate::json::scan::{Bad, Res, Scan, read_obj_list, read_object};
use crate::json::text::raw_count;

/// One line, read in one pass by [`read_line`] and in place: strings borrowed from the line
/// (read as `json::opt_string` reads them: another type is `None`), the parts kept verbatim
/// (`parameters`, `output`, `error`) as slices of it, `stats` straight into the usage. A known
/// key printed twice makes the line unusable (as a derived struct would), and so does a value
/// no JSON reader takes in the parts that are values (an unpaired surrogate escape in
/// `parameters`, `output`, `error`; anything a `Value` refuses in `stats`).
#[derive(Default)]
pub(super) struct Line<'a> {
    pub(super) kind: Option<Cow<'a, str>>,
    pub(super) timestamp: Option<Cow<'a, str>>,
    pub(super) session_id: Option<Cow<'a, str>>,
    pub(super) model: Option<Cow<'a, str>>,
    pub(super) role: Option<Cow<'a, str>>,
    pub(super) content: Option<Cow<'a, str>>,
    pub(super) tool_name: Option<Cow<'a, str>>,
    pub(super) tool_id: Option<Cow<'a, str>>,
    pub(super) status: Option<Cow<'a, str>>,
    pub(super) severity: Option<Cow<'a, str>>,
    pub(super) message: Option<Cow<'a, str>>,
    /// As printed; not `null`.
    pub(super) parameters: Option<&'a str>,
    /// As printed; not `null`.
    pub(super) output: Option<&'a str>,
    /// As printed; not `null`.
    pub(super) error: Option<&'a str>,
    pub(super) stats: Option<TokenUsage>,
}

/// Read `line` into `l` with the [`Scan`]ner (serde_json's acceptance rules, one pass; `scratch`
/// is its buffer, see [`Scan::with_scratch`]); when it is not a usable line, the outcome
/// serde_json's reading of it gave.
pub(super) fn parse_line<'a>(
    line: &'a str,
    l: &mut Line<'a>,
    scratch: &mut Vec<(String, Value)>,
) -> Result<(), LineOutcome> {
    if !line.trim_start().starts_with('{') {
        return Err(classify_failure(line));
    }
    let mut r = Scan::with_scratch(line, std::mem::take(scratch));
    let read = read_line(&mut r, l).and_then(|()| r.end());
    *scratch = r.into_scratch();
    read.map_err(|_| classify_failure(line))
}

/// The fields of a line's object (other keys skipped by syntax, as `IgnoredAny` skipped them).
pub(super) fn read_line<'a>(r: &mut Scan<'a>, l: &mut Line<'a>) -> Res<()> {
    read_object!(r, l, {
        "type" => kind: Scan::opt_str,
        "timestamp" => timestamp: Scan::opt_str,
        "session_id" => session_id: Scan::opt_str,
        "model" => model: Scan::opt_str,
        "role" => role: Scan::opt_str,
        "content" => content: Scan::opt_str,
        "tool_name" => tool_name: Scan::opt_str,
        "tool_id" => tool_id: Scan::opt_str,
        "status" => status: Scan::opt_str,
        "severity" => severity: Scan::opt_str,
        "message" => message: Scan::opt_str,
        "parameters" => parameters: read_verbatim,
        "output" => output: read_verbatim,
        "error" => error: read_verbatim,
        "stats" => stats: read_stats,
    })
}

/// A part kept verbatim: its text as printed, `None` for `null`. Only its syntax is read (as
/// serde_json captures a raw value), except that text a JSON reader refuses and that may hold a
/// surrogate escape makes the line unusable (so a lone surrogate does, a number beyond `f64`
/// alone does not).
pub(super) fn read_verbatim<'a>(r: &mut Scan<'a>) -> Res<Option<&'a str>> {
    let text = r.raw()?;
    if text == "null" {
        return Ok(None);
    }
    if may_hold_surrogates(text) && !reads_as_value(text) {
        return Err(Bad);
    }
    Ok(Some(text))
}

/// A `serde_json::Value` reads `text` whole.
pub(super) fn reads_as_value(text: &str) -> bool {
    let mut r = Scan::new(text);
    r.check().and_then(|()| r.end()).is_ok()
}

/// `result.stats` → run usage (see the module docs), read in the line's pass: the counters
/// that are used leave `extra`, every other key stays there verbatim (a key printed twice
/// counts with its last value, as in a JSON reader). Any value that is not an object gives no
/// usage, but must still read as a JSON value.
pub(super) fn read_stats(r: &mut Scan<'_>) -> Res<Option<TokenUsage>> {
    let mut input = None;
    let stats = read_counters(r, ["input_tokens", "output_tokens", "cached"], false, |key, raw| {
        if key == "input" {
            input = raw_count(raw);
        }
    })?;
    Ok(stats.map(|Counters { counts: [input_tokens, output_tokens, cached], extra }| TokenUsage {
        prompt_tokens: input_tokens.or_else(|| crate::counters::sum("prompt tokens", [Some(input?), cached])),
        completion_tokens: output_tokens,
        cached_tokens: cached,
        cost_usd: None,
        extra,
    }))
}

/// A list of strings: the strings of a JSON array (other elements read as
/// [`Scan::opt_str`] reads them and dropped); `None` when the value is not an array.
pub(super) fn read_str_list<'a>(r: &mut Scan<'a>) -> Res<Option<Vec<Cow<'a, str>>>> {
    if r.peek() != Some(b'[') {
        return r.opt_str().map(|_| None);
    }
    let mut list = Vec::new();
    r.array(|r| r.opt_str().map(|s| list.extend(s)))?;
    Ok(Some(list))
}

/// One todo of `write_todos`.
#[derive(Default)]
pub(super) struct Todo<'a> {
    pub(super) description: Option<Cow<'a, str>>,
    pub(super) content: Option<Cow<'a, str>>,
    pub(super) text: Option<Cow<'a, str>>,
    pub(super) status: Option<Cow<'a, str>>,
    pub(super) priority: Option<Cow<'a, str>>,
}

/// A todo object, as a derived struct reads it (a field printed twice fails).
pub(super) fn read_todo<'a>(r: &mut Scan<'a>) -> Res<Todo<'a>> {
    let mut todo = Todo::default();
    read_object!(r, &mut todo, {
        "description" => description: Scan::opt_str,
        "content" => content: Scan::opt_str,
        "text" => text: Scan::opt_str,
        "status" => status: Scan::opt_str,
        "priority" => priority: Scan::opt_str,
    })?;
    Ok(todo)
}

/// The tool parameters any title, location, diff or plan is made of (strings only where the
/// table reads strings). Read from the printed `parameters` in a second scan, as a derived
/// struct reads them; a parameter printed twice makes that read fail, and the parameters are
/// then read as a JSON reader reads them (last value) through a [`Value`].
#[derive(Default)]
pub(super) struct Params<'a> {
    pub(super) file_path: Option<Cow<'a, str>>,
    pub(super) absolute_path: Option<Cow<'a, str>>,
    pub(super) path: Option<Cow<'a, str>>,
    pub(super) dir_path: Option<Cow<'a, str>>,
    pub(super) directory: Option<Cow<'a, str>>,
    pub(super) include: Option<Vec<Cow<'a, str>>>,
    pub(super) paths: Option<Vec<Cow<'a, str>>>,
    pub(super) file_paths: Option<Vec<Cow<'a, str>>>,
    pub(super) content: Option<Cow<'a, str>>,
    pub(super) old_string: Option<Cow<'a, str>>,
    pub(super) new_string: Option<Cow<'a, str>>,
    pub(super) description: Option<Cow<'a, str>>,
    pub(super) command: Option<Cow<'a, str>>,
    pub(super) pattern: Option<Cow<'a, str>>,
    pub(super) query: Option<Cow<'a, str>>,
    pub(super) prompt: Option<Cow<'a, str>>,
    pub(super) url: Option<Cow<'a, str>>,
    pub(super) agent_name: Option<Cow<'a, str>>,
    pub(super) agent_name_camel: Option<Cow<'a, str>>,
    pub(super) agent: Option<Cow<'a, str>>,
    pub(super) name: Option<Cow<'a, str>>,
    pub(super) subagent_type: Option<Cow<'a, str>>,
    pub(super) title: Option<Cow<'a, str>>,
    pub(super) topic: Option<Cow<'a, str>>,
    pub(super) fact: Option<Cow<'a, str>>,
    pub(super) skill: Option<Cow<'a, str>>,
    pub(super) todos: Option<Vec<Obj<Todo<'a>>>>,
}

impl<'a> Params<'a> {
    /// The parameters of a `tool_use`, from their printed text (not an object: none).
    pub(crate) fn read(text: &'a str) -> Params<'a> {
        if !text.starts_with('{') {
            return Params::default();
        }
        if let Some(params) = Params::scan(text) {
            return params;
        }
        // A parameter printed twice: what a JSON reader makes of them (owned copies).
        match serde_json::from_str::<Value>(text) {
            Ok(value) => Params::scan(&value.to_string()).map(Params::into_owned).unwrap_or_default(),
            Err(_) => Params::default(),
        }
    }

    /// `text` read whole as one object of parameters.
    pub(crate) fn scan(text: &'a str) -> Option<Params<'a>> {
        let mut params = Params::default();
        let mut r = Scan::new(text);
        read_object!(r, &mut params, {
            "file_path" => file_path: Scan::opt_str,
            "absolute_path" => absolute_path: Scan::opt_str,
            "path" => path: Scan::opt_str,
            "dir_path" => dir_path: Scan::opt_str,
            "directory" => directory: Scan::opt_str,
            "include" => include: read_str_list,
            "paths" => paths: read_str_list,
            "file_paths" => file_paths: read_str_list,
            "content" => content: Scan::opt_str,
            "old_string" => old_string: Scan::opt_str,
            "new_string" => new_string: Scan::opt_str,
            "description" => description: Scan::opt_str,
            "command" => command: Scan::opt_str,
            "pattern" => pattern: Scan::opt_str,
            "query" => query: Scan::opt_str,
            "prompt" => prompt: Scan::opt_str,
            "url" => url: Scan::opt_str,
            "agent_name" => agent_name: Scan::opt_str,
            "agentName" => agent_name_camel: Scan::opt_str,
            "agent" => agent: Scan::opt_str,
            "name" => name: Scan::opt_str,
            "subagent_type" => subagent_type: Scan::opt_str,
            "title" => title: Scan::opt_str,
            "topic" => topic: Scan::opt_str,
            "fact" => fact: Scan::opt_str,
            "skill" => skill: Scan::opt_str,
            "todos" => todos: |r: &mut Scan<'a>| read_obj_list(r, read_todo),
        })
        .and_then(|()| r.end())
        .ok()?;
        Some(params)
    }

    pub(crate) fn into_owned(self) -> Params<'static> {
        fn own(s: Option<Cow<'_, str>>) -> Option<Cow<'static, str>> {
            s.map(|s| Cow::Owned(s.into_owned()))
        }
        fn own_list(l: Option<Vec<Cow<'_, str>>>) -> Option<Vec<Cow<'static, str>>> {
            l.map(|v| v.into_iter().map(|s| Cow::Owned(s.into_owned())).collect())
        }
        Params {
            file_path: own(self.file_path),
            absolute_path: own(self.absolute_path),
            path: own(self.path),
            dir_path: own(self.dir_path),
            directory: own(self.directory),
            include: own_list(self.include),
            paths: own_list(self.paths),
            file_paths: own_list(self.file_paths),
            content: own(self.content),
            old_string: own(self.old_string),
            new_string: own(self.new_string),
            description: own(self.description),
            command: own(self.command),
            pattern: own(self.pattern),
            query: own(self.query),
            prompt: own(self.prompt),
            url: own(self.url),
            agent_name: own(self.agent_name),
            agent_name_camel: own(self.agent_name_camel),
            agent: own(self.agent),
            name: own(self.name),
            subagent_type: own(self.subagent_type),
            title: own(self.title),
            topic: own(self.topic),
            fact: own(self.fact),
            skill: own(self.skill),
            todos: self.todos.map(|list| {
                list.into_iter()
                    .map(|t| {
                        Obj(t.0.map(|t| Todo {
                            description: own(t.description),
                            content: own(t.content),
                            text: own(t.text),
                            status: own(t.status),
                            priority: own(t.priority),
                        }))
                    })
                    .collect()
            }),
        }
    }
}
