//! A routing condition: it matches a request whose prompt is long, whose prompt does not look English, or that
//! asks for many output tokens, so that a conditional routing config can send it to a bigger (or multilingual)
//! model. The Rust twin of examples/router (same parameters, same rules, same log lines).
//!
//! Parameters: "min_chars" (a number), "non_english" (a boolean, default true) and "min_max_tokens" (a number).

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
        let n = input.text.chars().count();
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
    for c in text.chars().filter(|&c| is_letter(c)) {
        letters += 1;
        if !is_latin(c) {
            non_latin += 1;
        } else if !c.is_ascii() {
            accented += 1;
        }
    }
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
