//! C# (7.x, compiles with Mono's `mcs` and with a modern .NET SDK): data classes, enums, the
//! error table and one exception class per error kind (`bindings/csharp/Agentstream/Generated/`),
//! and the JSON reading and writing of every type (`bindings/csharp/Agentstream/GeneratedCodec/`,
//! over the package's own small `JsonReader`/`JsonWriter`, so mono needs no JSON library).
//!
//! Conventions: PascalCase properties (`SessionId`); an optional value is nullable (`ulong?`,
//! `ToolCallStatus?`, a null reference: absent on the wire); a tagged union is an
//! abstract class with a `<Union>Kind` discriminator, one sealed subclass per kind and an
//! `Unknown<Union>` subclass for a kind a newer library sends; a refined struct keeps its base
//! properties (`AgentEvent.Details` is a dictionary; the hook detail classes are generated too,
//! for typed reading), and a base property of free type (`Envelope.Event`) is read as the arm's
//! type; free JSON is `object` / `IDictionary<string, object>`. Every class is `partial`, so the
//! package adds conveniences (a `TimeSpan`, a `DateTimeOffset`) beside the generated members.
//!
//! The data classes stay serializer-neutral: a generated `[WireName("…")]` attribute carries
//! each property's key and each enum member's string, `WireNames` converts enums to and from
//! their wire strings. The codec (`WireCodec`) is separate so the declarations compile alone.

use std::fmt::Write;

use super::{File, Language, banner};
use crate::model::{Def, EnumValue, Field, Int, Model, Shape, Struct, Ty, Union};
use crate::text::{first_paragraph, pascal};

/// The C# language.
pub const LANGUAGE: Language = Language {
    name: "csharp",
    emit,
    owns: &["bindings/csharp/Agentstream/Generated", "bindings/csharp/Agentstream/GeneratedCodec"],
};

const TYPES_PATH: &str = "bindings/csharp/Agentstream/Generated/Types.cs";
const ERRORS_PATH: &str = "bindings/csharp/Agentstream/Generated/ErrorTable.cs";
const EXCEPTIONS_PATH: &str = "bindings/csharp/Agentstream/Generated/Exceptions.cs";
const CODEC_PATH: &str = "bindings/csharp/Agentstream/GeneratedCodec/WireCodec.cs";
const NAMESPACE: &str = "Agentstream";

/// Type names that differ from the schema's: the seed's C# names (`AgentEvent` with `Type`,
/// `RunId`, `AgentId`, `Timestamp`, `Status`, `Details`).
const RENAMES: &[(&str, &str)] = &[("HookEvent", "AgentEvent")];

/// The .NET exception each error kind derives from, where one says the same thing (so
/// `catch (ArgumentException)` catches a bad argument); the others derive from the generated
/// `AgentstreamException`. Every one implements `IAgentstreamError` (kind, code).
const EXCEPTION_BASES: &[(&str, &str)] = &[
    ("already_running", "System.InvalidOperationException"),
    ("invalid_argument", "System.ArgumentException"),
    ("cancelled", "System.OperationCanceledException"),
    ("timeout", "System.TimeoutException"),
    ("not_running", "System.InvalidOperationException"),
    ("null_argument", "System.ArgumentNullException"),
    ("invalid_handle", "System.ObjectDisposedException"),
    ("busy", "System.InvalidOperationException"),
    ("still_running", "System.InvalidOperationException"),
    ("cannot_resume", "System.NotSupportedException"),
    ("unsupported", "System.PlatformNotSupportedException"),
];

/// Exception class names that differ from `<Kind>Exception` (a name `System` already uses would
/// make both ambiguous in a file that imports both namespaces).
const EXCEPTION_RENAMES: &[(&str, &str)] = &[("timeout", "RunTimeoutException")];

fn type_name(schema_name: &str) -> String {
    RENAMES.iter().find(|(from, _)| *from == schema_name).map(|(_, to)| to.to_string()).unwrap_or(schema_name.into())
}

fn exception_name(kind: &str) -> String {
    EXCEPTION_RENAMES
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, n)| n.to_string())
        .unwrap_or_else(|| format!("{}Exception", pascal(kind)))
}

fn emit(model: &Model) -> Vec<File> {
    vec![
        File { path: TYPES_PATH.into(), text: types(model) },
        File { path: ERRORS_PATH.into(), text: errors(model) },
        File { path: EXCEPTIONS_PATH.into(), text: exceptions(model) },
        File { path: CODEC_PATH.into(), text: codec(model) },
    ]
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn summary(out: &mut String, doc: &str, indent: &str) {
    if doc.is_empty() {
        return;
    }
    let _ = writeln!(out, "{indent}/// <summary>");
    for l in crate::text::wrap(&xml(doc), 96 - indent.len()) {
        let _ = writeln!(out, "{indent}/// {l}");
    }
    let _ = writeln!(out, "{indent}/// </summary>");
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// A property name that is not the enclosing type's (C# forbids that).
fn member_name(key: &str, owner: &str) -> String {
    let n = pascal(key);
    if n == owner { format!("{n}Value") } else { n }
}

fn is_value_type(model: &Model, t: &Ty) -> bool {
    match t {
        Ty::Bool | Ty::Int(_) | Ty::Float => true,
        Ty::Ref(n) => matches!(model.def(n).shape, Shape::Enum(_)),
        _ => false,
    }
}

fn ty(model: &Model, t: &Ty) -> String {
    match t {
        Ty::String => "string".into(),
        Ty::Bool => "bool".into(),
        Ty::Int(Int::U64) => "ulong".into(),
        Ty::Int(Int::I64) => "long".into(),
        Ty::Int(Int::I32) => "int".into(),
        Ty::Float => "double".into(),
        Ty::Any | Ty::AnyOf(_) => "object".into(),
        Ty::Object => "IDictionary<string, object>".into(),
        Ty::Array(t) => format!("IList<{}>", ty(model, t)),
        Ty::Map(t) => format!("IDictionary<string, {}>", ty(model, t)),
        Ty::Nullable(t) => nullable(model, t),
        Ty::Ref(n) => match &model.def(n).shape {
            Shape::Map(v) => format!("IDictionary<string, {}>", ty(model, v)),
            _ => type_name(n),
        },
    }
}

fn nullable(model: &Model, t: &Ty) -> String {
    if is_value_type(model, t) { format!("{}?", ty(model, t)) } else { ty(model, t) }
}

/// The C# type of a field: nullable unless it is required (and not nullable itself).
fn field_ty(model: &Model, f: &Field) -> String {
    if f.required { ty(model, &f.ty) } else { nullable(model, &f.ty) }
}

/// Whether a field holds free JSON (`object`, `IDictionary<string, object>`) that the codec reads
/// lazily: it keeps the value's JSON text and builds the objects on first read. Tool input and
/// output, `extra` and hook details are most of an event's bytes and few handlers read them, so
/// this roughly halves the cost of reading an event (see bindings/csharp/bench). A refined free
/// property (`Envelope.Event`) is read as its arm's type instead.
fn is_lazy(f: &Field, refined: &[String]) -> bool {
    let t = match &f.ty {
        Ty::Nullable(t) => t.as_ref(),
        t => t,
    };
    matches!(t, Ty::Any | Ty::AnyOf(_) | Ty::Object) && !refined.contains(&f.name)
}

/// The backing field of a lazy property (the codec's: the value, or a `LazyValue` until first read).
fn slot_name(key: &str, owner: &str) -> String {
    format!("{}Slot", member_name(key, owner))
}

fn property(out: &mut String, model: &Model, owner: &str, f: &Field, refined: &[String]) {
    // Every public member has a doc comment (the schema leaves a few undescribed).
    let doc = if f.doc.is_empty() { format!("The `{}` property.", f.name) } else { f.doc.clone() };
    summary(out, &doc, "        ");
    let required = if f.required { ", Required = true" } else { "" };
    let _ = writeln!(out, "        [WireName({}{required})]", quote(&f.name));
    let t = field_ty(model, f);
    let name = member_name(&f.name, owner);
    if !is_lazy(f, refined) {
        let _ = writeln!(out, "        public {t} {name} {{ get; set; }}");
        return;
    }
    let slot = slot_name(&f.name, owner);
    let cast = if t == "object" { String::new() } else { format!("({t})") };
    let _ = writeln!(
        out,
        "        public {t} {name}
        {{
            get {{ return {cast}LazyValue.Resolve(ref {slot}); }}
            set {{ {slot} = value; }}
        }}

        /// <summary>The value of <see cref=\"{name}\"/>, or its JSON until first read.</summary>
        internal object {slot};"
    );
}

fn types(model: &Model) -> String {
    let mut out = banner("//");
    let _ = writeln!(out, "\nusing System.Collections.Generic;\n\nnamespace {NAMESPACE}\n{{");
    out.push_str(
        "    /// <summary>\n    /// The name of a property or enum member on the wire (the JSON key, or the enum's string);\n    /// <c>Required</c>: the key is always present (otherwise it is absent when the value is null).\n    /// </summary>\n    [System.AttributeUsage(System.AttributeTargets.Property | System.AttributeTargets.Field)]\n    public sealed class WireNameAttribute : System.Attribute\n    {\n        /// <summary>A wire name.</summary>\n        public WireNameAttribute(string name) { Name = name; }\n\n        /// <summary>The name on the wire.</summary>\n        public string Name { get; private set; }\n\n        /// <summary>Whether the key is always present.</summary>\n        public bool Required { get; set; }\n    }\n\n",
    );
    out.push_str(
        "    /// <summary>
    /// A free JSON value not built yet (its JSON text, kept by the codec): a lazy property builds it
    /// on first read and keeps the result (from any thread: the first one stored wins).
    /// </summary>
    internal abstract class LazyValue
    {
        /// <summary>Builds the value.</summary>
        internal abstract object Materialize();

        /// <summary>The value in <paramref name=\"slot\"/>, built and stored first if it is still lazy.</summary>
        internal static object Resolve(ref object slot)
        {
            var current = System.Threading.Volatile.Read(ref slot);
            var lazy = current as LazyValue;
            if (lazy == null)
            {
                return current;
            }
            var value = lazy.Materialize();
            var stored = System.Threading.Interlocked.CompareExchange(ref slot, value, current);
            return ReferenceEquals(stored, current) ? value : stored;
        }
    }

",
    );
    let variants = model.variant_structs();
    let mut enums: Vec<(&Def, &[EnumValue])> = Vec::new();
    let mut first = true;
    for def in &model.defs {
        if variants.contains_key(&def.name) {
            continue; // declared as a subclass of its union
        }
        let body = match &def.shape {
            Shape::Map(_) => continue,
            Shape::Enum(values) => {
                enums.push((def, values));
                enumeration(def, values)
            }
            Shape::Struct(s) => {
                let name = type_name(&def.name);
                let mut b = String::new();
                summary(&mut b, &def.doc, "    ");
                let _ = writeln!(b, "    public sealed partial class {name}\n    {{");
                let refined: Vec<String> = refined_props(s).into_iter().map(|(p, _)| p).collect();
                for (i, f) in s.fields.iter().enumerate() {
                    if i > 0 {
                        b.push('\n');
                    }
                    property(&mut b, model, &name, f, &refined);
                }
                b.push_str("    }\n");
                b
            }
            Shape::Union(u) => union(model, def, u),
        };
        if !first {
            out.push('\n');
        }
        first = false;
        out.push_str(&body);
    }
    out.push('\n');
    wire_names(&mut out, &enums);
    out.push_str("}\n");
    out
}

fn enumeration(def: &Def, values: &[EnumValue]) -> String {
    let mut b = String::new();
    summary(&mut b, &def.doc, "    ");
    let _ = writeln!(b, "    public enum {}\n    {{", def.name);
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            b.push('\n');
        }
        let doc = if v.doc.is_empty() { format!("`{}`.", v.value) } else { first_paragraph(&v.doc) };
        summary(&mut b, &doc, "        ");
        let _ = writeln!(b, "        [WireName({})]", quote(&v.value));
        let _ = writeln!(b, "        {},", pascal(&v.value));
    }
    b.push_str("    }\n");
    b
}

fn unknown_variant(def: &Def) -> String {
    format!("Unknown{}", def.name)
}

fn union(model: &Model, def: &Def, u: &Union) -> String {
    let kind = format!("{}Kind", def.name);
    let mut b = String::new();
    summary(&mut b, &def.doc, "    ");
    let _ = writeln!(b, "    public abstract partial class {}\n    {{", def.name);
    let _ = writeln!(
        b,
        "        /// <summary>The <c>{}</c> discriminator: which subclass this is (a serializer writes it first).</summary>",
        xml(&u.tag)
    );
    let _ = writeln!(b, "        public abstract string {kind} {{ get; }}");
    b.push_str("    }\n");
    for v in &u.variants {
        b.push('\n');
        summary(&mut b, &v.doc, "    ");
        let _ = writeln!(b, "    public sealed partial class {} : {}\n    {{", v.name, def.name);
        let _ = writeln!(b, "        /// <summary>Always {}.</summary>", xml(&quote(&v.value)));
        let _ = writeln!(b, "        public override string {kind} {{ get {{ return {}; }} }}", quote(&v.value));
        for f in &v.fields {
            b.push('\n');
            property(&mut b, model, &v.name, f, &[]);
        }
        b.push_str("    }\n");
    }
    let unknown = unknown_variant(def);
    let _ = write!(
        b,
        "
    /// <summary>
    /// A {name} of a kind this version does not know (sent by a newer library): its
    /// <c>{tag}</c> and its other properties as read, so nothing is lost.
    /// </summary>
    public sealed partial class {unknown} : {name}
    {{
        /// <summary>The <c>{tag}</c> value.</summary>
        public override string {kind} {{ get {{ return Kind; }} }}

        /// <summary>The <c>{tag}</c> value.</summary>
        public string Kind {{ get; set; }}

        /// <summary>The other properties, as read (free JSON).</summary>
        public IDictionary<string, object> Properties {{ get; set; }}
    }}
",
        name = def.name,
        tag = xml(&u.tag),
    );
    b
}

fn wire_names(out: &mut String, enums: &[(&Def, &[EnumValue])]) {
    out.push_str(
        "    /// <summary>\n    /// The wire strings of the generated enums: <c>ToWire</c> and <c>TryParse</c> for each.\n    /// </summary>\n    public static class WireNames\n    {\n",
    );
    for (i, (def, values)) in enums.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let n = &def.name;
        let _ = writeln!(out, "        /// <summary>The wire string of a <see cref=\"{n}\"/>.</summary>");
        let _ = writeln!(
            out,
            "        public static string ToWire(this {n} value)\n        {{\n            switch (value)\n            {{"
        );
        for v in *values {
            let _ = writeln!(out, "                case {n}.{}: return {};", pascal(&v.value), quote(&v.value));
        }
        let _ = writeln!(
            out,
            "                default: throw new System.ArgumentOutOfRangeException(\"value\");\n            }}\n        }}\n"
        );
        let _ = writeln!(
            out,
            "        /// <summary>The <see cref=\"{n}\"/> of a wire string; false for an unknown one.</summary>"
        );
        let _ = writeln!(
            out,
            "        public static bool TryParse(string wire, out {n} value)\n        {{\n            switch (wire)\n            {{"
        );
        for v in *values {
            let _ = writeln!(
                out,
                "                case {}: value = {n}.{}; return true;",
                quote(&v.value),
                pascal(&v.value)
            );
        }
        let _ =
            writeln!(out, "                default: value = default({n}); return false;\n            }}\n        }}");
    }
    out.push_str("    }\n");
}

fn errors(model: &Model) -> String {
    let mut out = banner("//");
    let _ = writeln!(out, "\nnamespace {NAMESPACE}\n{{");
    out.push_str(
        "    /// <summary>\n    /// The core's error table: each <see cref=\"ErrorKind\"/>'s stable number and advice (the same in\n    /// every language).\n    /// </summary>\n    public static class ErrorTable\n    {\n",
    );
    let arm = |out: &mut String,
               method: &str,
               ret: &str,
               doc: &str,
               value: &dyn Fn(&crate::model::ErrorRow) -> String| {
        let _ = writeln!(out, "        /// <summary>{doc}</summary>");
        let _ = writeln!(
            out,
            "        public static {ret} {method}(this ErrorKind kind)\n        {{\n            switch (kind)\n            {{"
        );
        for e in &model.errors {
            let _ = writeln!(out, "                case ErrorKind.{}: return {};", pascal(&e.name), value(e));
        }
        let _ = writeln!(
            out,
            "                default: throw new System.ArgumentOutOfRangeException(\"kind\");\n            }}\n        }}"
        );
    };
    arm(&mut out, "Code", "int", "The kind's stable number (1001, …).", &|e| e.code.to_string());
    out.push('\n');
    arm(&mut out, "Advice", "string", "What the caller can do about an error of this kind.", &|e| quote(&e.advice));
    out.push('\n');
    out.push_str(
        "        /// <summary>The kind with the stable number <paramref name=\"code\"/>; false when none has it.</summary>\n        public static bool TryFromCode(int code, out ErrorKind kind)\n        {\n            switch (code)\n            {\n",
    );
    for e in &model.errors {
        let _ = writeln!(out, "                case {}: kind = ErrorKind.{}; return true;", e.code, pascal(&e.name));
    }
    out.push_str("                default: kind = default(ErrorKind); return false;\n            }\n        }\n\n");
    out.push_str(
        "        /// <summary>\n        /// The exception of an error of <paramref name=\"kind\"/> with the library's\n        /// <paramref name=\"message\"/>: one class per kind (<see cref=\"IAgentstreamError\"/>).\n        /// </summary>\n        public static System.Exception ToException(this ErrorKind kind, string message)\n        {\n            switch (kind)\n            {\n",
    );
    for e in &model.errors {
        let _ = writeln!(
            out,
            "                case ErrorKind.{}: return new {}(message);",
            pascal(&e.name),
            exception_name(&e.name)
        );
    }
    out.push_str(
        "                default: throw new System.ArgumentOutOfRangeException(\"kind\");\n            }\n        }\n    }\n}\n",
    );
    out
}

fn exceptions(model: &Model) -> String {
    let mut out = banner("//");
    let _ = writeln!(out, "\nnamespace {NAMESPACE}\n{{");
    out.push_str(
        "    /// <summary>
    /// What every agentstream exception carries: the kind of the core's error table and its stable
    /// code (the C status). Catch every agentstream error with
    /// <c>catch (Exception e) when (e is IAgentstreamError)</c>; each kind also derives from the .NET
    /// exception that means the same (<c>ArgumentException</c> for a bad argument, …).
    /// </summary>
    public interface IAgentstreamError
    {
        /// <summary>The kind (<c>ErrorKind.InvalidArgument</c>, …).</summary>
        ErrorKind Kind { get; }

        /// <summary>The kind's stable number (1001, …), the C status.</summary>
        int Code { get; }
    }

    /// <summary>
    /// The base of the kinds no .NET exception describes (harness not found, spawn failed, …).
    /// </summary>
    public abstract partial class AgentstreamException : System.Exception, IAgentstreamError
    {
        /// <summary>An exception with the library's message.</summary>
        protected AgentstreamException(string message) : base(message) { }

        /// <inheritdoc/>
        public abstract ErrorKind Kind { get; }

        /// <inheritdoc/>
        public int Code { get { return Kind.Code(); } }
    }
",
    );
    for e in &model.errors {
        let name = exception_name(&e.name);
        let kind = pascal(&e.name);
        let base = EXCEPTION_BASES.iter().find(|(k, _)| *k == e.name).map(|(_, b)| *b);
        out.push('\n');
        let doc = if e.doc.is_empty() { format!("The error kind `{}`.", e.name) } else { e.doc.clone() };
        summary(&mut out, &format!("{doc}\n\nError kind `{}`, code {}: {}", e.name, e.code, e.advice), "    ");
        match base {
            None => {
                let _ = writeln!(
                    out,
                    "    public sealed partial class {name} : AgentstreamException
    {{
        /// <summary>An exception with the library's message.</summary>
        public {name}(string message) : base(message) {{ }}

        /// <inheritdoc/>
        public override ErrorKind Kind {{ get {{ return ErrorKind.{kind}; }} }}
    }}"
                );
            }
            Some(base) => {
                // ArgumentNullException and ObjectDisposedException take (name, message).
                let ctor = match base {
                    "System.ArgumentNullException" | "System.ObjectDisposedException" => "base(null, message)",
                    _ => "base(message)",
                };
                let _ = writeln!(
                    out,
                    "    public sealed partial class {name} : {base}, IAgentstreamError
    {{
        /// <summary>An exception with the library's message.</summary>
        public {name}(string message) : {ctor} {{ }}

        /// <inheritdoc/>
        public ErrorKind Kind {{ get {{ return ErrorKind.{kind}; }} }}

        /// <inheritdoc/>
        public int Code {{ get {{ return {code}; }} }}
    }}",
                    code = e.code
                );
            }
        }
    }
    out.push_str("}\n");
    out
}

// ---- the codec: JSON reading and writing of every type ----

/// The C# expression reading a value of type `t` from the reader `r` (a null JSON value reads
/// as null for reference types and nullable value types).
fn read_expr(model: &Model, t: &Ty) -> String {
    read_expr_in(model, t, "r", 0)
}

/// [`read_expr`] with the reader named `r` (nested lists and maps read their items in lambdas
/// whose reader is `r1`, `r2`, …: C# 7 forbids reusing the outer name).
fn read_expr_in(model: &Model, t: &Ty, r: &str, depth: usize) -> String {
    let inner = format!("r{}", depth + 1);
    match t {
        Ty::String => format!("{r}.ReadString()"),
        Ty::Bool => format!("{r}.ReadBool()"),
        Ty::Int(Int::U64) => format!("{r}.ReadUInt64()"),
        Ty::Int(Int::I64) => format!("{r}.ReadInt64()"),
        Ty::Int(Int::I32) => format!("{r}.ReadInt32()"),
        Ty::Float => format!("{r}.ReadDouble()"),
        Ty::Any | Ty::AnyOf(_) => format!("{r}.ReadAny()"),
        Ty::Object => format!("{r}.ReadObject()"),
        Ty::Array(e) => format!("{r}.ReadList({inner} => {})", read_item_expr(model, e, &inner, depth + 1)),
        Ty::Map(v) => format!("{r}.ReadMap({inner} => {})", read_item_expr(model, v, &inner, depth + 1)),
        Ty::Nullable(t) => {
            if is_value_type(model, t) {
                format!("({r}.TryReadNull() ? ({}?)null : {})", ty(model, t), read_expr_in(model, t, r, depth))
            } else {
                read_expr_in(model, t, r, depth)
            }
        }
        Ty::Ref(n) => match &model.def(n).shape {
            Shape::Map(v) => read_expr_in(model, &Ty::Map(Box::new(v.clone())), r, depth),
            _ => format!("Read{}({r})", type_name(n)),
        },
    }
}

/// An item of a list or a map value: its C# type is the element type as declared (`IList<T>`).
fn read_item_expr(model: &Model, t: &Ty, r: &str, depth: usize) -> String {
    read_expr_in(model, t, r, depth)
}

/// How to read a field: optional value types through their nullable form.
fn read_field_expr(model: &Model, f: &Field) -> String {
    if !f.required && is_value_type(model, &f.ty) {
        read_expr(model, &Ty::Nullable(Box::new(f.ty.clone())))
    } else {
        read_expr(model, &f.ty)
    }
}

/// Statements writing `expr` (of type `t`, possibly null when `maybe_null`) to the writer `w`.
fn write_stmts(model: &Model, out: &mut String, indent: &str, t: &Ty, expr: &str, maybe_null: bool, depth: usize) {
    let value_type = is_value_type(model, t);
    match t {
        Ty::Nullable(inner) => write_stmts(model, out, indent, inner, expr, true, depth),
        _ if value_type && maybe_null => {
            let _ = writeln!(out, "{indent}if ({expr}.HasValue)");
            let _ = writeln!(out, "{indent}{{");
            write_stmts(model, out, &format!("{indent}    "), t, &format!("{expr}.Value"), false, depth);
            let _ = writeln!(out, "{indent}}}");
            let _ = writeln!(out, "{indent}else");
            let _ = writeln!(out, "{indent}{{");
            let _ = writeln!(out, "{indent}    w.Null();");
            let _ = writeln!(out, "{indent}}}");
        }
        Ty::String => {
            let _ = writeln!(out, "{indent}w.String({expr});");
        }
        Ty::Bool => {
            let _ = writeln!(out, "{indent}w.Bool({expr});");
        }
        Ty::Int(_) | Ty::Float => {
            let _ = writeln!(out, "{indent}w.Number({expr});");
        }
        Ty::Any | Ty::AnyOf(_) => {
            let _ = writeln!(out, "{indent}WriteValue(w, {expr});");
        }
        Ty::Object => {
            let _ = writeln!(out, "{indent}w.Any({expr});");
        }
        Ty::Array(e) => {
            let var = format!("e{depth}");
            let _ = writeln!(out, "{indent}if ({expr} == null)");
            let _ = writeln!(out, "{indent}{{");
            let _ = writeln!(out, "{indent}    w.Null();");
            let _ = writeln!(out, "{indent}}}");
            let _ = writeln!(out, "{indent}else");
            let _ = writeln!(out, "{indent}{{");
            let _ = writeln!(out, "{indent}    w.BeginArray();");
            let _ = writeln!(out, "{indent}    foreach (var {var} in {expr})");
            let _ = writeln!(out, "{indent}    {{");
            write_stmts(model, out, &format!("{indent}        "), e, &var, true, depth + 1);
            let _ = writeln!(out, "{indent}    }}");
            let _ = writeln!(out, "{indent}    w.EndArray();");
            let _ = writeln!(out, "{indent}}}");
        }
        Ty::Map(v) => {
            let var = format!("e{depth}");
            let _ = writeln!(out, "{indent}if ({expr} == null)");
            let _ = writeln!(out, "{indent}{{");
            let _ = writeln!(out, "{indent}    w.Null();");
            let _ = writeln!(out, "{indent}}}");
            let _ = writeln!(out, "{indent}else");
            let _ = writeln!(out, "{indent}{{");
            let _ = writeln!(out, "{indent}    w.BeginObject();");
            let _ = writeln!(out, "{indent}    foreach (var {var} in {expr})");
            let _ = writeln!(out, "{indent}    {{");
            let _ = writeln!(out, "{indent}        w.Key({var}.Key);");
            write_stmts(model, out, &format!("{indent}        "), v, &format!("{var}.Value"), true, depth + 1);
            let _ = writeln!(out, "{indent}    }}");
            let _ = writeln!(out, "{indent}    w.EndObject();");
            let _ = writeln!(out, "{indent}}}");
        }
        Ty::Ref(n) => match &model.def(n).shape {
            Shape::Map(v) => write_stmts(model, out, indent, &Ty::Map(Box::new(v.clone())), expr, maybe_null, depth),
            Shape::Enum(_) => {
                let _ = writeln!(out, "{indent}w.String({expr}.ToWire());");
            }
            _ => {
                let _ = writeln!(out, "{indent}Write{}(w, {expr});", type_name(n));
            }
        },
    }
}

/// The properties of `fields` written in wire order: required ones always, optional ones when
/// they hold a value.
fn write_fields(model: &Model, out: &mut String, owner: &str, fields: &[Field], refined: &[String]) {
    for f in fields {
        let member = format!("v.{}", member_name(&f.name, owner));
        if is_lazy(f, refined) {
            // The slot: written as the JSON text it was read from while it is still lazy.
            let slot = format!("v.{}", slot_name(&f.name, owner));
            if f.required {
                let _ = writeln!(out, "            w.Key({});", quote(&f.name));
                let _ = writeln!(out, "            WriteLazy(w, {slot});");
            } else {
                let _ = writeln!(out, "            if ({slot} != null)");
                let _ = writeln!(out, "            {{");
                let _ = writeln!(out, "                w.Key({});", quote(&f.name));
                let _ = writeln!(out, "                WriteLazy(w, {slot});");
                let _ = writeln!(out, "            }}");
            }
            continue;
        }
        if f.required {
            let _ = writeln!(out, "            w.Key({});", quote(&f.name));
            write_stmts(model, out, "            ", &f.ty, &member, matches!(f.ty, Ty::Nullable(_)), 0);
        } else {
            let _ = writeln!(out, "            if ({member} != null)");
            let _ = writeln!(out, "            {{");
            let _ = writeln!(out, "                w.Key({});", quote(&f.name));
            let inner = if is_value_type(model, &f.ty) { format!("{member}.Value") } else { member.clone() };
            let t = match &f.ty {
                Ty::Nullable(t) => t.as_ref(),
                t => t,
            };
            write_stmts(model, out, "                ", t, &inner, false, 0);
            let _ = writeln!(out, "            }}");
        }
    }
}

/// The refined properties of a struct that C# reads as the arm's type: those whose base type is
/// free (`object`), with the arm's type per tag value.
fn refined_props(s: &Struct) -> Vec<(String, Vec<(String, Ty)>)> {
    let Some(r) = &s.refinement else { return Vec::new() };
    let mut out: Vec<(String, Vec<(String, Ty)>)> = Vec::new();
    for f in &s.fields {
        if !matches!(f.ty, Ty::Any | Ty::AnyOf(_)) {
            continue;
        }
        let arms: Vec<(String, Ty)> =
            r.arms.iter().filter_map(|a| a.type_of(&f.name).map(|t| (a.tag_value().to_string(), t.clone()))).collect();
        if !arms.is_empty() {
            out.push((f.name.clone(), arms));
        }
    }
    out
}

/// The reader of a struct's body (after its `{`), into a new instance; the keys of `skip` and
/// unknown keys are skipped.
fn struct_body_reader(model: &Model, out: &mut String, name: &str, fields: &[Field], s: Option<&Struct>) {
    let refined = s.map(refined_props).unwrap_or_default();
    let refined_names: Vec<String> = refined.iter().map(|(p, _)| p.clone()).collect();
    let tag = s.and_then(|s| s.refinement.as_ref()).map(|r| r.tag.clone()).filter(|_| !refined.is_empty());
    let _ = writeln!(out, "        internal static {name} Read{name}Body(JsonReader r)\n        {{");
    let _ = writeln!(out, "            var v = new {name}();");
    if tag.is_some() {
        let _ = writeln!(out, "            string tag = null;");
        for (prop, _) in &refined {
            let _ = writeln!(out, "            int {}At = -1;", member_name(prop, name).to_lowercase());
        }
    }
    let _ = writeln!(out, "            string k;");
    // Keys come from the reader as the canonical instances of the schema's strings (see
    // `WireCodec.Strings`), so a reference comparison is exact, and far cheaper on mono than a
    // `switch` on strings (which hashes every key).
    let _ = writeln!(out, "            while (r.NextKey(out k))\n            {{");
    for (i, f) in fields.iter().enumerate() {
        let member = member_name(&f.name, name);
        let els = if i == 0 { "" } else { "else " };
        let _ = writeln!(out, "                {els}if ((object)k == (object){})\n                {{", quote(&f.name));
        if tag.as_deref() == Some(f.name.as_str()) {
            // The tag: kept as its wire string for the refined properties.
            let _ = writeln!(out, "                    tag = r.ReadString();");
            let value = match &f.ty {
                Ty::Ref(n) if matches!(model.def(n).shape, Shape::Enum(_)) => format!("Parse{}(r, tag)", type_name(n)),
                Ty::String => "tag".to_string(),
                other => panic!("C# codec: a refinement tag of type {other:?} (expected a string or an enum)"),
            };
            let _ = writeln!(out, "                    v.{member} = {value};");
        } else if let Some((prop, _)) = refined.iter().find(|(p, _)| *p == f.name) {
            let at = format!("{}At", member_name(prop, name).to_lowercase());
            let _ = writeln!(out, "                    if (tag != null)");
            let _ = writeln!(out, "                    {{");
            let _ = writeln!(out, "                        v.{member} = Read{name}{member}(r, tag);");
            let _ = writeln!(out, "                    }}");
            let _ = writeln!(out, "                    else");
            let _ = writeln!(out, "                    {{");
            let _ = writeln!(out, "                        {at} = r.Position;");
            let _ = writeln!(out, "                        r.Skip();");
            let _ = writeln!(out, "                    }}");
        } else if is_lazy(f, &refined_names) {
            let read = if matches!(f.ty, Ty::Object) || matches!(&f.ty, Ty::Nullable(t) if **t == Ty::Object) {
                "r.ReadLazyObject()"
            } else {
                "r.ReadLazy()"
            };
            let _ = writeln!(out, "                    v.{} = {read};", slot_name(&f.name, name));
        } else {
            let _ = writeln!(out, "                    v.{member} = {};", read_field_expr(model, f));
        }
        let _ = writeln!(out, "                }}");
    }
    if fields.is_empty() {
        let _ = writeln!(out, "                r.Skip();\n            }}");
    } else {
        let _ = writeln!(
            out,
            "                else\n                {{\n                    r.Skip();\n                }}\n            }}"
        );
    }
    if tag.is_some() {
        for (prop, _) in &refined {
            let member = member_name(prop, name);
            let at = format!("{}At", member.to_lowercase());
            let _ = writeln!(
                out,
                "            if ({at} >= 0)\n            {{\n                int end = r.Position;\n                r.Position = {at};\n                v.{member} = Read{name}{member}(r, tag);\n                r.Position = end;\n            }}"
            );
        }
    }
    let _ = writeln!(out, "            return v;\n        }}");
    for (prop, arms) in &refined {
        let member = member_name(prop, name);
        let _ = writeln!(out, "\n        static object Read{name}{member}(JsonReader r, string tag)\n        {{");
        let _ = writeln!(
            out,
            "            for (int attempt = 0; attempt < 2; attempt++, tag = JsonReader.Canonical(tag))\n            {{"
        );
        for (value, t) in arms {
            let _ = writeln!(
                out,
                "                if ((object)tag == (object){})\n                {{\n                    return {};\n                }}",
                quote(value),
                read_expr(model, t)
            );
        }
        let _ = writeln!(out, "            }}\n            return r.ReadAny();\n        }}");
    }
}

fn codec(model: &Model) -> String {
    let variants = model.variant_structs();
    let mut out = banner("//");
    let _ = writeln!(out, "\nusing System.Collections.Generic;\n\nnamespace {NAMESPACE}\n{{");
    out.push_str(
        "    /// <summary>
    /// Reads and writes every wire type as JSON (the keys of the schema; optional properties absent
    /// when null), over the package's <c>JsonReader</c> and <c>JsonWriter</c>. Unknown keys are
    /// skipped; a union kind this version does not know reads as its <c>Unknown…</c> class.
    /// </summary>
    internal static partial class WireCodec
    {
",
    );
    let _ = writeln!(
        out,
        "        /// <summary>
        /// Every key, tag value and enum value of the schema: the reader hands these out as the very
        /// instances of the literals below, so the readers compare them by reference.
        /// </summary>
        internal static readonly string[] Strings =
        {{"
    );
    for v in schema_strings(model) {
        let _ = writeln!(out, "            {},", quote(&v));
    }
    out.push_str("        };\n\n");
    let mut readable: Vec<String> = Vec::new(); // types with a Read/Write pair, for the dispatchers
    for def in &model.defs {
        let name = type_name(&def.name);
        match &def.shape {
            Shape::Map(_) => {}
            Shape::Enum(values) => {
                let _ = writeln!(
                    out,
                    "        internal static {name} Read{name}(JsonReader r)
        {{
            return Parse{name}(r, r.ReadString());
        }}

        internal static {name} Parse{name}(JsonReader r, string s)
        {{"
                );
                for v in values {
                    let _ = writeln!(
                        out,
                        "            if ((object)s == (object){})\n            {{\n                return {name}.{};\n            }}",
                        quote(&v.value),
                        pascal(&v.value)
                    );
                }
                let _ = writeln!(
                    out,
                    "            {name} v;
            if (!WireNames.TryParse(s, out v))
            {{
                throw r.Error(\"unknown {name} value \" + JsonWriter.Quote(s));
            }}
            return v;
        }}
"
                );
            }
            Shape::Struct(s) => {
                if variants.contains_key(&def.name) {
                    continue; // read and written through its union
                }
                readable.push(name.clone());
                let _ = writeln!(
                    out,
                    "        internal static {name} Read{name}(JsonReader r)
        {{
            if (r.TryReadNull())
            {{
                return null;
            }}
            r.BeginObject();
            return Read{name}Body(r);
        }}
"
                );
                struct_body_reader(model, &mut out, &name, &s.fields, Some(s));
                let _ = writeln!(
                    out,
                    "\n        internal static void Write{name}(JsonWriter w, {name} v)
        {{
            if (v == null)
            {{
                w.Null();
                return;
            }}
            w.BeginObject();"
                );
                let refined: Vec<String> = refined_props(s).into_iter().map(|(p, _)| p).collect();
                write_fields(model, &mut out, &name, &s.fields, &refined);
                let _ = writeln!(out, "            w.EndObject();\n        }}\n");
            }
            Shape::Union(u) => {
                readable.push(name.clone());
                let unknown = unknown_variant(def);
                let _ = writeln!(
                    out,
                    "        internal static {name} Read{name}(JsonReader r)
        {{
            if (r.TryReadNull())
            {{
                return null;
            }}
            r.BeginObject();
            string tag = r.ReadTag({tag});
            if (tag == null)
            {{
                throw r.Error(\"a {name} without its \" + JsonWriter.Quote({tag}));
            }}
            for (int attempt = 0; attempt < 2; attempt++, tag = JsonReader.Canonical(tag))
            {{",
                    tag = quote(&u.tag)
                );
                for v in &u.variants {
                    let _ = writeln!(
                        out,
                        "                if ((object)tag == (object){})\n                {{\n                    return Read{}Body(r);\n                }}",
                        quote(&v.value),
                        v.name
                    );
                }
                let _ = writeln!(
                    out,
                    "            }}
            return new {unknown} {{ Kind = tag, Properties = r.ReadObjectBody({tag}) }};
        }}
",
                    tag = quote(&u.tag)
                );
                for v in &u.variants {
                    struct_body_reader(model, &mut out, &v.name, &v.fields, None);
                    out.push('\n');
                }
                let _ = writeln!(
                    out,
                    "        internal static void Write{name}(JsonWriter w, {name} value)
        {{
            if (value == null)
            {{
                w.Null();
                return;
            }}
            w.BeginObject();
            w.Key({tag});
            w.String(value.{name}Kind);",
                    tag = quote(&u.tag)
                );
                for v in &u.variants {
                    let _ = writeln!(out, "            var {} = value as {};", lower_first(&v.name), v.name);
                    let _ = writeln!(out, "            if ({} != null)\n            {{", lower_first(&v.name));
                    let _ = writeln!(out, "                Write{}Fields(w, {});", v.name, lower_first(&v.name));
                    let _ = writeln!(out, "            }}");
                }
                let _ = writeln!(
                    out,
                    "            var unknown = value as {unknown};
            if (unknown != null && unknown.Properties != null)
            {{
                foreach (var p in unknown.Properties)
                {{
                    if (p.Key != {tag})
                    {{
                        w.Key(p.Key);
                        w.Any(p.Value);
                    }}
                }}
            }}
            w.EndObject();
        }}
",
                    tag = quote(&u.tag)
                );
                for v in &u.variants {
                    let _ = writeln!(
                        out,
                        "        static void Write{}Fields(JsonWriter w, {} v)\n        {{",
                        v.name, v.name
                    );
                    write_fields(model, &mut out, &v.name, &v.fields, &[]);
                    let _ = writeln!(out, "        }}\n");
                }
            }
        }
    }
    // Dispatchers by runtime type / requested type.
    out.push_str(
        "        /// <summary>A lazy property's slot: its JSON text while not built yet, else the value.</summary>
        static void WriteLazy(JsonWriter w, object slot)
        {
            var raw = slot as RawJson;
            if (raw != null)
            {
                raw.WriteTo(w);
                return;
            }
            WriteValue(w, slot);
        }

        /// <summary>Writes a value of free type: a wire type by its codec, anything else as free JSON.</summary>
        internal static void WriteValue(JsonWriter w, object value)
        {
            if (!TryWrite(w, value))
            {
                w.Any(value);
            }
        }

        /// <summary>Writes <paramref name=\"value\"/> when it is a wire type (a class or an enum); false otherwise.</summary>
        internal static bool TryWrite(JsonWriter w, object value)
        {
",
    );
    for n in &readable {
        let _ = writeln!(
            out,
            "            if (value is {n})\n            {{\n                Write{n}(w, ({n})value);\n                return true;\n            }}"
        );
    }
    for def in &model.defs {
        if let Shape::Enum(_) = def.shape {
            let n = &def.name;
            let _ = writeln!(
                out,
                "            if (value is {n})\n            {{\n                w.String((({n})value).ToWire());\n                return true;\n            }}"
            );
        }
    }
    out.push_str("            return false;\n        }\n\n");
    out.push_str(
        "        /// <summary>Whether <paramref name=\"type\"/> is a wire type this codec reads; <paramref name=\"value\"/> the value read.</summary>
        internal static bool TryRead(System.Type type, JsonReader r, out object value)
        {
",
    );
    for n in &readable {
        let _ = writeln!(
            out,
            "            if (type == typeof({n}))\n            {{\n                value = Read{n}(r);\n                return true;\n            }}"
        );
    }
    out.push_str("            value = null;\n            return false;\n        }\n    }\n}\n");
    out
}

/// The schema's strings a reader compares: keys, union tags and their values, enum values.
fn schema_strings(model: &Model) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |v: &str| {
        if !out.iter().any(|x| x == v) {
            out.push(v.to_string());
        }
    };
    for def in &model.defs {
        match &def.shape {
            Shape::Map(_) => {}
            Shape::Enum(values) => values.iter().for_each(|v| add(&v.value)),
            Shape::Struct(s) => {
                s.fields.iter().for_each(|f| add(&f.name));
                for arm in s.refinement.iter().flat_map(|r| &r.arms) {
                    arm.consts.iter().for_each(|(k, v)| {
                        add(k);
                        add(v)
                    });
                }
            }
            Shape::Union(u) => {
                add(&u.tag);
                for v in &u.variants {
                    add(&v.value);
                    v.fields.iter().for_each(|f| add(&f.name));
                }
            }
        }
    }
    out
}

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}
