//! A small regular-expression engine for RE2 syntax (Go's regexp), since a plugin built offline has no crates.
//! It runs in time linear in the text (a Pike VM: no backtracking, so a pattern from a parameter cannot make a
//! call blow up) and finds leftmost-first matches, as Go does.
//!
//! Supported: literals, `.`, classes `[a-z]` `[^...]` `[[:alpha:]]`, `\d \w \s \D \W \S` (ASCII, as in Go),
//! `\pL \p{L} \p{Lu} \p{Ll} \p{N} \p{Nd} \p{Latin}` and `\P`, `^ $ \A \z \b \B`, groups `(...)` `(?:...)`
//! `(?P<name>...)`, flags `(?i)` `(?s)` `(?m)` `(?i:...)`, `|`, `* + ? {n} {n,} {n,m}` and their lazy forms
//! (the same matches here: only the match's bounds are reported). Not supported: backreferences and
//! look-around (RE2 has neither). Errors read as Go's: "error parsing regexp: missing closing ): `a(b`".

use crate::unicode;
use std::fmt;

/// Longest repeat count, as in Go.
const MAX_REPEAT: u32 = 1000;
/// Largest compiled program, in instructions: bounds memory and time per character.
const MAX_PROGRAM: usize = 50_000;

/// Why a pattern does not compile. It prints as Go's *syntax.Error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: &'static str,
    pub expr: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error parsing regexp: {}: `{}`", self.code, self.expr)
    }
}

impl std::error::Error for Error {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Assert {
    BeginText,
    EndText,
    BeginLine,
    EndLine,
    WordBoundary,
    NotWordBoundary,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Named {
    Digit,
    Word,
    Space,
    Letter,
    Upper,
    Lower,
    Number,
    DecimalNumber,
    Latin,
    Alpha,
    Alnum,
    Punct,
    Xdigit,
}

impl Named {
    fn contains(self, c: char) -> bool {
        match self {
            Named::Digit => c.is_ascii_digit(),
            Named::Word => c.is_ascii_alphanumeric() || c == '_',
            Named::Space => matches!(c, '\t' | '\n' | '\x0C' | '\r' | ' '),
            Named::Letter => unicode::is_letter(c),
            Named::Upper => c.is_uppercase(),
            Named::Lower => c.is_lowercase(),
            Named::Number => c.is_numeric(),
            Named::DecimalNumber => unicode::is_digit(c),
            Named::Latin => unicode::is_latin(c),
            Named::Alpha => c.is_ascii_alphabetic(),
            Named::Alnum => c.is_ascii_alphanumeric(),
            Named::Punct => c.is_ascii_punctuation(),
            Named::Xdigit => c.is_ascii_hexdigit(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    Range(char, char),
    Named(Named, bool), // negated
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Class {
    items: Vec<Item>,
    negated: bool,
    fold: bool,
}

fn simple_fold(c: char, upper: bool) -> char {
    let mut it: Box<dyn Iterator<Item = char>> = if upper { Box::new(c.to_uppercase()) } else { Box::new(c.to_lowercase()) };
    match (it.next(), it.next()) {
        (Some(f), None) => f,
        _ => c,
    }
}

impl Class {
    fn raw_contains(&self, c: char) -> bool {
        self.items.iter().any(|item| match *item {
            Item::Range(lo, hi) => lo <= c && c <= hi,
            Item::Named(n, neg) => n.contains(c) != neg,
        })
    }

    fn contains(&self, c: char) -> bool {
        let hit = self.raw_contains(c)
            || (self.fold && (self.raw_contains(simple_fold(c, false)) || self.raw_contains(simple_fold(c, true))));
        hit != self.negated
    }
}

#[derive(Debug, Clone)]
enum Node {
    Empty,
    Char(char, bool), // fold
    Class(Class),
    Any(bool), // matches '\n' too
    Concat(Vec<Node>),
    Alt(Vec<Node>),
    Repeat(Box<Node>, u32, Option<u32>, bool), // greedy
    Assert(Assert),
}

#[derive(Clone, Copy, Default)]
struct Flags {
    fold: bool,
    dot_nl: bool,
    multi_line: bool,
}

struct Parser<'p> {
    pattern: &'p str,
    chars: Vec<(usize, char)>,
    pos: usize,
    depth: usize,
}

fn err(code: &'static str, expr: &str) -> Error {
    Error { code, expr: expr.to_string() }
}

impl<'p> Parser<'p> {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).map(|&(_, c)| c)
    }

    fn offset(&self, pos: usize) -> usize {
        self.chars.get(pos).map_or(self.pattern.len(), |&(o, _)| o)
    }

    fn rest_from(&self, pos: usize) -> &'p str {
        &self.pattern[self.offset(pos)..]
    }

    fn between(&self, from: usize, to: usize) -> &'p str {
        &self.pattern[self.offset(from)..self.offset(to)]
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// alternation := concat ('|' concat)*, up to ')' or the end.
    fn alternation(&mut self, flags: &mut Flags) -> Result<Node, Error> {
        let mut alts = vec![self.concat(flags)?];
        while self.eat('|') {
            alts.push(self.concat(flags)?);
        }
        Ok(if alts.len() == 1 { alts.pop().unwrap() } else { Node::Alt(alts) })
    }

    fn concat(&mut self, flags: &mut Flags) -> Result<Node, Error> {
        let mut items: Vec<Node> = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = match self.atom(flags)? {
                Some(atom) => atom,
                None => continue, // a flag group: nothing to match
            };
            let atom = self.repeats(atom)?;
            items.push(atom);
        }
        Ok(match items.len() {
            0 => Node::Empty,
            1 => items.pop().unwrap(),
            _ => Node::Concat(items),
        })
    }

    /// Parses `{n}`, `{n,}` or `{n,m}` at the current position, if there is one.
    fn counted(&mut self) -> Option<(u32, Option<u32>)> {
        let save = self.pos;
        let number = |p: &mut Parser| -> Option<u32> {
            let from = p.pos;
            while p.peek().map_or(false, |c| c.is_ascii_digit()) {
                p.pos += 1;
            }
            if p.pos == from {
                return None;
            }
            Some(p.between(from, p.pos).parse::<u32>().unwrap_or(u32::MAX))
        };
        let parsed = (|| {
            if !self.eat('{') {
                return None;
            }
            let min = number(self)?;
            let max = if self.eat(',') { if self.peek() == Some('}') { None } else { Some(number(self)?) } } else { Some(min) };
            if !self.eat('}') {
                return None;
            }
            Some((min, max))
        })();
        if parsed.is_none() {
            self.pos = save;
        }
        parsed
    }

    fn repeats(&mut self, mut atom: Node) -> Result<Node, Error> {
        let mut repeated: Option<usize> = None;
        loop {
            let op_start = self.pos;
            let (min, max) = match self.peek() {
                Some('*') => {
                    self.pos += 1;
                    (0, None)
                }
                Some('+') => {
                    self.pos += 1;
                    (1, None)
                }
                Some('?') => {
                    self.pos += 1;
                    (0, Some(1))
                }
                Some('{') => match self.counted() {
                    Some(r) => r,
                    None => return Ok(atom),
                },
                _ => return Ok(atom),
            };
            let greedy = !self.eat('?');
            if let Some(previous) = repeated {
                return Err(err("invalid nested repetition operator", self.between(previous, self.pos)));
            }
            if min > MAX_REPEAT || max.map_or(false, |m| m > MAX_REPEAT || m < min) {
                return Err(err("invalid repeat count", self.between(op_start, self.pos)));
            }
            atom = Node::Repeat(Box::new(atom), min, max, greedy);
            repeated = Some(op_start);
        }
    }

    fn atom(&mut self, flags: &mut Flags) -> Result<Option<Node>, Error> {
        let start = self.pos;
        let c = self.peek().unwrap();
        self.pos += 1;
        let node = match c {
            '(' => return self.group(flags, start).map(|n| n),
            '[' => Node::Class(self.class(flags, start)?),
            '.' => Node::Any(flags.dot_nl),
            '^' => Node::Assert(if flags.multi_line { Assert::BeginLine } else { Assert::BeginText }),
            '$' => Node::Assert(if flags.multi_line { Assert::EndLine } else { Assert::EndText }),
            '*' | '+' | '?' => return Err(err("missing argument to repetition operator", self.between(start, self.pos))),
            '{' => {
                self.pos = start;
                if self.counted().is_some() {
                    return Err(err("missing argument to repetition operator", self.between(start, self.pos)));
                }
                self.pos = start + 1;
                Node::Char('{', false)
            }
            '\\' => self.escape(flags, start, false)?,
            c => Node::Char(c, flags.fold && has_case(c)),
        };
        Ok(Some(node))
    }

    fn group(&mut self, flags: &mut Flags, start: usize) -> Result<Option<Node>, Error> {
        let mut inner = *flags;
        if self.eat('?') {
            if self.eat('P') || self.peek() == Some('<') {
                if !self.eat('<') {
                    return Err(err("invalid or unsupported Perl syntax", self.between(start, self.pos)));
                }
                while let Some(c) = self.peek() {
                    self.pos += 1;
                    if c == '>' {
                        break;
                    }
                    if !(c.is_alphanumeric() || c == '_') {
                        return Err(err("invalid named capture", self.between(start, self.pos)));
                    }
                }
            } else {
                let mut negate = false;
                let mut seen = false;
                loop {
                    let c = match self.peek() {
                        Some(c) => c,
                        None => return Err(err("missing closing )", self.pattern)),
                    };
                    self.pos += 1;
                    match c {
                        'i' => inner.fold = !negate,
                        's' => inner.dot_nl = !negate,
                        'm' => inner.multi_line = !negate,
                        'U' => {}
                        '-' if !negate => negate = true,
                        ')' if seen || !negate => {
                            *flags = inner; // (?i): the flags hold to the end of the enclosing group
                            return Ok(None);
                        }
                        ':' => break,
                        _ => return Err(err("invalid or unsupported Perl syntax", self.between(start, self.pos))),
                    }
                    seen = true;
                }
            }
        }
        self.depth += 1;
        if self.depth > 1000 {
            return Err(err("expression nests too deeply", self.pattern));
        }
        let node = self.alternation(&mut inner)?;
        self.depth -= 1;
        if !self.eat(')') {
            return Err(err("missing closing )", self.pattern));
        }
        Ok(Some(node))
    }

    fn escape(&mut self, flags: &Flags, start: usize, in_class: bool) -> Result<Node, Error> {
        let c = match self.peek() {
            Some(c) => c,
            None => return Err(err("trailing backslash at end of expression", "")),
        };
        self.pos += 1;
        let named = |n: Named, neg: bool| Node::Class(Class { items: vec![Item::Named(n, neg)], negated: false, fold: false });
        Ok(match c {
            'd' => named(Named::Digit, false),
            'D' => named(Named::Digit, true),
            'w' => named(Named::Word, false),
            'W' => named(Named::Word, true),
            's' => named(Named::Space, false),
            'S' => named(Named::Space, true),
            'p' | 'P' => {
                let name_start = self.pos;
                let name = if self.eat('{') {
                    while self.peek().map_or(false, |c| c != '}') {
                        self.pos += 1;
                    }
                    if !self.eat('}') {
                        return Err(err("invalid character class range", self.rest_from(start)));
                    }
                    self.between(name_start + 1, self.pos - 1)
                } else {
                    if self.peek().is_none() {
                        return Err(err("invalid character class range", self.rest_from(start)));
                    }
                    self.pos += 1;
                    self.between(name_start, self.pos)
                };
                let (name, negate) = match name.strip_prefix('^') {
                    Some(n) => (n, c == 'p'),
                    None => (name, c == 'P'),
                };
                let n = match name {
                    "L" => Named::Letter,
                    "Lu" => Named::Upper,
                    "Ll" => Named::Lower,
                    "N" => Named::Number,
                    "Nd" => Named::DecimalNumber,
                    "Latin" => Named::Latin,
                    _ => return Err(err("invalid character class range", self.between(start, self.pos))),
                };
                named(n, negate)
            }
            'b' if !in_class => Node::Assert(Assert::WordBoundary),
            'B' if !in_class => Node::Assert(Assert::NotWordBoundary),
            'A' if !in_class => Node::Assert(Assert::BeginText),
            'z' if !in_class => Node::Assert(Assert::EndText),
            'n' => Node::Char('\n', false),
            't' => Node::Char('\t', false),
            'r' => Node::Char('\r', false),
            'f' => Node::Char('\x0C', false),
            'v' => Node::Char('\x0B', false),
            'a' => Node::Char('\x07', false),
            'x' => {
                let hex_start = self.pos;
                let digits = if self.eat('{') {
                    while self.peek().map_or(false, |c| c != '}') {
                        self.pos += 1;
                    }
                    if !self.eat('}') {
                        return Err(err("invalid escape sequence", self.between(start, self.pos)));
                    }
                    self.between(hex_start + 1, self.pos - 1)
                } else {
                    self.pos = (self.pos + 2).min(self.chars.len());
                    self.between(hex_start, self.pos)
                };
                match u32::from_str_radix(digits, 16).ok().and_then(char::from_u32) {
                    Some(ch) => Node::Char(ch, flags.fold && has_case(ch)),
                    None => return Err(err("invalid escape sequence", self.between(start, self.pos))),
                }
            }
            c if c.is_ascii_punctuation() => Node::Char(c, false),
            _ => return Err(err("invalid escape sequence", self.between(start, self.pos))),
        })
    }

    fn class(&mut self, flags: &Flags, start: usize) -> Result<Class, Error> {
        let mut class = Class { items: Vec::new(), negated: self.eat('^'), fold: flags.fold };
        let mut first = true;
        loop {
            let c = match self.peek() {
                Some(c) => c,
                None => return Err(err("missing closing ]", self.rest_from(start))),
            };
            if c == ']' && !first {
                self.pos += 1;
                return Ok(class);
            }
            first = false;
            let item_start = self.pos;
            if c == '[' && self.chars.get(self.pos + 1).map(|&(_, c)| c) == Some(':') {
                let rest = self.rest_from(self.pos);
                if let Some(end) = rest.find(":]") {
                    let name = &rest[2..end];
                    let (name, neg) = match name.strip_prefix('^') {
                        Some(n) => (n, true),
                        None => (name, false),
                    };
                    let n = match name {
                        "alpha" => Named::Alpha,
                        "digit" => Named::Digit,
                        "alnum" => Named::Alnum,
                        "space" => Named::Space,
                        "upper" => Named::Upper,
                        "lower" => Named::Lower,
                        "punct" => Named::Punct,
                        "word" => Named::Word,
                        "xdigit" => Named::Xdigit,
                        _ => return Err(err("invalid character class range", &rest[..end + 2])),
                    };
                    self.pos += rest[..end + 2].chars().count();
                    class.items.push(Item::Named(n, neg));
                    continue;
                }
            }
            let lo = self.class_char(flags, item_start, &mut class)?;
            let lo = match lo {
                Some(lo) => lo,
                None => continue,
            };
            if self.peek() == Some('-') && self.chars.get(self.pos + 1).map_or(false, |&(_, c)| c != ']') {
                self.pos += 1;
                let hi_start = self.pos;
                let hi = match self.class_char(flags, hi_start, &mut class)? {
                    Some(hi) => hi,
                    None => return Err(err("invalid character class range", self.between(item_start, self.pos))),
                };
                if hi < lo {
                    return Err(err("invalid character class range", self.between(item_start, self.pos)));
                }
                class.items.push(Item::Range(lo, hi));
            } else {
                class.items.push(Item::Range(lo, lo));
            }
        }
    }

    /// Reads one character of a class, or adds a named class (`\d`, `\pL`) and returns None.
    fn class_char(&mut self, flags: &Flags, start: usize, class: &mut Class) -> Result<Option<char>, Error> {
        let c = match self.peek() {
            Some(c) => c,
            None => return Err(err("missing closing ]", self.rest_from(start))),
        };
        self.pos += 1;
        if c != '\\' {
            return Ok(Some(c));
        }
        match self.escape(flags, start, true)? {
            Node::Char(c, _) => Ok(Some(c)),
            Node::Class(mut named) => {
                class.items.append(&mut named.items);
                Ok(None)
            }
            _ => Err(err("invalid escape sequence", self.between(start, self.pos))),
        }
    }
}

fn has_case(c: char) -> bool {
    simple_fold(c, false) != c || simple_fold(c, true) != c
}

#[derive(Debug, Clone)]
enum Inst {
    Char(char),
    FoldChar(char), // the lower-case form
    Class(usize),
    Any,
    AnyNotNL,
    Split(usize, usize), // the first is preferred
    Jmp(usize),
    Assert(Assert),
    Match,
}

struct Compiler {
    prog: Vec<Inst>,
    classes: Vec<Class>,
}

impl Compiler {
    fn push(&mut self, inst: Inst) -> Result<usize, Error> {
        if self.prog.len() >= MAX_PROGRAM {
            return Err(err("expression too large", ""));
        }
        self.prog.push(inst);
        Ok(self.prog.len() - 1)
    }

    fn node(&mut self, n: &Node) -> Result<(), Error> {
        match n {
            Node::Empty => {}
            Node::Char(c, fold) => {
                let inst = if *fold { Inst::FoldChar(simple_fold(*c, false)) } else { Inst::Char(*c) };
                self.push(inst)?;
            }
            Node::Class(class) => {
                self.classes.push(class.clone());
                self.push(Inst::Class(self.classes.len() - 1))?;
            }
            Node::Any(nl) => {
                self.push(if *nl { Inst::Any } else { Inst::AnyNotNL })?;
            }
            Node::Assert(a) => {
                self.push(Inst::Assert(*a))?;
            }
            Node::Concat(items) => {
                for item in items {
                    self.node(item)?;
                }
            }
            Node::Alt(alts) => {
                let mut jumps = Vec::new();
                for (i, alt) in alts.iter().enumerate() {
                    if i + 1 < alts.len() {
                        let split = self.push(Inst::Split(0, 0))?;
                        self.node(alt)?;
                        jumps.push(self.push(Inst::Jmp(0))?);
                        let next = self.prog.len();
                        self.prog[split] = Inst::Split(split + 1, next);
                    } else {
                        self.node(alt)?;
                    }
                }
                let end = self.prog.len();
                for j in jumps {
                    self.prog[j] = Inst::Jmp(end);
                }
            }
            Node::Repeat(sub, min, max, greedy) => {
                // A lazy repeat prefers leaving the loop: the split's preferred branch is swapped.
                let split = |body: usize, out: usize| if *greedy { Inst::Split(body, out) } else { Inst::Split(out, body) };
                for _ in 0..*min {
                    self.node(sub)?;
                }
                match max {
                    None => {
                        let split_at = self.push(Inst::Split(0, 0))?;
                        self.node(sub)?;
                        self.push(Inst::Jmp(split_at))?;
                        let end = self.prog.len();
                        self.prog[split_at] = split(split_at + 1, end);
                    }
                    Some(max) => {
                        let mut splits = Vec::new();
                        for _ in *min..*max {
                            splits.push(self.push(Inst::Split(0, 0))?);
                            self.node(sub)?;
                        }
                        let end = self.prog.len();
                        for s in splits {
                            self.prog[s] = split(s + 1, end);
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// A compiled regular expression.
#[derive(Debug, Clone)]
pub struct Regex {
    prog: Vec<Inst>,
    classes: Vec<Class>,
    /// The consuming instructions a match can begin with, when every match must begin with one of them (no
    /// assertion or empty match first): with no thread alive the scan skips characters none of them accepts.
    first: Option<Vec<usize>>,
    /// With `first`: the bytes a match can begin at (ASCII ones exactly, every UTF-8 lead byte), so that the skip
    /// tests 16 bytes per loop iteration (each iteration costs a trip to the host's termination guard).
    first_bytes: [bool; 256],
}

/// A set of program counters with their match start, in priority order, deduplicated by pc (a sparse set).
struct Threads {
    sparse: Vec<usize>,
    dense_pc: Vec<usize>,
    list: Vec<(usize, usize)>, // (pc, start) of consuming instructions and Match, in priority order
}

impl Threads {
    fn new(n: usize) -> Threads {
        Threads { sparse: vec![0; n], dense_pc: Vec::with_capacity(n), list: Vec::with_capacity(n) }
    }

    fn contains(&self, pc: usize) -> bool {
        let i = self.sparse[pc];
        i < self.dense_pc.len() && self.dense_pc[i] == pc
    }

    fn insert(&mut self, pc: usize) {
        self.sparse[pc] = self.dense_pc.len();
        self.dense_pc.push(pc);
    }

    fn clear(&mut self) {
        self.dense_pc.clear();
        self.list.clear();
    }
}

fn is_word_byte(b: Option<u8>) -> bool {
    b.map_or(false, |b| b.is_ascii_alphanumeric() || b == b'_')
}

impl Regex {
    /// Compiles `pattern` (RE2 syntax).
    pub fn new(pattern: &str) -> Result<Regex, Error> {
        let mut p = Parser { pattern, chars: pattern.char_indices().collect(), pos: 0, depth: 0 };
        let mut flags = Flags::default();
        let node = p.alternation(&mut flags)?;
        if p.pos < p.chars.len() {
            return Err(err("unexpected )", pattern)); // alternation stops only at ')' or the end
        }
        let mut c = Compiler { prog: Vec::new(), classes: Vec::new() };
        c.node(&node)?;
        c.push(Inst::Match)?;
        let mut re = Regex { prog: c.prog, classes: c.classes, first: None, first_bytes: [false; 256] };
        re.first = re.first_insts();
        if let Some(first) = &re.first {
            for b in 0..=255u8 {
                re.first_bytes[b as usize] = b >= 0xC0 || (b < 0x80 && first.iter().any(|&pc| re.step_matches(pc, b as char)));
            }
        }
        Ok(re)
    }

    /// Whether the text contains a match.
    pub fn is_match(&self, text: &str) -> bool {
        self.run(text, 0, true).is_some()
    }

    /// The bounds of the leftmost-first match starting at or after `start` (a char boundary of `text`).
    pub fn find_at(&self, text: &str, start: usize) -> Option<(usize, usize)> {
        self.run(text, start, false)
    }

    /// The bounds of every successive non-overlapping match, as Go's FindAllStringIndex(text, -1).
    pub fn find_all(&self, text: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut at = 0;
        let mut prev_end: Option<usize> = None;
        while at <= text.len() {
            let (s, e) = match self.find_at(text, at) {
                Some(m) => m,
                None => break,
            };
            if e == s && prev_end == Some(e) {
                // An empty match right after the previous match is skipped, as Go does.
            } else {
                out.push((s, e));
            }
            prev_end = Some(e);
            at = if e > s { e } else { e + text[e..].chars().next().map_or(1, char::len_utf8) };
        }
        out
    }

    fn first_insts(&self) -> Option<Vec<usize>> {
        let mut seen = vec![false; self.prog.len()];
        let mut stack = vec![0];
        let mut first = Vec::new();
        while let Some(pc) = stack.pop() {
            if std::mem::replace(&mut seen[pc], true) {
                continue;
            }
            match self.prog[pc] {
                Inst::Jmp(to) => stack.push(to),
                Inst::Split(a, b) => stack.extend([a, b]),
                Inst::Assert(_) | Inst::Match => return None,
                _ => first.push(pc),
            }
        }
        Some(first)
    }

    fn assert_ok(a: Assert, text: &str, pos: usize) -> bool {
        let b = text.as_bytes();
        let before = if pos > 0 { Some(b[pos - 1]) } else { None };
        let after = b.get(pos).copied();
        match a {
            Assert::BeginText => pos == 0,
            Assert::EndText => pos == b.len(),
            Assert::BeginLine => pos == 0 || before == Some(b'\n'),
            Assert::EndLine => pos == b.len() || after == Some(b'\n'),
            Assert::WordBoundary => is_word_byte(before) != is_word_byte(after),
            Assert::NotWordBoundary => is_word_byte(before) == is_word_byte(after),
        }
    }

    /// Adds the thread at `pc` and every thread reachable without consuming, in priority order.
    fn add(&self, list: &mut Threads, stack: &mut Vec<usize>, pc: usize, start: usize, text: &str, pos: usize) {
        stack.push(pc);
        while let Some(pc) = stack.pop() {
            if list.contains(pc) {
                continue;
            }
            list.insert(pc);
            match self.prog[pc] {
                Inst::Jmp(to) => stack.push(to),
                Inst::Split(a, b) => {
                    stack.push(b);
                    stack.push(a);
                }
                Inst::Assert(a) => {
                    if Self::assert_ok(a, text, pos) {
                        stack.push(pc + 1);
                    }
                }
                _ => list.list.push((pc, start)),
            }
        }
    }

    fn step_matches(&self, pc: usize, c: char) -> bool {
        match self.prog[pc] {
            Inst::Char(x) => x == c,
            Inst::FoldChar(x) => x == c || simple_fold(c, false) == x,
            Inst::Class(i) => self.classes[i].contains(c),
            Inst::Any => true,
            Inst::AnyNotNL => c != '\n',
            _ => false,
        }
    }

    /// The first position from `pos` (a char boundary) whose byte is in `first_bytes`, or the end: a char
    /// boundary, since continuation bytes are not in the set.
    fn skip(&self, b: &[u8], mut pos: usize) -> usize {
        let t = &self.first_bytes;
        while pos + 16 <= b.len() {
            let c = &b[pos..pos + 16];
            let hit = t[c[0] as usize]
                | t[c[1] as usize]
                | t[c[2] as usize]
                | t[c[3] as usize]
                | t[c[4] as usize]
                | t[c[5] as usize]
                | t[c[6] as usize]
                | t[c[7] as usize]
                | t[c[8] as usize]
                | t[c[9] as usize]
                | t[c[10] as usize]
                | t[c[11] as usize]
                | t[c[12] as usize]
                | t[c[13] as usize]
                | t[c[14] as usize]
                | t[c[15] as usize];
            if hit {
                break;
            }
            pos += 16;
        }
        while pos < b.len() && !t[b[pos] as usize] {
            pos += 1;
        }
        pos
    }

    fn run(&self, text: &str, start: usize, earliest: bool) -> Option<(usize, usize)> {
        let n = self.prog.len();
        let mut clist = Threads::new(n);
        let mut nlist = Threads::new(n);
        let mut stack = Vec::new();
        let mut matched: Option<(usize, usize)> = None;
        let mut pos = start;
        loop {
            if matched.is_none() {
                if clist.list.is_empty() {
                    if let Some(first) = &self.first {
                        pos = self.skip(text.as_bytes(), pos);
                        match text[pos..].char_indices().find(|&(_, c)| first.iter().any(|&pc| self.step_matches(pc, c))) {
                            Some((skip, _)) => pos += skip,
                            None => return None,
                        }
                    }
                }
                self.add(&mut clist, &mut stack, 0, pos, text, pos);
            }
            let c = text[pos..].chars().next();
            let next = pos + c.map_or(0, char::len_utf8);
            if clist.list.is_empty() {
                if matched.is_some() || c.is_none() {
                    break;
                }
                clist.clear();
                pos = next; // nothing alive here (an assertion failed): try from the next character
                continue;
            }
            for i in 0..clist.list.len() {
                let (pc, st) = clist.list[i];
                if let Inst::Match = self.prog[pc] {
                    matched = Some((st, pos));
                    if earliest {
                        return matched;
                    }
                    break; // lower-priority threads lose to this match
                }
                if let Some(c) = c {
                    if self.step_matches(pc, c) {
                        self.add(&mut nlist, &mut stack, pc + 1, st, text, next);
                    }
                }
            }
            if c.is_none() {
                break;
            }
            std::mem::swap(&mut clist, &mut nlist);
            nlist.clear();
            pos = next;
        }
        matched
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find(p: &str, t: &str) -> Option<(usize, usize)> {
        Regex::new(p).unwrap().find_at(t, 0)
    }

    #[test]
    fn matches() {
        assert_eq!(find(r"\d{3}-\d{2}-\d{4}", "ssn 123-45-6789."), Some((4, 15)));
        assert!(Regex::new(r"(?i)api[_-]?key").unwrap().is_match("my API-KEY"));
        assert!(!Regex::new(r"api[_-]?key").unwrap().is_match("API-KEY"));
        assert_eq!(find("a|ab", "ab"), Some((0, 1)));
        assert_eq!(find("ab|a", "ab"), Some((0, 2)));
        assert_eq!(find("a+", "baaa"), Some((1, 4)));
        assert_eq!(find("a+?", "baaa"), Some((1, 2)));
        assert_eq!(find("a{2,3}?", "aaaa"), Some((0, 2)));
        assert_eq!(find(r"^x$", "x"), Some((0, 1)));
        assert_eq!(find(r"(?m)^x$", "a\nx\nb"), Some((2, 3)));
        assert_eq!(find(r"\bcat\b", "concat cat"), Some((7, 10)));
        assert_eq!(find(r"[\p{L}\p{N}]+@", "zoë@x"), Some((0, 5)));
        assert_eq!(find(r"[^a-c]", "abcd"), Some((3, 4)));
        assert_eq!(find(r"x{2,3}", "xxxx"), Some((0, 3)));
        assert_eq!(find(r"(?:ab){2}", "ababab"), Some((0, 4)));
        assert_eq!(find(r"[[:digit:]]+", "ab12"), Some((2, 4)));
        assert_eq!(find(r"(?i)CAFÉ", "le café"), Some((3, 8)));
        assert_eq!(find(r"a.c", "a\nc"), None);
        assert_eq!(find(r"(?s)a.c", "a\nc"), Some((0, 3)));
        assert_eq!(Regex::new("a*").unwrap().find_all("baab"), vec![(0, 0), (1, 3), (4, 4)]);
        // Linear time: a pattern that backtracking engines take exponential time on.
        let evil = Regex::new("(a*)*b").unwrap();
        assert!(!evil.is_match(&"a".repeat(10_000)));
    }

    #[test]
    fn errors() {
        let e = |p: &str| Regex::new(p).unwrap_err().to_string();
        assert_eq!(e("a(b"), "error parsing regexp: missing closing ): `a(b`");
        assert_eq!(e("a)b"), "error parsing regexp: unexpected ): `a)b`");
        assert_eq!(e("[a"), "error parsing regexp: missing closing ]: `[a`");
        assert_eq!(e("*a"), "error parsing regexp: missing argument to repetition operator: `*`");
        assert_eq!(e("a**"), "error parsing regexp: invalid nested repetition operator: `**`");
        assert_eq!(e("a{1001}"), "error parsing regexp: invalid repeat count: `{1001}`");
        assert_eq!(e("[z-a]"), "error parsing regexp: invalid character class range: `z-a`");
        assert_eq!(e(r"\q"), "error parsing regexp: invalid escape sequence: `\\q`");
        assert!(Regex::new("(((((((((((a{1000}){1000}){1000})))))))))").is_err());
    }
}
