//! JSON written the way `JSON.stringify` writes it: every number is a JS number (an f64)
//! printed by `Number.prototype.toString` — shortest round-trip digits, integers without `.0`,
//! fixed notation from 1e-6 up to 1e21 and exponent form (`1e+21`, `1.5e-7`) outside it, `-0`
//! as `0`; integers beyond 2^53 are first rounded to the nearest f64, as `JSON.parse` does.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::{CompactFormatter, Formatter};

/// A `serde_json` formatter with JS number output and compact layout.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct JsFormatter;

/// Largest magnitude up to which every integer is exactly a JS number.
const SAFE: u64 = 1 << 53;

impl Formatter for JsFormatter {
    fn write_i64<W: ?Sized + Write>(&mut self, w: &mut W, v: i64) -> io::Result<()> {
        if v.unsigned_abs() <= SAFE { CompactFormatter.write_i64(w, v) } else { write_js_f64(w, v as f64) }
    }

    fn write_u64<W: ?Sized + Write>(&mut self, w: &mut W, v: u64) -> io::Result<()> {
        if v <= SAFE { CompactFormatter.write_u64(w, v) } else { write_js_f64(w, v as f64) }
    }

    fn write_i128<W: ?Sized + Write>(&mut self, w: &mut W, v: i128) -> io::Result<()> {
        write_js_f64(w, v as f64)
    }

    fn write_u128<W: ?Sized + Write>(&mut self, w: &mut W, v: u128) -> io::Result<()> {
        write_js_f64(w, v as f64)
    }

    fn write_f32<W: ?Sized + Write>(&mut self, w: &mut W, v: f32) -> io::Result<()> {
        write_js_f64(w, f64::from(v))
    }

    fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, v: f64) -> io::Result<()> {
        write_js_f64(w, v)
    }
}

/// Serialise `value` as compact JSON with JS numbers.
pub(crate) fn to_writer<W: Write, T: ?Sized + Serialize>(w: W, value: &T) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(w, JsFormatter);
    value.serialize(&mut ser).map_err(io::Error::other)
}

/// `Number.prototype.toString()` of a finite f64 (serde_json writes non-finite numbers as
/// `null` before a formatter sees them).
pub(crate) fn js_number_string(v: f64) -> String {
    if v == 0.0 {
        return "0".to_owned();
    }
    // Rust's `{:e}` prints the shortest digits that round-trip, like ECMAScript's algorithm.
    let sci = format!("{:e}", v.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let digits = even_on_tie(v.abs(), digits, exp);
    let k = digits.len() as i32;
    let n = exp + 1;
    let mut out = String::with_capacity(k as usize + 8);
    if v < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if n > 0 { '+' } else { '-' });
        out.push_str(&(n - 1).abs().to_string());
    }
    out
}

/// ECMAScript's tie rule: when the value lies exactly halfway between two shortest
/// candidates, `Number.prototype.toString` takes the one whose last digit is even, where
/// Rust's shortest formatting may take the other (73.206329345703125 → JS `…312`). A tie needs
/// the exact decimal expansion to be one digit longer than the shortest, ending in 5; below
/// 15 digits the rounding interval is too narrow for that.
fn even_on_tie(v: f64, digits: String, exp: i32) -> String {
    let k = digits.len();
    if k < 15 {
        return digits;
    }
    // Cheap filter: a tie means a midpoint next to the chosen digits (`digits5` or
    // `(digits - 1)5`, one decimal place further) is the value itself, so it reads back as it.
    let Ok(chosen) = digits.parse::<u64>() else { return digits };
    let scale = exp - k as i32;
    let reads_back = |mid: u64| format!("{mid}e{scale}").parse::<f64>().is_ok_and(|back| back == v);
    let tie_possible = reads_back(chosen * 10 + 5) || (chosen > 0 && reads_back((chosen - 1) * 10 + 5));
    if !tie_possible {
        return digits;
    }
    // The exact expansion (an f64 has at most 767 significant digits).
    let exact = format!("{v:.800e}");
    let (mantissa, exact_exp) = exact.split_once('e').unwrap_or((exact.as_str(), "0"));
    if exact_exp.parse::<i32>().ok() != Some(exp) {
        return digits;
    }
    let exact_digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exact_digits = exact_digits.trim_end_matches('0');
    if exact_digits.len() != k + 1 || !exact_digits.ends_with('5') {
        return digits;
    }
    let floor = &exact_digits[..k];
    let Ok(low) = floor.parse::<u64>() else { return digits };
    let even = if low % 2 == 0 { low } else { low + 1 };
    let candidate = even.to_string();
    let round_trips = candidate.len() == k
        && format!("{candidate}e{}", exp - k as i32 + 1).parse::<f64>().is_ok_and(|back| back == v);
    if round_trips { candidate } else { digits }
}

fn write_js_f64<W: ?Sized + Write>(w: &mut W, v: f64) -> io::Result<()> {
    w.write_all(js_number_string(v).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected strings are what Node's `String(x)` prints.
    #[test]
    #[allow(clippy::excessive_precision, reason = "73.206329345703125 is the exact double, a halfway case")]
    fn numbers_print_as_javascript_does() {
        let cases: [(f64, &str); 17] = [
            (73.206329345703125, "73.20632934570312"),
            (0.0, "0"),
            (-0.0, "0"),
            (1.0, "1"),
            (-3.0, "-3"),
            (1.9000000000000001, "1.9000000000000001"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (123456789012345680000.0, "123456789012345680000"),
            (1e-6, "0.000001"),
            (1.1409744620323182e-6, "0.0000011409744620323182"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (2.5e300, "2.5e+300"),
            (9007199254741716.0, "9007199254741716"),
            (5e-324, "5e-324"),
        ];
        for (v, want) in cases {
            assert_eq!(js_number_string(v), want, "{v:e}");
        }
    }

    #[test]
    fn integers_past_2_pow_53_round_like_json_parse() {
        let mut out = Vec::new();
        to_writer(&mut out, &serde_json::json!([9007199254740993u64, -9007199254740993i64, 12345678901234567890u64]))
            .unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "[9007199254740992,-9007199254740992,12345678901234567000]");
    }
}
