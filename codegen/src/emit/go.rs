//! Go: structs with `json` tags, string enums as typed constants, tagged unions
//! (`bindings/go/types_gen.go`), and the error table (`bindings/go/errors_gen.go`). Methods
//! (custom JSON encoding, accessors) stay hand-written in the package's other files.
//!
//! Conventions:
//! * exported names from the wire keys with Go initialisms (`toolCallId` → `ToolCallID`);
//! * a required field is a value; an optional one is `omitempty`, and a pointer when its zero
//!   value is meaningful: numbers and booleans always, strings and enums in the event types
//!   (reachable from [`EVENT_ROOTS`]: they re-encode exactly, so "" and absent stay apart) but
//!   not in records such as the run result (where "" means absent); nullable fields are pointers;
//! * a tagged union whose kinds share no property name with different types is ONE struct with
//!   the tag and every kind's fields (`ContentBlock`, `RunOutcome`); otherwise an interface with
//!   one struct per kind (`SessionUpdate`), a `<Union>Kind()` method and a constructor by tag;
//! * a union tag whose values are exactly an enum's is typed by that enum (`RunOutcome.State`);
//! * free JSON is `any` / `map[string]any`, a property of several untagged types
//!   `json.RawMessage`; refinements are not expressed (`Envelope.Event` stays raw).
//!
//! The output is gofmt-clean (alignment computed here), so the drift check needs no Go.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::{File, Language, banner};
use crate::model::{Def, EnumValue, Field, Int, Model, Shape, Ty, Union};
use crate::text::{capitalize, first_paragraph, words, wrap};

/// The Go language.
pub const LANGUAGE: Language = Language { name: "go", emit, owns: &[] };

const TYPES_PATH: &str = "bindings/go/types_gen.go";
const ERRORS_PATH: &str = "bindings/go/errors_gen.go";

/// Type names that differ from the schema's (the package's names before it was generated).
const RENAMES: &[(&str, &str)] = &[("HookEvent", "AgentEvent")];

/// Constant prefixes that differ from the type name (`ToolCallPending`, not
/// `ToolCallStatusPending`): the package's names before it was generated.
const CONST_PREFIXES: &[(&str, &str)] = &[
    ("ToolCallStatus", "ToolCall"),
    ("PlanEntryStatus", "PlanEntry"),
    ("PlanEntryPriority", "Priority"),
    ("LifecycleReason", "Reason"),
    ("HookStatus", "Hook"),
    ("RunState", "Run"),
];

/// Fields only the Go type has (not on the wire): `(type, declaration, doc)`.
const EXTRA_FIELDS: &[(&str, &str, &str)] = &[];

/// The event types: what they reach keeps "" apart from absent (pointers for optional strings).
const EVENT_ROOTS: &[&str] = &["OutputEvent", "LifecycleEvent", "Envelope", "HookEvent"];

/// Word → Go initialism.
const INITIALISMS: &[&str] = &["id", "uri", "url", "usd", "json", "utf8", "ms", "api", "http", "ui"];

const WIDTH: usize = 100;

fn type_name(schema_name: &str) -> String {
    RENAMES.iter().find(|(from, _)| *from == schema_name).map(|(_, to)| to.to_string()).unwrap_or(schema_name.into())
}

/// `toolCallId` → `ToolCallID`, `invalid_utf8_lines` → `InvalidUTF8Lines`.
pub fn go_name(key: &str) -> String {
    words(key)
        .iter()
        .map(|w| {
            let lower = w.to_ascii_lowercase();
            if INITIALISMS.contains(&lower.as_str()) { lower.to_ascii_uppercase() } else { capitalize(w) }
        })
        .collect()
}

fn emit(model: &Model) -> Vec<File> {
    let g = Gen::new(model);
    vec![File { path: TYPES_PATH.into(), text: g.types() }, File { path: ERRORS_PATH.into(), text: g.errors() }]
}

/// Lines of Go code; runs of lines split into cells are aligned like gofmt does (a comment
/// line, a blank line or an unsplit line ends a run).
#[derive(Default)]
struct Code {
    lines: Vec<Line>,
}

enum Line {
    Plain(String),
    Cells(String, Vec<String>),
}

impl Code {
    fn line(&mut self, s: impl Into<String>) {
        self.lines.push(Line::Plain(s.into()));
    }

    fn cells(&mut self, indent: &str, cells: Vec<String>) {
        self.lines.push(Line::Cells(indent.to_string(), cells));
    }

    fn comment(&mut self, indent: &str, doc: &str) {
        for l in wrap(doc, WIDTH - indent.len() * 4 - 3) {
            if l.is_empty() {
                self.line(format!("{indent}//"));
            } else {
                self.line(format!("{indent}// {l}"));
            }
        }
    }

    fn render(&self) -> String {
        let mut out = String::new();
        let mut i = 0;
        while i < self.lines.len() {
            match &self.lines[i] {
                Line::Plain(s) => {
                    out.push_str(s);
                    out.push('\n');
                    i += 1;
                }
                Line::Cells(..) => {
                    let start = i;
                    while i < self.lines.len() && matches!(self.lines[i], Line::Cells(..)) {
                        i += 1;
                    }
                    let run: Vec<(&String, &Vec<String>)> = self.lines[start..i]
                        .iter()
                        .filter_map(|l| match l {
                            Line::Cells(ind, c) => Some((ind, c)),
                            Line::Plain(_) => None,
                        })
                        .collect();
                    let columns = run.iter().map(|(_, c)| c.len()).max().unwrap_or(0);
                    let mut widths = vec![0; columns];
                    for (_, cells) in &run {
                        // A column is padded only where a later cell follows it.
                        for (k, c) in cells.iter().enumerate().take(cells.len().saturating_sub(1)) {
                            widths[k] = widths[k].max(c.chars().count());
                        }
                    }
                    for (indent, cells) in run {
                        out.push_str(indent);
                        for (k, c) in cells.iter().enumerate() {
                            out.push_str(c);
                            if k + 1 < cells.len() {
                                out.push_str(&" ".repeat(widths[k] - c.chars().count() + 1));
                            }
                        }
                        out.push('\n');
                    }
                }
            }
        }
        out
    }
}

/// How a union is declared in Go.
enum UnionStyle {
    /// One struct with every kind's fields.
    Flat,
    /// An interface, one struct per kind.
    Interface,
}

struct Gen<'m> {
    model: &'m Model,
    /// What the Go package declares (refinement arms are not followed: `details` is a map).
    emitted: BTreeSet<String>,
    /// Types whose optional strings and enums are pointers.
    events: BTreeSet<String>,
}

impl<'m> Gen<'m> {
    fn new(model: &'m Model) -> Self {
        let roots: Vec<&str> = model.roots.iter().map(String::as_str).collect();
        Gen { model, emitted: model.reachable(&roots, false), events: model.reachable(EVENT_ROOTS, false) }
    }

    fn style(&self, u: &Union) -> UnionStyle {
        let mut seen: Vec<(&str, &Ty)> = Vec::new();
        for v in &u.variants {
            for f in &v.fields {
                match seen.iter().find(|(n, _)| *n == f.name) {
                    Some((_, t)) if *t != &f.ty => return UnionStyle::Interface,
                    Some(_) => {}
                    None => seen.push((&f.name, &f.ty)),
                }
            }
        }
        UnionStyle::Flat
    }

    fn union_of(&self, name: &str) -> Option<&'m Union> {
        match &self.model.def(name).shape {
            Shape::Union(u) => Some(u),
            _ => None,
        }
    }

    /// The Go type of `t`, and whether its zero value is nil (no pointer needed to omit it).
    fn go_type(&self, t: &Ty) -> (String, bool) {
        match t {
            Ty::String => ("string".into(), false),
            Ty::Bool => ("bool".into(), false),
            Ty::Int(Int::U64) => ("uint64".into(), false),
            Ty::Int(Int::I64) => ("int64".into(), false),
            Ty::Int(Int::I32) => ("int".into(), false),
            Ty::Float => ("float64".into(), false),
            Ty::Any => ("any".into(), true),
            Ty::Object => ("map[string]any".into(), true),
            Ty::Array(t) => (format!("[]{}", self.go_type(t).0), true),
            Ty::Map(t) => (format!("map[string]{}", self.go_type(t).0), true),
            Ty::AnyOf(_) => ("json.RawMessage".into(), true),
            Ty::Nullable(t) => {
                let (inner, nil_able) = self.go_type(t);
                (if nil_able { inner } else { format!("*{inner}") }, true)
            }
            Ty::Ref(n) => match &self.model.def(n).shape {
                Shape::Map(v) => (format!("map[string]{}", self.go_type(v).0), true),
                Shape::Union(u) if matches!(self.style(u), UnionStyle::Interface) => (type_name(n), true),
                _ => (type_name(n), false),
            },
        }
    }

    fn is_scalar_text(&self, t: &Ty) -> bool {
        match t {
            Ty::String => true,
            Ty::Ref(n) => matches!(self.model.def(n).shape, Shape::Enum(_)),
            _ => false,
        }
    }

    /// `(type, omitempty)` of a field of `owner`; `flat`: a field of one kind of a flat union.
    fn field_type(&self, owner: &str, f: &Field, flat: bool) -> (String, bool) {
        let (base, nil_able) = self.go_type(&f.ty);
        if let Ty::Nullable(_) = f.ty {
            return (base, !f.required);
        }
        let present = f.required && !flat;
        if present {
            return (base, false);
        }
        if nil_able {
            return (base, true);
        }
        let value_ok = if f.required {
            // Required in its kind, absent in the others: "" / 0 is never a value of a kind.
            !matches!(f.ty, Ty::Ref(ref n) if matches!(self.model.def(n).shape, Shape::Struct(_) | Shape::Union(_)))
        } else {
            self.is_scalar_text(&f.ty) && !self.events.contains(owner)
        };
        if value_ok { (base, true) } else { (format!("*{base}"), true) }
    }

    fn struct_field(&self, code: &mut Code, owner: &str, f: &Field, flat: bool) {
        if !f.doc.is_empty() {
            code.comment("\t", &f.doc);
        }
        let (t, omit) = self.field_type(owner, f, flat);
        let tag = format!("`json:\"{}{}\"`", f.name, if omit { ",omitempty" } else { "" });
        code.cells("\t", vec![go_name(&f.name), t, tag]);
    }

    fn type_doc(&self, code: &mut Code, name: &str, doc: &str) {
        let first = doc.chars().next();
        let second = doc.chars().nth(1);
        let text = match (first, second) {
            (Some(c), Some(d)) if c.is_ascii_uppercase() && !d.is_ascii_uppercase() => {
                format!("{name} is {}{}", c.to_ascii_lowercase(), &doc[1..])
            }
            (Some(_), _) => format!("{name}: {doc}"),
            (None, _) => format!("{name} is a wire type of agentstream."),
        };
        code.comment("", &text);
    }

    fn types(&self) -> String {
        let mut code = Code::default();
        let variants = self.model.variant_structs();
        for def in &self.model.defs {
            if !self.emitted.contains(&def.name) {
                continue;
            }
            if let Some((union, _)) = variants.get(&def.name) {
                if matches!(self.style(self.union_of(union).expect("a union")), UnionStyle::Flat) {
                    continue; // merged into its union's struct
                }
            }
            match &def.shape {
                Shape::Map(_) => continue, // spelled out where used
                Shape::Enum(values) => self.enumeration(&mut code, def, values),
                Shape::Struct(s) => {
                    code.line("");
                    self.type_doc(&mut code, &type_name(&def.name), &def.doc);
                    code.line(format!("type {} struct {{", type_name(&def.name)));
                    for f in &s.fields {
                        self.struct_field(&mut code, &def.name, f, false);
                    }
                    for (owner, decl, doc) in EXTRA_FIELDS {
                        if *owner == def.name {
                            let go_field = decl.split(' ').next().unwrap_or_default();
                            assert!(
                                !s.fields.iter().any(|f| go_name(&f.name) == go_field),
                                "the Go-only field {owner}.{go_field} now collides with a wire field of the same \
                                 name: rename or drop it in EXTRA_FIELDS (codegen/src/emit/go.rs)"
                            );
                            code.comment("\t", doc);
                            let (name, rest) = decl.split_once(' ').expect("name type tag");
                            let (ty, tag) = rest.split_once(' ').expect("type tag");
                            code.cells("\t", vec![name.into(), ty.into(), tag.into()]);
                        }
                    }
                    code.line("}");
                }
                Shape::Union(u) => match self.style(u) {
                    UnionStyle::Flat => self.flat_union(&mut code, def, u),
                    UnionStyle::Interface => self.interface_union(&mut code, def, u),
                },
            }
        }
        let body = code.render();
        let mut text = banner("//");
        text.push('\n');
        text.push_str("package agentstream\n");
        if body.contains("json.RawMessage") {
            text.push_str("\nimport \"encoding/json\"\n");
        }
        text.push_str(&body);
        text
    }

    fn const_prefix(&self, def: &Def) -> String {
        CONST_PREFIXES.iter().find(|(n, _)| *n == def.name).map(|(_, p)| p.to_string()).unwrap_or(type_name(&def.name))
    }

    fn enumeration(&self, code: &mut Code, def: &Def, values: &[EnumValue]) {
        let name = type_name(&def.name);
        let prefix = self.const_prefix(def);
        code.line("");
        self.type_doc(code, &name, &def.doc);
        code.line(format!("type {name} string"));
        code.line("");
        code.line(format!("// The {name} values."));
        code.line("const (");
        for v in values {
            let c = format!("{prefix}{}", go_name(&v.value));
            if !v.doc.is_empty() {
                code.comment("\t", &format!("{c}: {}", first_paragraph(&v.doc)));
            }
            code.cells("\t", vec![c, name.clone(), format!("= \"{}\"", v.value)]);
        }
        code.line(")");
        code.line("");
        code.line(format!("// {name}Values returns every {name}, in schema order."));
        code.line(format!("func {name}Values() []{name} {{"));
        let all: Vec<String> = values.iter().map(|v| format!("{prefix}{}", go_name(&v.value))).collect();
        let one_line = format!("\treturn []{name}{{{}}}", all.join(", "));
        if one_line.len() <= WIDTH {
            code.line(one_line);
        } else {
            code.line(format!("\treturn []{name}{{"));
            for c in all {
                code.line(format!("\t\t{c},"));
            }
            code.line("\t}");
        }
        code.line("}");
    }

    fn flat_union(&self, code: &mut Code, def: &Def, u: &Union) {
        let name = type_name(&def.name);
        let values: Vec<&str> = u.variants.iter().map(|v| v.value.as_str()).collect();
        let tag_type = self.model.enum_with_values(&values).map(|e| type_name(&e.name)).unwrap_or("string".into());
        let mut doc = def.doc.clone();
        let kinds: Vec<String> = u.variants.iter().map(|v| format!("{:?}", v.value)).collect();
        let _ = write!(
            doc,
            "\n\n{} is {}; the other fields are those of that kind (the rest stay empty).",
            go_name(&u.tag),
            kinds.join(", ")
        );
        code.line("");
        self.type_doc(code, &name, &doc);
        code.line(format!("type {name} struct {{"));
        code.cells("\t", vec![go_name(&u.tag), tag_type, format!("`json:\"{}\"`", u.tag)]);
        let mut done: Vec<&str> = Vec::new();
        for v in &u.variants {
            for f in &v.fields {
                if !done.contains(&f.name.as_str()) {
                    done.push(&f.name);
                    let mut f = f.clone();
                    let doc = if f.doc.is_empty() { String::new() } else { format!("{} ", f.doc) };
                    f.doc = format!("{doc}({} {:?})", go_name(&u.tag), v.value);
                    self.struct_field(code, &def.name, &f, true);
                }
            }
        }
        code.line("}");
    }

    fn interface_union(&self, code: &mut Code, def: &Def, u: &Union) {
        let name = type_name(&def.name);
        let kind_method = format!("{name}Kind");
        let marker = format!("is{name}");
        let members: Vec<String> = u.variants.iter().map(|v| format!("*{}", v.name)).collect();
        code.line("");
        let doc = format!(
            "{}\n\nA value is one of {}; tell them apart with a type switch ({kind_method} gives the {:?} value).",
            def.doc,
            members.join(", "),
            u.tag
        );
        self.type_doc(code, &name, &doc);
        code.line(format!("type {name} interface {{"));
        code.line(format!("\t// {kind_method} is the {:?} discriminator, e.g. {:?}.", u.tag, u.variants[0].value));
        code.line(format!("\t{kind_method}() string"));
        code.line(format!("\t{marker}()"));
        code.line("}");
        for v in u.variants.iter().filter(|v| v.reference.is_none()) {
            code.line("");
            self.type_doc(code, &v.name, &v.doc);
            code.line(format!("type {} struct {{", v.name));
            for f in &v.fields {
                self.struct_field(code, &v.name, f, false);
            }
            code.line("}");
        }
        code.line("");
        for v in &u.variants {
            code.cells(
                "",
                vec![format!("func (*{}) {kind_method}() string", v.name), format!("{{ return {:?} }}", v.value)],
            );
        }
        code.line("");
        for v in &u.variants {
            code.cells("", vec![format!("func (*{}) {marker}()", v.name), "{}".into()]);
        }
        code.line("");
        let ctor = format!("new{name}");
        code.comment(
            "",
            &format!(
                "{ctor} is an empty {name} of kind `kind` (nil for a kind this package does not know); \
                 exactNumbers says whether it holds free JSON whose numbers must stay exact (decode it with \
                 json.Number)."
            ),
        );
        code.line(format!("func {ctor}(kind string) (update {name}, exactNumbers bool) {{"));
        code.line("\tswitch kind {");
        for v in &u.variants {
            code.line(format!("\tcase {:?}:", v.value));
            code.line(format!("\t\treturn new({}), {}", v.name, self.holds_free_json(&v.fields, &mut Vec::new())));
        }
        code.line("\t}");
        code.line("\treturn nil, false");
        code.line("}");
    }

    fn holds_free_json(&self, fields: &[Field], seen: &mut Vec<String>) -> bool {
        fields.iter().any(|f| self.ty_holds_free_json(&f.ty, seen))
    }

    fn ty_holds_free_json(&self, t: &Ty, seen: &mut Vec<String>) -> bool {
        match t {
            Ty::Any | Ty::Object => true,
            Ty::Array(t) | Ty::Map(t) | Ty::Nullable(t) => self.ty_holds_free_json(t, seen),
            Ty::AnyOf(ts) => ts.iter().any(|t| self.ty_holds_free_json(t, seen)),
            Ty::Ref(n) => {
                if seen.contains(n) {
                    return false;
                }
                seen.push(n.clone());
                match &self.model.def(n).shape {
                    Shape::Struct(s) => self.holds_free_json(&s.fields, seen),
                    Shape::Union(u) => u.variants.iter().any(|v| self.holds_free_json(&v.fields, seen)),
                    Shape::Map(t) => self.ty_holds_free_json(t, seen),
                    Shape::Enum(_) => false,
                }
            }
            _ => false,
        }
    }

    fn errors(&self) -> String {
        let mut code = Code::default();
        code.line("");
        code.comment("", "Code is the kind's stable number in the core's error table (1001, …): the same in every language. 0 for a kind this package does not know.");
        code.line("func (k ErrorKind) Code() int {");
        code.line("\tswitch k {");
        let kind_const = |name: &str| format!("ErrorKind{}", go_name(name));
        for e in &self.model.errors {
            code.line(format!("\tcase {}:", kind_const(&e.name)));
            code.line(format!("\t\treturn {}", e.code));
        }
        code.line("\t}");
        code.line("\treturn 0");
        code.line("}");
        code.line("");
        code.comment("", "Advice is what the caller can do about an error of this kind, in one sentence.");
        code.line("func (k ErrorKind) Advice() string {");
        code.line("\tswitch k {");
        for e in &self.model.errors {
            code.line(format!("\tcase {}:", kind_const(&e.name)));
            code.line(format!("\t\treturn {}", serde_json::to_string(&e.advice).expect("a string serializes")));
        }
        code.line("\t}");
        code.line("\treturn \"\"");
        code.line("}");
        code.line("");
        code.comment("", "ErrorKindOfCode is the kind with the stable number `code`, if any.");
        code.line("func ErrorKindOfCode(code int) (ErrorKind, bool) {");
        code.line("\tfor _, k := range ErrorKindValues() {");
        code.line("\t\tif k.Code() == code {");
        code.line("\t\t\treturn k, true");
        code.line("\t\t}");
        code.line("\t}");
        code.line("\treturn \"\", false");
        code.line("}");
        let mut text = banner("//");
        text.push_str("\npackage agentstream\n");
        text.push_str(&code.render());
        text
    }
}
