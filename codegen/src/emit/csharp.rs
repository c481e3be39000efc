//! C# (7.x, compiles with Mono's `mcs`): data classes, enums and the error table
//! (`bindings/csharp/Agentstream/Generated/`), serializer-neutral and dependency-free: a
//! generated `[WireName("…")]` attribute carries each property's key and each enum member's
//! string, `[Required]`-ness is `WireName.Required`, and `WireNames` converts enums to and from
//! their wire strings.
//!
//! Conventions: PascalCase properties (`SessionId`); an optional value is nullable (`ulong?`,
//! `ToolCallStatus?`, a null reference: absent on the wire); a tagged union is an
//! abstract class with a `<Union>Kind` discriminator and one sealed subclass per kind; a refined
//! struct keeps its base properties (`HookEvent.Details` is a dictionary; the hook detail classes
//! are generated too, for typed reading); free JSON is `object` / `IDictionary<string, object>`.

use std::fmt::Write;

use super::{File, Language, banner};
use crate::model::{Def, EnumValue, Field, Int, Model, Shape, Ty, Union};
use crate::text::{first_paragraph, pascal};

/// The C# language.
pub const LANGUAGE: Language = Language { name: "csharp", emit, owns: &["bindings/csharp/Agentstream/Generated"] };

const TYPES_PATH: &str = "bindings/csharp/Agentstream/Generated/Types.cs";
const ERRORS_PATH: &str = "bindings/csharp/Agentstream/Generated/ErrorTable.cs";
const NAMESPACE: &str = "Agentstream";

fn emit(model: &Model) -> Vec<File> {
    vec![File { path: TYPES_PATH.into(), text: types(model) }, File { path: ERRORS_PATH.into(), text: errors(model) }]
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
            _ => n.clone(),
        },
    }
}

fn nullable(model: &Model, t: &Ty) -> String {
    if is_value_type(model, t) { format!("{}?", ty(model, t)) } else { ty(model, t) }
}

fn property(out: &mut String, model: &Model, owner: &str, f: &Field) {
    summary(out, &f.doc, "        ");
    let t = if f.required { ty(model, &f.ty) } else { nullable(model, &f.ty) };
    let required = if f.required { ", Required = true" } else { "" };
    let _ = writeln!(out, "        [WireName({}{required})]", quote(&f.name));
    let _ = writeln!(out, "        public {t} {} {{ get; set; }}", member_name(&f.name, owner));
}

fn types(model: &Model) -> String {
    let mut out = banner("//");
    let _ = writeln!(out, "\nusing System.Collections.Generic;\n\nnamespace {NAMESPACE}\n{{");
    out.push_str(
        "    /// <summary>\n    /// The name of a property or enum member on the wire (the JSON key, or the enum's string);\n    /// <c>Required</c>: the key is always present (otherwise it is absent when the value is null).\n    /// </summary>\n    [System.AttributeUsage(System.AttributeTargets.Property | System.AttributeTargets.Field)]\n    public sealed class WireNameAttribute : System.Attribute\n    {\n        /// <summary>A wire name.</summary>\n        public WireNameAttribute(string name) { Name = name; }\n\n        /// <summary>The name on the wire.</summary>\n        public string Name { get; private set; }\n\n        /// <summary>Whether the key is always present.</summary>\n        public bool Required { get; set; }\n    }\n\n",
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
                let mut b = String::new();
                summary(&mut b, &def.doc, "    ");
                let _ = writeln!(b, "    public sealed class {}\n    {{", def.name);
                for (i, f) in s.fields.iter().enumerate() {
                    if i > 0 {
                        b.push('\n');
                    }
                    property(&mut b, model, &def.name, f);
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
        summary(&mut b, &first_paragraph(&v.doc), "        ");
        let _ = writeln!(b, "        [WireName({})]", quote(&v.value));
        let _ = writeln!(b, "        {},", pascal(&v.value));
    }
    b.push_str("    }\n");
    b
}

fn union(model: &Model, def: &Def, u: &Union) -> String {
    let kind = format!("{}Kind", def.name);
    let mut b = String::new();
    summary(&mut b, &def.doc, "    ");
    let _ = writeln!(b, "    public abstract class {}\n    {{", def.name);
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
        let _ = writeln!(b, "    public sealed class {} : {}\n    {{", v.name, def.name);
        let _ = writeln!(b, "        /// <summary>Always {}.</summary>", xml(&quote(&v.value)));
        let _ = writeln!(b, "        public override string {kind} {{ get {{ return {}; }} }}", quote(&v.value));
        for f in &v.fields {
            b.push('\n');
            property(&mut b, model, &v.name, f);
        }
        b.push_str("    }\n");
    }
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
    out.push_str(
        "                default: kind = default(ErrorKind); return false;\n            }\n        }\n    }\n}\n",
    );
    out
}
