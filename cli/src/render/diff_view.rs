//! The short, bounded view of a diff: the changed lines with one unchanged line of context
//! around them, the unchanged stretches between them as one gap mark, at most a number of
//! lines with a count of the rest.

use super::diff::Change;

/// Unchanged lines shown on each side of a change.
const CONTEXT: usize = 1;

/// One line of the view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewLine<'a> {
    /// A changed line, or an unchanged one next to a change.
    Line(Change<'a>),
    /// Unchanged lines left out between two shown ones.
    Gap,
}

/// What is shown of a diff.
#[derive(Debug, PartialEq, Eq)]
pub struct DiffView<'a> {
    /// At most the asked number of lines.
    pub lines: Vec<ViewLine<'a>>,
    /// Lines of the view left out after them.
    pub more: usize,
}

/// The view of `changes` in at most `max_lines` lines.
pub fn view<'a>(changes: &[Change<'a>], max_lines: usize) -> DiffView<'a> {
    let changed: Vec<usize> =
        changes.iter().enumerate().filter(|(_, c)| !matches!(c, Change::Same(_))).map(|(i, _)| i).collect();
    let near_change = |i: usize| {
        let at = changed.partition_point(|&c| c + CONTEXT < i);
        changed.get(at).is_some_and(|&c| c <= i + CONTEXT)
    };
    let mut all = Vec::new();
    let mut gap = false;
    for (i, change) in changes.iter().enumerate() {
        if near_change(i) {
            if gap && !all.is_empty() {
                all.push(ViewLine::Gap);
            }
            gap = false;
            all.push(ViewLine::Line(*change));
        } else {
            gap = true;
        }
    }
    let more = all.len().saturating_sub(max_lines);
    all.truncate(max_lines);
    DiffView { lines: all, more }
}

#[cfg(test)]
mod tests {
    use super::super::diff::{Change::*, line_diff};
    use super::ViewLine::*;
    use super::*;

    #[test]
    fn changes_come_with_one_line_of_context_and_gaps_between() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nB\nc\nd\ne\nf\nG\nh\n";
        let v = view(&line_diff(Some(old), new), 20);
        assert_eq!(
            v.lines,
            [
                Line(Same("a")),
                Line(Removed("b")),
                Line(Added("B")),
                Line(Same("c")),
                Gap,
                Line(Same("f")),
                Line(Removed("g")),
                Line(Added("G")),
                Line(Same("h")),
            ]
        );
        assert_eq!(v.more, 0);
    }

    #[test]
    fn the_view_is_bounded_and_counts_the_rest() {
        let new: String = (0..50).map(|i| format!("line {i}\n")).collect();
        let v = view(&line_diff(None, &new), 12);
        assert_eq!(v.lines.len(), 12);
        assert_eq!(v.more, 38);
        assert_eq!(v.lines[0], Line(Added("line 0")));
        assert_eq!(view(&line_diff(Some("same\n"), "same\n"), 12), DiffView { lines: vec![], more: 0 });
    }
}
