//! Python: `TypedDict`s and `Literal` aliases (`python/agentstream/types.py`), and the error
//! table (`python/agentstream/_error_table.py`) the exception classes take their codes from.
//!
//! Conventions: keys exactly as on the wire (content events camelCase, the rest snake_case); an
//! optional key is `NotRequired[...]` (absent, never `None`); a nullable one is `T | None`; a
//! tagged union is one `TypedDict` per kind plus a `Union` alias (and `<Union>Kind`, the tag
//! values); declarations come in dependency order because Python evaluates them.

use std::fmt::Write;

use super::{File, Language, MergedField, banner, flattened_defs, merged_arm_fields, tag_alias};
use crate::model::{Def, Field, Model, Shape, Struct, Ty, Union};
use crate::text::{first_paragraph, snake, wrap};

/// The Python language.
pub const LANGUAGE: Language = Language { name: "python", emit, owns: &[] };

const TYPES_PATH: &str = "python/agentstream/types.py";
const ERRORS_PATH: &str = "python/agentstream/_error_table.py";

/// Public names that differ from the schema's: the names `agentstream.types` had before it was
/// generated (`RunResultDict`: `agentstream.RunResult` is the dataclass built from it).
const RENAMES: &[(&str, &str)] = &[
    ("Agent", "AgentName"),
    ("Channel", "ChannelName"),
    ("RunOutcome", "ReplayOutcome"),
    ("RunResult", "RunResultDict"),
    ("HookEventType", "HookType"),
];

/// `(struct, property, doc)`: the property merged into the top level, and the type's doc in this
/// shape. A Python hook event is ONE flat dict, the details beside `type`, `run_id`, …
/// (decisions.md §5).
const FLATTEN: &[(&str, &str, &str)] = &[(
    "HookEvent",
    "details",
    "One hook event (``on_event``), derived from a run's stream: one flat dict, the fields every hook \
     has, then the details of its ``type`` merged in (each detail key below names the hook types that \
     carry it).",
)];

/// Structs whose Python form has snake_case keys although the wire form is camelCase: the
/// iterator API builds envelopes itself, with `run_id` like every snake_case shape.
const SNAKE_CASE: &[&str] = &["Envelope"];

const WIDTH: usize = 100;

fn name(schema_name: &str) -> String {
    RENAMES.iter().find(|(from, _)| *from == schema_name).map(|(_, to)| to.to_string()).unwrap_or(schema_name.into())
}

fn emit(model: &Model) -> Vec<File> {
    vec![File { path: TYPES_PATH.into(), text: types(model) }, File { path: ERRORS_PATH.into(), text: errors(model) }]
}

struct Out {
    text: String,
    exports: Vec<String>,
}

impl Out {
    fn docstring(&mut self, doc: &str, indent: &str) {
        if doc.is_empty() {
            return;
        }
        let doc = doc.replace('\\', "\\\\").replace("\"\"\"", "\\\"\\\"\\\"");
        let lines = wrap(&doc, WIDTH - indent.len() - 6);
        if lines.len() == 1 {
            let _ = writeln!(self.text, "{indent}\"\"\"{}\"\"\"", lines[0]);
        } else {
            let _ = writeln!(self.text, "{indent}\"\"\"{}", lines[0]);
            for l in &lines[1..] {
                if l.is_empty() {
                    self.text.push('\n');
                } else {
                    let _ = writeln!(self.text, "{indent}{l}");
                }
            }
            let _ = writeln!(self.text, "{indent}\"\"\"");
        }
    }
}

fn ty(t: &Ty) -> String {
    match t {
        Ty::String => "str".into(),
        Ty::Bool => "bool".into(),
        Ty::Int(_) => "int".into(),
        Ty::Float => "float".into(),
        Ty::Any => "Any".into(),
        Ty::Object => "dict[str, Any]".into(),
        Ty::Ref(n) => name(n),
        Ty::Array(t) => format!("list[{}]", ty(t)),
        Ty::Map(t) => format!("dict[str, {}]", ty(t)),
        Ty::Nullable(t) => format!("{} | None", ty(t)),
        Ty::AnyOf(ts) => ts.iter().map(ty).collect::<Vec<_>>().join(" | "),
    }
}

fn literal(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("\"{v}\"")).collect();
    let one_line = format!("Literal[{}]", quoted.join(", "));
    if one_line.len() < WIDTH - 30 {
        return one_line;
    }
    let mut s = String::from("Literal[\n");
    for q in quoted {
        let _ = writeln!(s, "    {q},");
    }
    s.push(']');
    s
}

fn field(out: &mut Out, key: &str, py_type: String, required: bool, doc: &str) {
    assert!(key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'), "{key} is not a Python identifier");
    let t = if required { py_type } else { format!("NotRequired[{py_type}]") };
    let _ = writeln!(out.text, "    {key}: {t}");
    out.docstring(doc, "    ");
}

fn class(out: &mut Out, class_name: &str, doc: &str, body: impl FnOnce(&mut Out)) {
    let _ = writeln!(out.text, "\n\nclass {class_name}(TypedDict):");
    out.docstring(doc, "    ");
    out.text.push('\n');
    body(out);
    out.exports.push(class_name.to_string());
}

fn alias(out: &mut Out, alias_name: &str, value: String, doc: &str) {
    let _ = writeln!(out.text, "\n\n{alias_name} = {value}");
    out.docstring(doc, "");
    out.exports.push(alias_name.to_string());
}

fn types(model: &Model) -> String {
    let mut out = Out { text: String::new(), exports: Vec::new() };
    let skipped = flattened_defs(model, &FLATTEN.iter().map(|(s, p, _)| (*s, *p)).collect::<Vec<_>>());
    let variants = model.variant_structs();
    for def in model.in_dependency_order() {
        if skipped.contains(&def.name) || variants.contains_key(&def.name) {
            continue; // merged into a flat struct, or declared as a variant of its union
        }
        match &def.shape {
            Shape::Enum(values) => {
                let mut v = String::from("Literal[\n");
                for m in values {
                    let comment = first_paragraph(&m.doc);
                    let line = format!("    \"{}\",", m.value);
                    if comment.is_empty() {
                        let _ = writeln!(v, "{line}");
                    } else if line.len() + comment.len() + 4 <= WIDTH {
                        let _ = writeln!(v, "{line}  # {comment}");
                    } else {
                        for c in wrap(&comment, WIDTH - 6) {
                            let _ = writeln!(v, "    # {c}");
                        }
                        let _ = writeln!(v, "{line}");
                    }
                }
                v.push(']');
                alias(&mut out, &name(&def.name), v, &def.doc);
            }
            Shape::Map(t) => alias(&mut out, &name(&def.name), format!("dict[str, {}]", ty(t)), &def.doc),
            Shape::Union(u) => union(&mut out, model, def, u),
            Shape::Struct(s) => structure(&mut out, model, def, s),
        }
    }
    let mut text = banner("#");
    text.push_str(
        "\"\"\"Typed shapes of everything agentstream hands to Python, generated from the core's schema.\n\
         \n\
         Events are plain ``dict`` objects at run time; these ``TypedDict`` definitions describe them for\n\
         type checkers (mypy, pyright). Content events (``OutputEvent``) use the seed's camelCase keys,\n\
         exactly as on the wire; lifecycle events, hook events, the envelope, the run result and the\n\
         statistics are snake_case. An optional key is ABSENT when unknown, never ``None``; ``None``\n\
         appears only where the type says ``| None``.\n\
         \n\
         TypedDict unions cannot be narrowed by their discriminator key alone: check\n\
         ``update[\"sessionUpdate\"]`` and ``cast()`` to the variant, as in the examples of ``docs/python.md``.\n\
         \"\"\"\n\nfrom typing import Any, Literal, NotRequired, TypedDict, Union\n\n__all__ = [\n",
    );
    for e in &out.exports {
        let _ = writeln!(text, "    \"{e}\",");
    }
    text.push_str("]\n");
    text.push_str(&out.text);
    text
}

fn union(out: &mut Out, model: &Model, def: &Def, u: &Union) {
    for v in &u.variants {
        class(out, &v.name, &v.doc, |out| {
            field(out, &u.tag, format!("Literal[\"{}\"]", v.value), true, "");
            for f in &v.fields {
                field(out, &f.name, ty(&f.ty), f.required, &f.doc);
            }
        });
    }
    let members: Vec<&str> = u.variants.iter().map(|v| v.name.as_str()).collect();
    let value = format!("Union[\n    {},\n]", members.join(",\n    "));
    alias(out, &name(&def.name), value, &def.doc);
    let values: Vec<&str> = u.variants.iter().map(|v| v.value.as_str()).collect();
    if model.enum_with_values(&values).is_none() {
        let kind = format!("{}Kind", name(&def.name));
        alias(out, &kind, literal(&values), &format!("The ``{}`` values of ``{}``.", u.tag, name(&def.name)));
    }
}

fn structure(out: &mut Out, model: &Model, def: &Def, s: &Struct) {
    let snake_keys = SNAKE_CASE.contains(&def.name.as_str());
    let key = |k: &str| if snake_keys { snake(k) } else { k.to_string() };
    let flat = FLATTEN.iter().find(|(n, _, _)| *n == def.name);
    let flatten = flat.map(|(_, p, _)| *p);
    let tag_type = match (&s.refinement, tag_alias(def)) {
        (Some(r), Some(alias_name)) => {
            let values: Vec<&str> = r.arms.iter().map(|a| a.tag_value()).collect();
            let py = name(&alias_name);
            alias(out, &py, literal(&values), &format!("The ``{}`` values of ``{}``.", r.tag, name(&def.name)));
            Some((r.tag.clone(), py))
        }
        _ => None,
    };
    let merged: Vec<MergedField> = flatten.map(|p| merged_arm_fields(model, s, p)).unwrap_or_default();
    let doc = flat.map(|(_, _, d)| d.to_string()).unwrap_or_else(|| def.doc.clone());
    class(out, &name(&def.name), &doc, |out| {
        for f in s.fields.iter().filter(|f| Some(f.name.as_str()) != flatten) {
            let t = match &tag_type {
                Some((tag, alias_name)) if *tag == f.name => alias_name.clone(),
                _ => ty(&f.ty),
            };
            field(out, &key(&f.name), t, f.required, &f.doc);
        }
        for m in &merged {
            let types: Vec<String> = m.types.iter().map(ty).collect();
            let Field { name: k, doc, .. } = &m.field;
            let doc = format!("{} ({})", doc, m.arms.join(", "));
            field(out, &key(k), types.join(" | "), false, &doc);
        }
    });
}

fn errors(model: &Model) -> String {
    let mut s = banner("#");
    s.push_str(
        "\"\"\"The core's error table: every kind's stable code and advice (``agentstream.errors`` maps each\n\
         kind to its exception class).\"\"\"\n\n\
         from typing import Final, NamedTuple\n\n\
         from .types import ErrorKind\n\n\
         __all__ = [\"ERRORS\", \"ErrorInfo\"]\n\n\n\
         class ErrorInfo(NamedTuple):\n\
         \x20   \"\"\"One row of the error table.\"\"\"\n\n\
         \x20   code: int\n\
         \x20   \"\"\"The stable number (the same in every language).\"\"\"\n\
         \x20   advice: str\n\
         \x20   \"\"\"What the caller can do about it.\"\"\"\n\
         \x20   description: str\n\
         \x20   \"\"\"What it means.\"\"\"\n\n\n\
         ERRORS: Final[dict[ErrorKind, ErrorInfo]] = {\n",
    );
    for e in &model.errors {
        let quote = |t: &str| serde_json::to_string(t).expect("a string serializes");
        let _ = writeln!(
            s,
            "    \"{}\": ErrorInfo(\n        {},\n        {},\n        {},\n    ),",
            e.name,
            e.code,
            quote(&e.advice),
            quote(&e.doc)
        );
    }
    s.push_str("}\n\"\"\"Every kind, in code order.\"\"\"\n");
    s
}
