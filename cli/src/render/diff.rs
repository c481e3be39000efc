//! A line diff of an edit's old and new text, for the human view.
//!
//! Lines common to both ends are matched first; the changed middle is aligned by a longest
//! common subsequence when it is small enough ([`MAX_ALIGNED_CELLS`]), otherwise shown as the
//! old lines removed and the new ones added. Work and memory stay bounded whatever the sizes.

/// One line of a diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change<'a> {
    /// In both texts.
    Same(&'a str),
    /// Only in the old text.
    Removed(&'a str),
    /// Only in the new text.
    Added(&'a str),
}

/// Largest old × new line grid aligned line by line (a few MiB of work at most).
const MAX_ALIGNED_CELLS: usize = 1 << 20;

/// The changes from `old` to `new`, line by line, in order. `None` is a file created.
pub fn line_diff<'a>(old: Option<&'a str>, new: &'a str) -> Vec<Change<'a>> {
    let old: Vec<&str> = old.map(|t| t.lines().collect()).unwrap_or_default();
    let new: Vec<&str> = new.lines().collect();
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..].iter().rev().zip(new[prefix..].iter().rev()).take_while(|(a, b)| a == b).count();
    let (old_mid, new_mid) = (&old[prefix..old.len() - suffix], &new[prefix..new.len() - suffix]);
    let mut changes: Vec<Change> = old[..prefix].iter().map(|l| Change::Same(l)).collect();
    if old_mid.len().saturating_mul(new_mid.len()) <= MAX_ALIGNED_CELLS {
        aligned(old_mid, new_mid, &mut changes);
    } else {
        changes.extend(old_mid.iter().map(|l| Change::Removed(l)));
        changes.extend(new_mid.iter().map(|l| Change::Added(l)));
    }
    changes.extend(old[old.len() - suffix..].iter().map(|l| Change::Same(l)));
    changes
}

/// Align by a longest common subsequence (dynamic programming over the grid).
fn aligned<'a>(old: &[&'a str], new: &[&'a str], out: &mut Vec<Change<'a>>) {
    let (n, m) = (old.len(), new.len());
    // lcs[i][j]: the longest common subsequence of old[i..] and new[j..].
    let mut lcs = vec![0u32; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[at(i, j)] =
                if old[i] == new[j] { lcs[at(i + 1, j + 1)] + 1 } else { lcs[at(i + 1, j)].max(lcs[at(i, j + 1)]) };
        }
    }
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && old[i] == new[j] {
            out.push(Change::Same(old[i]));
            (i, j) = (i + 1, j + 1);
        } else if i < n && (j == m || lcs[at(i + 1, j)] >= lcs[at(i, j + 1)]) {
            out.push(Change::Removed(old[i]));
            i += 1;
        } else {
            out.push(Change::Added(new[j]));
            j += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Change::*;
    use super::*;

    #[test]
    fn a_replaced_line_is_removed_then_added() {
        let d = line_diff(Some("def greet(name):\n    return 1\n\nx\n"), "def greet(name):\n    return 2\n\nx\n");
        assert_eq!(d, [Same("def greet(name):"), Removed("    return 1"), Added("    return 2"), Same(""), Same("x")]);
    }

    #[test]
    fn a_new_file_is_all_added_and_inserts_keep_their_place() {
        assert_eq!(line_diff(None, "a\nb\n"), [Added("a"), Added("b")]);
        assert_eq!(line_diff(Some("a\nc"), "a\nb\nc"), [Same("a"), Added("b"), Same("c")]);
        assert_eq!(
            line_diff(Some("a\nb\nc"), "c\nb\na"),
            [Removed("a"), Removed("b"), Same("c"), Added("b"), Added("a")]
        );
        assert_eq!(line_diff(Some(""), ""), []);
    }

    #[test]
    fn huge_edits_are_not_aligned_but_still_complete() {
        let old: String = (0..2000).map(|i| format!("old {i}\n")).collect();
        let new: String = (0..2000).map(|i| format!("new {i}\n")).collect();
        let d = line_diff(Some(&old), &new);
        assert_eq!(d.len(), 4000);
        assert_eq!((d[0], d[2000]), (Removed("old 0"), Added("new 0")));
    }
}
