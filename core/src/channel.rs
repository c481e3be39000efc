//! The four delivery channels of a run and the one rule for naming them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A channel a handler can subscribe to with `on(name, handler)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    /// Parsed ACP-style events (`OutputEvent`).
    Content,
    /// Sandbox and agent state transitions (`LifecycleEvent`).
    Lifecycle,
    /// Raw harness stdout, one line as printed per delivery.
    Stdout,
    /// Raw harness stderr, text as received.
    Stderr,
}

impl Channel {
    /// All four, in documentation order.
    pub const ALL: [Channel; 4] = [Channel::Content, Channel::Lifecycle, Channel::Stdout, Channel::Stderr];

    /// The name used by `on(...)` in every language.
    pub fn name(self) -> &'static str {
        match self {
            Channel::Content => "content",
            Channel::Lifecycle => "lifecycle",
            Channel::Stdout => "stdout",
            Channel::Stderr => "stderr",
        }
    }
}

impl fmt::Display for Channel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A channel name that is not one of the four. Its message lists them (decisions.md §7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownChannel(pub String);

impl fmt::Display for UnknownChannel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown event name {:?}: on() supports only \"content\", \"lifecycle\", \"stdout\" and \"stderr\"",
            self.0
        )
    }
}

impl std::error::Error for UnknownChannel {}

impl FromStr for Channel {
    type Err = UnknownChannel;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Channel::ALL.into_iter().find(|c| c.name() == s).ok_or_else(|| UnknownChannel(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_four_names_and_the_error_lists_them() {
        for c in Channel::ALL {
            assert_eq!(c.name().parse::<Channel>().unwrap(), c);
        }
        let e = "message".parse::<Channel>().unwrap_err().to_string();
        for c in Channel::ALL {
            assert!(e.contains(c.name()), "{e}");
        }
        assert!("Content".parse::<Channel>().is_err(), "names are exact");
    }
}
