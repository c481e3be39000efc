//! Cutting UTF-8 text at a byte bound without splitting a character. Every bounded text of the
//! project cuts here: answers, titles, held deltas, stderr tails, messages copied into a
//! caller's buffer. (`str::floor_char_boundary` does the same but is newer than the MSRV.)

/// The largest character boundary of `text` at or before `index`; `text.len()` when `index`
/// is past the end.
pub fn floor(text: &str, index: usize) -> usize {
    if index >= text.len() {
        return text.len();
    }
    // A character is at most 4 bytes: at most 3 steps back.
    let mut at = index;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest character boundary of `text` at or after `index`; `text.len()` when `index`
/// is past the end.
pub fn ceil(text: &str, index: usize) -> usize {
    if index >= text.len() {
        return text.len();
    }
    let mut at = index;
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// The longest prefix of `text` that is at most `max` bytes.
pub fn prefix(text: &str, max: usize) -> &str {
    &text[..floor(text, max)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_inside_a_character_moves_to_its_edge() {
        // "é" is 2 bytes, "€" 3, "😀" 4: a cut inside each.
        let text = "aé€😀z";
        let boundaries: Vec<usize> = (0..=text.len()).filter(|&i| text.is_char_boundary(i)).collect();
        assert_eq!(boundaries, [0, 1, 3, 6, 10, 11]);
        for index in 0..=text.len() + 2 {
            let down = floor(text, index);
            let up = ceil(text, index);
            assert!(text.is_char_boundary(down) && text.is_char_boundary(up), "{index}");
            let expected_down = boundaries.iter().copied().filter(|&b| b <= index).max().unwrap();
            let expected_up = boundaries.iter().copied().find(|&b| b >= index).unwrap_or(text.len());
            assert_eq!((down, up), (expected_down, expected_up), "{index}");
            assert_eq!(prefix(text, index), &text[..expected_down]);
        }
    }

    #[test]
    fn an_empty_text_has_one_boundary() {
        assert_eq!((floor("", 0), floor("", 5), ceil("", 3)), (0, 0, 0));
        assert_eq!(prefix("", 9), "");
    }
}
