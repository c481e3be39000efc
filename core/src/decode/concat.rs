//! Strings built in one allocation (tool-call titles above all): `format!` costs several times
//! more, and most tool calls get a title built from their arguments.

/// `parts` joined into a string of exactly their size (`format!` costs several times more).
pub fn cat(parts: &[&str]) -> String {
    let mut out = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for part in parts {
        out.push_str(part);
    }
    out
}

/// `prefix`, then `text` cut at `max` characters (`…` appended when cut, as
/// `tools::truncate_chars`), then `suffix`: a title in one allocation.
pub(crate) fn title(prefix: &str, text: &str, max: usize, suffix: &str) -> String {
    // A text of at most `max` bytes has at most `max` characters: nothing to count.
    let cut = if text.len() <= max { None } else { text.char_indices().nth(max).map(|(i, _)| i) };
    let body = cut.map_or(text, |i| &text[..i]);
    let mut title = String::with_capacity(prefix.len() + body.len() + 3 + suffix.len());
    title.push_str(prefix);
    title.push_str(body);
    if cut.is_some() {
        title.push('…');
    }
    title.push_str(suffix);
    title
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_cut_like_truncate_chars() {
        use crate::tools::truncate_chars;
        for (text, max) in
            [("short", 10), ("exactly10!", 10), ("éééééééééééé", 10), ("x".repeat(60).as_str(), 50), ("", 3)]
        {
            assert_eq!(title("Fetch: ", text, max, "\""), format!("Fetch: {}\"", truncate_chars(text, max)));
        }
    }
}
