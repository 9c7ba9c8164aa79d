//! The conformance guest in Rust (see /work/shared and hostapi/testdata/conformance.json): the checks echo,
//! fail, transform, error and field, switched on the check's name, and a condition matching metadata
//! route = "yes". The gateway runs the golden table against it as against the Go guest.

use gateway_plugin_sdk::{plugin, request_field, Input, Json, Outcome};

fn check(input: &Input) -> Outcome {
    match input.check_name() {
        "echo" => echo(input),
        "fail" => Outcome::fail("conformance"),
        "transform" => Outcome::transform(input.text.to_ascii_uppercase()),
        "error" => Outcome::error("conformance error"),
        "field" => match input.param_string("path") {
            Some(path) => Outcome::pass().with("value", request_field(&path).map_or(Json::Null, Json::Raw)),
            None => Outcome::error(r#"field: parameter "path" (a string) is required"#),
        },
        name => Outcome::error(format!("unknown check {name}")),
    }
}

fn echo(input: &Input) -> Outcome {
    let mut metadata = Json::object();
    for key in input.metadata_keys() {
        metadata = metadata.set(key, input.metadata(key));
    }
    let mut params = Json::object();
    for name in input.param_names() {
        params = params.set(name, input.param(name));
    }
    Outcome::pass()
        .with("text", input.text)
        .with("model", input.model)
        .with("stage", input.stage)
        .with("endpoint", input.endpoint)
        .with("tool", input.tool)
        .with("mcp_server", input.mcp_server)
        .with("check_id", input.check_id)
        .with("metadata", metadata)
        .with("params", params)
}

fn route(input: &Input) -> bool {
    input.metadata("route") == Some("yes")
}

plugin!(check = check, condition = route);
