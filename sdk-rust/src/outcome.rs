//! What a check returns.

use crate::json::{set_entry, Json};

/// A check's result: pass or fail, JSON data shown in hook_results, an optional transformed text, or an error
/// (a check that could not decide; it counts as passed unless the check says "failOnError").
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct Outcome {
    pub pass: bool,
    /// The data object's entries; written with the keys sorted.
    pub data: Option<Vec<(String, Json)>>,
    pub transformed_text: Option<String>,
    pub error: Option<String>,
}

impl Outcome {
    /// A pass, without data.
    pub fn pass() -> Outcome {
        Outcome { pass: true, data: None, transformed_text: None, error: None }
    }

    /// A fail with data `{"reason": reason}`.
    pub fn fail(reason: impl Into<String>) -> Outcome {
        Outcome { pass: false, data: Some(vec![("reason".to_string(), Json::Str(reason.into()))]), transformed_text: None, error: None }
    }

    /// A pass that replaces the checked text with `text` (an empty text is a valid transformation).
    pub fn transform(text: impl Into<String>) -> Outcome {
        Outcome { transformed_text: Some(text.into()), ..Outcome::pass() }
    }

    /// A check error with message `msg`.
    pub fn error(msg: impl Into<String>) -> Outcome {
        let mut msg = msg.into();
        if msg.is_empty() {
            msg = "error".to_string();
        }
        Outcome { pass: false, data: None, transformed_text: None, error: Some(msg) }
    }

    /// Sets `key` in the data object (replacing an earlier value).
    pub fn with(mut self, key: impl Into<String>, value: impl Into<Json>) -> Outcome {
        set_entry(self.data.get_or_insert_with(Vec::new), key.into(), value.into());
        self
    }
}

impl<E: std::fmt::Display> From<Result<Outcome, E>> for Outcome {
    fn from(r: Result<Outcome, E>) -> Outcome {
        r.unwrap_or_else(|e| Outcome::error(e.to_string()))
    }
}
