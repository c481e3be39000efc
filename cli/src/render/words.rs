//! Counting in words: "1 line", "2 lines", "… 3 more lines".

/// `n` and the noun, singular for exactly one: `count(1, "line")` is `1 line`, `count(0,
/// "line")` is `0 lines`. Every noun counted in the human view takes a plain `-s` plural.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// The marker for lines left out of a bounded view: `… 1 more line`, `… 12 more lines`.
pub fn more_lines(n: usize) -> String {
    if n == 1 { "… 1 more line".to_string() } else { format!("… {n} more lines") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_everything_else_plural() {
        assert_eq!(count(0, "file"), "0 files");
        assert_eq!(count(1, "file"), "1 file");
        assert_eq!(count(2, "file"), "2 files");
        assert_eq!(more_lines(1), "… 1 more line");
        assert_eq!(more_lines(7), "… 7 more lines");
    }
}
