// The conformance guest in AssemblyScript (hostapi/testdata/conformance.json): the checks echo, fail, transform,
// error and field, switched on the check's name, and a condition matching metadata route = "yes". The gateway
// runs the golden table against it as against the Go and Rust guests.
import { Input, Json, Outcome, registerCheck, registerCondition, requestField } from "../assembly/index";
export { gateway_abi_v1, gateway_abi_version, gateway_alloc, gateway_call } from "../assembly/index";

function echo(input: Input): Outcome {
  const metadata = Json.object();
  const keys = input.metadataKeys();
  for (let i = 0; i < keys.length; i++) metadata.set(keys[i], input.metadata(keys[i]));
  const params = Json.object();
  const names = input.paramNames();
  for (let i = 0; i < names.length; i++) params.set(names[i], input.param(names[i]));
  return Outcome.pass()
    .with("text", input.text)
    .with("model", input.model)
    .with("stage", input.stage)
    .with("endpoint", input.endpoint)
    .with("tool", input.tool)
    .with("mcp_server", input.mcpServer)
    .with("check_id", input.checkId)
    .with("metadata", metadata)
    .with("params", params);
}

/** ASCII a-z made upper case, every other UTF-16 unit unchanged: one allocation, whatever the length. */
function upperASCII(s: string): string {
  const n = s.length;
  const out = __new(<usize>n << 1, idof<String>());
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    store<u16>(out + (<usize>i << 1), <u16>(c >= 0x61 && c <= 0x7a ? c - 0x20 : c));
  }
  return changetype<string>(out);
}

function check(input: Input): Outcome {
  const name = input.checkName();
  if (name == "echo") return echo(input);
  if (name == "fail") return Outcome.fail("conformance");
  if (name == "transform") return Outcome.transform(upperASCII(input.text));
  if (name == "error") return Outcome.error("conformance error");
  if (name == "field") {
    const path = input.paramString("path");
    if (path == null) return Outcome.error('field: parameter "path" (a string) is required');
    const value = requestField(path);
    return Outcome.pass().with("value", value == null ? Json.null() : Json.raw(value));
  }
  return Outcome.error("unknown check " + name);
}

function route(input: Input): bool {
  const v = input.metadata("route");
  return v != null && v == "yes";
}

registerCheck(check);
registerCondition(route);
