//! TypeScript: declarations of every wire type (`node/src/generated/types.ts`) and the error
//! table (`node/src/generated/errors.ts`). `node/src/types.ts` re-exports them next to the
//! hand-written API types (options, handlers).
//!
//! Conventions: every key of ours is camelCase (the core's `casing::camel_case_keys`: values
//! that are the harness's own records — `Any` / free objects — keep their keys); an optional
//! property is `key?: T` (absent, never `undefined`, under `exactOptionalPropertyTypes`); a
//! nullable one is `T | null`; tagged unions are unions of interfaces with a literal tag; a
//! refined struct (`Envelope`, `HookEvent`) is a generic base interface plus one member per arm,
//! so checking the tag narrows the rest.

use std::fmt::Write;

use super::{File, Language, arm_fields, banner, flattened_defs, tag_alias};
use crate::model::{Def, Field, Model, Shape, Struct, Ty, Union};
use crate::text::{camel, first_paragraph, pascal, screaming, wrap};

/// The TypeScript language.
pub const LANGUAGE: Language = Language { name: "typescript", emit, owns: &["node/src/generated"] };

const TYPES_PATH: &str = "node/src/generated/types.ts";
const ERRORS_PATH: &str = "node/src/generated/errors.ts";

/// Public names that differ from the schema's (the package's names before it was generated).
const RENAMES: &[(&str, &str)] = &[("Agent", "AgentName")];

/// `(struct, property, doc)`: the property merged into the top level, and the type's doc in this
/// shape. A JavaScript hook event is one flat object.
const FLATTEN: &[(&str, &str, &str)] = &[(
    "HookEvent",
    "details",
    "An `onEvent` hook event, derived from a run's stream: flat, camelCase, discriminated by `type` \
     (the fields of `HookEventBase`, then the details of that type).",
)];

const WIDTH: usize = 100;

fn name(schema_name: &str) -> String {
    RENAMES.iter().find(|(from, _)| *from == schema_name).map(|(_, to)| to.to_string()).unwrap_or(schema_name.into())
}

fn emit(model: &Model) -> Vec<File> {
    vec![File { path: TYPES_PATH.into(), text: types(model) }, File { path: ERRORS_PATH.into(), text: errors(model) }]
}

fn jsdoc(out: &mut String, doc: &str, indent: &str) {
    if doc.is_empty() {
        return;
    }
    let doc = doc.replace("*/", "*\\/");
    let lines = wrap(&doc, WIDTH - indent.len() - 3);
    if lines.len() == 1 {
        let _ = writeln!(out, "{indent}/** {} */", lines[0]);
        return;
    }
    let _ = writeln!(out, "{indent}/**");
    for l in lines {
        if l.is_empty() {
            let _ = writeln!(out, "{indent} *");
        } else {
            let _ = writeln!(out, "{indent} * {l}");
        }
    }
    let _ = writeln!(out, "{indent} */");
}

fn ty(t: &Ty) -> String {
    match t {
        Ty::String => "string".into(),
        Ty::Bool => "boolean".into(),
        Ty::Int(_) | Ty::Float => "number".into(),
        Ty::Any => "JsonValue".into(),
        Ty::Object => "JsonObject".into(),
        Ty::Ref(n) => name(n),
        Ty::Array(t) => match **t {
            Ty::Nullable(_) | Ty::AnyOf(_) => format!("({})[]", ty(t)),
            _ => format!("{}[]", ty(t)),
        },
        Ty::Map(t) => format!("{{ [key: string]: {} }}", ty(t)),
        Ty::Nullable(t) => format!("{} | null", ty(t)),
        Ty::AnyOf(ts) => ts.iter().map(ty).collect::<Vec<_>>().join(" | "),
    }
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

fn member(out: &mut String, f: &Field, t: String) {
    jsdoc(out, &f.doc, "  ");
    let opt = if f.required { "" } else { "?" };
    let _ = writeln!(out, "  {}{opt}: {t};", camel(&f.name));
}

fn types(model: &Model) -> String {
    let mut out = banner("//");
    out.push_str(
        "/**\n * The wire types of agentstream, generated from the core's schema: content events\n \
         * (`OutputEvent` and its eight `SessionUpdate` kinds), lifecycle events, the run envelope,\n \
         * hook events, the run result and outcome, and the statistics, all with camelCase keys.\n \
         *\n * Optional properties (`?`) are ABSENT when unknown, never `null`, never guessed; `null`\n \
         * appears only where a type says `| null`.\n *\n * @module\n */\n\n\
         /** Any JSON value. */\n\
         export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };\n\n\
         /** A JSON object with the harness's own key names, kept verbatim. */\n\
         export type JsonObject = { [key: string]: JsonValue };\n",
    );
    let skipped = flattened_defs(model, &FLATTEN.iter().map(|(s, p, _)| (*s, *p)).collect::<Vec<_>>());
    let variants = model.variant_structs();
    for def in &model.defs {
        if skipped.contains(&def.name) || variants.contains_key(&def.name) {
            continue;
        }
        out.push('\n');
        match &def.shape {
            Shape::Enum(values) => {
                jsdoc(&mut out, &def.doc, "");
                let _ = writeln!(out, "export type {} =", name(&def.name));
                for (i, v) in values.iter().enumerate() {
                    let end = if i + 1 == values.len() { ";" } else { "" };
                    let comment = first_paragraph(&v.doc);
                    let line = format!("  | {}{end}", quote(&v.value));
                    if comment.is_empty() {
                        let _ = writeln!(out, "{line}");
                    } else if line.len() + comment.len() + 4 <= WIDTH {
                        let _ = writeln!(out, "{line} // {comment}");
                    } else {
                        for c in wrap(&comment, WIDTH - 5) {
                            let _ = writeln!(out, "  // {c}");
                        }
                        let _ = writeln!(out, "{line}");
                    }
                }
            }
            Shape::Map(t) => {
                jsdoc(&mut out, &def.doc, "");
                let _ = writeln!(out, "export type {} = {{ [key: string]: {} }};", name(&def.name), ty(t));
            }
            Shape::Union(u) => union(&mut out, model, def, u),
            Shape::Struct(s) => match &s.refinement {
                None => {
                    jsdoc(&mut out, &def.doc, "");
                    let _ = writeln!(out, "export interface {} {{", name(&def.name));
                    for f in &s.fields {
                        member(&mut out, f, ty(&f.ty));
                    }
                    out.push_str("}\n");
                }
                Some(_) => refined(&mut out, model, def, s),
            },
        }
    }
    out
}

fn union(out: &mut String, model: &Model, def: &Def, u: &Union) {
    for v in &u.variants {
        jsdoc(out, &v.doc, "");
        let _ = writeln!(out, "export interface {} {{", v.name);
        let _ = writeln!(out, "  {}: {};", camel(&u.tag), quote(&v.value));
        for f in &v.fields {
            member(out, f, ty(&f.ty));
        }
        out.push_str("}\n\n");
    }
    jsdoc(out, &def.doc, "");
    let _ = writeln!(out, "export type {} =", name(&def.name));
    for (i, v) in u.variants.iter().enumerate() {
        let end = if i + 1 == u.variants.len() { ";" } else { "" };
        let _ = writeln!(out, "  | {}{end}", v.name);
    }
    let values: Vec<&str> = u.variants.iter().map(|v| v.value.as_str()).collect();
    if model.enum_with_values(&values).is_none() {
        let union_name = name(&def.name);
        let _ = write!(
            out,
            "\n/** The `{tag}` values of `{union_name}`. */\nexport type {union_name}Kind = {union_name}['{tag}'];\n",
            tag = camel(&u.tag)
        );
    }
}

/// A refined struct: `<Name>Base<…>` generic over the refined properties, one member per arm,
/// and the union of the arms.
fn refined(out: &mut String, model: &Model, def: &Def, s: &Struct) {
    let r = s.refinement.as_ref().expect("a refinement");
    let flat = FLATTEN.iter().find(|(n, _, _)| *n == def.name);
    let flatten = flat.map(|(_, p, _)| *p);
    let base_fields: Vec<&Field> = s.fields.iter().filter(|f| Some(f.name.as_str()) != flatten).collect();
    let refined_props: Vec<&Field> = base_fields
        .iter()
        .copied()
        .filter(|f| r.arms.iter().any(|a| a.const_of(&f.name).is_some() || a.type_of(&f.name).is_some()))
        .collect();
    let param = |f: &Field| format!("{}T", pascal(&f.name));
    let base = format!("{}Base", name(&def.name));
    let params: Vec<String> = refined_props
        .iter()
        .map(|f| {
            let t = ty(&f.ty);
            format!("{} extends {t} = {t}", param(f))
        })
        .collect();
    jsdoc(out, &format!("The fields every `{}` has.", name(&def.name)), "");
    let _ = writeln!(out, "export interface {base}<{}> {{", params.join(", "));
    for f in &base_fields {
        let t = if refined_props.iter().any(|p| p.name == f.name) { param(f) } else { ty(&f.ty) };
        member(out, f, t);
    }
    out.push_str("}\n");
    for arm in &r.arms {
        let args: Vec<String> = refined_props
            .iter()
            .map(|f| match (arm.const_of(&f.name), arm.type_of(&f.name)) {
                (Some(c), _) => quote(c),
                (None, Some(t)) => ty(t),
                (None, None) => ty(&f.ty),
            })
            .collect();
        let parent = format!("{base}<{}>", args.join(", "));
        let extra = flatten.map(|p| arm_fields(model, arm, p)).unwrap_or(&[]);
        out.push('\n');
        jsdoc(out, &arm.doc, "");
        if extra.is_empty() {
            let _ = writeln!(out, "export type {} = {parent};", arm.title);
        } else {
            let _ = writeln!(out, "export interface {} extends {parent} {{", arm.title);
            for f in extra {
                member(out, f, ty(&f.ty));
            }
            out.push_str("}\n");
        }
    }
    out.push('\n');
    jsdoc(out, flat.map(|(_, _, d)| *d).unwrap_or(&def.doc), "");
    let _ = writeln!(out, "export type {} =", name(&def.name));
    for (i, arm) in r.arms.iter().enumerate() {
        let end = if i + 1 == r.arms.len() { ";" } else { "" };
        let _ = writeln!(out, "  | {}{end}", arm.title);
    }
    if let Some(alias) = tag_alias(def) {
        let _ = write!(
            out,
            "\n/** The `{tag}` values of `{n}`. */\nexport type {alias} = {n}['{tag}'];\n",
            tag = camel(&r.tag),
            n = name(&def.name)
        );
    }
}

fn errors(model: &Model) -> String {
    let mut s = banner("//");
    s.push_str(
        "/**\n * The core's error table: every kind's stable name, code, number and advice (the same in\n \
         * every language). `errors.ts` builds the error classes on it.\n *\n * @module\n */\n\n\
         import type { ErrorKind } from './types';\n\n\
         /** The `code` of an agentstream error: the kind in SCREAMING_SNAKE_CASE. */\n\
         export type ErrorCode =\n",
    );
    for (i, e) in model.errors.iter().enumerate() {
        let end = if i + 1 == model.errors.len() { ";" } else { "" };
        let _ = writeln!(s, "  | '{}'{end}", screaming(&e.name));
    }
    s.push_str(
        "\n/** One row of the error table. */\n\
         export interface ErrorInfo {\n\
         \x20 /** The kind, snake_case (`'timeout'`). */\n\
         \x20 readonly kind: ErrorKind;\n\
         \x20 /** The kind, SCREAMING_SNAKE_CASE (`'TIMEOUT'`). */\n\
         \x20 readonly code: ErrorCode;\n\
         \x20 /** The stable number (`1006`). */\n\
         \x20 readonly number: number;\n\
         \x20 /** What the caller can do about it. */\n\
         \x20 readonly advice: string;\n\
         \x20 /** What it means. */\n\
         \x20 readonly description: string;\n\
         }\n\n\
         /** Every kind, in code order. */\n\
         export const ERROR_TABLE: readonly ErrorInfo[] = Object.freeze([\n",
    );
    for e in &model.errors {
        let q = |t: &str| serde_json::to_string(t).expect("a string serializes");
        let _ = writeln!(
            s,
            "  {{\n    kind: {},\n    code: '{}',\n    number: {},\n    advice: {},\n    description: {},\n  }},",
            q(&e.name),
            screaming(&e.name),
            e.code,
            q(&e.advice),
            q(&e.doc)
        );
    }
    s.push_str("]);\n");
    s
}
