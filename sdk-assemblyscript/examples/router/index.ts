// The router example (examples/router in Go) in AssemblyScript: a routing condition matching a request whose
// prompt is long (parameter "min_chars"), whose prompt does not look English ("non_english", default true), or
// that asks for many output tokens ("min_max_tokens", read from the request with request_field).
import { Input, Level, Some, isLatin, isLetter, log, registerCondition, requestField } from "../../assembly/index";
export { gateway_abi_v1, gateway_abi_version, gateway_alloc, gateway_call } from "../../assembly/index";

// Thresholds of the language heuristic, as in the Go example.
// nonLatinShare: the share of letters outside the Latin script from which a text is not English.
const nonLatinShare = 0.3;
// accentedShare and minAccented: a Latin-script text with at least minAccented letters outside ASCII making up
// at least accentedShare of its letters is not English.
const accentedShare = 0.04;
const minAccented = 2;

/** Characters (code points), not UTF-16 units: an astral character counts once, as in Go. */
function runeCount(s: string): i32 {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xdc00 || c > 0xdfff || i == 0 || s.charCodeAt(i - 1) < 0xd800 || s.charCodeAt(i - 1) > 0xdbff) n++;
  }
  return n;
}

/** Why text does not look English ("non-Latin script", "accented Latin letters"), or "" when it may be. */
function script(text: string): string {
  let letters = 0;
  let nonLatin = 0;
  let accented = 0;
  for (let i = 0; i < text.length; ) {
    const c = <u32>text.codePointAt(i);
    i += c >= 0x10000 ? 2 : 1;
    if (!isLetter(c)) continue;
    letters++;
    if (!isLatin(c)) {
      nonLatin++;
    } else if (c >= 0x80) {
      accented++;
    }
  }
  if (letters == 0) return "";
  if (<f64>nonLatin >= nonLatinShare * <f64>letters) return "non-Latin script";
  if (accented >= minAccented && <f64>accented >= accentedShare * <f64>letters) return "accented Latin letters";
  return "";
}

/** A base-10 integer as Go's strconv.ParseInt(s, 10, 64) reads it (an optional sign, digits only), or null. */
function parseDecimal(s: string): Some<i64> | null {
  const neg = s.startsWith("-");
  const from = neg || s.startsWith("+") ? 1 : 0;
  if (from == s.length || s.length - from > 19) return null;
  let v: i64 = 0;
  for (let i = from; i < s.length; i++) {
    const d = s.charCodeAt(i) - 0x30;
    if (d < 0 || d > 9) return null;
    v = v * 10 + d;
    if (v < 0) return null; // past i64
  }
  return new Some<i64>(neg ? -v : v);
}

function match(input: Input): bool {
  const minChars = input.paramInt("min_chars");
  if (minChars != null) {
    const n = runeCount(input.text);
    if (<i64>n > minChars.value) {
      log(Level.Debug, "router: prompt has " + n.toString() + " characters, more than min_chars");
      return true;
    }
  }
  const on = input.paramBool("non_english");
  if (on == null || on.value) {
    const lang = script(input.text);
    if (lang != "") {
      log(Level.Debug, "router: prompt looks non-English (" + lang + ")");
      return true;
    }
  }
  const minMaxTokens = input.paramInt("min_max_tokens");
  if (minMaxTokens != null) {
    // max_tokens is not in the Input: read it from the request (host function request_field).
    const raw = requestField("params.max_tokens");
    if (raw != null) {
      const n = parseDecimal(raw);
      if (n != null && n.value >= minMaxTokens.value) {
        log(Level.Debug, "router: max_tokens " + raw + " is at least min_max_tokens");
        return true;
      }
    }
  }
  return false;
}

registerCondition(match);
