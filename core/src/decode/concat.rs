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

/// A count written in decimal on the stack, for [`cat`].
pub(crate) struct Decimal {
    digits: [u8; 20],
    start: usize,
}

impl Decimal {
    pub fn new(mut n: u64) -> Decimal {
        let mut digits = [b'0'; 20];
        let mut start = digits.len();
        loop {
            start -= 1;
            digits[start] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                return Decimal { digits, start };
            }
        }
    }

    pub fn as_str(&self) -> &str {
        // Only ASCII digits were written.
        std::str::from_utf8(&self.digits[self.start..]).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_read_as_display_writes_them() {
        for n in [0, 7, 10, 99, 1234567, u64::MAX] {
            assert_eq!(Decimal::new(n).as_str(), n.to_string());
        }
    }

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
