//! The pieces of Go's text handling that the Rust conformance operators
//! need to produce byte-identical messages to the Go plugins: Go's UTF-8
//! decoding ([`decode_rune`], which replaces every byte of an invalid
//! sequence on its own, unlike Rust's lossy conversion) and `%q` quoting
//! ([`quote`], Go's `strconv.Quote`, whose idea of a printable rune comes
//! from Go's Unicode tables, generated into `print_table.rs`).
//!
//! The conformance operators must say exactly what the Go plugins say in
//! their dead-letter messages (`stored count of key "k": ...`); an operator
//! of your own has no reason to use this crate.

mod print_table;

/// Decodes the first UTF-8 sequence of `b` as Go's `utf8.DecodeRune` does:
/// the rune and its width, or `(None, 1)` for an invalid or truncated
/// sequence (Go's `(RuneError, 1)`), and `(None, 0)` for an empty `b`.
pub fn decode_rune(b: &[u8]) -> (Option<char>, usize) {
    let c0 = match b.first() {
        Some(c) => *c,
        None => return (None, 0),
    };
    if c0 < 0x80 {
        return (Some(c0 as char), 1);
    }
    // The ranges of Unicode's table 3-7 (well-formed byte sequences).
    let (n, lo, hi) = match c0 {
        0xc2..=0xdf => (2, 0x80, 0xbf),
        0xe0 => (3, 0xa0, 0xbf),
        0xe1..=0xec | 0xee..=0xef => (3, 0x80, 0xbf),
        0xed => (3, 0x80, 0x9f),
        0xf0 => (4, 0x90, 0xbf),
        0xf1..=0xf3 => (4, 0x80, 0xbf),
        0xf4 => (4, 0x80, 0x8f),
        _ => return (None, 1),
    };
    if b.len() < n || b[1] < lo || b[1] > hi || b[2..n].iter().any(|c| !(0x80..=0xbf).contains(c)) {
        return (None, 1);
    }
    let mut r = (c0 as u32) & (0x7f >> n);
    for c in &b[1..n] {
        r = r << 6 | (*c as u32 & 0x3f);
    }
    (char::from_u32(r), n)
}

/// Reports whether Go's `strconv.IsPrint` holds for `c`: letters, marks,
/// numbers, punctuation, symbols and the ASCII space.
pub fn is_print(c: char) -> bool {
    let r = c as u32;
    if r < 0x80 {
        return (0x20..0x7f).contains(&r);
    }
    if r < 0x10000 {
        let r = r as u16;
        let i = print_table::PRINT16.partition_point(|&(_, hi)| hi < r);
        return i < print_table::PRINT16.len() && print_table::PRINT16[i].0 <= r;
    }
    let i = print_table::PRINT32.partition_point(|&(_, hi)| hi < r);
    i < print_table::PRINT32.len() && print_table::PRINT32[i].0 <= r
}

const LOWER_HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends the escape of rune `r` as `strconv.Quote` writes it, quoted with
/// `quote`.
pub fn append_escaped_rune(dst: &mut String, r: char, quote: char) {
    if r == quote || r == '\\' {
        dst.push('\\');
        dst.push(r);
        return;
    }
    if is_print(r) {
        dst.push(r);
        return;
    }
    match r {
        '\x07' => dst.push_str("\\a"),
        '\x08' => dst.push_str("\\b"),
        '\x0c' => dst.push_str("\\f"),
        '\n' => dst.push_str("\\n"),
        '\r' => dst.push_str("\\r"),
        '\t' => dst.push_str("\\t"),
        '\x0b' => dst.push_str("\\v"),
        _ => {
            let v = r as u32;
            if v < 0x20 || v == 0x7f {
                append_hex(dst, "\\x", v, 2);
            } else if v < 0x10000 {
                append_hex(dst, "\\u", v, 4);
            } else {
                append_hex(dst, "\\U", v, 8);
            }
        }
    }
}

fn append_hex(dst: &mut String, prefix: &str, v: u32, digits: u32) {
    dst.push_str(prefix);
    for i in (0..digits).rev() {
        dst.push(LOWER_HEX[(v >> (4 * i) & 0xf) as usize] as char);
    }
}

/// Appends `s` quoted as Go's `strconv.Quote(string(s))` (and so `%q` of a
/// string or a `[]byte`) writes it: printable runes as they are, the others
/// escaped, and every byte of invalid UTF-8 as `\xHH`.
pub fn append_quoted(dst: &mut String, s: &[u8]) {
    dst.push('"');
    let mut s = s;
    while !s.is_empty() {
        let (r, width) = decode_rune(s);
        match r {
            Some(r) => append_escaped_rune(dst, r, '"'),
            None => append_hex(dst, "\\x", s[0] as u32, 2),
        }
        s = &s[width.max(1)..];
    }
    dst.push('"');
}

/// Returns `s` quoted as Go's `%q` does; see [`append_quoted`].
pub fn quote(s: &[u8]) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    append_quoted(&mut q, s);
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_like_go() {
        // Expected values from Go's strconv.Quote.
        let cases: &[(&[u8], &str)] = &[
            (b"", r#""""#),
            (b"the", r#""the""#),
            (b"a\"b\\c", r#""a\"b\\c""#),
            (
                b"\x00\x07\x08\x0c\n\r\t\x0b\x1b\x7f",
                r#""\x00\a\b\f\n\r\t\v\x1b\x7f""#,
            ),
            ("héllo wörld ☺".as_bytes(), "\"héllo wörld ☺\""),
            (b"\xff\xfe", r#""\xff\xfe""#),
            (b"\xf0\x9f\x98", r#""\xf0\x9f\x98""#),
            (b"\xed\xa0\x80", r#""\xed\xa0\x80""#),
            (
                "\u{a0}\u{ad}\u{200b}\u{feff}".as_bytes(),
                r#""\u00a0\u00ad\u200b\ufeff""#,
            ),
            ("\u{fffd}".as_bytes(), "\"\u{fffd}\""),
            ("\u{10ffff}\u{1f600}".as_bytes(), "\"\\U0010ffff\u{1f600}\""),
            ("\u{e000}".as_bytes(), r#""\ue000""#),
        ];
        for (s, want) in cases {
            assert_eq!(quote(s), *want, "quote({:?})", s);
        }
    }

    #[test]
    fn decode_like_go() {
        assert_eq!(decode_rune(b""), (None, 0));
        assert_eq!(decode_rune(b"a"), (Some('a'), 1));
        assert_eq!(decode_rune("é".as_bytes()), (Some('é'), 2));
        assert_eq!(decode_rune("€".as_bytes()), (Some('€'), 3));
        assert_eq!(decode_rune("😀".as_bytes()), (Some('😀'), 4));
        assert_eq!(decode_rune(b"\xc0\x80"), (None, 1), "overlong");
        assert_eq!(decode_rune(b"\xed\xa0\x80"), (None, 1), "surrogate");
        assert_eq!(decode_rune(b"\xf4\x90\x80\x80"), (None, 1), "past U+10FFFF");
        assert_eq!(decode_rune(b"\xe2\x82"), (None, 1), "truncated");
        // Every valid encoding agrees with Rust's decoder.
        for c in (0..=0x10ffffu32).filter_map(char::from_u32) {
            let mut b = [0; 4];
            let s = c.encode_utf8(&mut b);
            assert_eq!(decode_rune(s.as_bytes()), (Some(c), s.len()));
        }
    }

    #[test]
    fn print_table_spot_checks() {
        for c in ['a', ' ', '~', 'é', 'ÿ', '€', '中', '😀', '\u{300}'] {
            assert!(is_print(c), "{:?}", c);
        }
        for c in [
            '\x7f',
            '\u{80}',
            '\u{a0}',
            '\u{ad}',
            '\u{2028}',
            '\u{e000}',
            '\u{10ffff}',
            '\u{378}',
        ] {
            assert!(!is_print(c), "{:?}", c);
        }
    }
}
