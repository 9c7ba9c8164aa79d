// The pii example (examples/pii in Go) in AssemblyScript: finds email addresses, phone numbers and credit-card
// numbers (digit runs that pass the Luhn check) with the Go example's regular expressions (the SDK's RE2 subset
// covers them), and denies the text or redacts them. Parameters: "action" ("deny", the default, or "redact")
// and "types" (an array of "email", "phone", "credit_card"; all three by default).
import { Input, Outcome, Regexp, compileRegexp, registerCheck } from "../../assembly/index";
export { gateway_abi_v1, gateway_abi_version, gateway_alloc, gateway_call } from "../../assembly/index";

const kindEmail = "email";
const kindPhone = "phone";
const kindCreditCard = "credit_card";

const allKinds = [kindCreditCard, kindEmail, kindPhone]; // also the priority when matches overlap

function mustCompile(p: string): Regexp {
  const c = compileRegexp(p);
  const re = c.regexp;
  if (re == null) throw new Error(c.error);
  return re;
}

const emailRE = mustCompile("[\\p{L}\\p{N}._%+-]+@[\\p{L}\\p{N}-]+(?:\\.[\\p{L}\\p{N}-]+)*\\.\\p{L}{2,}");
// cardRE finds 13 to 19 digits, optionally grouped by single spaces or dashes.
const cardRE = mustCompile("\\d(?:[ -]?\\d){12,18}");
// phoneRE finds an optional +country code, an optional (area code), then two to five groups of digits separated
// by a space, dot or dash; isPhone then checks the digit count and shape.
const phoneRE = mustCompile("(?:\\+\\d{1,3}[ .-]?)?(?:\\(\\d{1,4}\\)[ .-]?)?\\d{1,4}(?:[ .-]\\d{2,4}){1,4}|\\+\\d{7,15}|\\d{10}");

/** One finding: text[start:end] (UTF-16 units) is PII of kind. */
class Span {
  constructor(public start: i32, public end: i32, public kind: string) {}
}

function overlaps(spans: Span[], start: i32, end: i32): bool {
  for (let i = 0; i < spans.length; i++) {
    if (start < spans[i].end && spans[i].start < end) return true;
  }
  return false;
}

/** Whether text[start:end] is not glued to a letter, digit, '@' or '_' (not the middle of a longer token). */
function isolated(text: string, start: i32, end: i32): bool {
  return (start == 0 || !glued(text.charCodeAt(start - 1))) && (end == text.length || !glued(text.charCodeAt(end)));
}

function glued(c: i32): bool {
  return (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a) || c == 0x40 || c == 0x5f;
}

function digits(s: string): i32[] {
  const d: i32[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) d.push(c - 0x30);
  }
  return d;
}

/** Whether the digits of s pass the Luhn checksum of payment card numbers. */
function luhn(s: string): bool {
  const d = digits(s);
  if (d.length < 13 || d.length > 19) return false;
  let sum = 0;
  for (let i = 0; i < d.length; i++) {
    let v = d[d.length - 1 - i];
    if (i % 2 == 1) {
      v *= 2;
      if (v > 9) v -= 9;
    }
    sum += v;
  }
  return sum % 10 == 0;
}

/**
 * Whether a phoneRE match looks like a phone number rather than a date, a version or an amount: 7 to 15 digits,
 * and a leading + or (area code), or a last group of at least 4 digits, or a plain run of digits.
 */
function isPhone(s: string): bool {
  const n = digits(s).length;
  if (n < 7 || n > 15) return false;
  if (s.charCodeAt(0) == 0x2b || s.startsWith("(") || n == s.length) return true;
  let cut = -1;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c == 0x20 || c == 0x2e || c == 0x2d) cut = i;
  }
  return s.length - (cut + 1) >= 4;
}

/** The PII of the given kinds, sorted by position and without overlaps (card over email over phone). */
function find(text: string, kinds: string[]): Span[] {
  const spans: Span[] = [];
  for (let k = 0; k < allKinds.length; k++) {
    const kind = allKinds[k];
    if (!kinds.includes(kind)) continue;
    const re = kind == kindEmail ? emailRE : kind == kindPhone ? phoneRE : cardRE;
    const matches = re.findAll(text);
    for (let i = 0; i < matches.length; i++) {
      const m = matches[i];
      if (!isolated(text, m.start, m.end)) continue;
      const s = text.substring(m.start, m.end);
      if (kind == kindPhone && !isPhone(s)) continue;
      if (kind == kindCreditCard && !luhn(s)) continue;
      if (overlaps(spans, m.start, m.end)) continue;
      spans.push(new Span(m.start, m.end, kind));
    }
  }
  spans.sort((a: Span, b: Span): i32 => a.start - b.start);
  return spans;
}

/** text with each span replaced by [REDACTED_<KIND>]. */
function redact(text: string, spans: Span[]): string {
  const parts: string[] = [];
  let at = 0;
  for (let i = 0; i < spans.length; i++) {
    parts.push(text.substring(at, spans[i].start));
    parts.push("[REDACTED_" + spans[i].kind.toUpperCase() + "]");
    at = spans[i].end;
  }
  parts.push(text.substring(at));
  return parts.join("");
}

function check(input: Input): Outcome {
  let action = "deny";
  const rawAction = input.param("action");
  if (rawAction != null) {
    const a = input.paramString("action");
    if (a == null || (a != "deny" && a != "redact")) {
      return Outcome.error('pii: parameter "action" must be "deny" or "redact", not ' + rawAction);
    }
    action = a;
  }
  let kinds = allKinds;
  const rawTypes = input.param("types");
  if (rawTypes != null) {
    const t = input.paramStrings("types");
    if (t == null) return Outcome.error('pii: parameter "types" must be an array of strings, not ' + rawTypes);
    for (let i = 0; i < t.length; i++) {
      if (!allKinds.includes(t[i])) return Outcome.error('pii: unknown type "' + t[i] + '" (want email, phone or credit_card)');
    }
    kinds = t;
  }
  const spans = find(input.text, kinds);
  if (spans.length == 0) return Outcome.pass();
  const found = new Map<string, i32>();
  for (let i = 0; i < spans.length; i++) {
    const k = spans[i].kind;
    found.set(k, found.has(k) ? found.get(k) + 1 : 1);
  }
  if (action == "deny") return Outcome.fail("PII detected").with("found", found);
  return Outcome.transform(redact(input.text, spans)).with("redacted", found);
}

registerCheck(check);
