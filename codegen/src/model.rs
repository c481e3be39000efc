//! The schema document read into a small model of named types: what every emitter works from.
//!
//! It understands exactly the JSON Schema that `core/src/schema.rs` writes (schemars' output plus
//! the `Envelope` and `HookEvent` refinements and the `x-errors` table) and fails loudly on
//! anything else, so a new construct in the core is noticed here rather than mistranslated.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

use crate::text::{clean_doc, pascal};

/// Every named type of the document, in document order, and the error table.
#[derive(Debug)]
pub struct Model {
    /// The `$defs`, in document order.
    pub defs: Vec<Def>,
    /// The error table (`x-errors`), in code order.
    pub errors: Vec<ErrorRow>,
    /// The top-level wire types (the root object's properties), in document order.
    pub roots: Vec<String>,
}

/// One row of the error table.
#[derive(Debug)]
pub struct ErrorRow {
    /// The stable snake_case name (`harness_not_found`).
    pub name: String,
    /// The stable number (1001, …).
    pub code: u64,
    /// What the caller can do about it, one sentence.
    pub advice: String,
    /// What it means.
    pub doc: String,
}

/// A named type.
#[derive(Debug)]
pub struct Def {
    /// The schema's name for it (`OutputEvent`).
    pub name: String,
    /// Its documentation (paragraphs separated by blank lines).
    pub doc: String,
    /// What it is.
    pub shape: Shape,
}

/// The four kinds of named type.
#[derive(Debug)]
pub enum Shape {
    /// A set of strings.
    Enum(Vec<EnumValue>),
    /// An object with known properties.
    Struct(Struct),
    /// Objects of several kinds told apart by one property (`sessionUpdate`, `type`, …).
    Union(Union),
    /// An object with free keys whose values all have one type.
    Map(Ty),
}

/// One member of an enum.
#[derive(Debug)]
pub struct EnumValue {
    /// The string on the wire.
    pub value: String,
    /// What it means.
    pub doc: String,
}

/// An object with known properties.
#[derive(Debug)]
pub struct Struct {
    /// Its properties, in wire order.
    pub fields: Vec<Field>,
    /// A discriminated refinement of some of its properties, if any.
    pub refinement: Option<Refinement>,
}

/// A property.
#[derive(Debug, Clone)]
pub struct Field {
    /// The key on the wire.
    pub name: String,
    /// What it means.
    pub doc: String,
    /// Its type ([`Ty::Nullable`] when `null` is a value it takes).
    pub ty: Ty,
    /// Whether the key is always present.
    pub required: bool,
}

/// A struct whose `tag` property selects, per value, a constant or a narrower type for some of
/// its other properties (`Envelope`: `channel` → the type of `event`; `HookEvent`: `type` →
/// `status` and the type of `details`).
#[derive(Debug)]
pub struct Refinement {
    /// The discriminating property.
    pub tag: String,
    /// One arm per tag value.
    pub arms: Vec<Arm>,
}

/// One arm of a refinement.
#[derive(Debug)]
pub struct Arm {
    /// Its name (`ContentEnvelope`, `RunStartedEvent`).
    pub title: String,
    /// What it means.
    pub doc: String,
    /// Properties fixed to one value, the tag first.
    pub consts: Vec<(String, String)>,
    /// Properties given a narrower type.
    pub types: Vec<(String, Ty)>,
}

impl Arm {
    /// The tag's value in this arm.
    pub fn tag_value(&self) -> &str {
        &self.consts[0].1
    }

    /// The constant of `prop` in this arm, if it fixes one.
    pub fn const_of(&self, prop: &str) -> Option<&str> {
        self.consts.iter().find(|(k, _)| k == prop).map(|(_, v)| v.as_str())
    }

    /// The narrower type of `prop` in this arm, if it gives one.
    pub fn type_of(&self, prop: &str) -> Option<&Ty> {
        self.types.iter().find(|(k, _)| k == prop).map(|(_, t)| t)
    }
}

/// A tagged union.
#[derive(Debug)]
pub struct Union {
    /// The discriminating property (`sessionUpdate`).
    pub tag: String,
    /// Its kinds, in wire order.
    pub variants: Vec<Variant>,
}

/// One kind of a union.
#[derive(Debug)]
pub struct Variant {
    /// Its type name: the schema title, else the struct it refers to, else union + value.
    pub name: String,
    /// What it means.
    pub doc: String,
    /// The tag's value.
    pub value: String,
    /// Its properties other than the tag (those of the referenced struct included).
    pub fields: Vec<Field>,
    /// The struct definition it is made of, when it refers to one (`ToolCall`).
    pub reference: Option<String>,
}

/// The type of a property.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    /// A string.
    String,
    /// `true` / `false`.
    Bool,
    /// An integer of the given range.
    Int(Int),
    /// A floating-point number.
    Float,
    /// Any JSON value, kept verbatim.
    Any,
    /// A JSON object with free keys and values, kept verbatim.
    Object,
    /// A named type.
    Ref(String),
    /// A list.
    Array(Box<Ty>),
    /// An object with free keys, values of one type.
    Map(Box<Ty>),
    /// The type or `null`.
    Nullable(Box<Ty>),
    /// One of several types (no tag).
    AnyOf(Vec<Ty>),
}

/// Integer ranges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Int {
    /// 0 ..= 2^64-1.
    U64,
    /// Signed 64-bit.
    I64,
    /// Signed 32-bit.
    I32,
}

impl Ty {
    /// The named types it mentions.
    pub fn refs(&self, out: &mut Vec<String>) {
        match self {
            Ty::Ref(n) => out.push(n.clone()),
            Ty::Array(t) | Ty::Map(t) | Ty::Nullable(t) => t.refs(out),
            Ty::AnyOf(ts) => ts.iter().for_each(|t| t.refs(out)),
            _ => {}
        }
    }
}

impl Model {
    /// Read the schema document.
    pub fn from_schema(doc: &Value) -> Result<Model, String> {
        let defs = doc.get("$defs").and_then(Value::as_object).ok_or("the schema has no $defs")?;
        let mut out = Vec::new();
        for (name, node) in defs {
            out.push(parse_def(name, node).map_err(|e| format!("$defs/{name}: {e}"))?);
        }
        let mut errors = Vec::new();
        for row in doc.get("x-errors").and_then(Value::as_array).ok_or("the schema has no x-errors table")? {
            errors.push(ErrorRow {
                name: string(row, "name")?,
                code: row.get("code").and_then(Value::as_u64).ok_or("x-errors: a row without a code")?,
                advice: string(row, "advice")?,
                doc: clean_doc(row.get("description").and_then(Value::as_str).unwrap_or("")),
            });
        }
        let roots = doc
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(_, p)| ref_name(p))
            .collect();
        let mut model = Model { defs: out, errors, roots };
        resolve_variants(&mut model)?;
        model.check_refs()?;
        Ok(model)
    }

    /// The definition called `name`.
    pub fn def(&self, name: &str) -> &Def {
        self.defs.iter().find(|d| d.name == name).unwrap_or_else(|| panic!("no definition {name}"))
    }

    /// The enum whose members are exactly `values`, if there is one (a union tag typed by it).
    pub fn enum_with_values(&self, values: &[&str]) -> Option<&Def> {
        let want: BTreeSet<&str> = values.iter().copied().collect();
        self.defs.iter().find(|d| match &d.shape {
            Shape::Enum(members) => members.iter().map(|m| m.value.as_str()).collect::<BTreeSet<_>>() == want,
            _ => false,
        })
    }

    /// Struct definitions that are a variant of a union: name → (union, tag value).
    pub fn variant_structs(&self) -> HashMap<String, (String, String)> {
        let mut out = HashMap::new();
        for d in &self.defs {
            if let Shape::Union(u) = &d.shape {
                for v in &u.variants {
                    if let Some(r) = &v.reference {
                        out.insert(r.clone(), (d.name.clone(), v.value.clone()));
                    }
                }
            }
        }
        out
    }

    /// The named types `def` mentions directly; `arms`: also those of its refinement arms.
    pub fn deps(&self, def: &Def, arms: bool) -> Vec<String> {
        let mut out = Vec::new();
        match &def.shape {
            Shape::Enum(_) => {}
            Shape::Map(t) => t.refs(&mut out),
            Shape::Struct(s) => {
                s.fields.iter().for_each(|f| f.ty.refs(&mut out));
                if let (true, Some(r)) = (arms, &s.refinement) {
                    r.arms.iter().flat_map(|a| &a.types).for_each(|(_, t)| t.refs(&mut out));
                }
            }
            Shape::Union(u) => {
                for v in &u.variants {
                    out.extend(v.reference.iter().cloned());
                    v.fields.iter().for_each(|f| f.ty.refs(&mut out));
                }
            }
        }
        out
    }

    /// Every definition, each after the ones it mentions (document order otherwise): for
    /// languages that evaluate type declarations in order.
    pub fn in_dependency_order(&self) -> Vec<&Def> {
        fn visit<'a>(m: &'a Model, d: &'a Def, done: &mut BTreeSet<String>, out: &mut Vec<&'a Def>) {
            if !done.insert(d.name.clone()) {
                return;
            }
            for dep in m.deps(d, true) {
                visit(m, m.def(&dep), done, out);
            }
            out.push(d);
        }
        let mut done = BTreeSet::new();
        let mut out = Vec::new();
        for d in &self.defs {
            visit(self, d, &mut done, &mut out);
        }
        out
    }

    /// The definitions reachable from `roots`; `arms`: following refinement arms too.
    pub fn reachable(&self, roots: &[&str], arms: bool) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<String> = roots.iter().map(|s| s.to_string()).collect();
        while let Some(name) = todo.pop() {
            if seen.insert(name.clone()) {
                todo.extend(self.deps(self.def(&name), arms));
            }
        }
        seen
    }

    fn check_refs(&self) -> Result<(), String> {
        for d in &self.defs {
            for r in self.deps(d, true) {
                if !self.defs.iter().any(|x| x.name == r) {
                    return Err(format!("{} refers to {r}, which is not defined", d.name));
                }
            }
        }
        Ok(())
    }
}

fn string(node: &Value, key: &str) -> Result<String, String> {
    node.get(key).and_then(Value::as_str).map(str::to_string).ok_or_else(|| format!("no string {key:?} in {node}"))
}

fn doc_of(node: &Value) -> String {
    clean_doc(node.get("description").and_then(Value::as_str).unwrap_or(""))
}

fn ref_name(node: &Value) -> Option<String> {
    node.get("$ref").and_then(Value::as_str).map(|r| r.trim_start_matches("#/$defs/").to_string())
}

fn parse_def(name: &str, node: &Value) -> Result<Def, String> {
    let obj = node.as_object().ok_or("not an object")?;
    let doc = doc_of(node);
    let shape = if let Some(values) = string_enum(obj) {
        Shape::Enum(values)
    } else if obj.contains_key("properties") {
        Shape::Struct(parse_struct(obj)?)
    } else if let Some(arms) = obj.get("oneOf").and_then(Value::as_array) {
        Shape::Union(parse_union(name, arms)?)
    } else if obj.get("type").and_then(Value::as_str) == Some("object") {
        match obj.get("additionalProperties") {
            Some(v @ Value::Object(_)) => Shape::Map(parse_ty(v)?),
            _ => return Err("an object without properties or a value type".into()),
        }
    } else {
        return Err(format!("unsupported definition {node}"));
    };
    Ok(Def { name: name.to_string(), doc, shape })
}

/// `{"enum": [...]}` or `{"oneOf": [{"type": "string", "const": …}, …]}`.
fn string_enum(obj: &Map<String, Value>) -> Option<Vec<EnumValue>> {
    if let Some(Value::Array(values)) = obj.get("enum") {
        return values
            .iter()
            .map(|v| v.as_str().map(|s| EnumValue { value: s.to_string(), doc: String::new() }))
            .collect();
    }
    let arms = obj.get("oneOf")?.as_array()?;
    arms.iter()
        .map(|a| match (a.get("type").and_then(Value::as_str), a.get("const").and_then(Value::as_str)) {
            (Some("string"), Some(c)) => Some(EnumValue { value: c.to_string(), doc: doc_of(a) }),
            _ => None,
        })
        .collect()
}

fn parse_fields(obj: &Map<String, Value>, skip: Option<&str>) -> Result<Vec<Field>, String> {
    let required: Vec<&str> =
        obj.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let mut out = Vec::new();
    for (key, prop) in obj.get("properties").and_then(Value::as_object).into_iter().flatten() {
        if Some(key.as_str()) == skip {
            continue;
        }
        out.push(Field {
            name: key.clone(),
            doc: doc_of(prop),
            ty: parse_ty(prop).map_err(|e| format!("property {key}: {e}"))?,
            required: required.contains(&key.as_str()),
        });
    }
    Ok(out)
}

fn parse_struct(obj: &Map<String, Value>) -> Result<Struct, String> {
    let fields = parse_fields(obj, None)?;
    let refinement = match obj.get("oneOf").and_then(Value::as_array) {
        None => None,
        Some(arms) => {
            let mut parsed = Vec::new();
            for arm in arms {
                let title = arm.get("title").and_then(Value::as_str).ok_or("a refinement arm without a title")?;
                let mut consts = Vec::new();
                let mut types = Vec::new();
                for (key, prop) in
                    arm.get("properties").and_then(Value::as_object).ok_or("an arm without properties")?
                {
                    match prop.get("const").and_then(Value::as_str) {
                        Some(c) => consts.push((key.clone(), c.to_string())),
                        None => types.push((key.clone(), parse_ty(prop)?)),
                    }
                }
                if consts.is_empty() {
                    return Err(format!("refinement arm {title} fixes no tag"));
                }
                parsed.push(Arm { title: title.to_string(), doc: doc_of(arm), consts, types });
            }
            let tag = parsed[0].consts[0].0.clone();
            if parsed.iter().any(|a| a.consts[0].0 != tag) {
                return Err("refinement arms disagree on the tag".into());
            }
            Some(Refinement { tag, arms: parsed })
        }
    };
    Ok(Struct { fields, refinement })
}

fn parse_union(name: &str, arms: &[Value]) -> Result<Union, String> {
    let tag = arms
        .first()
        .and_then(|a| a.get("properties"))
        .and_then(Value::as_object)
        .and_then(|p| p.iter().find(|(_, v)| v.get("const").is_some()).map(|(k, _)| k.clone()))
        .ok_or("a union whose first arm has no constant property")?;
    let mut variants = Vec::new();
    for arm in arms {
        let obj = arm.as_object().ok_or("a union arm that is not an object")?;
        let value = arm["properties"][&tag]["const"]
            .as_str()
            .ok_or_else(|| format!("a union arm without a {tag} constant"))?
            .to_string();
        let reference = ref_name(arm);
        let mut fields = parse_fields(obj, Some(&tag))?;
        if reference.is_some() && !fields.is_empty() {
            return Err(format!("variant {value} both refers to a struct and has properties"));
        }
        let title = arm.get("title").and_then(Value::as_str).map(str::to_string);
        let name = title.or_else(|| reference.clone()).unwrap_or_else(|| format!("{name}{}", pascal(&value)));
        if reference.is_some() {
            fields = Vec::new(); // filled in by `resolve_variants`
        }
        variants.push(Variant { name, doc: doc_of(arm), value, fields, reference });
    }
    Ok(Union { tag, variants })
}

fn parse_ty(node: &Value) -> Result<Ty, String> {
    let obj = match node {
        Value::Bool(true) => return Ok(Ty::Any),
        Value::Object(o) => o,
        other => return Err(format!("unsupported schema {other}")),
    };
    if let Some(r) = ref_name(node) {
        return Ok(Ty::Ref(r));
    }
    if let Some(Value::Array(arms)) = obj.get("anyOf") {
        let mut tys = Vec::new();
        let mut nullable = false;
        for a in arms {
            if a.get("type").and_then(Value::as_str) == Some("null") {
                nullable = true;
            } else {
                tys.push(parse_ty(a)?);
            }
        }
        let inner = if tys.len() == 1 { tys.remove(0) } else { Ty::AnyOf(tys) };
        return Ok(if nullable { Ty::Nullable(Box::new(inner)) } else { inner });
    }
    let (kind, nullable) = match obj.get("type") {
        None => {
            let meaningful = obj.keys().any(|k| k != "description" && k != "title");
            return if meaningful { Err(format!("unsupported schema {node}")) } else { Ok(Ty::Any) };
        }
        Some(Value::String(s)) => (s.as_str(), false),
        Some(Value::Array(ts)) => {
            let names: Vec<&str> = ts.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect();
            match names.as_slice() {
                [one] => (*one, ts.len() == 2),
                _ => return Err(format!("unsupported type list {ts:?}")),
            }
        }
        Some(other) => return Err(format!("unsupported type {other}")),
    };
    let ty = match kind {
        "string" => Ty::String,
        "boolean" => Ty::Bool,
        "number" => Ty::Float,
        "integer" => Ty::Int(match obj.get("format").and_then(Value::as_str) {
            Some("uint64" | "uint" | "uint32" | "uint16" | "uint8") => Int::U64,
            Some("int32" | "int16" | "int8") => Int::I32,
            Some("int64" | "int") | None => Int::I64,
            Some(f) => return Err(format!("unsupported integer format {f}")),
        }),
        "array" => Ty::Array(Box::new(parse_ty(obj.get("items").ok_or("an array without items")?)?)),
        "object" => {
            if obj.contains_key("properties") {
                return Err("an unnamed object with properties (give it a name in the Rust types)".into());
            }
            match obj.get("additionalProperties") {
                None | Some(Value::Bool(true)) => Ty::Object,
                Some(v) => Ty::Map(Box::new(parse_ty(v)?)),
            }
        }
        other => return Err(format!("unsupported type {other}")),
    };
    Ok(if nullable { Ty::Nullable(Box::new(ty)) } else { ty })
}

/// Fill in the fields of variants that refer to a struct (done after every definition is read).
fn resolve_variants(model: &mut Model) -> Result<(), String> {
    let structs: HashMap<String, Vec<Field>> = model
        .defs
        .iter()
        .filter_map(|d| match &d.shape {
            Shape::Struct(s) => Some((d.name.clone(), s.fields.clone())),
            _ => None,
        })
        .collect();
    let docs: HashMap<String, String> = model.defs.iter().map(|d| (d.name.clone(), d.doc.clone())).collect();
    for d in &mut model.defs {
        if let Shape::Union(u) = &mut d.shape {
            for v in &mut u.variants {
                if let Some(r) = &v.reference {
                    v.fields = structs
                        .get(r)
                        .cloned()
                        .ok_or_else(|| format!("variant {} refers to {r}, not a struct", v.value))?;
                    if v.doc.is_empty() {
                        v.doc = docs.get(r).cloned().unwrap_or_default();
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn checked_in() -> Model {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/schema/events.schema.json");
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        Model::from_schema(&doc).unwrap()
    }

    #[test]
    fn reads_the_checked_in_schema() {
        let m = checked_in();
        let Shape::Union(u) = &m.def("SessionUpdate").shape else { panic!("SessionUpdate is a union") };
        assert_eq!(u.tag, "sessionUpdate");
        let names: Vec<&str> = u.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names[..4], ["AgentMessageChunk", "AgentThoughtChunk", "UserMessageChunk", "ToolCall"]);
        assert_eq!(u.variants[3].reference.as_deref(), Some("ToolCall"));
        assert!(!u.variants[3].fields.is_empty(), "a variant's fields come from the struct it refers to");
        let Shape::Struct(hook) = &m.def("HookEvent").shape else { panic!("HookEvent is a struct") };
        let r = hook.refinement.as_ref().expect("HookEvent is refined");
        assert_eq!(r.tag, "type");
        let completed = r.arms.iter().find(|a| a.tag_value() == "run.completed").unwrap();
        assert_eq!(completed.const_of("status"), Some("completed"));
        assert_eq!(completed.type_of("details"), Some(&Ty::Ref("RunCompletedDetails".into())));
        assert_eq!(m.errors.first().map(|e| (e.name.as_str(), e.code)), Some(("harness_not_found", 1001)));
        assert!(m.roots.contains(&"RunResult".to_string()));
        let order: Vec<&str> = m.in_dependency_order().iter().map(|d| d.name.as_str()).collect();
        let at = |n: &str| order.iter().position(|x| *x == n).unwrap();
        assert!(at("ContentBlock") < at("OutputEvent") && at("SessionUpdate") < at("OutputEvent"));
    }

    #[test]
    fn unsupported_constructs_fail_loudly() {
        let doc = |def: Value| json!({"$defs": {"X": def}, "x-errors": []});
        let inline = doc(json!({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {}}}}}));
        assert!(Model::from_schema(&inline).unwrap_err().contains("unnamed object"));
        let dangling = doc(json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/Nope"}}}));
        assert!(Model::from_schema(&dangling).unwrap_err().contains("Nope"));
        let format = doc(json!({"type": "object", "properties": {"a": {"type": "integer", "format": "int128"}}}));
        assert!(Model::from_schema(&format).unwrap_err().contains("int128"));
        assert!(Model::from_schema(&json!({"$defs": {}})).unwrap_err().contains("x-errors"));
    }
}
