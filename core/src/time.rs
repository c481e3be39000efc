//! ISO 8601 timestamps without a date-time dependency.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch → `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC, proleptic Gregorian).
pub fn iso8601_from_millis(ms: i64) -> String {
    match IsoMillis::new(ms) {
        Some(text) => text.as_str().to_string(),
        // Years without four digits: rare enough for `format!`.
        None => {
            let (days, rem, millis) = split_millis(ms);
            let (y, m, d) = civil_from_days(days);
            format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z", rem / 3600, (rem % 3600) / 60, rem % 60)
        }
    }
}

/// An instant as `YYYY-MM-DDTHH:MM:SS.mmmZ`, formatted on the stack: decoders converting a
/// harness's epoch timestamps per line use it (`format!` costs more than the rest of a line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IsoMillis([u8; 24]);

impl IsoMillis {
    /// Milliseconds since the epoch; `None` when the year is outside 0..=9999.
    pub(crate) fn new(ms: i64) -> Option<Self> {
        let (days, of_day, millis) = split_millis(ms);
        let (year, month, day) = civil_from_days(days);
        if !(0..=9999).contains(&year) {
            return None;
        }
        let mut text = *b"0000-00-00T00:00:00.000Z";
        let mut digits = |n: i64, end: usize, width: usize| {
            let mut n = n;
            for slot in text[end - width..end].iter_mut().rev() {
                *slot = b'0' + (n % 10) as u8;
                n /= 10;
            }
        };
        digits(year, 4, 4);
        digits(i64::from(month), 7, 2);
        digits(i64::from(day), 10, 2);
        digits(of_day / 3600, 13, 2);
        digits(of_day % 3600 / 60, 16, 2);
        digits(of_day % 60, 19, 2);
        digits(millis, 23, 3);
        Some(IsoMillis(text))
    }

    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        // Only ASCII digits and separators are ever written.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

/// Milliseconds since the epoch → (days since the epoch, seconds into the day, milliseconds).
fn split_millis(ms: i64) -> (i64, i64, i64) {
    let secs = ms.div_euclid(1000);
    (secs.div_euclid(86_400), secs.rem_euclid(86_400), ms.rem_euclid(1000))
}

/// The current time as [`iso8601_from_millis`] formats it.
pub fn now_iso8601() -> String {
    iso8601_from_millis(now_millis())
}

/// Milliseconds since the Unix epoch, now.
pub fn now_millis() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// Days since 1970-01-01 → (year, month, day); Howard Hinnant's `civil_from_days`.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(iso8601_from_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601_from_millis(1_796_221_604_599), "2026-12-02T14:26:44.599Z");
        assert_eq!(iso8601_from_millis(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601_from_millis(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(iso8601_from_millis(253_402_300_800_000), "10000-01-01T00:00:00.000Z");
    }

    #[test]
    fn stack_formatting_agrees_with_format_for_four_digit_years() {
        for ms in [0, 1, 999, 86_399_999, 951_782_400_000, 1_796_221_604_599, 253_402_300_799_999, -62_167_219_200_000]
        {
            let (days, rem, millis) = split_millis(ms);
            let (y, m, d) = civil_from_days(days);
            let expected =
                format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z", rem / 3600, (rem % 3600) / 60, rem % 60);
            assert_eq!(IsoMillis::new(ms).unwrap().as_str(), expected, "{ms}");
        }
        assert_eq!(IsoMillis::new(253_402_300_800_000), None);
        assert_eq!(IsoMillis::new(-62_167_219_200_001), None);
        assert_eq!(IsoMillis::new(i64::MAX), None);
        assert_eq!(IsoMillis::new(i64::MIN), None);
    }
}
