//! A tiny JSON reader for parameter values (a string, a number, a boolean, an array of strings) and a tiny
//! writer for a result's data, so that a plugin needs no crate for the common case. Both follow the Go SDK
//! (sdk-guest/json.go): the same accepted texts, the same encoding of strings, object keys sorted.

use std::collections::{BTreeMap, HashMap};

/// A JSON value for a result's data. Build one with `.into()` from strings, numbers, booleans, vectors, maps and
/// options; `Json::Raw` holds JSON text put in as is (it must be valid JSON).
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
    Array(Vec<Json>),
    /// Written with its keys sorted, as Go writes a map; a key given twice keeps its last value.
    Object(Vec<(String, Json)>),
    Raw(String),
}

impl Json {
    /// An empty object, to fill with `set`.
    pub fn object() -> Json {
        Json::Object(Vec::new())
    }

    /// Sets `key` in an object (replacing an earlier value) and returns it; on anything else it does nothing.
    pub fn set(mut self, key: impl Into<String>, value: impl Into<Json>) -> Json {
        if let Json::Object(entries) = &mut self {
            set_entry(entries, key.into(), value.into());
        }
        self
    }
}

pub(crate) fn set_entry(entries: &mut Vec<(String, Json)>, key: String, value: Json) {
    match entries.iter_mut().find(|(k, _)| *k == key) {
        Some(entry) => entry.1 = value,
        None => entries.push((key, value)),
    }
}

macro_rules! from_int {
    ($variant:ident, $wide:ty: $($t:ty),*) => {$(
        impl From<$t> for Json {
            fn from(v: $t) -> Json {
                Json::$variant(v as $wide)
            }
        }
    )*};
}
from_int!(Int, i64: i8, i16, i32, i64, isize);
from_int!(Uint, u64: u8, u16, u32, u64, usize);

impl From<f64> for Json {
    fn from(v: f64) -> Json {
        Json::Float(v)
    }
}
impl From<f32> for Json {
    fn from(v: f32) -> Json {
        Json::Float(v as f64)
    }
}
impl From<bool> for Json {
    fn from(v: bool) -> Json {
        Json::Bool(v)
    }
}
impl From<&str> for Json {
    fn from(v: &str) -> Json {
        Json::Str(v.to_string())
    }
}
impl From<String> for Json {
    fn from(v: String) -> Json {
        Json::Str(v)
    }
}
impl From<&String> for Json {
    fn from(v: &String) -> Json {
        Json::Str(v.clone())
    }
}
impl<T: Into<Json>> From<Vec<T>> for Json {
    fn from(v: Vec<T>) -> Json {
        Json::Array(v.into_iter().map(Into::into).collect())
    }
}
impl<T: Clone + Into<Json>> From<&[T]> for Json {
    fn from(v: &[T]) -> Json {
        Json::Array(v.iter().cloned().map(Into::into).collect())
    }
}
impl<T: Into<Json>> From<Option<T>> for Json {
    fn from(v: Option<T>) -> Json {
        v.map_or(Json::Null, Into::into)
    }
}
impl<K: Into<String>, V: Into<Json>> From<BTreeMap<K, V>> for Json {
    fn from(m: BTreeMap<K, V>) -> Json {
        Json::Object(m.into_iter().map(|(k, v)| (k.into(), v.into())).collect())
    }
}
impl<K: Into<String>, V: Into<Json>, S> From<HashMap<K, V, S>> for Json {
    fn from(m: HashMap<K, V, S>) -> Json {
        Json::Object(m.into_iter().map(|(k, v)| (k.into(), v.into())).collect())
    }
}

/// Appends the JSON encoding of `v`. A NaN or infinite number is an error naming where it is (`path`).
pub fn write_json(dst: &mut Vec<u8>, v: &Json, path: &str) -> Result<(), String> {
    match v {
        Json::Null => dst.extend_from_slice(b"null"),
        Json::Bool(b) => dst.extend_from_slice(if *b { b"true" } else { b"false" }),
        Json::Int(i) => dst.extend_from_slice(i.to_string().as_bytes()),
        Json::Uint(u) => dst.extend_from_slice(u.to_string().as_bytes()),
        Json::Float(f) => write_float(dst, *f, path)?,
        Json::Str(s) => write_quoted(dst, s),
        Json::Raw(raw) => dst.extend_from_slice(raw.as_bytes()),
        Json::Array(items) => {
            dst.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    dst.push(b',');
                }
                write_json(dst, item, &format!("{path}[{i}]"))?;
            }
            dst.push(b']');
        }
        Json::Object(entries) => write_object(dst, entries, path)?,
    }
    Ok(())
}

/// Appends an object with its keys sorted (by bytes, as Go sorts map keys).
pub fn write_object(dst: &mut Vec<u8>, entries: &[(String, Json)], path: &str) -> Result<(), String> {
    let mut order: Vec<&(String, Json)> = entries.iter().collect();
    order.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    dst.push(b'{');
    for (i, (k, v)) in order.into_iter().enumerate() {
        if i > 0 {
            dst.push(b',');
        }
        write_quoted(dst, k);
        dst.push(b':');
        let sub = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
        write_json(dst, v, &sub)?;
    }
    dst.push(b'}');
    Ok(())
}

fn write_float(dst: &mut Vec<u8>, f: f64, path: &str) -> Result<(), String> {
    if !f.is_finite() {
        return Err(format!("{path}: NaN or infinite number"));
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Go writes exponents with a sign and at least one digit (1e+21, 1e-07 becomes 1e-7 in both).
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => {
                dst.extend_from_slice(format!("{mantissa}e+{exp}").as_bytes());
            }
            _ => dst.extend_from_slice(s.as_bytes()),
        }
    } else {
        dst.extend_from_slice(format!("{f}").as_bytes());
    }
    Ok(())
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `s` as a JSON string, escaping as the Go SDK does (no HTML escaping; U+2028 and U+2029 escaped).
pub fn write_quoted(dst: &mut Vec<u8>, s: &str) {
    dst.reserve(s.len() + 2);
    dst.push(b'"');
    let b = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c < 0x80 {
            if c >= 0x20 && c != b'"' && c != b'\\' {
                i += 1;
                continue;
            }
            dst.extend_from_slice(&b[start..i]);
            match c {
                b'"' | b'\\' => dst.extend_from_slice(&[b'\\', c]),
                b'\n' => dst.extend_from_slice(b"\\n"),
                b'\r' => dst.extend_from_slice(b"\\r"),
                b'\t' => dst.extend_from_slice(b"\\t"),
                _ => dst.extend_from_slice(&[b'\\', b'u', b'0', b'0', HEX[(c >> 4) as usize], HEX[(c & 0xf) as usize]]),
            }
            i += 1;
            start = i;
            continue;
        }
        // U+2028 and U+2029 are E2 80 A8 and E2 80 A9.
        if c == 0xE2 && i + 2 < b.len() && b[i + 1] == 0x80 && (b[i + 2] == 0xA8 || b[i + 2] == 0xA9) {
            dst.extend_from_slice(&b[start..i]);
            dst.extend_from_slice(if b[i + 2] == 0xA8 { b"\\u2028" } else { b"\\u2029" });
            i += 3;
            start = i;
            continue;
        }
        i += 1;
    }
    dst.extend_from_slice(&b[start..]);
    dst.push(b'"');
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

fn skip_space(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && is_space(s[i]) {
        i += 1;
    }
    i
}

fn whole(s: &[u8], i: usize) -> bool {
    skip_space(s, i) == s.len()
}

fn hex4(s: &[u8], i: usize) -> Option<u32> {
    let digits = s.get(i..i + 4)?;
    let mut r = 0u32;
    for &c in digits {
        r = r << 4 | (c as char).to_digit(16)?;
    }
    Some(r)
}

/// Reads the JSON string at `s[i]` (which must be '"'); returns its value and the offset after it.
pub fn parse_string(s: &str, i: usize) -> Option<(String, usize)> {
    let b = s.as_bytes();
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut i = i + 1;
    let mut out: Vec<u8> = Vec::new();
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' => return String::from_utf8(out).ok().map(|v| (v, i + 1)),
            0..=0x1f => return None,
            b'\\' => {}
            _ => {
                out.push(c);
                i += 1;
                continue;
            }
        }
        let esc = *b.get(i + 1)?;
        i += 2;
        let simple = match esc {
            b'"' | b'\\' | b'/' => esc,
            b'b' => 8,
            b'f' => 12,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => 0,
            _ => return None,
        };
        if esc != b'u' {
            out.push(simple);
            continue;
        }
        let mut r = hex4(b, i)?;
        i += 4;
        if (0xD800..0xE000).contains(&r) {
            // A surrogate pair makes one rune; a lone surrogate becomes U+FFFD, as in Go.
            let low = if b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'u') { hex4(b, i + 2) } else { None };
            match low {
                Some(lo) if r < 0xDC00 && (0xDC00..0xE000).contains(&lo) => {
                    r = 0x10000 + ((r - 0xD800) << 10) + (lo - 0xDC00);
                    i += 6;
                }
                _ => r = 0xFFFD,
            }
        }
        let ch = char::from_u32(r).unwrap_or('\u{FFFD}');
        let mut tmp = [0u8; 4];
        out.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
    }
    None
}

fn number_end(s: &[u8], mut i: usize) -> Option<usize> {
    let digits = |i: usize| {
        let mut j = i;
        while j < s.len() && s[j].is_ascii_digit() {
            j += 1;
        }
        j
    };
    if s.get(i) == Some(&b'-') {
        i += 1;
    }
    let j = digits(i);
    if j == i || (s[i] == b'0' && j > i + 1) {
        return None;
    }
    i = j;
    if s.get(i) == Some(&b'.') {
        let j = digits(i + 1);
        if j == i + 1 {
            return None;
        }
        i = j;
    }
    if matches!(s.get(i), Some(b'e') | Some(b'E')) {
        i += 1;
        if matches!(s.get(i), Some(b'+') | Some(b'-')) {
            i += 1;
        }
        let j = digits(i);
        if j == i {
            return None;
        }
        i = j;
    }
    Some(i)
}

/// The value of a JSON text that is one string.
pub fn json_string(s: &str) -> Option<String> {
    let (v, end) = parse_string(s, skip_space(s.as_bytes(), 0))?;
    whole(s.as_bytes(), end).then(|| v)
}

/// The literal of a JSON text that is one number.
pub fn json_number(s: &str) -> Option<&str> {
    let start = skip_space(s.as_bytes(), 0);
    let end = number_end(s.as_bytes(), start)?;
    whole(s.as_bytes(), end).then(|| &s[start..end])
}

/// The value of a JSON text that is `true` or `false`.
pub fn json_bool(s: &str) -> Option<bool> {
    let t = s.trim_matches(|c: char| c.is_ascii() && is_space(c as u8));
    match t {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// The values of a JSON text that is an array of strings.
pub fn json_strings(s: &str) -> Option<Vec<String>> {
    let b = s.as_bytes();
    let mut i = skip_space(b, 0);
    if b.get(i) != Some(&b'[') {
        return None;
    }
    let mut out = Vec::new();
    i = skip_space(b, i + 1);
    if b.get(i) == Some(&b']') {
        return whole(b, i + 1).then(|| out);
    }
    loop {
        let (v, j) = parse_string(s, i)?;
        out.push(v);
        i = skip_space(b, j);
        match b.get(i)? {
            b',' => i = skip_space(b, i + 1),
            b']' => return whole(b, i + 1).then(|| out),
            _ => return None,
        }
    }
}

/// The integer value of a JSON number literal that fits in an i64 (10 and 1e3 do; 1.5 does not).
pub fn number_i64(lit: &str) -> Option<i64> {
    if let Ok(i) = lit.parse::<i64>() {
        return Some(i);
    }
    let f: f64 = lit.parse().ok()?;
    if f.fract() != 0.0 || !(-9.223372036854776e18..9.223372036854776e18).contains(&f) {
        return None;
    }
    Some(f as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader() {
        assert_eq!(json_string(r#" "a\"\u00e9\ud83d\ude42\ud800" "#).as_deref(), Some("a\"é🙂\u{FFFD}"));
        assert_eq!(json_string(r#""a" x"#), None);
        assert_eq!(json_number(" -1.5e3 "), Some("-1.5e3"));
        assert_eq!(json_number("01"), None);
        assert_eq!(json_number("1."), None);
        assert_eq!(json_bool(" true\n"), Some(true));
        assert_eq!(json_bool("True"), None);
        assert_eq!(json_strings(r#"[ "a" , "b" ]"#), Some(vec!["a".to_string(), "b".to_string()]));
        assert_eq!(json_strings("[]"), Some(vec![]));
        assert_eq!(json_strings("[1]"), None);
        assert_eq!(json_strings(r#"["a",]"#), None);
        assert_eq!(number_i64("1e3"), Some(1000));
        assert_eq!(number_i64("1.5"), None);
        assert_eq!(number_i64("1e30"), None);
    }

    #[test]
    fn writer() {
        let v = Json::object().set("b", vec!["x\u{2028}\n<&>", "\u{1}"]).set("a", 1.5).set("c", Json::Null).set("a", 1e21);
        let mut out = Vec::new();
        write_json(&mut out, &v, "").unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), r#"{"a":1e+21,"b":["x\u2028\n<&>","\u0001"],"c":null}"#);
        assert!(write_json(&mut Vec::new(), &Json::object().set("n", f64::NAN), "").unwrap_err().contains("n: NaN"));
        let mut out = Vec::new();
        write_json(&mut out, &Json::Array(vec![0.000001.into(), 1e-7.into(), 100.0.into()]), "").unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "[0.000001,1e-7,100]");
    }
}
