//! Transforms: what a mutator hook calls through gateway_transform (ABI v1.1). A transform gets the JSON body in
//! `Input::body` (the request in OpenAI's shape before the provider call, the whole answer after it) and answers
//! with a `Rewrite`: the body unchanged, or replaced by one JSON object.

use crate::input::Input;
use crate::json::Json;
use crate::outcome::Outcome;
use crate::wire::{self, WireInput, WireOutput};

/// A transform handler: `plugin!(transform = my_transform)`.
pub type TransformFn = fn(&Input<'_>) -> Rewrite;

/// What a transform returns: the verdict, data and error of an Outcome (a failing rewrite fails its hook), and
/// the replacement body, if any.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct Rewrite {
    pub outcome: Outcome,
    /// One JSON object, at most twice the size of the body given; None leaves the body as it was.
    pub body: Option<Vec<u8>>,
}

impl Rewrite {
    /// A pass that leaves the body as it was.
    pub fn unchanged() -> Rewrite {
        Rewrite { outcome: Outcome::pass(), body: None }
    }

    /// A pass that replaces the body with `body`, one JSON object.
    pub fn replace(body: impl Into<Vec<u8>>) -> Rewrite {
        Rewrite { outcome: Outcome::pass(), body: Some(body.into()) }
    }

    /// A fail with data `{"reason": reason}`; the body is left as it was.
    pub fn fail(reason: impl Into<String>) -> Rewrite {
        Rewrite { outcome: Outcome::fail(reason), body: None }
    }

    /// A check error with message `msg`; the body is left as it was.
    pub fn error(msg: impl Into<String>) -> Rewrite {
        Rewrite { outcome: Outcome::error(msg), body: None }
    }

    /// Sets `key` in the data object shown in hook_results.
    pub fn with(mut self, key: impl Into<String>, value: impl Into<Json>) -> Rewrite {
        self.outcome = self.outcome.with(key, value);
        self
    }
}

/// Runs the transform on the encoded input `b` (a call of `kind`, which must be KIND_TRANSFORM) and appends the
/// encoded Output to `out`.
pub fn dispatch_transform(kind: i32, b: &[u8], transform: TransformFn, out: &mut Vec<u8>) {
    if kind != wire::KIND_TRANSFORM {
        return crate::abi::error_output(out, &format!("sdk: gateway_transform called with kind {kind}"));
    }
    let decoded = match wire::decode_input(b) {
        Ok(d) => d,
        Err(e) => return crate::abi::error_output(out, &format!("sdk: {e}")),
    };
    let rewrite = transform(&Input::new(&decoded));
    let start = out.len();
    crate::abi::write_outcome(out, &rewrite.outcome);
    if let (Some(body), None) = (&rewrite.body, &rewrite.outcome.error) {
        // write_outcome may have replaced the outcome with an encoding error: only a pass or fail carries a body.
        if wire::decode_output(&out[start..]).map_or(false, |o| o.error.is_empty()) {
            wire::append_field(out, wire::TAG_TRANSFORMED_BODY, body);
        }
    }
}

/// Runs a transform exactly as gateway_transform does and returns the Output decoded: for native tests.
pub fn run_transform(input: &WireInput<'_>, transform: TransformFn) -> WireOutput {
    let mut b = Vec::new();
    wire::encode_input(&mut b, input);
    let mut out = Vec::new();
    dispatch_transform(wire::KIND_TRANSFORM, &b, transform, &mut out);
    wire::decode_output(&out).expect("the SDK's own encoding decodes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn cap(input: &Input) -> Rewrite {
        match input.check_name() {
            "same" => Rewrite::unchanged().with("seen", input.check_id),
            "fail" => Rewrite::fail("no"),
            "error" => Rewrite::error("cannot"),
            _ => Rewrite::replace(format!("{{\"len\":{}}}", input.body.len())),
        }
    }

    fn input(check: &'static str) -> WireInput<'static> {
        WireInput { check_id: Cow::Borrowed(check), body: Cow::Borrowed(b"{\"model\":\"m\"}"), ..Default::default() }
    }

    #[test]
    fn transforms() {
        let out = run_transform(&input("x.replace"), cap);
        assert_eq!((out.verdict, out.body.as_deref()), (true, Some(&b"{\"len\":13}"[..])));
        let out = run_transform(&input("x.same"), cap);
        assert_eq!((out.body, out.data.as_deref()), (None, Some(&b"{\"seen\":\"x.same\"}"[..])));
        let out = run_transform(&input("x.fail"), cap);
        assert!(!out.verdict && out.body.is_none());
        let out = run_transform(&input("x.error"), cap);
        assert_eq!((out.error.as_str(), out.body), ("cannot", None));
        let mut b = Vec::new();
        wire::encode_input(&mut b, &input("x.replace"));
        let mut o = Vec::new();
        dispatch_transform(wire::KIND_CHECK, &b, cap, &mut o);
        assert!(wire::decode_output(&o).unwrap().error.contains("kind 1"));
    }
}

#[cfg(test)]
mod macro_tests {
    use crate::wire::WireInput;
    use crate::{Input, Outcome, Rewrite};
    use std::borrow::Cow;

    fn check(_: &Input) -> Outcome {
        Outcome::pass().with("check", true)
    }

    fn echo_body(input: &Input) -> Rewrite {
        Rewrite::replace(input.body.to_vec())
    }

    crate::plugin!(transform = echo_body, check = check);

    #[test]
    fn plugin_names_a_transform_in_any_order() {
        let input = WireInput { body: Cow::Borrowed(b"{\"a\":1}"), ..Default::default() };
        assert_eq!(run_transform(&input).body.as_deref(), Some(&b"{\"a\":1}"[..]));
        assert_eq!(run_check(&input).data.as_deref(), Some(&b"{\"check\":true}"[..]));
        assert!(run_condition(&input).error.contains("registers no condition"));
    }
}
