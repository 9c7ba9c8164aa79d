//! A guardrail: it fails when the checked text contains a deny-listed word (case-insensitive, whole words only)
//! or matches a deny-listed regular expression, and names what matched. The Rust twin of examples/denylist.
//!
//! Parameters: "words" (an array of strings), "patterns" (an array of RE2 regular expressions, run by the
//! SDK's linear-time engine) and "kv" (a key of the workspace's plugin key-value store whose value holds more
//! words, one per line, read on every call).

use gateway_plugin_sdk::regex::Regex;
use gateway_plugin_sdk::unicode::{is_digit, is_letter, is_mark};
use gateway_plugin_sdk::{plugin, Input, Outcome};
#[cfg(target_arch = "wasm32")]
use std::collections::HashMap;

fn check(input: &Input) -> Outcome {
    let mut words = Vec::new();
    if let Some(raw) = input.param("words") {
        match input.param_strings("words") {
            Some(w) => words = w,
            None => return Outcome::error(format!(r#"denylist: parameter "words" must be an array of strings, not {raw}"#)),
        }
    }
    if let Some(raw) = input.param("kv") {
        match input.param_string("kv") {
            Some(key) => words.extend(kv_words(&key)),
            None => return Outcome::error(format!(r#"denylist: parameter "kv" must be a string (a key of the plugin key-value store), not {raw}"#)),
        }
    }
    let mut patterns = Vec::new();
    if let Some(raw) = input.param("patterns") {
        match input.param_strings("patterns") {
            Some(p) => patterns = p,
            None => return Outcome::error(format!(r#"denylist: parameter "patterns" must be an array of strings, not {raw}"#)),
        }
    }

    let lower = gateway_plugin_sdk::ascii::to_lowercase(input.text);
    let matched_words: Vec<&String> = words.iter().filter(|w| !w.is_empty() && contains_word(&lower, &w.to_lowercase())).collect();
    let mut matched_patterns = Vec::new();
    for p in &patterns {
        match with_compiled(p, |re| re.is_match(input.text)) {
            Ok(true) => matched_patterns.push(p),
            Ok(false) => {}
            Err(e) => return Outcome::error(format!("denylist: pattern {p}: {e}")),
        }
    }
    if matched_words.is_empty() && matched_patterns.is_empty() {
        return Outcome::pass();
    }
    let mut out = Outcome::fail("deny-listed content");
    if !matched_words.is_empty() {
        out = out.with("words", matched_words);
    }
    if !matched_patterns.is_empty() {
        out = out.with("patterns", matched_patterns);
    }
    out
}

/// The words of the plugin key-value store's value under `key`: one per line, spaces around them dropped, empty
/// lines skipped. An absent key holds no words: the list may not be filled yet.
fn kv_words(key: &str) -> Vec<String> {
    match gateway_plugin_sdk::kv_get(key) {
        Some(value) => value.lines().map(str::trim).filter(|w| !w.is_empty()).map(String::from).collect(),
        None => Vec::new(),
    }
}

/// Part of a word: a letter, a digit, a combining mark or '_'.
fn is_word(c: char) -> bool {
    is_letter(c) || is_digit(c) || is_mark(c) || c == '_'
}

/// Whether `word` occurs in `text` as a whole word: not preceded or followed by a word character where the word
/// itself begins or ends with one (so "c++" and "u.s." work too). Both are lower case.
fn contains_word(text: &str, word: &str) -> bool {
    let (first, last) = match (word.chars().next(), word.chars().last()) {
        (Some(f), Some(l)) => (f, l),
        _ => return false,
    };
    let mut from = 0;
    while let Some(i) = text[from..].find(word) {
        let (start, end) = (from + i, from + i + word.len());
        let before = text[..start].chars().last();
        let after = text[end..].chars().next();
        if (!is_word(first) || !before.map_or(false, is_word)) && (!is_word(last) || !after.map_or(false, is_word)) {
            return true;
        }
        from = start + text[start..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// Compiled patterns, kept across calls: a check's parameters are the same on every call. Bounded so that
/// varied patterns cannot grow it for ever. An instance runs one call at a time.
#[cfg(target_arch = "wasm32")]
const MAX_COMPILED: usize = 256;
#[cfg(target_arch = "wasm32")]
static mut COMPILED: Option<HashMap<String, Regex>> = None;

fn with_compiled<T>(pattern: &str, f: impl FnOnce(&Regex) -> T) -> Result<T, gateway_plugin_sdk::regex::Error> {
    // Native tests run in threads; a wasm instance has one.
    #[cfg(not(target_arch = "wasm32"))]
    return Regex::new(pattern).map(|re| f(&re));
    #[cfg(target_arch = "wasm32")]
    unsafe {
        let cache = COMPILED.get_or_insert_with(HashMap::new);
        if !cache.contains_key(pattern) {
            let re = Regex::new(pattern)?;
            if cache.len() >= MAX_COMPILED {
                cache.clear();
            }
            cache.insert(pattern.to_string(), re);
        }
        Ok(f(&cache[pattern]))
    }
}

plugin!(check = check);
