// A test guest of kvGet (kv_test.go): fails with data {"value": ...} when the key named by the "key" parameter
// holds a value, passes when it is absent.
import { Input, Outcome, kvGet, registerCheck } from "../assembly/index";
export { gateway_abi_v1, gateway_abi_version, gateway_alloc, gateway_call } from "../assembly/index";

registerCheck((input: Input): Outcome => {
  const key = input.paramString("key");
  if (key === null) return Outcome.error("kvguest: parameter \"key\" is required");
  const value = kvGet(key);
  if (value === null) return Outcome.pass();
  return Outcome.fail("found").with<string>("value", value);
});
