//! Kotlin (2.x, JVM): data classes, sealed interfaces, enums and the error table in
//! `bindings/uniffi/kotlin/src/main/kotlin/dev/agentstream/kotlin/types/` (package
//! `dev.agentstream.kotlin.types`), each with its own reader and writer of the wire form over
//! kotlinx-serialization's JSON tree (`JsonElement`; no compiler plugin): `X.fromJson(json)`
//! and `x.toJson()`. A value that does not have its declared shape is a `WireFormatException`
//! naming the type and key.
//!
//! Conventions: camelCase properties (`sessionId`, `runId`); an optional value is nullable with
//! a `null` default and absent on the wire when null; a required nullable key is written as
//! `null`; unsigned 64-bit counters are `Long` (read and written as unsigned: values above
//! 2^63-1 wrap, as Java's `Long.parseUnsignedLong`); free JSON is `JsonElement` / `JsonObject`
//! (a JSON `null` inside a harness record is kept as `JsonNull`); a tagged union is a sealed
//! interface whose tag is a constant property of each kind (a kind without fields is a `data
//! object`); a refined struct (`Envelope`, `HookEvent`) is a sealed interface of the shared
//! properties with one data class per arm carrying the narrowed ones (`ContentEnvelope.event`
//! is an `OutputEvent`, `ToolStartedEvent.details` a `ToolStartedDetails`), plus `Other<Name>`
//! for tag values this version does not know (string tags only). `Envelope` and `HookEvent`
//! are the two kinds of `RunEvent`, what a run delivers.

use std::fmt::Write;

use super::{File, Language, as_struct, banner};
use crate::model::{Arm, Def, EnumValue, Field, Int, Model, Shape, Struct, Ty, Union};
use crate::text::{camel, first_paragraph, screaming, wrap};

/// The Kotlin language.
pub const LANGUAGE: Language = Language { name: "kotlin", emit, owns: &[DIR] };

const DIR: &str = "bindings/uniffi/kotlin/src/main/kotlin/dev/agentstream/kotlin/types";
const PACKAGE: &str = "dev.agentstream.kotlin.types";

/// The definitions that are a kind of `RunEvent` (what a run delivers, one sequence).
const RUN_EVENTS: &[&str] = &["Envelope", "HookEvent"];
const RUN_EVENT: &str = "RunEvent";

/// Kotlin's hard keywords: a property spelled like one is written in backticks.
const KEYWORDS: &[&str] = &[
    "as",
    "break",
    "class",
    "continue",
    "do",
    "else",
    "false",
    "for",
    "fun",
    "if",
    "in",
    "interface",
    "is",
    "null",
    "object",
    "package",
    "return",
    "super",
    "this",
    "throw",
    "true",
    "try",
    "typealias",
    "typeof",
    "val",
    "var",
    "when",
    "while",
];

const WIDTH: usize = 100;

fn path(file: &str) -> String {
    format!("{DIR}/{file}.kt")
}

fn emit(model: &Model) -> Vec<File> {
    let mut files =
        vec![File { path: path("Wire"), text: wire_helpers() }, File { path: path(RUN_EVENT), text: run_event() }];
    let variants = model.variant_structs();
    for def in &model.defs {
        let text = match &def.shape {
            Shape::Map(_) => continue,
            Shape::Enum(values) => enumeration(def, values),
            Shape::Struct(s) => match &s.refinement {
                Some(_) => refined(model, def, s),
                None => {
                    let parent = variants.get(&def.name).map(|(u, value)| (u.as_str(), value.as_str()));
                    let mut out = header();
                    data_class(&mut out, model, &def.name, &def.doc, &s.fields, parent);
                    out
                }
            },
            Shape::Union(u) => union(model, def, u),
        };
        files.push(File { path: path(&def.name), text });
    }
    files.push(File { path: path("ErrorTable"), text: errors(model) });
    files
}

/// The file header: every file imports the JSON tree types it may use.
fn header() -> String {
    let mut s = banner("//");
    let _ = writeln!(s, "\npackage {PACKAGE}\n");
    for i in [
        "kotlinx.serialization.json.JsonArray",
        "kotlinx.serialization.json.JsonElement",
        "kotlinx.serialization.json.JsonNull",
        "kotlinx.serialization.json.JsonObject",
        "kotlinx.serialization.json.JsonPrimitive",
        "kotlinx.serialization.json.buildJsonObject",
    ] {
        let _ = writeln!(s, "import {i}");
    }
    s.push('\n');
    s
}

/// A KDoc comment. Kotlin block comments nest, so `/*` is escaped as well as `*/`.
fn kdoc(out: &mut String, doc: &str, indent: &str) {
    if doc.is_empty() {
        return;
    }
    let doc = doc.replace("*/", "*&#47;").replace("/*", "&#47;*");
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

/// A Kotlin string literal (`$` would start a template).
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '$' => out.push_str("\\$"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn ident(key: &str) -> String {
    let n = camel(key);
    if KEYWORDS.contains(&n.as_str()) { format!("`{n}`") } else { n }
}

/// The type without a nullable wrapper.
fn strip(t: &Ty) -> &Ty {
    match t {
        Ty::Nullable(inner) => strip(inner),
        other => other,
    }
}

/// Free JSON: kept as the element itself, a JSON `null` included.
fn is_free(t: &Ty) -> bool {
    matches!(strip(t), Ty::Any | Ty::AnyOf(_))
}

fn ty(model: &Model, t: &Ty) -> String {
    match t {
        Ty::String => "String".into(),
        Ty::Bool => "Boolean".into(),
        Ty::Int(Int::I32) => "Int".into(),
        Ty::Int(_) => "Long".into(),
        Ty::Float => "Double".into(),
        Ty::Any | Ty::AnyOf(_) => "JsonElement".into(),
        Ty::Object => "JsonObject".into(),
        Ty::Array(t) => format!("List<{}>", ty(model, t)),
        Ty::Map(t) => format!("Map<String, {}>", ty(model, t)),
        Ty::Nullable(t) if is_free(t) => ty(model, t),
        Ty::Nullable(t) => format!("{}?", ty(model, t)),
        Ty::Ref(n) => match &model.def(n).shape {
            Shape::Map(v) => format!("Map<String, {}>", ty(model, v)),
            _ => n.clone(),
        },
    }
}

/// The Kotlin type of a property: nullable when the key may be absent.
fn prop_ty(model: &Model, f: &Field) -> String {
    let t = ty(model, &f.ty);
    if f.required || t.ends_with('?') { t } else { format!("{t}?") }
}

/// An expression reading JSON element `e` as `t` (`what` names it in errors); `depth` keeps
/// the lambdas' parameter names distinct.
fn read(model: &Model, t: &Ty, e: &str, what: &str, depth: usize) -> String {
    let v = format!("v{depth}");
    match t {
        Ty::String => format!("{e}.wireString({what})"),
        Ty::Bool => format!("{e}.wireBoolean({what})"),
        Ty::Int(Int::I32) => format!("{e}.wireInt({what})"),
        Ty::Int(Int::I64) => format!("{e}.wireLong({what})"),
        Ty::Int(Int::U64) => format!("{e}.wireU64({what})"),
        Ty::Float => format!("{e}.wireDouble({what})"),
        Ty::Any | Ty::AnyOf(_) => e.to_string(),
        Ty::Object => format!("{e}.wireObject({what})"),
        Ty::Array(t) => format!("{e}.wireList({what}) {{ {v} -> {} }}", read(model, t, &v, what, depth + 1)),
        Ty::Map(t) => format!("{e}.wireMap({what}) {{ {v} -> {} }}", read(model, t, &v, what, depth + 1)),
        Ty::Nullable(t) if is_free(t) => e.to_string(),
        Ty::Nullable(t) => format!("{e}.orNull()?.let {{ {v} -> {} }}", read(model, t, &v, what, depth + 1)),
        Ty::Ref(n) => match &model.def(n).shape {
            Shape::Enum(_) => format!("{n}.read({e}, {what})"),
            Shape::Map(t) => format!("{e}.wireMap({what}) {{ {v} -> {} }}", read(model, t, &v, what, depth + 1)),
            Shape::Struct(_) | Shape::Union(_) => format!("{n}.fromJson({e})"),
        },
    }
}

/// An expression writing the non-null Kotlin value `x` of type `t` as a `JsonElement`.
fn write(model: &Model, t: &Ty, x: &str, depth: usize) -> String {
    let v = format!("v{depth}");
    match t {
        Ty::String | Ty::Bool | Ty::Int(Int::I32 | Int::I64) | Ty::Float => format!("JsonPrimitive({x})"),
        Ty::Int(Int::U64) => format!("u64Json({x})"),
        Ty::Any | Ty::AnyOf(_) | Ty::Object => x.to_string(),
        Ty::Array(t) => format!("JsonArray({x}.map {{ {v} -> {} }})", write(model, t, &v, depth + 1)),
        Ty::Map(t) => format!("JsonObject({x}.mapValues {{ (_, {v}) -> {} }})", write(model, t, &v, depth + 1)),
        Ty::Nullable(t) if is_free(t) => x.to_string(),
        Ty::Nullable(t) => format!("({x}?.let {{ {v} -> {} }} ?: JsonNull)", write(model, t, &v, depth + 1)),
        Ty::Ref(n) => match &model.def(n).shape {
            Shape::Enum(_) => format!("JsonPrimitive({x}.wire)"),
            Shape::Map(t) => {
                format!("JsonObject({x}.mapValues {{ (_, {v}) -> {} }})", write(model, t, &v, depth + 1))
            }
            Shape::Struct(_) | Shape::Union(_) => format!("{x}.toJson()"),
        },
    }
}

/// The statement reading property `f` of object `o` (a constructor argument).
fn read_field(model: &Model, owner: &str, f: &Field, ty_override: Option<(&Ty, bool)>) -> String {
    let (t, required) = ty_override.unwrap_or((&f.ty, f.required));
    let what = quote(&format!("{owner}.{}", f.name));
    let key = quote(&f.name);
    let value = if required {
        read(model, t, &format!("o.field({key}, {what})"), &what, 0)
    } else if is_free(t) {
        format!("o[{key}]")
    } else {
        format!("o[{key}]?.orNull()?.let {{ v -> {} }}", read(model, strip(t), "v", &what, 1))
    };
    format!("{} = {value},", ident(&f.name))
}

/// The statement writing property `f` into a `buildJsonObject` block.
fn write_field(model: &Model, f: &Field, ty_override: Option<(&Ty, bool)>) -> String {
    let (t, required) = ty_override.unwrap_or((&f.ty, f.required));
    let key = quote(&f.name);
    let x = ident(&f.name);
    if required {
        format!("put({key}, {})", write(model, t, &x, 0))
    } else {
        format!("{x}?.let {{ v -> put({key}, {}) }}", write(model, strip(t), "v", 1))
    }
}

/// Constructor properties, one per line, with their docs.
fn properties(
    out: &mut String,
    model: &Model,
    fields: &[&Field],
    overrides: &[String],
    narrowed: &dyn Fn(&Field) -> Option<(Ty, bool)>,
) {
    for f in fields {
        kdoc(out, &f.doc, "    ");
        let over = if overrides.contains(&f.name) { "override " } else { "" };
        let t = match narrowed(f) {
            Some((t, required)) => {
                let base = ty(model, &t);
                if required || base.ends_with('?') { base } else { format!("{base}?") }
            }
            None => prop_ty(model, f),
        };
        let default = if t.ends_with('?') && !(f.required && narrowed(f).is_none()) { " = null" } else { "" };
        let _ = writeln!(out, "    {over}val {}: {t}{default},", ident(&f.name));
    }
}

/// The `fromJson` companion of a class built from object `o`.
fn companion_reader(out: &mut String, name: &str, args: &[String]) {
    let _ = writeln!(out, "    public companion object {{");
    kdoc(
        out,
        &format!(
            "Read `{name}` from its wire form; a `WireFormatException` names the key when the JSON does not have its shape."
        ),
        "        ",
    );
    let _ = writeln!(out, "        @JvmStatic");
    let _ = writeln!(out, "        public fun fromJson(json: JsonElement): {name} {{");
    if args.is_empty() {
        let _ = writeln!(out, "            json.wireObject({})", quote(name));
        let _ = writeln!(out, "            return {name}");
    } else {
        let _ = writeln!(out, "            val o = json.wireObject({})", quote(name));
        let _ = writeln!(out, "            return {name}(");
        for a in args {
            let _ = writeln!(out, "                {a}");
        }
        let _ = writeln!(out, "            )");
    }
    let _ = writeln!(out, "        }}");
    let _ = writeln!(out, "    }}");
}

/// `toJson()` writing `tag` (key, value expression) first when given, then the statements.
fn writer(out: &mut String, over: bool, tag: Option<(&str, String)>, statements: &[String]) {
    let modifiers = if over { "public override" } else { "public" };
    let _ = writeln!(out, "\n    /** This value in its wire form. */");
    if tag.is_none() && statements.is_empty() {
        let _ = writeln!(out, "    {modifiers} fun toJson(): JsonObject = JsonObject(emptyMap())");
        return;
    }
    let _ = writeln!(out, "    {modifiers} fun toJson(): JsonObject = buildJsonObject {{");
    if let Some((key, value)) = tag {
        let _ = writeln!(out, "        put({}, {value})", quote(key));
    }
    for s in statements {
        let _ = writeln!(out, "        {s}");
    }
    let _ = writeln!(out, "    }}");
}

/// A data class for `fields` (a struct, or a kind of union `parent` = (union, tag value)).
fn data_class(out: &mut String, model: &Model, name: &str, doc: &str, fields: &[Field], parent: Option<(&str, &str)>) {
    kdoc(out, doc, "");
    let refs: Vec<&Field> = fields.iter().collect();
    let reads: Vec<String> = refs.iter().map(|f| read_field(model, name, f, None)).collect();
    let writes: Vec<String> = refs.iter().map(|f| write_field(model, f, None)).collect();
    let union_tag = parent.map(|(u, value)| (union_tag(model, u), value));
    let implements = parent.map(|(u, _)| format!(" : {u}")).unwrap_or_default();
    if fields.is_empty() {
        let _ = writeln!(out, "public data object {name}{implements} {{");
    } else {
        let _ = writeln!(out, "public data class {name}(");
        properties(out, model, &refs, &[], &|_| None);
        let _ = writeln!(out, "){implements} {{");
    }
    if let Some((tag, value)) = &union_tag {
        let _ = writeln!(out, "    override val {}: String get() = {}", ident(tag), quote(value));
    }
    let tag = union_tag.as_ref().map(|(tag, value)| (tag.as_str(), format!("JsonPrimitive({})", quote(value))));
    writer(out, parent.is_some(), tag, &writes);
    if fields.is_empty() {
        let _ = writeln!(out, "\n    /** Read it from its wire form. */");
        let _ = writeln!(out, "    @JvmStatic");
        let _ = writeln!(out, "    public fun fromJson(json: JsonElement): {name} {{");
        let _ = writeln!(out, "        json.wireObject({})", quote(name));
        let _ = writeln!(out, "        return {name}");
        let _ = writeln!(out, "    }}");
    } else {
        out.push('\n');
        companion_reader(out, name, &reads);
    }
    out.push_str("}\n");
}

/// The tag key of union `name`.
fn union_tag(model: &Model, name: &str) -> String {
    match &model.def(name).shape {
        Shape::Union(u) => u.tag.clone(),
        _ => panic!("{name} is not a union"),
    }
}

fn union(model: &Model, def: &Def, u: &Union) -> String {
    let mut out = header();
    kdoc(&mut out, &def.doc, "");
    let tag = ident(&u.tag);
    let _ = writeln!(out, "public sealed interface {} {{", def.name);
    let _ = writeln!(out, "    /** The `{}` discriminator: which kind this is (its wire value). */", u.tag);
    let _ = writeln!(out, "    public val {tag}: String\n");
    let _ = writeln!(out, "    /** This value in its wire form. */");
    let _ = writeln!(out, "    public fun toJson(): JsonObject\n");
    let _ = writeln!(out, "    public companion object {{");
    kdoc(
        &mut out,
        &format!(
            "Read a `{}` (any kind) from its wire form; an unknown `{}` is a `WireFormatException`.",
            def.name, u.tag
        ),
        "        ",
    );
    let _ = writeln!(out, "        @JvmStatic");
    let _ = writeln!(out, "        public fun fromJson(json: JsonElement): {} {{", def.name);
    let what = quote(&format!("{}.{}", def.name, u.tag));
    let _ = writeln!(out, "            val o = json.wireObject({})", quote(&def.name));
    let _ =
        writeln!(out, "            return when (val tag = o.field({}, {what}).wireString({what})) {{", quote(&u.tag));
    for v in &u.variants {
        let _ = writeln!(out, "                {} -> {}.fromJson(o)", quote(&v.value), v.name);
    }
    let _ = writeln!(out, "                {}", unknown_tag(&def.name, &u.tag));
    let _ = writeln!(out, "            }}\n        }}\n    }}\n}}");
    for v in u.variants.iter().filter(|v| v.reference.is_none()) {
        out.push('\n');
        data_class(&mut out, model, &v.name, &v.doc, &v.fields, Some((&def.name, &v.value)));
    }
    out
}

/// The `else` branch of a tag dispatch that knows every value (names and tags are plain words).
fn unknown_tag(type_name: &str, tag: &str) -> String {
    format!(r#"else -> throw WireFormatException("{type_name}: unknown {tag} \"$tag\"")"#)
}

/// The narrowed type of `f` in `arm`, with whether the key is always present: a base-optional
/// property narrowed to a struct with a required field is always present.
fn narrowed(model: &Model, arm: &Arm, f: &Field) -> Option<(Ty, bool)> {
    let t = arm.type_of(&f.name)?;
    let required = f.required
        || match t {
            Ty::Ref(n) => as_struct(model.def(n)).is_some_and(|s| s.fields.iter().any(|x| x.required)),
            _ => false,
        };
    Some((t.clone(), required))
}

/// A refined struct: a sealed interface of the shared properties, one data class per arm, and
/// `Other<Name>` for unknown string tags.
fn refined(model: &Model, def: &Def, s: &Struct) -> String {
    let r = s.refinement.as_ref().expect("a refinement");
    let tag_field = s.fields.iter().find(|f| f.name == r.tag).expect("the tag is a property");
    let tag_enum = match &tag_field.ty {
        Ty::Ref(n) if matches!(model.def(n).shape, Shape::Enum(_)) => Some(n.clone()),
        _ => None,
    };
    let is_narrowed = |f: &Field| r.arms.iter().any(|a| a.type_of(&f.name).is_some());
    let shared: Vec<&Field> = s.fields.iter().filter(|f| !is_narrowed(f)).collect();
    let mut out = header();

    let run_event = RUN_EVENTS.contains(&def.name.as_str());
    kdoc(&mut out, &def.doc, "");
    let parent = if run_event { format!(" : {RUN_EVENT}") } else { String::new() };
    let _ = writeln!(out, "public sealed interface {}{parent} {{", def.name);
    for f in &shared {
        kdoc(&mut out, &f.doc, "    ");
        let t = if f.name == r.tag { ty(model, &f.ty) } else { prop_ty(model, f) };
        let _ = writeln!(out, "    public val {}: {t}\n", ident(&f.name));
    }
    let modifiers = if run_event { "public override" } else { "public" };
    let _ = writeln!(out, "    /** This value in its wire form. */");
    let _ = writeln!(out, "    {modifiers} fun toJson(): JsonObject\n");
    let _ = writeln!(out, "    public companion object {{");
    let fallback = format!("Other{}", def.name);
    let unknown =
        if tag_enum.is_none() { format!(" (an unknown `{}` is read as `{fallback}`)", r.tag) } else { String::new() };
    kdoc(&mut out, &format!("Read `{}` from its wire form{unknown}.", def.name), "        ");
    let _ = writeln!(out, "        @JvmStatic");
    let _ = writeln!(out, "        public fun fromJson(json: JsonElement): {} {{", def.name);
    let what = quote(&format!("{}.{}", def.name, r.tag));
    let _ = writeln!(out, "            val o = json.wireObject({})", quote(&def.name));
    let _ =
        writeln!(out, "            return when (val tag = o.field({}, {what}).wireString({what})) {{", quote(&r.tag));
    for arm in &r.arms {
        let _ = writeln!(out, "                {} -> {}.fromJson(o)", quote(arm.tag_value()), arm.title);
    }
    match &tag_enum {
        None => {
            let _ = writeln!(out, "                else -> {fallback}.fromJson(o)");
        }
        Some(_) => {
            let _ = writeln!(out, "                {}", unknown_tag(&def.name, &r.tag));
        }
    }
    let _ = writeln!(out, "            }}\n        }}\n    }}\n}}");

    let shared_names: Vec<String> = shared.iter().map(|f| f.name.clone()).collect();
    for arm in &r.arms {
        out.push('\n');
        kdoc(&mut out, &arm.doc, "");
        let props: Vec<&Field> = s.fields.iter().filter(|f| f.name != r.tag).collect();
        let _ = writeln!(out, "public data class {}(", arm.title);
        properties(&mut out, model, &props, &shared_names, &|f| narrowed(model, arm, f));
        let _ = writeln!(out, ") : {} {{", def.name);
        let tag_value = match &tag_enum {
            Some(e) => format!("{e}.{}", screaming(arm.tag_value())),
            None => quote(arm.tag_value()),
        };
        let tag_ty = ty(model, &tag_field.ty);
        let _ = writeln!(out, "    override val {}: {tag_ty} get() = {tag_value}", ident(&r.tag));
        let reads: Vec<String> = props
            .iter()
            .map(|f| {
                let n = narrowed(model, arm, f);
                read_field(model, &arm.title, f, n.as_ref().map(|(t, req)| (t, *req)))
            })
            .collect();
        let mut writes = Vec::new();
        for f in &s.fields {
            if f.name == r.tag {
                let value = if tag_enum.is_some() {
                    format!("JsonPrimitive({}.wire)", ident(&r.tag))
                } else {
                    format!("JsonPrimitive({})", ident(&r.tag))
                };
                writes.push(format!("put({}, {value})", quote(&r.tag)));
            } else {
                let n = narrowed(model, arm, f);
                writes.push(write_field(model, f, n.as_ref().map(|(t, req)| (t, *req))));
            }
        }
        writer(&mut out, true, None, &writes);
        out.push('\n');
        companion_reader(&mut out, &arm.title, &reads);
        out.push_str("}\n");
    }
    if tag_enum.is_none() {
        out.push('\n');
        kdoc(
            &mut out,
            &format!(
                "A `{}` whose `{}` this version does not declare: its properties as on the wire.",
                def.name, r.tag
            ),
            "",
        );
        let _ = writeln!(out, "public data class {fallback}(");
        let all: Vec<&Field> = s.fields.iter().collect();
        properties(&mut out, model, &all, &shared_names, &|_| None);
        let _ = writeln!(out, ") : {} {{", def.name);
        let writes: Vec<String> = s.fields.iter().map(|f| write_field(model, f, None)).collect();
        writer(&mut out, true, None, &writes);
        out.push('\n');
        let reads: Vec<String> = s.fields.iter().map(|f| read_field(model, &fallback, f, None)).collect();
        companion_reader(&mut out, &fallback, &reads);
        out.push_str("}\n");
    }
    out
}

fn enumeration(def: &Def, values: &[EnumValue]) -> String {
    let n = &def.name;
    let mut s = header();
    kdoc(&mut s, &def.doc, "");
    let _ =
        writeln!(s, "public enum class {n}(\n    /** The string on the wire. */\n    public val wire: String,\n) {{");
    for (i, v) in values.iter().enumerate() {
        kdoc(&mut s, &first_paragraph(&v.doc), "    ");
        let end = if i + 1 == values.len() { ";" } else { "," };
        let _ = writeln!(s, "    {}({}){end}", screaming(&v.value), quote(&v.value));
    }
    let _ = write!(
        s,
        "\n    public companion object {{\n        private val byWire: Map<String, {n}> = entries.associateBy {{ it.wire }}\n\n\
         \x20       /** The constant with this wire string, or null for a string this version does not know. */\n\
         \x20       @JvmStatic\n        public fun fromWire(wire: String): {n}? = byWire[wire]\n\n\
         \x20       internal fun read(json: JsonElement, what: String): {n} {{\n\
         \x20           val wire = json.wireString(what)\n\
         \x20           return byWire[wire] ?: throw WireFormatException(\"$what: unknown {n} \\\"$wire\\\"\")\n\
         \x20       }}\n    }}\n}}\n"
    );
    s
}

fn run_event() -> String {
    let mut s = header();
    kdoc(
        &mut s,
        "What a run delivers, in one sequence: an `Envelope` (one item of the content, lifecycle, stdout or \
         stderr channel) or a `HookEvent` derived from the item before it.",
        "",
    );
    let _ = writeln!(s, "public sealed interface {RUN_EVENT} {{");
    let _ = writeln!(s, "    /** This value in its wire form. */");
    let _ = writeln!(s, "    public fun toJson(): JsonObject\n}}");
    s
}

fn wire_helpers() -> String {
    let mut s = header();
    s.push_str(
        r#"/**
 * A JSON value that does not have the shape its generated type declares; the message names the
 * type and key (`OutputEvent.sessionId: expected a string, got number`).
 */
public class WireFormatException(message: String) : IllegalArgumentException(message)

internal fun JsonElement.describe(): String = when (this) {
    is JsonObject -> "an object"
    is JsonArray -> "an array"
    JsonNull -> "null"
    is JsonPrimitive -> if (isString) "a string" else "the literal $content"
}

internal fun JsonElement.wireObject(what: String): JsonObject =
    this as? JsonObject ?: throw WireFormatException("$what: expected an object, got ${describe()}")

internal fun JsonObject.field(key: String, what: String): JsonElement =
    this[key] ?: throw WireFormatException("$what: the key is missing")

internal fun JsonElement.orNull(): JsonElement? = if (this === JsonNull) null else this

internal fun JsonElement.wireString(what: String): String {
    val p = this as? JsonPrimitive
    if (p == null || !p.isString) throw WireFormatException("$what: expected a string, got ${describe()}")
    return p.content
}

internal fun JsonElement.wireBoolean(what: String): Boolean {
    val p = this as? JsonPrimitive
    return when {
        p == null || p.isString -> null
        p.content == "true" -> true
        p.content == "false" -> false
        else -> null
    } ?: throw WireFormatException("$what: expected true or false, got ${describe()}")
}

private fun JsonElement.number(what: String): String {
    val p = this as? JsonPrimitive
    if (p == null || p.isString || p === JsonNull) throw WireFormatException("$what: expected a number, got ${describe()}")
    return p.content
}

internal fun JsonElement.wireLong(what: String): Long =
    number(what).let { it.toLongOrNull() ?: throw WireFormatException("$what: expected a 64-bit integer, got $it") }

internal fun JsonElement.wireU64(what: String): Long =
    number(what).let {
        it.toULongOrNull()?.toLong() ?: throw WireFormatException("$what: expected an unsigned 64-bit integer, got $it")
    }

internal fun JsonElement.wireInt(what: String): Int =
    number(what).let { it.toIntOrNull() ?: throw WireFormatException("$what: expected a 32-bit integer, got $it") }

internal fun JsonElement.wireDouble(what: String): Double =
    number(what).let { it.toDoubleOrNull() ?: throw WireFormatException("$what: expected a number, got $it") }

internal inline fun <T> JsonElement.wireList(what: String, read: (JsonElement) -> T): List<T> =
    (this as? JsonArray ?: throw WireFormatException("$what: expected an array, got ${describe()}")).map(read)

internal inline fun <T> JsonElement.wireMap(what: String, read: (JsonElement) -> T): Map<String, T> =
    wireObject(what).mapValues { (_, v) -> read(v) }

/** An unsigned 64-bit counter held in a `Long` (above 2^63-1 it is negative) as its JSON number. */
internal fun u64Json(value: Long): JsonPrimitive =
    if (value >= 0) JsonPrimitive(value) else JsonPrimitive(java.math.BigInteger(value.toULong().toString()))
"#,
    );
    s
}

fn errors(model: &Model) -> String {
    let mut s = banner("//");
    let _ = writeln!(s, "\npackage {PACKAGE}\n");
    s.push_str(
        "/** The core's error table: each kind's stable number and advice (the same in every language). */\n\
         public object ErrorTable {\n\
         \x20   /**\n     * One row of the table.\n     *\n     * @property kind the kind\n     * @property code its stable number\n     \
         * @property advice what the caller can do about it\n     * @property description what it means\n     */\n\
         \x20   public data class Row(val kind: ErrorKind, val code: Int, val advice: String, val description: String)\n\n\
         \x20   /** Every kind, in code order. */\n\
         \x20   public val ROWS: List<Row> = listOf(\n",
    );
    for e in &model.errors {
        let _ = writeln!(
            s,
            "        Row(\n            ErrorKind.{},\n            {},\n            {},\n            {},\n        ),",
            screaming(&e.name),
            e.code,
            quote(&e.advice),
            quote(&e.doc)
        );
    }
    s.push_str(
        "    )\n\n\
         \x20   /** The row of [kind]. */\n\
         \x20   @JvmStatic\n    public fun of(kind: ErrorKind): Row = ROWS.first { it.kind == kind }\n\n\
         \x20   /** The row with the stable number [code], or null when no kind has it. */\n\
         \x20   @JvmStatic\n    public fun ofCode(code: Int): Row? = ROWS.firstOrNull { it.code == code }\n}\n",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_and_comments_are_escaped_for_kotlin() {
        assert_eq!(quote("$rawJson \"x\"\n"), r#""\$rawJson \"x\"\n""#);
        let mut out = String::new();
        kdoc(&mut out, "a /* nested */ comment", "");
        assert_eq!(out, "/** a &#47;* nested *&#47; comment */\n");
        assert_eq!(ident("in"), "`in`");
        assert_eq!(ident("step_index"), "stepIndex");
    }

    #[test]
    fn every_definition_gets_a_file_and_refinements_get_their_arms() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/schema/events.schema.json");
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let model = Model::from_schema(&doc).unwrap();
        let files = emit(&model);
        let text = |name: &str| &files.iter().find(|f| f.path == super::path(name)).unwrap().text;
        let hooks = text("HookEvent");
        assert!(hooks.contains("public sealed interface HookEvent : RunEvent {"));
        assert!(hooks.contains("public data class ToolStartedEvent("));
        assert!(hooks.contains("    val details: ToolStartedDetails,"), "a narrowed, always present details");
        assert!(hooks.contains("else -> OtherHookEvent.fromJson(o)"), "unknown hook types are kept");
        let envelope = text("Envelope");
        assert!(envelope.contains("override val channel: Channel get() = Channel.CONTENT"));
        assert!(envelope.contains("else -> throw WireFormatException(\"Envelope: unknown channel \\\"$tag\\\"\")"));
        assert!(text("CancelReason").contains("public data object CancelReasonReaderLeft : CancelReason {"));
        assert!(text("DiffContent").contains("    val oldText: String?,\n"), "required nullable: no default");
        for def in model.defs.iter().filter(|d| !matches!(d.shape, Shape::Map(_))) {
            assert!(files.iter().any(|f| f.path == super::path(&def.name)), "{} has no file", def.name);
        }
    }
}
