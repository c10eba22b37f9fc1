//! The parts of Go's `encoding/json` (v1, as of Go 1.26) that the Go
//! plugin `enrich` relies on, reproduced so that this operator accepts,
//! refuses and words its errors exactly as that plugin does:
//!
//! - [`Scanner`]: the byte-at-a-time state machine that validates JSON and
//!   finds where a value ends, with Go's error messages ("invalid
//!   character 'x' after object key");
//! - [`Decoder`]: the token stream of `json.Decoder.Token`, `More` and
//!   `Decode` into a raw value, over an input held whole in memory;
//! - [`unquote`]: Go's decoding of a JSON string, which replaces invalid
//!   UTF-8 and unpaired surrogates with U+FFFD, byte by byte;
//! - [`compact`]: `json.Compact` of a valid value.
//!
//! Everything is allocation-free on the per-record path but the scanner's
//! nesting stack and decoded names with escapes, both reused.

use std::fmt;

/// Go's limit on nesting (`maxNestingDepth`).
const MAX_DEPTH: usize = 10_000;

/// What went wrong reading JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JsonError {
    /// The input ended where the value peeked for was to start (Go's
    /// `io.EOF` from the decoder's peek).
    Eof,
    /// The input ended inside a value (Go's `io.ErrUnexpectedEOF`).
    UnexpectedEof,
    /// A syntax error, or a value Go cannot convert: its message.
    Syntax(String),
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonError::Eof => f.write_str("EOF"),
            JsonError::UnexpectedEof => f.write_str("unexpected EOF"),
            JsonError::Syntax(m) => f.write_str(m),
        }
    }
}

/// Reports whether `c` is JSON white space (Go's `isSpace`).
pub fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// Returns `b` without leading JSON white space.
pub fn trim_left(b: &[u8]) -> &[u8] {
    let i = b.iter().position(|c| !is_space(*c)).unwrap_or(b.len());
    &b[i..]
}

/// Quotes a byte for a syntax error message, as Go's `quoteChar` does: the
/// byte taken as a rune (so 0xe9 is 'é'), in single quotes, escaped as
/// `strconv.Quote` escapes it.
pub fn quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".to_string(),
        b'"' => "'\"'".to_string(),
        _ => {
            let mut s = String::from("'");
            gocompat::append_escaped_rune(&mut s, c as char, '"');
            s.push('\'');
            s
        }
    }
}

/// The scanner's states (Go's `state*` functions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    BeginValue,
    BeginValueOrEmpty,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    InStringEscU,
    InStringEscU1,
    InStringEscU12,
    InStringEscU123,
    Neg,
    One,
    Zero,
    Dot,
    Dot0,
    E,
    ESign,
    E0,
    T,
    Tr,
    Tru,
    F,
    Fa,
    Fal,
    Fals,
    N,
    Nu,
    Nul,
}

/// What a step of the scanner found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Continue,
    /// Only white space: what `json.Compact` drops.
    SkipSpace,
    /// The end of a composite value (`}` or `]`).
    EndComposite,
    /// The top-level value ended before this byte.
    End,
    /// A syntax error at this byte, with its context.
    Error(&'static str),
}

const PARSE_OBJECT_KEY: u8 = 0;
const PARSE_OBJECT_VALUE: u8 = 1;
const PARSE_ARRAY_VALUE: u8 = 2;

/// Go's JSON scanner, fed one byte at a time.
#[derive(Debug)]
pub struct Scanner {
    step: St,
    stack: Vec<u8>,
}

impl Default for Scanner {
    fn default() -> Scanner {
        Scanner {
            step: St::BeginValue,
            stack: Vec::new(),
        }
    }
}

fn is_digit(c: u8) -> bool {
    c.is_ascii_digit()
}

impl Scanner {
    fn reset(&mut self) {
        self.step = St::BeginValue;
        self.stack.clear();
    }

    fn push(&mut self, p: u8) -> Op {
        self.stack.push(p);
        if self.stack.len() <= MAX_DEPTH {
            Op::Continue
        } else {
            Op::Error("exceeded max depth")
        }
    }

    fn pop(&mut self) {
        self.stack.pop();
        self.step = if self.stack.is_empty() {
            St::EndTop
        } else {
            St::EndValue
        };
    }

    fn set(&mut self, s: St) -> Op {
        self.step = s;
        Op::Continue
    }

    fn step(&mut self, c: u8) -> Op {
        match self.step {
            St::BeginValue => self.begin_value(c),
            St::BeginValueOrEmpty => {
                if is_space(c) {
                    Op::SkipSpace
                } else if c == b']' {
                    self.end_value(c)
                } else {
                    self.begin_value(c)
                }
            }
            St::BeginStringOrEmpty => {
                if is_space(c) {
                    Op::SkipSpace
                } else if c == b'}' {
                    if let Some(top) = self.stack.last_mut() {
                        *top = PARSE_OBJECT_VALUE;
                    }
                    self.end_value(c)
                } else {
                    self.begin_string(c)
                }
            }
            St::BeginString => self.begin_string(c),
            St::EndValue => self.end_value(c),
            St::EndTop => Op::End,
            St::InString => match c {
                b'"' => self.set(St::EndValue),
                b'\\' => self.set(St::InStringEsc),
                _ if c < 0x20 => Op::Error("in string literal"),
                _ => Op::Continue,
            },
            St::InStringEsc => match c {
                b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => self.set(St::InString),
                b'u' => self.set(St::InStringEscU),
                _ => Op::Error("in string escape code"),
            },
            St::InStringEscU | St::InStringEscU1 | St::InStringEscU12 | St::InStringEscU123 => {
                if !c.is_ascii_hexdigit() {
                    return Op::Error("in \\u hexadecimal character escape");
                }
                let next = match self.step {
                    St::InStringEscU => St::InStringEscU1,
                    St::InStringEscU1 => St::InStringEscU12,
                    St::InStringEscU12 => St::InStringEscU123,
                    _ => St::InString,
                };
                self.set(next)
            }
            St::Neg => match c {
                b'0' => self.set(St::Zero),
                b'1'..=b'9' => self.set(St::One),
                _ => Op::Error("in numeric literal"),
            },
            St::One => {
                if is_digit(c) {
                    Op::Continue
                } else {
                    self.zero(c)
                }
            }
            St::Zero => self.zero(c),
            St::Dot => {
                if is_digit(c) {
                    self.set(St::Dot0)
                } else {
                    Op::Error("after decimal point in numeric literal")
                }
            }
            St::Dot0 => match c {
                _ if is_digit(c) => Op::Continue,
                b'e' | b'E' => self.set(St::E),
                _ => self.end_value(c),
            },
            St::E => match c {
                b'+' | b'-' => self.set(St::ESign),
                _ => self.e_sign(c),
            },
            St::ESign => self.e_sign(c),
            St::E0 => {
                if is_digit(c) {
                    Op::Continue
                } else {
                    self.end_value(c)
                }
            }
            St::T => self.literal(c, b'r', St::Tr, "in literal true (expecting 'r')"),
            St::Tr => self.literal(c, b'u', St::Tru, "in literal true (expecting 'u')"),
            St::Tru => self.literal(c, b'e', St::EndValue, "in literal true (expecting 'e')"),
            St::F => self.literal(c, b'a', St::Fa, "in literal false (expecting 'a')"),
            St::Fa => self.literal(c, b'l', St::Fal, "in literal false (expecting 'l')"),
            St::Fal => self.literal(c, b's', St::Fals, "in literal false (expecting 's')"),
            St::Fals => self.literal(c, b'e', St::EndValue, "in literal false (expecting 'e')"),
            St::N => self.literal(c, b'u', St::Nu, "in literal null (expecting 'u')"),
            St::Nu => self.literal(c, b'l', St::Nul, "in literal null (expecting 'l')"),
            St::Nul => self.literal(c, b'l', St::EndValue, "in literal null (expecting 'l')"),
        }
    }

    fn literal(&mut self, c: u8, want: u8, next: St, context: &'static str) -> Op {
        if c == want {
            self.set(next)
        } else {
            Op::Error(context)
        }
    }

    fn begin_value(&mut self, c: u8) -> Op {
        if is_space(c) {
            return Op::SkipSpace;
        }
        match c {
            b'{' => {
                self.step = St::BeginStringOrEmpty;
                self.push(PARSE_OBJECT_KEY)
            }
            b'[' => {
                self.step = St::BeginValueOrEmpty;
                self.push(PARSE_ARRAY_VALUE)
            }
            b'"' => self.set(St::InString),
            b'-' => self.set(St::Neg),
            b'0' => self.set(St::Zero),
            b't' => self.set(St::T),
            b'f' => self.set(St::F),
            b'n' => self.set(St::N),
            b'1'..=b'9' => self.set(St::One),
            _ => Op::Error("looking for beginning of value"),
        }
    }

    fn begin_string(&mut self, c: u8) -> Op {
        if is_space(c) {
            Op::SkipSpace
        } else if c == b'"' {
            self.set(St::InString)
        } else {
            Op::Error("looking for beginning of object key string")
        }
    }

    fn end_value(&mut self, c: u8) -> Op {
        let top = match self.stack.last_mut() {
            None => {
                self.step = St::EndTop;
                // Go complains about a byte other than space on the next
                // call; a value ends here either way.
                return Op::End;
            }
            Some(top) => top,
        };
        if is_space(c) {
            self.step = St::EndValue;
            return Op::SkipSpace;
        }
        match *top {
            PARSE_OBJECT_KEY => {
                if c == b':' {
                    *top = PARSE_OBJECT_VALUE;
                    self.step = St::BeginValue;
                    Op::Continue
                } else {
                    Op::Error("after object key")
                }
            }
            PARSE_OBJECT_VALUE => match c {
                b',' => {
                    *top = PARSE_OBJECT_KEY;
                    self.step = St::BeginString;
                    Op::Continue
                }
                b'}' => {
                    self.pop();
                    Op::EndComposite
                }
                _ => Op::Error("after object key:value pair"),
            },
            _ => match c {
                b',' => self.set(St::BeginValue),
                b']' => {
                    self.pop();
                    Op::EndComposite
                }
                _ => Op::Error("after array element"),
            },
        }
    }

    fn zero(&mut self, c: u8) -> Op {
        match c {
            b'.' => self.set(St::Dot),
            b'e' | b'E' => self.set(St::E),
            _ => self.end_value(c),
        }
    }

    fn e_sign(&mut self, c: u8) -> Op {
        if is_digit(c) {
            self.set(St::E0)
        } else {
            Op::Error("in exponent of numeric literal")
        }
    }

    /// Reads one value starting at `data[from..]` (white space first
    /// allowed), as Go's `Decoder.readValue` does, and returns where it
    /// ends: after its last byte (a literal's end is found at the byte after
    /// it, which is not part of it).
    pub fn read_value(&mut self, data: &[u8], from: usize) -> Result<usize, JsonError> {
        self.reset();
        for (i, &c) in data.iter().enumerate().skip(from) {
            match self.step(c) {
                Op::End => return Ok(i),
                Op::EndComposite if self.stack.is_empty() => return Ok(i + 1),
                Op::Error(context) => return Err(syntax_error(c, context)),
                _ => {}
            }
        }
        match self.step(b' ') {
            Op::End => Ok(data.len()),
            _ => Err(JsonError::UnexpectedEof),
        }
    }
}

fn syntax_error(c: u8, context: &str) -> JsonError {
    if context.is_empty() {
        JsonError::Syntax(format!("invalid character {} ", quote_char(c)))
    } else {
        JsonError::Syntax(format!("invalid character {} {}", quote_char(c), context))
    }
}

/// Returns `value`, a valid JSON value, without white space outside its
/// strings, appended to `dst` (Go's `json.Compact`).
pub fn compact(dst: &mut Vec<u8>, value: &[u8]) {
    let (mut in_string, mut escaped) = (false, false);
    for &c in value {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_string = false;
            }
        } else if c == b'"' {
            in_string = true;
        } else if is_space(c) {
            continue;
        }
        dst.push(c);
    }
}

fn hex4(b: &[u8]) -> Option<u32> {
    if b.len() < 4 {
        return None;
    }
    let mut r = 0;
    for &c in &b[..4] {
        r = r << 4 | (c as char).to_digit(16)?;
    }
    Some(r)
}

/// Reads a `\uXXXX` escape at `s[0..6]` (Go's `getu4`).
fn getu4(s: &[u8]) -> Option<u32> {
    if s.len() < 6 || s[0] != b'\\' || s[1] != b'u' {
        return None;
    }
    hex4(&s[2..])
}

fn push_rune(dst: &mut Vec<u8>, r: u32) {
    let c = char::from_u32(r).unwrap_or('\u{fffd}');
    let mut b = [0; 4];
    dst.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
}

/// Decodes the JSON string `raw` (quotes included, valid per the scanner)
/// as Go does, into `dst`, and returns whether it needed decoding: when it
/// returns false, the string is `raw` without its quotes and `dst` is
/// untouched.
pub fn unquote_into(raw: &[u8], dst: &mut Vec<u8>) -> bool {
    let s = &raw[1..raw.len() - 1];
    // The common case: nothing to unescape or coerce.
    let mut r = 0;
    while r < s.len() {
        let c = s[r];
        if c == b'\\' || c == b'"' || c < b' ' {
            break;
        }
        if c < 0x80 {
            r += 1;
            continue;
        }
        match gocompat::decode_rune(&s[r..]) {
            (Some(_), n) => r += n,
            (None, _) => break,
        }
    }
    if r == s.len() {
        return false;
    }
    dst.clear();
    dst.extend_from_slice(&s[..r]);
    while r < s.len() {
        let c = s[r];
        if c == b'\\' {
            r += 1;
            let e = match s.get(r) {
                Some(e) => *e,
                None => break,
            };
            match e {
                b'"' | b'\\' | b'/' | b'\'' => {
                    dst.push(e);
                    r += 1;
                }
                b'b' => {
                    dst.push(8);
                    r += 1;
                }
                b'f' => {
                    dst.push(12);
                    r += 1;
                }
                b'n' => {
                    dst.push(b'\n');
                    r += 1;
                }
                b'r' => {
                    dst.push(b'\r');
                    r += 1;
                }
                b't' => {
                    dst.push(b'\t');
                    r += 1;
                }
                b'u' => {
                    r -= 1;
                    let rr = match getu4(&s[r..]) {
                        Some(rr) => rr,
                        None => break,
                    };
                    r += 6;
                    if (0xd800..0xe000).contains(&rr) {
                        // A surrogate: valid only as the first of a pair.
                        if let Some(rr1) = getu4(&s[r..]) {
                            if (0xd800..0xdc00).contains(&rr) && (0xdc00..0xe000).contains(&rr1) {
                                r += 6;
                                push_rune(dst, 0x10000 + ((rr - 0xd800) << 10 | (rr1 - 0xdc00)));
                                continue;
                            }
                        }
                        push_rune(dst, 0xfffd);
                    } else {
                        push_rune(dst, rr);
                    }
                }
                _ => break,
            }
        } else if c < 0x80 {
            dst.push(c);
            r += 1;
        } else {
            let (rr, n) = gocompat::decode_rune(&s[r..]);
            match rr {
                Some(_) => dst.extend_from_slice(&s[r..r + n]),
                None => push_rune(dst, 0xfffd),
            }
            r += n.max(1);
        }
    }
    true
}

/// Returns the JSON string `raw` (quotes included) decoded as Go does.
pub fn unquote(raw: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    if unquote_into(raw, &mut v) {
        v
    } else {
        raw[1..raw.len() - 1].to_vec()
    }
}

/// The state of Go's token stream (`tokenState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tok {
    TopValue,
    ArrayStart,
    ArrayValue,
    ArrayComma,
    ObjectStart,
    ObjectKey,
    ObjectColon,
    ObjectValue,
    ObjectComma,
}

/// A token of the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Token {
    /// `{`, `}`, `[` or `]`.
    Delim(u8),
    /// An object key: its raw text, quotes included, at `data[from..to]`.
    Key(usize, usize),
    /// Any other value: its raw text at `data[from..to]`.
    Value(usize, usize),
}

/// Go's `json.Decoder` over an input held whole in memory: the token
/// stream (`Token`, `More`) and the decoding of raw values (`Decode` into
/// a `json.RawMessage`).
pub struct Decoder<'a, 's> {
    data: &'a [u8],
    /// Go's `scanp`: the offset of the next unread byte.
    pub pos: usize,
    state: Tok,
    stack: Vec<Tok>,
    scan: &'s mut Scanner,
}

impl<'a, 's> Decoder<'a, 's> {
    /// Returns a decoder of `data` that scans with `scan`.
    pub fn new(data: &'a [u8], scan: &'s mut Scanner) -> Decoder<'a, 's> {
        Decoder {
            data,
            pos: 0,
            state: Tok::TopValue,
            stack: Vec::new(),
            scan,
        }
    }

    /// Skips white space and returns the next byte, or `Eof`.
    fn peek(&mut self) -> Result<u8, JsonError> {
        while self.pos < self.data.len() {
            let c = self.data[self.pos];
            if !is_space(c) {
                return Ok(c);
            }
            self.pos += 1;
        }
        Err(JsonError::Eof)
    }

    fn value_allowed(&self) -> bool {
        matches!(
            self.state,
            Tok::TopValue | Tok::ArrayStart | Tok::ArrayValue | Tok::ObjectValue
        )
    }

    fn value_end(&mut self) {
        match self.state {
            Tok::ArrayStart | Tok::ArrayValue => self.state = Tok::ArrayComma,
            Tok::ObjectValue => self.state = Tok::ObjectComma,
            _ => {}
        }
    }

    fn token_error(&self, c: u8) -> JsonError {
        let context = match self.state {
            Tok::TopValue | Tok::ArrayStart | Tok::ArrayValue | Tok::ObjectValue => {
                " looking for beginning of value"
            }
            Tok::ArrayComma => " after array element",
            Tok::ObjectKey => " looking for beginning of object key string",
            Tok::ObjectColon => " after object key",
            Tok::ObjectComma => " after object key:value pair",
            Tok::ObjectStart => "",
        };
        JsonError::Syntax(format!("invalid character {}{}", quote_char(c), context))
    }

    /// Go's `Decoder.More`: whether there is another element in the
    /// current array or object.
    pub fn more(&mut self) -> bool {
        match self.peek() {
            Ok(c) => c != b']' && c != b'}',
            Err(_) => false,
        }
    }

    /// Go's `Decoder.Token`. A value that is not an object key is decoded
    /// as Go decodes it into an `any`: a number out of float64's range is
    /// an error.
    pub fn token(&mut self) -> Result<Token, JsonError> {
        loop {
            let c = self.peek()?;
            match c {
                b'[' | b'{' => {
                    if !self.value_allowed() {
                        return Err(self.token_error(c));
                    }
                    self.pos += 1;
                    self.stack.push(self.state);
                    self.state = if c == b'[' {
                        Tok::ArrayStart
                    } else {
                        Tok::ObjectStart
                    };
                    return Ok(Token::Delim(c));
                }
                b']' | b'}' => {
                    let ok = if c == b']' {
                        matches!(self.state, Tok::ArrayStart | Tok::ArrayComma)
                    } else {
                        matches!(self.state, Tok::ObjectStart | Tok::ObjectComma)
                    };
                    if !ok {
                        return Err(self.token_error(c));
                    }
                    self.pos += 1;
                    self.state = self.stack.pop().unwrap_or(Tok::TopValue);
                    self.value_end();
                    return Ok(Token::Delim(c));
                }
                b':' => {
                    if self.state != Tok::ObjectColon {
                        return Err(self.token_error(c));
                    }
                    self.pos += 1;
                    self.state = Tok::ObjectValue;
                }
                b',' => match self.state {
                    Tok::ArrayComma => {
                        self.pos += 1;
                        self.state = Tok::ArrayValue;
                    }
                    Tok::ObjectComma => {
                        self.pos += 1;
                        self.state = Tok::ObjectKey;
                    }
                    _ => return Err(self.token_error(c)),
                },
                b'"' if matches!(self.state, Tok::ObjectStart | Tok::ObjectKey) => {
                    let old = self.state;
                    self.state = Tok::TopValue;
                    let r = self.decode_raw();
                    self.state = old;
                    let (from, to) = r?;
                    self.state = Tok::ObjectColon;
                    return Ok(Token::Key(from, to));
                }
                _ => {
                    if !self.value_allowed() {
                        return Err(self.token_error(c));
                    }
                    let (from, to) = self.decode_raw()?;
                    let v = &self.data[from..to];
                    if v[0] == b'-' || v[0].is_ascii_digit() {
                        // Decoded into an any: a float64.
                        let f: f64 = std::str::from_utf8(v)
                            .ok()
                            .and_then(|s| s.parse().ok())
                            .unwrap_or(f64::NAN);
                        if f.is_infinite() {
                            return Err(JsonError::Syntax(format!(
                                "json: cannot unmarshal number {} into Go value of type float64",
                                String::from_utf8_lossy(v)
                            )));
                        }
                    }
                    return Ok(Token::Value(from, to));
                }
            }
        }
    }

    /// Go's `Decoder.Decode` into a `json.RawMessage`: the next value's
    /// text, without leading white space, at `data[from..to]`.
    pub fn decode_raw(&mut self) -> Result<(usize, usize), JsonError> {
        match self.state {
            Tok::ArrayComma => {
                if self.peek()? != b',' {
                    return Err(JsonError::Syntax(
                        "expected comma after array element".to_string(),
                    ));
                }
                self.pos += 1;
                self.state = Tok::ArrayValue;
            }
            Tok::ObjectColon => {
                if self.peek()? != b':' {
                    return Err(JsonError::Syntax(
                        "expected colon after object key".to_string(),
                    ));
                }
                self.pos += 1;
                self.state = Tok::ObjectValue;
            }
            _ => {}
        }
        if !self.value_allowed() {
            return Err(JsonError::Syntax("not at beginning of value".to_string()));
        }
        let end = self.scan.read_value(self.data, self.pos)?;
        let mut from = self.pos;
        while from < end && is_space(self.data[from]) {
            from += 1;
        }
        self.pos = end;
        self.value_end();
        Ok((from, end))
    }
}

/// Names the JSON type of a value's text, for messages (the Go plugin's
/// `kind`).
pub fn kind(v: &[u8]) -> &'static str {
    match v.first() {
        None => "empty",
        Some(b'"') => "a string",
        Some(b'{') => "an object",
        Some(b'[') => "an array",
        Some(b't') | Some(b'f') => "a boolean",
        Some(b'n') => "null",
        Some(_) => "not a number",
    }
}

/// Go's `syntaxError` of the Go plugin: an end of input reads "unexpected
/// end of JSON".
pub fn plugin_error(e: JsonError) -> String {
    match e {
        JsonError::Eof | JsonError::UnexpectedEof => "unexpected end of JSON".to_string(),
        JsonError::Syntax(m) => m,
    }
}

/// One member of a JSON object, by offsets into the object's text.
#[derive(Clone, Copy, Debug, Default)]
pub struct Member {
    /// The decoded name: at `data[name.0..name.1]`, or, when `in_names`,
    /// at `names[name.0..name.1]` (it had escapes or invalid UTF-8).
    pub name: (usize, usize),
    pub in_names: bool,
    /// The name's JSON text, quotes included.
    pub key: (usize, usize),
    /// The value's JSON text.
    pub value: (usize, usize),
}

/// Reusable buffers for [`read_object`].
#[derive(Debug, Default)]
pub struct ObjectReader {
    pub members: Vec<Member>,
    pub names: Vec<u8>,
    scan: Scanner,
    tmp: Vec<u8>,
}

impl ObjectReader {
    /// Returns member `i`'s decoded name, for an object read from `data`.
    pub fn name<'a>(&'a self, data: &'a [u8], i: usize) -> &'a [u8] {
        let m = &self.members[i];
        if m.in_names {
            &self.names[m.name.0..m.name.1]
        } else {
            &data[m.name.0..m.name.1]
        }
    }

    /// Returns the index of the last member called `name` (the one a Go
    /// decoder keeps), if any.
    pub fn find(&self, data: &[u8], name: &[u8]) -> Option<usize> {
        (0..self.members.len())
            .rev()
            .find(|&i| self.name(data, i) == name)
    }

    /// Splits `data`, which must hold exactly one JSON object, into its
    /// members in order, as the Go plugin's `readObject` does, with its
    /// error messages.
    pub fn read_object(&mut self, data: &[u8]) -> Result<(), String> {
        self.members.clear();
        self.names.clear();
        let mut d = Decoder::new(data, &mut self.scan);
        match d.token().map_err(plugin_error)? {
            Token::Delim(b'{') => {}
            _ => return Err(format!("it is {}", kind(trim_left(data)))),
        }
        while d.more() {
            let start = d.pos;
            let (from, to) = match d.token().map_err(plugin_error)? {
                Token::Key(from, to) => (from, to),
                // Go takes a token that is not a string as the name "";
                // the token stream never gives one here.
                _ => (start, start),
            };
            let mut m = Member {
                key: (from, to),
                ..Member::default()
            };
            if to > from {
                if unquote_into(&data[from..to], &mut self.tmp) {
                    let n0 = self.names.len();
                    self.names.extend_from_slice(&self.tmp);
                    m.name = (n0, self.names.len());
                    m.in_names = true;
                } else {
                    m.name = (from + 1, to - 1);
                }
            }
            m.value = d.decode_raw().map_err(plugin_error)?;
            self.members.push(m);
        }
        d.token().map_err(plugin_error)?; // the closing brace
        match d.token() {
            Err(JsonError::Eof) => Ok(()),
            _ => Err("data after the object".to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(data: &str) -> Result<Vec<(String, String, String)>, String> {
        let mut r = ObjectReader::default();
        r.read_object(data.as_bytes())?;
        let d = data.as_bytes();
        Ok((0..r.members.len())
            .map(|i| {
                let m = r.members[i];
                (
                    String::from_utf8_lossy(r.name(d, i)).into_owned(),
                    data[m.key.0..m.key.1].to_string(),
                    data[m.value.0..m.value.1].to_string(),
                )
            })
            .collect())
    }

    #[test]
    fn objects() {
        assert_eq!(
            read(r#" { "user" : "bo" , "x":{"nested":[1, 2]}, "a\u0062": 1e3 } "#).unwrap(),
            vec![
                ("user".into(), r#""user""#.into(), r#""bo""#.into()),
                ("x".into(), r#""x""#.into(), r#"{"nested":[1, 2]}"#.into()),
                ("ab".into(), r#""a\u0062""#.into(), "1e3".into()),
            ]
        );
        assert_eq!(read("{}").unwrap(), vec![]);
    }

    /// Messages checked against Go's encoding/json.
    #[test]
    fn errors() {
        for (input, want) in [
            ("", "unexpected end of JSON"),
            ("   ", "unexpected end of JSON"),
            ("[1,2]", "it is an array"),
            (r#""text""#, "it is a string"),
            ("12", "it is not a number"),
            ("true", "it is a boolean"),
            ("null", "it is null"),
            (
                "1e999",
                "json: cannot unmarshal number 1e999 into Go value of type float64",
            ),
            (
                "not json",
                "invalid character 'o' in literal null (expecting 'u')",
            ),
            ("}", "invalid character '}' looking for beginning of value"),
            (r#"{"user":"#, "unexpected end of JSON"),
            (r#"{"user":1} {}"#, "data after the object"),
            (r#"{"a" 1}"#, "expected colon after object key"),
            (
                r#"{"a":1 "b":2}"#,
                "invalid character '\"' after object key:value pair",
            ),
            (
                r#"{"a":1,}"#,
                "invalid character '}' looking for beginning of object key string",
            ),
            ("{,}", "invalid character ','"),
            (
                r#"{"a":}"#,
                "invalid character '}' looking for beginning of value",
            ),
            (
                r#"{"a":[1 2]}"#,
                "invalid character '2' after array element",
            ),
            (r#"{"a":{"b" 1}}"#, "invalid character '1' after object key"),
            (
                r#"{"a":01}"#,
                "invalid character '1' after object key:value pair",
            ),
            (
                r#"{"a":1.}"#,
                "invalid character '}' after decimal point in numeric literal",
            ),
            (r#"{"a":-}"#, "invalid character '}' in numeric literal"),
            (
                r#"{"a":1e}"#,
                "invalid character '}' in exponent of numeric literal",
            ),
            (
                r#"{"a":"\x"}"#,
                "invalid character 'x' in string escape code",
            ),
            (
                r#"{"a":"\u12g4"}"#,
                "invalid character 'g' in \\u hexadecimal character escape",
            ),
            (
                "{\"a\":\"\n\"}",
                "invalid character '\\n' in string literal",
            ),
            (
                "{\"a\":\u{e9}}",
                "invalid character 'Ã' looking for beginning of value",
            ),
            (
                "{\"a\":\x01}",
                "invalid character '\\x01' looking for beginning of value",
            ),
        ] {
            assert_eq!(read(input).unwrap_err(), want, "{:?}", input);
        }
    }

    #[test]
    fn unquoting() {
        let u = |s: &[u8]| unquote(s);
        assert_eq!(u(br#""abc""#), b"abc");
        assert_eq!(u(br#""a\"\\\/\b\f\n\r\t""#), b"a\"\\/\x08\x0c\n\r\t");
        assert_eq!(u(br#""\u00e9\ud83d\ude00""#), "é😀".as_bytes());
        assert_eq!(u(br#""\ud83d""#), "\u{fffd}".as_bytes());
        assert_eq!(u(br#""\ud83dx""#), "\u{fffd}x".as_bytes());
        assert_eq!(
            u(br#""\ude00\ud83d\u0041""#),
            "\u{fffd}\u{fffd}A".as_bytes()
        );
        assert_eq!(
            u(b"\"\xff\xf0\x9f\x98\""),
            "\u{fffd}\u{fffd}\u{fffd}\u{fffd}".as_bytes()
        );
    }

    #[test]
    fn compacting() {
        let mut out = Vec::new();
        compact(&mut out, b"[1, 2, {\"a b\" :\t\"c \\\" d\"}]");
        assert_eq!(out, b"[1,2,{\"a b\":\"c \\\" d\"}]");
    }

    #[test]
    fn depth() {
        let deep = format!("{{\"a\":{}{}}}", "[".repeat(10_001), "]".repeat(10_001));
        assert_eq!(
            read(&deep).unwrap_err(),
            "invalid character '[' exceeded max depth"
        );
        let ok = format!("{{\"a\":{}{}}}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(read(&ok).is_ok());
    }
}
