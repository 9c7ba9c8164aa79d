// Regular expressions for plugins, since AssemblyScript's std has none: a subset of Go's RE2 syntax, matched in
// linear time by a Pike VM with Go's leftmost-first semantics (the first alternative wins, as in regexp.Find).
//
// Covered: literals, ".", character classes [a-z], [^...] with ranges and escapes, \d \D \w \W \s \S (ASCII, as
// in RE2), \p{L} \p{N} \p{Nd} \p{Latin} (\pL, \pN, \P{...} negated; the tables of unicode.ts), groups (...),
// (?:...), (?P<name>...), (?<name>...), flags (?i) (?m) (?s) (?U) and (?flags:...), alternation |, repetition
// * + ? {n} {n,} {n,m} (up to 1000) and their lazy forms, anchors ^ $ \A \z, word boundaries \b \B, escapes
// \n \t \r \f \v \a \x41 \x{263a} and escaped punctuation. Not covered (compile errors, never silently wrong):
// backreferences and look-around (RE2 has none either), [[:alpha:]] classes, \Q...\E, other \p classes.
// Errors read as Go's: "error parsing regexp: missing closing ): `a(b`".
import { isDigit, isLatin, isLetter, isNumber, toLowerRune, toUpperRune } from "./unicode";

const MAX_REPEAT = 1000;
const MAX_PROGRAM = 20000;

// Node kinds of the parse tree.
const N_EMPTY = 0;
const N_CHAR = 1;
const N_CLASS = 2;
const N_ANY = 3; // any character but \n
const N_ANY_NL = 4; // any character
const N_ASSERT = 5;
const N_CAT = 6;
const N_ALT = 7;
const N_REPEAT = 8;

// Assertions.
const A_BEGIN_TEXT = 0;
const A_END_TEXT = 1;
const A_BEGIN_LINE = 2;
const A_END_LINE = 3;
const A_WORD = 4;
const A_NOT_WORD = 5;

// Flags of a class beyond its ranges: Unicode classes too large to list.
const C_LETTER = 1;
const C_NOT_LETTER = 2;
const C_NUMBER = 4;
const C_NOT_NUMBER = 8;
const C_DIGIT = 16;
const C_NOT_DIGIT = 32;
const C_LATIN = 64;
const C_NOT_LATIN = 128;

const F_FOLD: u32 = 1; // i
const F_MULTILINE: u32 = 2; // m
const F_DOT_NL: u32 = 4; // s
const F_UNGREEDY: u32 = 8; // U

class CharClass {
  ranges: u32[] = []; // [lo, hi] pairs, not sorted
  flags: i32 = 0;
  negate: bool = false;
  fold: bool = false;

  add(lo: u32, hi: u32): void {
    this.ranges.push(lo);
    this.ranges.push(hi);
  }

  /** Adds the complement of the pairs in r (sorted, disjoint). */
  addComplement(r: u32[]): void {
    let next: u32 = 0;
    for (let i = 0; i < r.length; i += 2) {
      if (r[i] > next) this.add(next, r[i] - 1);
      next = r[i + 1] + 1;
    }
    this.add(next, 0x10ffff);
  }

  hasExact(c: u32): bool {
    const r = this.ranges;
    for (let i = 0; i < r.length; i += 2) {
      if (c >= unchecked(r[i]) && c <= unchecked(r[i + 1])) return true;
    }
    const f = this.flags;
    if (f == 0) return false;
    if ((f & C_LETTER) && isLetter(c)) return true;
    if ((f & C_NOT_LETTER) && !isLetter(c)) return true;
    if ((f & C_NUMBER) && isNumber(c)) return true;
    if ((f & C_NOT_NUMBER) && !isNumber(c)) return true;
    if ((f & C_DIGIT) && isDigit(c)) return true;
    if ((f & C_NOT_DIGIT) && !isDigit(c)) return true;
    if ((f & C_LATIN) && isLatin(c)) return true;
    if ((f & C_NOT_LATIN) && !isLatin(c)) return true;
    return false;
  }

  has(c: u32): bool {
    let in_ = this.hasExact(c);
    if (!in_ && this.fold) in_ = this.hasExact(toLowerRune(c)) || this.hasExact(toUpperRune(c));
    return in_ != this.negate;
  }
}

class Node {
  kind: i32 = N_EMPTY;
  c: u32 = 0;
  fold: bool = false;
  cls: CharClass | null = null;
  subs: Node[] = [];
  min: i32 = 0;
  max: i32 = -1; // -1: no upper bound
  greedy: bool = true;

  static of(kind: i32): Node {
    const n = new Node();
    n.kind = kind;
    return n;
  }
}

const DIGIT_RANGES: u32[] = [0x30, 0x39];
const WORD_RANGES: u32[] = [0x30, 0x39, 0x41, 0x5a, 0x5f, 0x5f, 0x61, 0x7a];
const SPACE_RANGES: u32[] = [0x09, 0x0a, 0x0c, 0x0d, 0x20, 0x20];

/** Parses a pattern into a Node tree; error is set (Go's message) when it fails. */
class Parser {
  pos: i32 = 0;
  flags: u32 = 0;
  error: string = "";

  constructor(public src: string) {}

  fail(code: string, arg: string): Node {
    if (this.error.length == 0) this.error = "error parsing regexp: " + code + ": `" + arg + "`";
    return new Node();
  }

  more(): bool {
    return this.pos < this.src.length;
  }

  peek(): u32 {
    return <u32>this.src.codePointAt(this.pos);
  }

  next(): u32 {
    const c = this.peek();
    this.pos += c >= 0x10000 ? 2 : 1;
    return c;
  }

  parseAlt(depth: i32): Node {
    const alts: Node[] = [this.parseConcat(depth)];
    while (this.error.length == 0 && this.more() && this.peek() == 0x7c) {
      this.pos++;
      alts.push(this.parseConcat(depth));
    }
    if (alts.length == 1) return alts[0];
    const n = Node.of(N_ALT);
    n.subs = alts;
    return n;
  }

  parseConcat(depth: i32): Node {
    const n = Node.of(N_CAT);
    while (this.error.length == 0 && this.more()) {
      const c = this.peek();
      if (c == 0x7c) break;
      if (c == 0x29) {
        if (depth == 0) return this.fail("unexpected )", this.src);
        break;
      }
      const atom = this.parseAtom(depth);
      if (atom == null) continue; // a flag group: it changed the flags of what follows
      n.subs.push(this.parseRepeats(atom));
    }
    return n;
  }

  /** The repetition at pos (min, max; max -1 for none) or null when there is none; {..} that is not a valid
   * repetition is a literal, as in Go. */
  repeatAt(): i32[] | null {
    const c = this.peek();
    if (c == 0x2a) return [0, -1, 1];
    if (c == 0x2b) return [1, -1, 1];
    if (c == 0x3f) return [0, 1, 1];
    if (c != 0x7b) return null;
    const s = this.src;
    let i = this.pos + 1;
    const digits = (from: i32, s: string): i32 => {
      let j = from;
      while (j < s.length && s.charCodeAt(j) >= 0x30 && s.charCodeAt(j) <= 0x39) j++;
      return j;
    };
    let j = digits(i, s);
    if (j == i || j - i > 8) return null;
    const min = I32.parseInt(s.substring(i, j));
    let max = min;
    if (j < s.length && s.charCodeAt(j) == 0x2c) {
      i = j + 1;
      j = digits(i, s);
      if (j - i > 8) return null;
      max = j == i ? -1 : I32.parseInt(s.substring(i, j));
    }
    if (j >= s.length || s.charCodeAt(j) != 0x7d) return null;
    return [min, max, j + 1 - this.pos];
  }

  parseRepeats(atom: Node): Node {
    let repeated = false;
    while (this.error.length == 0 && this.more()) {
      const r = this.repeatAt();
      if (r == null) break;
      const start = this.pos;
      this.pos += r[2];
      let greedy = (this.flags & F_UNGREEDY) == 0;
      if (this.more() && this.peek() == 0x3f) {
        this.pos++;
        greedy = !greedy;
      }
      const text = this.src.substring(start, this.pos);
      if (repeated) return this.fail("invalid nested repetition operator", this.src.substring(start - 1, this.pos));
      if (r[0] > MAX_REPEAT || r[1] > MAX_REPEAT || (r[1] >= 0 && r[1] < r[0])) return this.fail("invalid repeat count", text);
      const n = Node.of(N_REPEAT);
      n.subs = [atom];
      n.min = r[0];
      n.max = r[1];
      n.greedy = greedy;
      atom = n;
      repeated = true;
    }
    return atom;
  }

  /** Reads (?flags) or (?flags:; returns the flags to apply and whether a group follows, or sets error. */
  parseFlags(start: i32): i32 {
    let flags = this.flags;
    let negate = false;
    let sawFlag = false;
    while (this.more()) {
      const c = this.next();
      let f: u32 = 0;
      if (c == 0x69) f = F_FOLD;
      else if (c == 0x6d) f = F_MULTILINE;
      else if (c == 0x73) f = F_DOT_NL;
      else if (c == 0x55) f = F_UNGREEDY;
      else if (c == 0x2d && !negate) {
        negate = true;
        sawFlag = false;
        continue;
      } else if ((c == 0x29 || c == 0x3a) && (sawFlag || !negate)) {
        if (c == 0x29 && !sawFlag && !negate) break;
        this.flags = flags;
        return c == 0x3a ? 1 : 0;
      } else {
        break;
      }
      flags = negate ? flags & ~f : flags | f;
      sawFlag = true;
    }
    this.fail("invalid or unsupported Perl syntax", this.src.substring(start, this.pos));
    return -1;
  }

  /** An atom, or null for a flag group that only changed the flags. */
  parseAtom(depth: i32): Node | null {
    const start = this.pos;
    const c = this.next();
    switch (c) {
      case 0x28: { // (
        const saved = this.flags;
        if (this.more() && this.peek() == 0x3f) {
          this.pos++;
          const s = this.src;
          if (s.startsWith("P<", this.pos) || s.startsWith("<", this.pos)) {
            const close = s.indexOf(">", this.pos);
            if (close < 0) return this.fail("invalid named capture", s.substring(start));
            this.pos = close + 1;
          } else {
            const group = this.parseFlags(start);
            if (group < 0) return new Node();
            if (group == 0) return null; // (?i): applies to the rest of the enclosing group
          }
        }
        const inner = this.parseAlt(depth + 1);
        if (this.error.length > 0) return inner;
        if (!this.more() || this.peek() != 0x29) return this.fail("missing closing )", this.src);
        this.pos++;
        this.flags = saved;
        return inner.kind == N_EMPTY ? Node.of(N_CAT) : inner;
      }
      case 0x5b: return this.parseClass(start);
      case 0x2e: return Node.of(this.flags & F_DOT_NL ? N_ANY_NL : N_ANY);
      case 0x5e: return this.assertion(this.flags & F_MULTILINE ? A_BEGIN_LINE : A_BEGIN_TEXT);
      case 0x24: return this.assertion(this.flags & F_MULTILINE ? A_END_LINE : A_END_TEXT);
      case 0x2a:
      case 0x2b:
      case 0x3f:
        return this.fail("missing argument to repetition operator", this.src.substring(start, this.pos));
      case 0x7b: {
        this.pos = start;
        if (this.repeatAt() != null) {
          const r = this.repeatAt()!;
          return this.fail("missing argument to repetition operator", this.src.substring(start, start + r[2]));
        }
        this.pos++;
        return this.literal(c);
      }
      case 0x5c: return this.parseEscape(start, false);
    }
    return this.literal(c);
  }

  assertion(kind: i32): Node {
    const n = Node.of(N_ASSERT);
    n.c = kind;
    return n;
  }

  literal(c: u32): Node {
    const n = Node.of(N_CHAR);
    n.c = c;
    n.fold = (this.flags & F_FOLD) != 0 && toLowerRune(c) != toUpperRune(c);
    return n;
  }

  classNode(cls: CharClass): Node {
    const n = Node.of(N_CLASS);
    cls.fold = (this.flags & F_FOLD) != 0;
    n.cls = cls;
    return n;
  }

  /** Adds the class of escape letter e (d, w, s, p, P and their negations) to cls; false when e is none. */
  addClassEscape(e: u32, cls: CharClass, start: i32): bool {
    switch (e) {
      case 0x64: cls.add(0x30, 0x39); return true;
      case 0x44: cls.addComplement(DIGIT_RANGES); return true;
      case 0x77: for (let i = 0; i < WORD_RANGES.length; i += 2) cls.add(WORD_RANGES[i], WORD_RANGES[i + 1]); return true;
      case 0x57: cls.addComplement(WORD_RANGES); return true;
      case 0x73: for (let i = 0; i < SPACE_RANGES.length; i += 2) cls.add(SPACE_RANGES[i], SPACE_RANGES[i + 1]); return true;
      case 0x53: cls.addComplement(SPACE_RANGES); return true;
      case 0x70:
      case 0x50: {
        let name = "";
        if (this.more() && this.peek() == 0x7b) {
          const close = this.src.indexOf("}", this.pos);
          if (close < 0) {
            this.fail("invalid character class range", this.src.substring(start));
            return true;
          }
          name = this.src.substring(this.pos + 1, close);
          this.pos = close + 1;
        } else if (this.more()) {
          name = String.fromCodePoint(this.next());
        }
        let negate = e == 0x50;
        if (name.startsWith("^")) {
          negate = !negate;
          name = name.substring(1);
        }
        let flag = 0;
        if (name == "L") flag = negate ? C_NOT_LETTER : C_LETTER;
        else if (name == "N") flag = negate ? C_NOT_NUMBER : C_NUMBER;
        else if (name == "Nd") flag = negate ? C_NOT_DIGIT : C_DIGIT;
        else if (name == "Latin") flag = negate ? C_NOT_LATIN : C_LATIN;
        else {
          this.fail("invalid character class range", this.src.substring(start, this.pos));
          return true;
        }
        cls.flags |= flag;
        return true;
      }
    }
    return false;
  }

  /** A single-character escape's character (after the backslash), or -1 with error set. */
  escapeChar(e: u32, start: i32): i64 {
    switch (e) {
      case 0x6e: return 0x0a;
      case 0x74: return 0x09;
      case 0x72: return 0x0d;
      case 0x66: return 0x0c;
      case 0x76: return 0x0b;
      case 0x61: return 0x07;
      case 0x78: { // \x41, \x{263a}
        const s = this.src;
        let hex = "";
        if (this.more() && this.peek() == 0x7b) {
          const close = s.indexOf("}", this.pos);
          if (close < 0) break;
          hex = s.substring(this.pos + 1, close);
          this.pos = close + 1;
        } else {
          hex = s.substring(this.pos, this.pos + 2);
          this.pos += 2;
        }
        if (hex.length == 0 || hex.length > 6) break;
        let v: i64 = 0;
        for (let i = 0; i < hex.length; i++) {
          const h = hex.charCodeAt(i);
          const d = h >= 0x30 && h <= 0x39 ? h - 0x30 : (h | 0x20) >= 0x61 && (h | 0x20) <= 0x66 ? (h | 0x20) - 0x61 + 10 : -1;
          if (d < 0) {
            v = -1;
            break;
          }
          v = v * 16 + d;
        }
        if (v < 0 || v > 0x10ffff) break;
        return v;
      }
      default:
        // Punctuation escapes itself; an escaped letter or digit means something else, unsupported here.
        if (e < 0x80 && !((e | 0x20) >= 0x61 && (e | 0x20) <= 0x7a) && !(e >= 0x30 && e <= 0x39)) return e;
    }
    this.fail("invalid escape sequence", this.src.substring(start, this.pos));
    return -1;
  }

  parseEscape(start: i32, inClass: bool): Node {
    if (!this.more()) return this.fail("trailing backslash at end of expression", "");
    const e = this.next();
    if (!inClass) {
      if (e == 0x62) return this.assertion(A_WORD);
      if (e == 0x42) return this.assertion(A_NOT_WORD);
      if (e == 0x41) return this.assertion(A_BEGIN_TEXT);
      if (e == 0x7a) return this.assertion(A_END_TEXT);
    }
    const cls = new CharClass();
    if (this.addClassEscape(e, cls, start)) return this.classNode(cls);
    const c = this.escapeChar(e, start);
    return c < 0 ? new Node() : this.literal(<u32>c);
  }

  /** A class member's single character at pos (a literal or an escape), or -1; classEscape set when the member
   * was a class escape (\d, \pL), added to cls. */
  classChar(cls: CharClass, start: i32): i64 {
    const at = this.pos;
    const c = this.next();
    if (c != 0x5c) return c;
    if (!this.more()) {
      this.fail("missing closing ]", this.src.substring(start));
      return -1;
    }
    const e = this.next();
    if (this.addClassEscape(e, cls, at)) return -2;
    return this.escapeChar(e, at);
  }

  parseClass(start: i32): Node {
    const cls = new CharClass();
    if (this.more() && this.peek() == 0x5e) {
      this.pos++;
      cls.negate = true;
    }
    let first = true;
    while (true) {
      if (this.error.length > 0) return new Node();
      if (!this.more()) return this.fail("missing closing ]", this.src.substring(start));
      const c0 = this.peek();
      if (c0 == 0x5d && !first) {
        this.pos++;
        break;
      }
      first = false;
      if (c0 == 0x5b && this.src.startsWith("[:", this.pos)) {
        return this.fail("invalid character class range", this.src.substring(this.pos, this.src.indexOf("]", this.pos) + 1));
      }
      const memberStart = this.pos;
      const lo = this.classChar(cls, start);
      if (lo == -1) return new Node();
      if (lo == -2) continue;
      let hi = lo;
      if (this.pos + 1 < this.src.length && this.peek() == 0x2d && this.src.charCodeAt(this.pos + 1) != 0x5d) {
        this.pos++;
        hi = this.classChar(cls, start);
        if (hi == -1) return new Node();
        if (hi == -2 || hi < lo) return this.fail("invalid character class range", this.src.substring(memberStart, this.pos));
      }
      cls.add(<u32>lo, <u32>hi);
    }
    return this.classNode(cls);
  }
}

// Instructions of the program: op, then arguments in x and y.
const I_CHAR = 0; // x: the character, y: its other case or the same
const I_CLASS = 1; // x: index in classes
const I_ANY = 2;
const I_ANY_NL = 3;
const I_SPLIT = 4; // prefer x, then y
const I_JMP = 5;
const I_ASSERT = 6; // x: the assertion
const I_MATCH = 7;

/** The result of a search: the match's bounds in UTF-16 units, or start -1 when none. */
export class RegexpResult {
  constructor(public start: i32, public end: i32) {}
}

/** A compiled regular expression; compileRegexp makes one. */
export class Regexp {
  ops: i32[] = [];
  xs: i32[] = [];
  ys: i32[] = [];
  classes: CharClass[] = [];
  tooLarge: bool = false;

  // Thread lists of the VM, reused from search to search.
  private pcs0: Int32Array = new Int32Array(0);
  private starts0: Int32Array = new Int32Array(0);
  private pcs1: Int32Array = new Int32Array(0);
  private starts1: Int32Array = new Int32Array(0);
  private marks: Int32Array = new Int32Array(0);
  private stack: Int32Array = new Int32Array(0);
  private stamp: i32 = 0;

  constructor(public source: string) {}

  emit(op: i32, x: i32 = 0, y: i32 = 0): i32 {
    if (this.ops.length >= MAX_PROGRAM) {
      this.tooLarge = true;
      return this.ops.length;
    }
    this.ops.push(op);
    this.xs.push(x);
    this.ys.push(y);
    return this.ops.length - 1;
  }

  compile(n: Node): void {
    if (this.tooLarge) return;
    switch (n.kind) {
      case N_EMPTY: break;
      case N_CHAR: this.emit(I_CHAR, n.c, n.fold ? (toLowerRune(n.c) == n.c ? toUpperRune(n.c) : toLowerRune(n.c)) : n.c); break;
      case N_CLASS:
        this.classes.push(n.cls!);
        this.emit(I_CLASS, this.classes.length - 1);
        break;
      case N_ANY: this.emit(I_ANY); break;
      case N_ANY_NL: this.emit(I_ANY_NL); break;
      case N_ASSERT: this.emit(I_ASSERT, n.c); break;
      case N_CAT:
        for (let i = 0; i < n.subs.length; i++) this.compile(n.subs[i]);
        break;
      case N_ALT: {
        const jumps: i32[] = [];
        for (let i = 0; i < n.subs.length; i++) {
          if (i < n.subs.length - 1) {
            const split = this.emit(I_SPLIT);
            this.xs[split] = split + 1;
            this.compile(n.subs[i]);
            jumps.push(this.emit(I_JMP));
            if (this.tooLarge) return;
            this.ys[split] = this.ops.length;
          } else {
            this.compile(n.subs[i]);
          }
        }
        if (this.tooLarge) return;
        for (let i = 0; i < jumps.length; i++) this.xs[jumps[i]] = this.ops.length;
        break;
      }
      default: { // N_REPEAT
        const sub = n.subs[0];
        for (let i = 0; i < n.min; i++) this.compile(sub);
        if (n.max < 0) {
          const loop = this.emit(I_SPLIT);
          this.compile(sub);
          this.emit(I_JMP, loop);
          if (this.tooLarge) return;
          this.setSplit(loop, loop + 1, this.ops.length, n.greedy);
        } else {
          const splits: i32[] = [];
          for (let i = n.min; i < n.max; i++) {
            splits.push(this.emit(I_SPLIT));
            this.compile(sub);
          }
          if (this.tooLarge) return;
          for (let i = 0; i < splits.length; i++) this.setSplit(splits[i], splits[i] + 1, this.ops.length, n.greedy);
        }
      }
    }
  }

  setSplit(at: i32, body: i32, out: i32, greedy: bool): void {
    this.xs[at] = greedy ? body : out;
    this.ys[at] = greedy ? out : body;
  }

  private isWordAt(s: string, i: i32): bool {
    if (i < 0 || i >= s.length) return false;
    const c = s.charCodeAt(i);
    return (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a) || c == 0x5f;
  }

  private assertAt(kind: i32, s: string, at: i32): bool {
    switch (kind) {
      case A_BEGIN_TEXT: return at == 0;
      case A_END_TEXT: return at == s.length;
      case A_BEGIN_LINE: return at == 0 || s.charCodeAt(at - 1) == 0x0a;
      case A_END_LINE: return at == s.length || s.charCodeAt(at) == 0x0a;
      case A_WORD: return this.isWordAt(s, at - 1) != this.isWordAt(s, at);
      default: return this.isWordAt(s, at - 1) == this.isWordAt(s, at);
    }
  }

  /** Adds the thread (pc, start) and the threads its splits, jumps and assertions lead to, in priority order. */
  private add(pcs: Int32Array, starts: Int32Array, count: i32, pc0: i32, start: i32, s: string, at: i32): i32 {
    const marks = this.marks;
    const stack = this.stack;
    const stamp = this.stamp;
    let sp = 0;
    unchecked(stack[sp++] = pc0);
    while (sp > 0) {
      let pc = unchecked(stack[--sp]);
      while (true) {
        if (unchecked(marks[pc]) == stamp) break;
        unchecked(marks[pc] = stamp);
        const op = unchecked(this.ops[pc]);
        if (op == I_JMP) {
          pc = unchecked(this.xs[pc]);
        } else if (op == I_SPLIT) {
          unchecked(stack[sp++] = this.ys[pc]);
          pc = unchecked(this.xs[pc]);
        } else if (op == I_ASSERT) {
          if (!this.assertAt(unchecked(this.xs[pc]), s, at)) break;
          pc++;
        } else {
          unchecked(pcs[count] = pc);
          unchecked(starts[count] = start);
          count++;
          break;
        }
      }
    }
    return count;
  }

  /** Starts a new thread list: a pc is added to a list once. The marks are cleared before the stamp wraps,
   * which a long-lived instance reaches after some 2^31 characters searched. */
  private nextStamp(): void {
    if (this.stamp == i32.MAX_VALUE) {
      this.marks.fill(0);
      this.stamp = 0;
    }
    this.stamp++;
  }

  /** The leftmost-first match in s at or after from, as Go's FindStringIndex. */
  find(s: string, from: i32 = 0): RegexpResult {
    const n = this.ops.length;
    if (this.marks.length != n) {
      this.pcs0 = new Int32Array(n);
      this.starts0 = new Int32Array(n);
      this.pcs1 = new Int32Array(n);
      this.starts1 = new Int32Array(n);
      this.marks = new Int32Array(n);
      this.stack = new Int32Array(n + 1);
    }
    let cpcs = this.pcs0;
    let cstarts = this.starts0;
    let npcs = this.pcs1;
    let nstarts = this.starts1;
    let ccount = 0;
    let matchStart = -1;
    let matchEnd = -1;
    this.nextStamp();
    let at = from;
    const len = s.length;
    while (true) {
      if (matchStart < 0) ccount = this.add(cpcs, cstarts, ccount, 0, at, s, at);
      if (ccount == 0 && (matchStart >= 0 || at >= len)) break;
      let c: u32 = 0;
      let width = 0;
      if (at < len) {
        c = <u32>s.codePointAt(at);
        width = c >= 0x10000 ? 2 : 1;
      }
      this.nextStamp();
      let ncount = 0;
      for (let t = 0; t < ccount; t++) {
        const pc = unchecked(cpcs[t]);
        const op = unchecked(this.ops[pc]);
        if (op == I_MATCH) {
          matchStart = unchecked(cstarts[t]);
          matchEnd = at;
          break; // lower-priority threads lose to this match
        }
        if (width == 0) continue;
        let ok = false;
        if (op == I_CHAR) ok = c == <u32>unchecked(this.xs[pc]) || c == <u32>unchecked(this.ys[pc]);
        else if (op == I_CLASS) ok = unchecked(this.classes[unchecked(this.xs[pc])]).has(c);
        else if (op == I_ANY) ok = c != 0x0a;
        else ok = true; // I_ANY_NL
        if (ok) ncount = this.add(npcs, nstarts, ncount, pc + 1, unchecked(cstarts[t]), s, at + width);
      }
      const tp = cpcs;
      cpcs = npcs;
      npcs = tp;
      const ts = cstarts;
      cstarts = nstarts;
      nstarts = ts;
      ccount = ncount;
      if (at >= len) break;
      at += width;
    }
    return new RegexpResult(matchStart, matchEnd);
  }

  /** Whether s has a match. */
  test(s: string): bool {
    return this.find(s, 0).start >= 0;
  }

  /** Every successive non-overlapping match, as Go's FindAllStringIndex (an empty match next to the previous
   * match is skipped). */
  findAll(s: string): RegexpResult[] {
    const out: RegexpResult[] = [];
    let at = 0;
    let prevEnd = -1;
    while (at <= s.length) {
      const m = this.find(s, at);
      if (m.start < 0) break;
      if (m.end == m.start) {
        if (m.start != prevEnd) out.push(m);
        at = m.end + (m.end < s.length && <u32>s.codePointAt(m.end) >= 0x10000 ? 2 : 1);
      } else {
        out.push(m);
        at = m.end;
      }
      prevEnd = m.end;
    }
    return out;
  }
}

/** The result of compileRegexp: the regexp, or Go's error message. */
export class Compiled {
  constructor(public regexp: Regexp | null, public error: string) {}
}

/** Compiles pattern (RE2 syntax, the subset above). */
export function compileRegexp(pattern: string): Compiled {
  const p = new Parser(pattern);
  const tree = p.parseAlt(0);
  if (p.error.length == 0 && p.more()) p.fail("unexpected )", pattern);
  if (p.error.length > 0) return new Compiled(null, p.error);
  const re = new Regexp(pattern);
  re.compile(tree);
  re.emit(I_MATCH);
  if (re.tooLarge) return new Compiled(null, "error parsing regexp: expression too large: `" + pattern + "`");
  return new Compiled(re, "");
}
