//! A routing condition: it matches a request whose prompt is long, whose prompt does not look English, or that
//! asks for many output tokens, so that a conditional routing config can send it to a bigger (or multilingual)
//! model. The Rust twin of examples/router (same parameters, same rules, same log lines).
//!
//! Parameters: "min_chars" (a number), "non_english" (a boolean, default true) and "min_max_tokens" (a number).

use gateway_plugin_sdk::ascii::{chunk_ascii_letters, count_chars, CHUNK};
use gateway_plugin_sdk::unicode::{is_latin, is_letter};
use gateway_plugin_sdk::{log, plugin, request_field, Input, Level};

/// From this share of letters outside the Latin script a text is not English.
const NON_LATIN_SHARE: f64 = 0.3;
/// A Latin-script text with at least MIN_ACCENTED letters outside ASCII making up at least ACCENTED_SHARE of
/// its letters is not English.
const ACCENTED_SHARE: f64 = 0.04;
const MIN_ACCENTED: usize = 2;

fn route(input: &Input) -> bool {
    if let Some(min) = input.param_i64("min_chars") {
        let n = count_chars(input.text);
        if n as i64 > min {
            log(Level::Debug, &format!("router: prompt has {n} characters, more than min_chars"));
            return true;
        }
    }
    if input.param_bool("non_english").unwrap_or(true) {
        if let Some(why) = script(input.text) {
            log(Level::Debug, &format!("router: prompt looks non-English ({why})"));
            return true;
        }
    }
    if let Some(min) = input.param_i64("min_max_tokens") {
        // max_tokens is not in the Input: read it from the request.
        if let Some(raw) = request_field("params.max_tokens") {
            if raw.parse::<i64>().map_or(false, |n| n >= min) {
                log(Level::Debug, &format!("router: max_tokens {raw} is at least min_max_tokens"));
                return true;
            }
        }
    }
    false
}

/// Why the text does not look English, or None when it may be. Only letters count.
fn script(text: &str) -> Option<&'static str> {
    let (mut letters, mut non_latin, mut accented) = (0usize, 0usize, 0usize);
    let b = text.as_bytes();
    let mut at = 0;
    while at < b.len() {
        // ASCII letters are Latin and not accented: an ASCII chunk only adds to the letters.
        if at + CHUNK <= b.len() {
            if let Some(n) = chunk_ascii_letters(b, at) {
                letters += n;
                at += CHUNK;
                continue;
            }
        }
        // Otherwise one chunk's worth of characters, one by one (at stays on a char boundary).
        let end = (at + CHUNK).min(b.len());
        for c in text[at..].chars() {
            if at >= end {
                break;
            }
            at += c.len_utf8();
            if !is_letter(c) {
                continue;
            }
            letters += 1;
            if !is_latin(c) {
                non_latin += 1;
            } else if !c.is_ascii() {
                accented += 1;
            }
        }
    }
    verdict(letters, non_latin, accented)
}

/// The route a text's letter counts ask for, if any.
fn verdict(letters: usize, non_latin: usize, accented: usize) -> Option<&'static str> {
    if letters == 0 {
        None
    } else if non_latin as f64 >= NON_LATIN_SHARE * letters as f64 {
        Some("non-Latin script")
    } else if accented >= MIN_ACCENTED && accented as f64 >= ACCENTED_SHARE * letters as f64 {
        Some("accented Latin letters")
    } else {
        None
    }
}

plugin!(condition = route);

#[cfg(test)]
mod tests {
    use super::*;

    /// The chunked scan must count as a plain one does, wherever the non-ASCII letters fall.
    #[test]
    fn script_as_per_char() {
        fn plain(text: &str) -> Option<&'static str> {
            let (mut letters, mut non_latin, mut accented) = (0usize, 0usize, 0usize);
            for c in text.chars().filter(|&c| is_letter(c)) {
                letters += 1;
                if !is_latin(c) {
                    non_latin += 1;
                } else if !c.is_ascii() {
                    accented += 1;
                }
            }
            verdict(letters, non_latin, accented)
        }
        let base = "Where is the station? 12 [x] `y` {z} @home. ";
        for n in [0, 10, 63, 64, 65, 130, 400] {
            let ascii: String = base.chars().cycle().take(n).collect();
            for mix in ["", "é", "éàü", "東京の天気", "Москве", "π/τ α"] {
                for text in [format!("{ascii}{mix}"), format!("{mix}{ascii}"), format!("{ascii}{mix}{ascii}{mix}")] {
                    assert_eq!(script(&text), plain(&text), "{text:?}");
                }
            }
        }
    }
}
