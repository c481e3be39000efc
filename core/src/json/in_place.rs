//! Reading a line with serde straight into a struct the caller holds, and the bookkeeping of
//! the hand-written visitors that do it.
//!
//! serde's derive builds a struct and returns it by value through every layer (one copy each);
//! a large line struct filled in place through a seed (`parse_line_seed`, kept for the tests that
//! compare a one-pass reader with serde) is never moved. A
//! hand-written reader must still decide what the derive decided: a key printed twice makes the
//! line unusable ([`SeenKeys`]).
//!
//! `InPlace` / `read_in_place!` generate such a visitor from a field list. No decoder reads lines
//! with them any more (droid's one-pass [`super::scan::Scan`] does); droid's property test keeps
//! them as the serde reading its scan must agree with, so they are compiled for tests only.

use std::borrow::Cow;

#[cfg(test)]
use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess};

#[cfg(test)]
use super::Unusable;
#[cfg(test)]
use super::lenient::classify_failure;

/// Like `json::parse_line`, with a seed (so a decoder can fill its per-line state in place
/// instead of moving a large struct out of the parser): only objects are accepted, and on
/// failure the line is classified.
#[cfg(test)]
pub(crate) fn parse_line_seed<'a, S: DeserializeSeed<'a>>(line: &'a str, seed: S) -> Result<S::Value, Unusable> {
    if !line.trim_start().starts_with('{') {
        return Err(classify_failure(line));
    }
    let mut de = serde_json::Deserializer::from_str(line);
    match seed.deserialize(&mut de).and_then(|v| de.end().map(|()| v)) {
        Ok(v) => Ok(v),
        Err(_) => Err(classify_failure(line)),
    }
}

/// Reads a line's object straight into a struct the caller holds (`Line::default()` on its stack):
/// a large line struct is then never moved (serde's derive builds the struct and returns it by
/// value through every layer, one copy each). `read_in_place!` implements it for a struct with
/// `Default`: every listed field is read by its reader (`opt_str`: a string or `None` for anything
/// else, as [`super::lenient::opt_string`]; `value`: the field type's own `Deserialize`); unknown keys
/// are skipped; a key printed twice is an error, as with serde's derive.
#[cfg(test)]
pub struct InPlace<'p, T>(pub &'p mut T);

/// Parse `line` into `place` (see [`InPlace`]), as [`super::lenient::parse_line`] would parse it.
#[cfg(test)]
pub fn parse_line_into<'a, T>(line: &'a str, place: &mut T) -> Result<(), Unusable>
where
    for<'p> InPlace<'p, T>: DeserializeSeed<'a, Value = ()>,
{
    parse_line_seed(line, InPlace(place))
}

/// Reader of a lenient string field (see [`InPlace`]).
#[cfg(test)]
pub fn opt_str<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<Cow<'de, str>>, A::Error> {
    struct S<'a>(Option<Cow<'a, str>>);
    impl<'de: 'a, 'a> Deserialize<'de> for S<'a> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            super::lenient::opt_string::deserialize(d).map(S)
        }
    }
    map.next_value::<S<'de>>().map(|s| s.0)
}

/// Reader of a field kept as its text, `null` being absent (see [`InPlace`]).
#[cfg(test)]
pub fn raw_field<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<&'de str>, A::Error> {
    use serde_json::value::RawValue;
    map.next_value::<Option<&'de RawValue>>().map(|r| r.map(RawValue::get))
}

/// Reader of a field by its type's own `Deserialize` (see [`InPlace`]).
#[cfg(test)]
pub fn value<'de, T: Deserialize<'de>, A: MapAccess<'de>>(map: &mut A) -> Result<T, A::Error> {
    map.next_value()
}

/// See [`InPlace`]: `read_in_place!(Line { field: "key" => reader, ... });`
#[cfg(test)]
macro_rules! read_in_place {
    ($name:ident { $($field:ident : $key:literal => $reader:path),* $(,)? }) => {
        impl<'p, 'de: 'a, 'a> serde::de::DeserializeSeed<'de> for $crate::json::in_place::InPlace<'p, $name<'a>> {
            type Value = ();
            fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
                struct V<'p, 'a>(&'p mut $name<'a>);
                const KEYS: &[&str] = &[$($key),*];
                impl<'p, 'de: 'a, 'a> serde::de::Visitor<'de> for V<'p, 'a> {
                    type Value = ();
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(concat!("struct ", stringify!($name)))
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
                        let mut seen = [false; KEYS.len()];
                        while let Some(key) = map.next_key::<$crate::json::borrowed::CowStr<'de>>()? {
                            match key.0.as_ref() {
                                $($key => {
                                    const AT: usize = $crate::json::scan::key_index(KEYS, $key);
                                    if seen[AT] {
                                        return Err(<A::Error as serde::de::Error>::duplicate_field($key));
                                    }
                                    seen[AT] = true;
                                    self.0.$field = $reader(&mut map)?;
                                })*
                                _ => {
                                    map.next_value::<serde::de::IgnoredAny>()?;
                                }
                            }
                        }
                        Ok(())
                    }
                }
                d.deserialize_struct(stringify!($name), KEYS, V(self.0))
            }
        }

        impl<'de: 'a, 'a> serde::Deserialize<'de> for $name<'a> {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                use serde::de::DeserializeSeed;
                let mut out = $name::default();
                $crate::json::in_place::InPlace(&mut out).deserialize(d)?;
                Ok(out)
            }
        }
    };
}
#[cfg(test)]
pub(crate) use read_in_place;

/// The text of a key borrowed from the line, `None` when it had escapes (see [`SeenKeys::other`]).
pub(crate) fn key_text<'a>(key: &Cow<'a, str>) -> Option<&'a str> {
    match key {
        Cow::Borrowed(k) => Some(k),
        Cow::Owned(_) => None,
    }
}

/// Which keys of an object were seen, to notice a key printed twice: known keys by index in a
/// bit set, other keys by their (borrowed) text. A key that cannot be tracked counts as a
/// duplicate: callers then take their exact (slow) path.
///
/// (No `dup` flag updated in `known`: rustc 1.95.0 miscompiles `self.flag |= seen; seen` once
/// inlined twice (MIR reads an unset local), so the verdict is computed at the end instead.)
pub(crate) struct SeenKeys<'a> {
    known: u64,
    hits: u32,
    others: [&'a str; 8],
    n_others: usize,
    /// Other keys past the eighth (allocated only then).
    more: Vec<&'a str>,
    untracked: bool,
}

impl<'a> SeenKeys<'a> {
    pub(crate) fn new() -> Self {
        SeenKeys { known: 0, hits: 0, others: [""; 8], n_others: 0, more: Vec::new(), untracked: false }
    }

    /// A known key, by its index (< 64). True when it was seen before.
    #[inline]
    pub(crate) fn known(&mut self, index: u32) -> bool {
        let bit = 1u64 << index;
        let seen = self.known & bit != 0;
        self.known |= bit;
        self.hits += 1;
        seen
    }

    /// Any other key: its text when borrowed from the line (`None`: it cannot be tracked).
    #[inline]
    pub(crate) fn other(&mut self, key: Option<&'a str>) {
        match key {
            Some(k) if self.n_others < self.others.len() => {
                self.others[self.n_others] = k;
                self.n_others += 1;
            }
            Some(k) => self.more.push(k),
            None => self.untracked = true,
        }
    }

    /// True when some key was printed twice (or could not be tracked).
    pub(crate) fn dup(&self) -> bool {
        if self.untracked || self.hits != self.known.count_ones() {
            return true;
        }
        let others = &self.others[..self.n_others];
        if self.more.len() > 8 {
            // Many keys (a hostile line can hold thousands): a set, not a search per key.
            let mut seen = std::collections::HashSet::with_capacity(others.len() + self.more.len());
            return !others.iter().chain(&self.more).all(|k| seen.insert(*k));
        }
        others.iter().enumerate().any(|(i, k)| others[..i].contains(k))
            || self.more.iter().enumerate().any(|(i, k)| others.contains(k) || self.more[..i].contains(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seen_keys_notice_duplicates() {
        let mut s = SeenKeys::new();
        assert!(!s.known(3));
        s.other(Some("a"));
        s.other(Some("b"));
        assert!(!s.dup());
        s.other(Some("a"));
        assert!(s.dup());
        let mut t = SeenKeys::new();
        t.known(1);
        assert!(t.known(1) && t.dup());
        // Many keys (a set, not a search per key): a repeat anywhere is found.
        let names: Vec<String> = (0..100).map(|i| format!("x{i}")).collect();
        let mut lots = SeenKeys::new();
        names.iter().for_each(|k| lots.other(Some(k)));
        assert!(!lots.dup());
        lots.other(Some(&names[3]));
        assert!(lots.dup());
        let mut many = SeenKeys::new();
        let keys = ["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"];
        for k in keys {
            many.other(Some(k));
        }
        assert!(!many.dup());
        many.other(Some("k9"));
        assert!(many.dup());
        let mut u = SeenKeys::new();
        u.other(key_text(&Cow::Owned("escaped".into())));
        assert!(u.dup());
    }
}
