// The denylist example (examples/denylist in Go) in AssemblyScript: a guardrail failing when the checked text
// contains a deny-listed word (case-insensitive, whole words only) or matches a deny-listed regular expression
// (the SDK's RE2 subset), naming what matched. Parameters: "words" and "patterns", arrays of strings, and "kv", a
// key of the workspace's plugin key-value store whose value holds more words, one per line, read on every call.
import { Input, Outcome, Regexp, compileRegexp, isDigit, isLetter, isMark, kvGet, registerCheck } from "../../assembly/index";
export { gateway_abi_v1, gateway_abi_version, gateway_alloc, gateway_call } from "../../assembly/index";

/**
 * The words of the plugin key-value store's value under key: one per line, spaces around them dropped, empty
 * lines skipped. An absent key holds no words: the list may not be filled yet.
 */
function kvWords(key: string): string[] {
  const out: string[] = [];
  const value = kvGet(key);
  if (value == null) return out;
  const lines = value.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const w = lines[i].trim();
    if (w.length > 0) out.push(w);
  }
  return out;
}

/** Part of a word: a letter, a digit, a combining mark or '_'. */
function isWord(c: u32): bool {
  return isLetter(c) || isDigit(c) || isMark(c) || c == 0x5f;
}

function firstRune(s: string): u32 {
  return <u32>s.codePointAt(0);
}

function lastRune(s: string): u32 {
  const n = s.length;
  const lo = s.charCodeAt(n - 1);
  if (n >= 2 && lo >= 0xdc00 && lo <= 0xdfff) {
    const hi = s.charCodeAt(n - 2);
    if (hi >= 0xd800 && hi <= 0xdbff) return <u32>s.codePointAt(n - 2);
  }
  return <u32>lo;
}

/**
 * Whether word occurs in text as a whole word: not preceded or followed by a word character where the word
 * itself begins or ends with one (so "c++" and "u.s." work too). Both are lower case.
 */
function containsWord(text: string, word: string): bool {
  const first = isWord(firstRune(word));
  const last = isWord(lastRune(word));
  let from = 0;
  while (true) {
    const start = text.indexOf(word, from);
    if (start < 0) return false;
    const end = start + word.length;
    const beforeOK = start == 0 || !first || !isWord(lastRune(text.substring(start - 2 < 0 ? 0 : start - 2, start)));
    const afterOK = end == text.length || !last || !isWord(<u32>text.codePointAt(end));
    if (beforeOK && afterOK) return true;
    from = start + 1;
  }
}

// compiled caches compiled patterns across calls: a check's parameters are the same on every call. It is bounded
// so that varied patterns cannot grow it for ever.
const compiled = new Map<string, Regexp>();
const maxCompiled = 256;

function check(input: Input): Outcome {
  let words: string[] = [];
  let patterns: string[] = [];
  const rawWords = input.param("words");
  if (rawWords != null) {
    const w = input.paramStrings("words");
    if (w == null) return Outcome.error('denylist: parameter "words" must be an array of strings, not ' + rawWords);
    words = w;
  }
  const rawKV = input.param("kv");
  if (rawKV != null) {
    const key = input.paramString("kv");
    if (key == null) return Outcome.error('denylist: parameter "kv" must be a string (a key of the plugin key-value store), not ' + rawKV);
    words = words.concat(kvWords(key));
  }
  const rawPatterns = input.param("patterns");
  if (rawPatterns != null) {
    const p = input.paramStrings("patterns");
    if (p == null) return Outcome.error('denylist: parameter "patterns" must be an array of strings, not ' + rawPatterns);
    patterns = p;
  }
  const matchedWords: string[] = [];
  const matchedPatterns: string[] = [];
  if (words.length > 0) {
    const lower = input.text.toLowerCase();
    for (let i = 0; i < words.length; i++) {
      const w = words[i];
      if (w.length > 0 && containsWord(lower, w.toLowerCase())) matchedWords.push(w);
    }
  }
  for (let i = 0; i < patterns.length; i++) {
    const p = patterns[i];
    let re: Regexp;
    if (compiled.has(p)) {
      re = compiled.get(p);
    } else {
      const c = compileRegexp(p);
      const r = c.regexp;
      if (r == null) return Outcome.error("denylist: pattern " + p + ": " + c.error);
      if (compiled.size >= maxCompiled) compiled.clear();
      compiled.set(p, r);
      re = r;
    }
    if (re.test(input.text)) matchedPatterns.push(p);
  }
  if (matchedWords.length == 0 && matchedPatterns.length == 0) return Outcome.pass();
  const o = Outcome.fail("deny-listed content");
  if (matchedWords.length > 0) o.with("words", matchedWords);
  if (matchedPatterns.length > 0) o.with("patterns", matchedPatterns);
  return o;
}

registerCheck(check);
