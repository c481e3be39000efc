//! Names and documentation text: the casing rules and doc formatting every emitter shares.

/// `step_index` → `stepIndex` (the core's `casing::camel_case` rule: drop `_`, upper-case the
/// next character); keys without `_` are unchanged.
pub fn camel(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `runId` → `run_id`; snake_case keys are unchanged.
pub fn snake(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The words of a name: split at `_`, `.`, `-`, spaces and lower→upper case changes.
pub fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if !c.is_ascii_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// `tool.preliminary_result` → `ToolPreliminaryResult`; `mimeType` → `MimeType`.
pub fn pascal(name: &str) -> String {
    words(name).iter().map(|w| capitalize(w)).collect()
}

/// `harness_not_found` → `HARNESS_NOT_FOUND`.
pub fn screaming(name: &str) -> String {
    words(name).iter().map(|w| w.to_ascii_uppercase()).collect::<Vec<_>>().join("_")
}

/// The first letter upper-cased.
pub fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A Rust doc comment as schemars recorded it, made language-neutral: rustdoc links
/// (`` [`X`](path) ``, `` [`X`] ``) become plain code spans, lines of a paragraph are joined
/// (list items and table rows keep their own line), paragraphs are separated by a blank line.
pub fn clean_doc(doc: &str) -> String {
    let unlinked = strip_links(doc);
    let mut paragraphs: Vec<String> = Vec::new();
    for para in unlinked.split("\n\n") {
        let mut text = String::new();
        for line in para.lines().map(str::trim) {
            let starts_item = line.starts_with("* ") || line.starts_with("- ") || line.starts_with('|');
            if !text.is_empty() {
                text.push(if starts_item { '\n' } else { ' ' });
            }
            text.push_str(line);
        }
        if !text.is_empty() {
            paragraphs.push(text);
        }
    }
    paragraphs.join("\n\n")
}

fn strip_links(doc: &str) -> String {
    let mut out = String::with_capacity(doc.len());
    let mut rest = doc;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find(']') else {
            out.push_str(&rest[open..]);
            return out;
        };
        let label = &after[..close];
        let tail = &after[close + 1..];
        if let Some(target) = tail.strip_prefix('(') {
            if let Some(end) = target.find(')') {
                out.push_str(label);
                rest = &target[end + 1..];
                continue;
            }
        }
        if label.starts_with('`') && label.ends_with('`') && label.len() > 1 {
            out.push_str(label); // an intra-doc link without a target
        } else {
            out.push('[');
            out.push_str(label);
            out.push(']');
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// `text` wrapped at `width` columns; paragraphs separated by an empty line, explicit line
/// breaks (list items) kept.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    for (i, para) in text.split("\n\n").enumerate() {
        if i > 0 {
            out.push(String::new());
        }
        for line in para.lines() {
            let mut cur = String::new();
            for word in line.split_whitespace() {
                if !cur.is_empty() && cur.len() + 1 + word.len() > width {
                    out.push(std::mem::take(&mut cur));
                }
                if !cur.is_empty() {
                    cur.push(' ');
                }
                cur.push_str(word);
            }
            out.push(cur);
        }
    }
    out
}

/// The first sentence-or-paragraph of a doc, on one line (for trailing comments).
pub fn first_paragraph(doc: &str) -> String {
    doc.split("\n\n").next().unwrap_or("").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casing() {
        assert_eq!(camel("step_index"), "stepIndex");
        assert_eq!(camel("sessionId"), "sessionId");
        assert_eq!(snake("runId"), "run_id");
        assert_eq!(pascal("tool.preliminary_result"), "ToolPreliminaryResult");
        assert_eq!(pascal("response.output_text.delta"), "ResponseOutputTextDelta");
        assert_eq!(pascal("mimeType"), "MimeType");
        assert_eq!(pascal("invalid_utf8_lines"), "InvalidUtf8Lines");
        assert_eq!(screaming("harness_not_found"), "HARNESS_NOT_FOUND");
    }

    #[test]
    fn docs() {
        assert_eq!(
            clean_doc("See [`CancelReason::code`](crate::stream::CancelReason::code):\n`caller` or [`Pressure`]."),
            "See `CancelReason::code`: `caller` or `Pressure`."
        );
        assert_eq!(clean_doc("a\nb\n\nc"), "a b\n\nc");
        assert_eq!(clean_doc("list:\n* one\n* two"), "list:\n* one\n* two");
        assert_eq!(wrap("aa bb cc", 5), ["aa bb", "cc"]);
        assert_eq!(wrap("a\n\nb", 80), ["a", "", "b"]);
    }
}
