//! ANSI styling of the human view.

/// ANSI styling, off when the output is not a terminal or `NO_COLOR` is set.
#[derive(Clone, Copy)]
pub struct Style {
    on: bool,
}

impl Style {
    /// Colour when `tty` and `NO_COLOR` is unset.
    pub fn detect(tty: bool) -> Self {
        Style { on: tty && std::env::var_os("NO_COLOR").is_none() }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.on { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_string() }
    }
    pub(super) fn dim(&self, t: &str) -> String {
        self.paint("2", t)
    }
    pub(super) fn bold(&self, t: &str) -> String {
        self.paint("1", t)
    }
    pub(super) fn red(&self, t: &str) -> String {
        self.paint("31", t)
    }
    pub(super) fn green(&self, t: &str) -> String {
        self.paint("32", t)
    }
    pub(super) fn yellow(&self, t: &str) -> String {
        self.paint("33", t)
    }
    pub(super) fn cyan(&self, t: &str) -> String {
        self.paint("36", t)
    }
}
