//! The input of a call, as a handler sees it.

use crate::json;
use crate::wire::WireInput;

/// What the gateway asks a check or a condition about. The strings live as long as the call.
///
/// `endpoint` says what is checked: "chat", "completions" or "embeddings" for a model request (`stage` "before":
/// `text` is the messages' text; "after": the answer's text), "mcp" for a tool call (`tool` and `mcp_server` set,
/// `text` the arguments' JSON or the result's text). A routing condition has `stage` "condition" and no
/// `check_id`.
#[derive(Debug, Clone, Default)]
pub struct Input<'a> {
    pub text: &'a str,
    pub model: &'a str,
    /// `<plugin>.<name>`, e.g. "pii.detect"; empty for a condition.
    pub check_id: &'a str,
    pub stage: &'a str,
    pub endpoint: &'a str,
    pub tool: &'a str,
    pub mcp_server: &'a str,
    /// The JSON body a transform rewrites (`plugin!(transform = ...)`): the request in OpenAI's shape (stage
    /// "before") or the whole answer (stage "after"); empty for checks and conditions.
    pub body: &'a [u8],
    metadata: Vec<(&'a str, &'a str)>,
    params: Vec<(&'a str, &'a str)>,
}

fn lookup<'a>(kv: &[(&'a str, &'a str)], key: &str) -> Option<&'a str> {
    kv.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

fn keys<'a>(kv: &[(&'a str, &'a str)]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::with_capacity(kv.len());
    for (k, _) in kv {
        if !out.contains(k) {
            out.push(k);
        }
    }
    out
}

impl<'a> Input<'a> {
    /// Borrows an Input from a decoded wire input.
    pub fn new(w: &'a WireInput<'_>) -> Input<'a> {
        let pairs = |kv: &'a [(std::borrow::Cow<'_, str>, std::borrow::Cow<'_, str>)]| -> Vec<(&'a str, &'a str)> {
            kv.iter().map(|(k, v)| (&**k, &**v)).collect()
        };
        Input {
            text: &w.text,
            model: &w.model,
            check_id: &w.check_id,
            stage: &w.stage,
            endpoint: &w.endpoint,
            tool: &w.tool,
            mcp_server: &w.mcp_server,
            body: &w.body,
            metadata: pairs(&w.metadata),
            params: pairs(&w.params),
        }
    }

    /// The check's name: what follows the first dot of `check_id` ("detect" in "pii.detect"), or "" when none.
    pub fn check_name(&self) -> &'a str {
        self.check_id.split_once('.').map_or("", |(_, name)| name)
    }

    /// Whether the call checks an MCP tool call.
    pub fn is_tool_call(&self) -> bool {
        self.endpoint == "mcp"
    }

    /// The first value of metadata `key`.
    pub fn metadata(&self, key: &str) -> Option<&'a str> {
        lookup(&self.metadata, key)
    }

    /// The metadata keys, in the order sent, each once.
    pub fn metadata_keys(&self) -> Vec<&'a str> {
        keys(&self.metadata)
    }

    /// Every metadata entry, in the order sent (a key may repeat).
    pub fn metadata_pairs(&self) -> &[(&'a str, &'a str)] {
        &self.metadata
    }

    /// The parameter names, in the order sent, each once.
    pub fn param_names(&self) -> Vec<&'a str> {
        keys(&self.params)
    }

    /// The JSON text of parameter `name` as configured (`10`, `"abc"`, `["a","b"]`).
    pub fn param(&self, name: &str) -> Option<&'a str> {
        lookup(&self.params, name)
    }

    /// Parameter `name` when it is a JSON string.
    pub fn param_string(&self, name: &str) -> Option<String> {
        json::json_string(self.param(name)?)
    }

    /// Parameter `name` when it is a JSON number.
    pub fn param_f64(&self, name: &str) -> Option<f64> {
        json::json_number(self.param(name)?)?.parse().ok()
    }

    /// Parameter `name` when it is a JSON number with an integer value that fits an i64 (10 and 1e3 do, 1.5
    /// does not).
    pub fn param_i64(&self, name: &str) -> Option<i64> {
        json::number_i64(json::json_number(self.param(name)?)?)
    }

    /// Parameter `name` when it is `true` or `false`.
    pub fn param_bool(&self, name: &str) -> Option<bool> {
        json::json_bool(self.param(name)?)
    }

    /// Parameter `name` when it is a JSON array of strings.
    pub fn param_strings(&self, name: &str) -> Option<Vec<String>> {
        json::json_strings(self.param(name)?)
    }
}
