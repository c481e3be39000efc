//! Java (17+ records and sealed interfaces): one file per type in
//! `bindings/java/src/main/java/dev/agentstream/generated/`, dependency-free: a generated
//! `@WireName("…")` annotation carries each component's JSON key (and `required`), a generated
//! `@WireTag` annotation the discriminating key of a tagged union (on the sealed interface) and
//! each kind's value (on its record), so a JSON reader can map the wire to the records without a
//! table of its own; enums carry their wire strings (`wire()`, `fromWire`), and `ErrorTable`
//! holds the error table.
//!
//! Conventions: camelCase record components (`sessionId`, `runId`); an optional value is a
//! nullable reference (boxed numbers: `Long`, `Boolean`), absent on the wire when null; unsigned
//! 64-bit counters are `long` (values above 2^63-1 wrap, as Java's own `Long.parseUnsignedLong`);
//! a tagged union is a sealed interface with a `<union>Kind()` discriminator, one record per
//! kind; a refined struct keeps its base components (`HookEvent.details` is a map; the hook
//! detail records are generated too); free JSON is `Object` / `Map<String, Object>`.

use std::fmt::Write;

use super::{File, Language, banner};
use crate::model::{Def, EnumValue, Field, Int, Model, Shape, Ty, Union};
use crate::text::{camel, first_paragraph, pascal, screaming, wrap};

/// The Java language.
pub const LANGUAGE: Language = Language { name: "java", emit, owns: &[DIR] };

const DIR: &str = "bindings/java/src/main/java/dev/agentstream/generated";

/// Public names that differ from the schema's: the seed names Java's hook event `AgentEvent`
/// (`type()`, `runId()`, `agentId()`, `timestamp()`, `status()`, `details()`).
const RENAMES: &[(&str, &str)] = &[("HookEvent", "AgentEvent")];

/// The Java name of a schema type.
fn java_name(schema_name: &str) -> String {
    RENAMES.iter().find(|(from, _)| *from == schema_name).map(|(_, to)| to.to_string()).unwrap_or(schema_name.into())
}
const PACKAGE: &str = "dev.agentstream.generated";

const KEYWORDS: &[&str] = &[
    "abstract",
    "assert",
    "boolean",
    "break",
    "byte",
    "case",
    "catch",
    "char",
    "class",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extends",
    "final",
    "finally",
    "float",
    "for",
    "goto",
    "if",
    "implements",
    "import",
    "instanceof",
    "int",
    "interface",
    "long",
    "native",
    "new",
    "package",
    "private",
    "protected",
    "public",
    "return",
    "short",
    "static",
    "strictfp",
    "super",
    "switch",
    "synchronized",
    "this",
    "throw",
    "throws",
    "transient",
    "try",
    "void",
    "volatile",
    "while",
    "record",
    "yield",
    "var",
];

fn path(type_name: &str) -> String {
    format!("{DIR}/{type_name}.java")
}

fn emit(model: &Model) -> Vec<File> {
    let mut files =
        vec![File { path: path("WireName"), text: wire_name() }, File { path: path("WireTag"), text: wire_tag() }];
    let variants = model.variant_structs();
    for def in &model.defs {
        let text = match &def.shape {
            Shape::Map(_) => continue,
            Shape::Enum(values) => enumeration(def, values),
            Shape::Struct(s) => {
                let parent = variants.get(&def.name).map(|(union, value)| {
                    let tag = union_tag(model, union);
                    (union.as_str(), tag, value.as_str())
                });
                record(model, &java_name(&def.name), &def.doc, &s.fields, parent)
            }
            Shape::Union(u) => {
                for v in u.variants.iter().filter(|v| v.reference.is_none()) {
                    let text = record(model, &v.name, &v.doc, &v.fields, Some((&def.name, &u.tag, &v.value)));
                    files.push(File { path: path(&v.name), text });
                }
                union(def, u)
            }
        };
        files.push(File { path: path(&java_name(&def.name)), text });
    }
    files.push(File { path: path("ErrorTable"), text: errors(model) });
    files
}

fn javadoc(out: &mut String, doc: &str, indent: &str, params: &[(String, String)]) {
    if doc.is_empty() && params.is_empty() {
        return;
    }
    // `\u` in a comment is a unicode escape to javac; `*/` would end the comment.
    let clean = |s: &str| {
        s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('\\', "&#92;").replace("*/", "*&#47;")
    };
    let _ = writeln!(out, "{indent}/**");
    for l in wrap(&clean(doc), 96 - indent.len()) {
        if l.is_empty() {
            let _ = writeln!(out, "{indent} *");
        } else {
            let _ = writeln!(out, "{indent} * {l}");
        }
    }
    if !params.is_empty() && !doc.is_empty() {
        let _ = writeln!(out, "{indent} *");
    }
    for (name, d) in params {
        let text = if d.is_empty() { "(see the type)".to_string() } else { clean(&first_paragraph(d)) };
        let mut lines = wrap(&format!("@param {name} {text}"), 96 - indent.len()).into_iter();
        if let Some(first) = lines.next() {
            let _ = writeln!(out, "{indent} * {first}");
        }
        for l in lines {
            let _ = writeln!(out, "{indent} *     {l}");
        }
    }
    let _ = writeln!(out, "{indent} */");
}

fn header() -> String {
    let mut s = banner("//");
    let _ = writeln!(s, "\npackage {PACKAGE};\n");
    s
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

fn ident(key: &str) -> String {
    let n = camel(key);
    if KEYWORDS.contains(&n.as_str()) { format!("{n}_") } else { n }
}

fn boxed(model: &Model, t: &Ty) -> String {
    match t {
        Ty::Bool => "Boolean".into(),
        Ty::Int(Int::I32) => "Integer".into(),
        Ty::Int(_) => "Long".into(),
        Ty::Float => "Double".into(),
        _ => ty(model, t),
    }
}

fn ty(model: &Model, t: &Ty) -> String {
    match t {
        Ty::String => "String".into(),
        Ty::Bool => "boolean".into(),
        Ty::Int(Int::I32) => "int".into(),
        Ty::Int(_) => "long".into(),
        Ty::Float => "double".into(),
        Ty::Any | Ty::AnyOf(_) => "Object".into(),
        Ty::Object => "java.util.Map<String, Object>".into(),
        Ty::Array(t) => format!("java.util.List<{}>", boxed(model, t)),
        Ty::Map(t) => format!("java.util.Map<String, {}>", boxed(model, t)),
        Ty::Nullable(t) => boxed(model, t),
        Ty::Ref(n) => match &model.def(n).shape {
            Shape::Map(v) => format!("java.util.Map<String, {}>", boxed(model, v)),
            _ => java_name(n),
        },
    }
}

fn wire_name() -> String {
    let mut s = header();
    s.push_str(
        "import java.lang.annotation.ElementType;\n\
         import java.lang.annotation.Retention;\n\
         import java.lang.annotation.RetentionPolicy;\n\
         import java.lang.annotation.Target;\n\n\
         /**\n * The name of a record component on the wire (its JSON key); {@code required}: the key is\n \
         * always present (otherwise it is absent when the value is null).\n */\n\
         @Retention(RetentionPolicy.RUNTIME)\n\
         @Target({ElementType.RECORD_COMPONENT, ElementType.FIELD, ElementType.METHOD, ElementType.PARAMETER})\n\
         public @interface WireName {\n\
         \x20   /** The JSON key. @return the key */\n\
         \x20   String value();\n\n\
         \x20   /** Whether the key is always present. @return true when it is */\n\
         \x20   boolean required() default false;\n\
         }\n",
    );
    s
}

fn wire_tag() -> String {
    let mut s = header();
    s.push_str(
        "import java.lang.annotation.ElementType;\n\
         import java.lang.annotation.Retention;\n\
         import java.lang.annotation.RetentionPolicy;\n\
         import java.lang.annotation.Target;\n\n\
         /**\n * The discriminator of a tagged union on the wire: on the sealed interface, {@code key} is the\n \
         * JSON key that tells the kinds apart (and {@code value} is empty); on each kind's record, {@code\n \
         * key} is that key and {@code value} the string it has for this kind.\n */\n\
         @Retention(RetentionPolicy.RUNTIME)\n\
         @Target(ElementType.TYPE)\n\
         public @interface WireTag {\n\
         \x20   /** The discriminating JSON key. @return the key */\n\
         \x20   String key();\n\n\
         \x20   /** The key's value for this kind (empty on the union itself). @return the value */\n\
         \x20   String value() default \"\";\n\
         }\n",
    );
    s
}

/// The discriminating key of the union named `name`.
fn union_tag<'m>(model: &'m Model, name: &str) -> &'m str {
    match &model.def(name).shape {
        Shape::Union(u) => &u.tag,
        _ => unreachable!("{name} is a union (Model::variant_structs)"),
    }
}

fn enumeration(def: &Def, values: &[EnumValue]) -> String {
    let n = &def.name;
    let mut s = header();
    javadoc(&mut s, &def.doc, "", &[]);
    let _ = writeln!(s, "public enum {n} {{");
    for (i, v) in values.iter().enumerate() {
        javadoc(&mut s, &first_paragraph(&v.doc), "    ", &[]);
        let end = if i + 1 == values.len() { ";" } else { "," };
        let _ = writeln!(s, "    {}({}){end}", screaming(&v.value), quote(&v.value));
    }
    let _ = write!(
        s,
        "\n    private final String wire;\n\n    {n}(String wire) {{\n        this.wire = wire;\n    }}\n\n\
         \x20   /**\n     * The string on the wire.\n     *\n     * @return the wire string\n     */\n\
         \x20   public String wire() {{\n        return wire;\n    }}\n\n\
         \x20   /**\n     * The constant with this wire string.\n     *\n     * @param wire the string\n     \
         * @return the constant, or null for a string this version does not know\n     */\n\
         \x20   public static {n} fromWire(String wire) {{\n        for ({n} v : values()) {{\n            \
         if (v.wire.equals(wire)) {{\n                return v;\n            }}\n        }}\n        return null;\n    }}\n}}\n"
    );
    s
}

/// `parent`: the union the record is a kind of, its discriminating key and this kind's value.
fn record(model: &Model, name: &str, doc: &str, fields: &[Field], parent: Option<(&str, &str, &str)>) -> String {
    let mut s = header();
    let params: Vec<(String, String)> = fields.iter().map(|f| (ident(&f.name), f.doc.clone())).collect();
    javadoc(&mut s, doc, "", &params);
    let components: Vec<String> = fields
        .iter()
        .map(|f| {
            let t = if f.required { ty(model, &f.ty) } else { boxed(model, &f.ty) };
            let required = if f.required { ", required = true" } else { "" };
            format!("        @WireName(value = {}{required}) {t} {}", quote(&f.name), ident(&f.name))
        })
        .collect();
    let implements = parent.map(|(u, _, _)| format!(" implements {u}")).unwrap_or_default();
    if let Some((_, key, value)) = parent {
        let _ = writeln!(s, "@WireTag(key = {}, value = {})", quote(key), quote(value));
    }
    if components.is_empty() {
        let _ = write!(s, "public record {name}(){implements} {{");
    } else {
        let _ = write!(s, "public record {name}(\n{}){implements} {{", components.join(",\n"));
    }
    match parent {
        Some((u, _, value)) => {
            let _ = write!(
                s,
                "\n    @Override\n    public String {}Kind() {{\n        return {};\n    }}\n}}\n",
                camel_type(u),
                quote(value)
            );
        }
        None => s.push_str("}\n"),
    }
    s
}

/// `SessionUpdate` → `sessionUpdate`.
fn camel_type(name: &str) -> String {
    let p = pascal(name);
    let mut c = p.chars();
    c.next().map(|f| f.to_lowercase().chain(c).collect()).unwrap_or_default()
}

fn union(def: &Def, u: &Union) -> String {
    let mut s = header();
    javadoc(&mut s, &def.doc, "", &[]);
    let permits: Vec<&str> = u.variants.iter().map(|v| v.name.as_str()).collect();
    let _ = writeln!(s, "@WireTag(key = {})", quote(&u.tag));
    let _ = writeln!(s, "public sealed interface {} permits {} {{", def.name, permits.join(", "));
    let _ = write!(
        s,
        "    /**\n     * The {} discriminator: which record this is.\n     *\n     * @return its wire value\n     */\n    String {}Kind();\n}}\n",
        u.tag,
        camel_type(&def.name)
    );
    s
}

fn errors(model: &Model) -> String {
    let mut s = header();
    s.push_str(
        "/** The core's error table: each kind's stable number and advice (the same in every language). */\n\
         public final class ErrorTable {\n\
         \x20   private ErrorTable() {}\n\n\
         \x20   /**\n     * One row of the table.\n     *\n     * @param kind the kind\n     * @param code its stable number\n     \
         * @param advice what the caller can do about it\n     * @param description what it means\n     */\n\
         \x20   public record Row(ErrorKind kind, int code, String advice, String description) {}\n\n\
         \x20   /** Every kind, in code order. */\n\
         \x20   public static final java.util.List<Row> ROWS = java.util.List.of(\n",
    );
    let rows: Vec<String> = model
        .errors
        .iter()
        .map(|e| {
            format!(
                "            new Row(\n                ErrorKind.{},\n                {},\n                {},\n                {})",
                screaming(&e.name),
                e.code,
                quote(&e.advice),
                quote(&e.doc)
            )
        })
        .collect();
    s.push_str(&rows.join(",\n"));
    s.push_str(
        ");\n\n\
         \x20   /**\n     * The row of a kind.\n     *\n     * @param kind the kind\n     * @return its row\n     */\n\
         \x20   public static Row of(ErrorKind kind) {\n        return ROWS.stream().filter(r -> r.kind() == kind).findFirst().orElseThrow();\n    }\n\n\
         \x20   /**\n     * The row with a stable number.\n     *\n     * @param code the number\n     \
         * @return its row, or null when no kind has it\n     */\n\
         \x20   public static Row ofCode(int code) {\n        return ROWS.stream().filter(r -> r.code() == code).findFirst().orElse(null);\n    }\n}\n",
    );
    s
}
