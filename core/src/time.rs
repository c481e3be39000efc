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

/// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|+00:00)` (UTC) → milliseconds since the epoch (a longer
/// fraction is cut to milliseconds); `None` for anything else, including other offsets.
pub fn millis_from_iso8601(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    let num = |at: usize, width: usize| -> Option<i64> {
        let digits = b.get(at..at + width)?;
        digits.iter().try_fold(0i64, |n, c| c.is_ascii_digit().then(|| n * 10 + i64::from(c - b'0')))
    };
    let sep = |at: usize, c: u8| b.get(at) == Some(&c);
    if !(sep(4, b'-') && sep(7, b'-') && matches!(b.get(10), Some(b'T' | b't')) && sep(13, b':') && sep(16, b':')) {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    let mut at = 19;
    let mut millis = 0;
    if sep(at, b'.') {
        let digits = b[at + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        for i in 0..3 {
            millis = millis * 10 + if i < digits { i64::from(b[at + 1 + i] - b'0') } else { 0 };
        }
        at += 1 + digits;
    }
    if !matches!(&b[at..], b"Z" | b"z" | b"+00:00") {
        return None;
    }
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => return None,
    };
    if day < 1 || day > days_in_month || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some(((days * 86_400 + hour * 3600 + minute * 60 + second) * 1000) + millis)
}

/// (year, month, day) → days since 1970-01-01; Howard Hinnant's `days_from_civil`.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
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
    fn parses_what_it_formats_and_refuses_the_rest() {
        for ms in [0, 1, 999, 86_399_999, 951_782_400_000, 1_796_221_604_599, 253_402_300_799_999, -1] {
            assert_eq!(millis_from_iso8601(&iso8601_from_millis(ms)), Some(ms), "{ms}");
        }
        assert_eq!(millis_from_iso8601("2026-12-02T14:26:44Z"), Some(1_796_221_604_000));
        assert_eq!(millis_from_iso8601("2026-12-02T14:26:44.5999+00:00"), Some(1_796_221_604_599));
        for bad in [
            "",
            "t",
            "2026-12-02",
            "2026-12-02T14:26:44",
            "2026-12-02T14:26:44.Z",
            "2026-12-02T14:26:44+01:00",
            "2026-02-30T00:00:00Z",
            "2026-12-02T24:00:00Z",
            "2026-13-02T00:00:00Z",
            "2026-12-02T14:26:44Zjunk",
        ] {
            assert_eq!(millis_from_iso8601(bad), None, "{bad:?}");
        }
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
