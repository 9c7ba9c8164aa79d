// A test guest of registerTransform (transform_test.go), switched on the check's name: "replace" rewrites
// every "cat" in the body to "dog", "same" leaves the body and echoes it in the data, "fail" fails, "error"
// errors with a body (which must be dropped), "array" answers a body that is not a JSON object. Its check
// echoes the body a check sees (none).
import { Input, Outcome, Rewrite, registerCheck, registerTransform } from "../assembly/index";
export { gateway_abi_v1, gateway_abi_version, gateway_alloc, gateway_call, gateway_transform } from "../assembly/index";

function transform(input: Input): Rewrite {
  const name = input.checkName();
  if (name == "replace") {
    return Rewrite.replace(input.body.replaceAll("cat", "dog")).with("stage", input.stage).with("endpoint", input.endpoint);
  }
  if (name == "same") return Rewrite.unchanged().with("body", input.body).with("text", input.text);
  if (name == "fail") return Rewrite.fail("no");
  if (name == "error") {
    const r = Rewrite.replace("{}");
    r.outcome = Outcome.error("cannot");
    return r;
  }
  if (name == "array") return Rewrite.replace("[1,2]");
  return Rewrite.error("unknown transform " + name);
}

registerTransform(transform);
registerCheck((input: Input): Outcome => Outcome.pass().with("body", input.body));
