//! A guardrail: it finds email addresses, phone numbers and credit-card numbers (digit runs that pass the Luhn
//! check) in the checked text, and either denies the text or redacts them. The Rust twin of examples/pii (the
//! same regular expressions, run by the SDK's engine).
//!
//! Parameters: "action" ("deny", the default, or "redact") and "types" (an array of "email", "phone",
//! "credit_card"; all three by default).

use gateway_plugin_sdk::regex::Regex;
use gateway_plugin_sdk::{plugin, Input, Outcome};
use std::collections::BTreeMap;

const EMAIL: &str = "email";
const PHONE: &str = "phone";
const CREDIT_CARD: &str = "credit_card";

/// Also the priority when matches overlap.
const ALL_KINDS: [&str; 3] = [CREDIT_CARD, EMAIL, PHONE];

const EMAIL_RE: &str = r"[\p{L}\p{N}._%+-]+@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)*\.\p{L}{2,}";
/// 13 to 19 digits, optionally grouped by single spaces or dashes.
const CARD_RE: &str = r"\d(?:[ -]?\d){12,18}";
/// An optional +country code, an optional (area code), then two to five groups of digits separated by a space,
/// dot or dash; `phone` then checks the digit count and shape.
const PHONE_RE: &str = r"(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]\d{2,4}){1,4}|\+\d{7,15}|\d{10}";

struct Span {
    start: usize,
    end: usize,
    kind: &'static str,
}

fn check(input: &Input) -> Outcome {
    let mut action = "deny".to_string();
    if let Some(raw) = input.param("action") {
        match input.param_string("action") {
            Some(a) if a == "deny" || a == "redact" => action = a,
            _ => return Outcome::error(format!(r#"pii: parameter "action" must be "deny" or "redact", not {raw}"#)),
        }
    }
    let mut kinds: Vec<String> = ALL_KINDS.iter().map(|k| k.to_string()).collect();
    if let Some(raw) = input.param("types") {
        match input.param_strings("types") {
            Some(k) => kinds = k,
            None => return Outcome::error(format!(r#"pii: parameter "types" must be an array of strings, not {raw}"#)),
        }
        if let Some(k) = kinds.iter().find(|k| !ALL_KINDS.contains(&k.as_str())) {
            return Outcome::error(format!(r#"pii: unknown type "{k}" (want email, phone or credit_card)"#));
        }
    }

    let spans = find(input.text, &kinds);
    if spans.is_empty() {
        return Outcome::pass();
    }
    let mut found: BTreeMap<&str, u32> = BTreeMap::new();
    for s in &spans {
        *found.entry(s.kind).or_insert(0) += 1;
    }
    if action == "deny" {
        return Outcome::fail("PII detected").with("found", found);
    }
    Outcome::transform(redact(input.text, &spans)).with("redacted", found)
}

/// The PII in text, of the given kinds, sorted by position and without overlaps (a credit card wins over an
/// email, which wins over a phone number).
fn find(text: &str, kinds: &[String]) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    for kind in ALL_KINDS {
        if !kinds.iter().any(|k| k == kind) {
            continue;
        }
        let (pattern, valid): (&str, fn(&str) -> bool) = match kind {
            EMAIL => (EMAIL_RE, |_| true),
            PHONE => (PHONE_RE, phone),
            _ => (CARD_RE, luhn),
        };
        let re = Regex::new(pattern).expect("the patterns compile");
        for (start, end) in re.find_all(text) {
            let taken = spans.iter().any(|s| start < s.end && s.start < end);
            if isolated(text, start, end) && valid(&text[start..end]) && !taken {
                spans.push(Span { start, end, kind });
            }
        }
    }
    spans.sort_by_key(|s| s.start);
    spans
}

/// Whether text[start..end] is not glued to a letter, digit, '@' or '_' (the middle of a longer number or word).
fn isolated(text: &str, start: usize, end: usize) -> bool {
    let glued = |c: u8| c.is_ascii_alphanumeric() || c == b'@' || c == b'_';
    let b = text.as_bytes();
    (start == 0 || !glued(b[start - 1])) && (end == b.len() || !glued(b[end]))
}

fn digits(s: &str) -> Vec<u32> {
    s.bytes().filter(u8::is_ascii_digit).map(|c| (c - b'0') as u32).collect()
}

/// Whether the digits of s pass the Luhn checksum of payment card numbers.
fn luhn(s: &str) -> bool {
    let d = digits(s);
    if d.len() < 13 || d.len() > 19 {
        return false;
    }
    let sum: u32 = d
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &v)| if i % 2 == 1 { if v * 2 > 9 { v * 2 - 9 } else { v * 2 } } else { v })
        .sum();
    sum % 10 == 0
}

/// Whether a phone match looks like a phone number rather than a date, a version or an amount: 7 to 15 digits,
/// and a leading + or (area code), or a last group of at least 4 digits, or a plain run of digits.
fn phone(s: &str) -> bool {
    let n = digits(s).len();
    if !(7..=15).contains(&n) {
        return false;
    }
    if s.starts_with('+') || s.starts_with('(') || n == s.len() {
        return true;
    }
    let last = s.rfind(|c| c == ' ' || c == '.' || c == '-').map_or(s, |i| &s[i + 1..]);
    last.len() >= 4
}

/// Replaces each span with [REDACTED_<KIND>].
fn redact(text: &str, spans: &[Span]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for s in spans {
        out.push_str(&text[at..s.start]);
        out.push_str("[REDACTED_");
        out.push_str(&s.kind.to_ascii_uppercase());
        out.push(']');
        at = s.end;
    }
    out.push_str(&text[at..]);
    out
}

plugin!(check = check);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn luhn_numbers() {
        for (s, want) in [("4111111111111111", true), ("4111-1111-1111-1111", true), ("378282246310005", true), ("4111111111111112", false), ("411111111111", false)] {
            assert_eq!(luhn(s), want, "{s}");
        }
    }
}
