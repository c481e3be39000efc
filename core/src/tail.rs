//! The end of a text that arrives in pieces, bounded: what the decoder searches stderr for a
//! session id in, and what the runner quotes a failed exit's last stderr line from.

/// Drop all but the last `max` bytes of `tail` (or a few fewer: the cut moves forward to a
/// character boundary, so `tail` stays valid UTF-8).
pub(crate) fn keep_last(tail: &mut String, max: usize) {
    if tail.len() > max {
        let cut = crate::char_boundary::ceil(tail, tail.len() - max);
        tail.drain(..cut);
    }
}

#[cfg(test)]
mod tests {
    use super::keep_last;

    #[test]
    fn only_the_last_bytes_are_kept_at_a_character_boundary() {
        let mut tail = String::from("abcdef");
        keep_last(&mut tail, 4);
        assert_eq!(tail, "cdef");
        keep_last(&mut tail, 4);
        assert_eq!(tail, "cdef", "within the bound: unchanged");
        // "é" is two bytes: a cut inside it moves past it.
        let mut tail = String::from("xéyz");
        keep_last(&mut tail, 3);
        assert_eq!(tail, "yz");
        let mut tail = String::from("éé");
        keep_last(&mut tail, 3);
        assert_eq!(tail, "é");
        keep_last(&mut tail, 0);
        assert_eq!(tail, "");
    }
}
