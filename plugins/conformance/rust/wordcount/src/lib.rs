//! The conformance operator `wordcount` in Rust: counts the records of
//! each key in the keyed state of the operator's first table, and emits the
//! new count (decimal ASCII) with the record's key and time, exactly as the
//! Go plugin `plugins/wordcount` does. A stored count that is not a decimal
//! number dead-letters the record, with the Go plugin's message.

use sluice::{Emitter, Error, Keyed, Record, State};

/// The operator: a buffer the new count is formatted into, reused from
/// record to record (`put` copies it and `emit` encodes it at once).
#[derive(Default)]
pub struct WordCount {
    buf: Vec<u8>,
}

impl Keyed for WordCount {
    fn process(
        &mut self,
        r: &Record<'_>,
        st: &mut State<'_>,
        out: &mut Emitter<'_>,
    ) -> Result<(), Error> {
        let n = match st.get() {
            Some(v) => parse_count(v).map_err(|e| {
                Error::new(format!(
                    "stored count of key {}: {}",
                    gocompat::quote(r.key),
                    e
                ))
            })?,
            None => 0,
        };
        self.buf.clear();
        append_count(&mut self.buf, n.wrapping_add(1));
        st.put(&self.buf);
        out.emit(&Record::new(r.key, &self.buf).with_time(r.time));
        Ok(())
    }
}

sluice::export_keyed!(WordCount);

/// Reads a count written by `append_count`: one or more ASCII digits, at
/// most 2^64-1.
pub fn parse_count(b: &[u8]) -> Result<u64, String> {
    if b.is_empty() {
        return Err("empty, want a decimal number".to_string());
    }
    let mut n: u64 = 0;
    for &c in b {
        let d = c.wrapping_sub(b'0') as u64;
        if d > 9 {
            return Err(format!("{} is not a decimal number", gocompat::quote(b)));
        }
        if n > (u64::MAX - d) / 10 {
            return Err(format!("{} is out of range", gocompat::quote(b)));
        }
        n = n * 10 + d;
    }
    Ok(n)
}

/// Appends `n` in decimal.
pub fn append_count(dst: &mut Vec<u8>, n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    dst.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice::testing::Harness;
    use sluice::OwnedRecord;

    #[test]
    fn parse() {
        for (s, want) in [
            ("0", Ok(0)),
            ("42", Ok(42)),
            ("007", Ok(7)),
            ("18446744073709551615", Ok(u64::MAX)),
            (
                "18446744073709551616",
                Err("\"18446744073709551616\" is out of range"),
            ),
            ("", Err("empty, want a decimal number")),
            ("-1", Err("\"-1\" is not a decimal number")),
            ("1 ", Err("\"1 \" is not a decimal number")),
        ] {
            assert_eq!(
                parse_count(s.as_bytes()),
                want.map_err(|e| e.to_string()),
                "{:?}",
                s
            );
        }
        let mut b = Vec::new();
        for n in [0, 9, 10, 1234567890, u64::MAX] {
            b.clear();
            append_count(&mut b, n);
            assert_eq!(b, n.to_string().as_bytes());
        }
    }

    #[test]
    fn counts_and_rejects() {
        let mut h = Harness::keyed(WordCount::default(), &["counts"]);
        let out = h.process(&[
            OwnedRecord::new("the", "the"),
            OwnedRecord::new("cat", "cat"),
            OwnedRecord::new("the", "the"),
        ]);
        let got: Vec<String> = out
            .records
            .iter()
            .map(|e| {
                format!(
                    "{}={}",
                    String::from_utf8_lossy(&e.record.key),
                    String::from_utf8_lossy(&e.record.value)
                )
            })
            .collect();
        assert_eq!(got, ["the=1", "cat=1", "the=2"]);
        assert_eq!(h.state("counts", b"the"), Some(b"2".to_vec()));

        h.set_state("counts", b"bad", b"many");
        let out = h.process(&[OwnedRecord::new("bad", "x"), OwnedRecord::new("the", "the")]);
        assert_eq!(out.rejects.len(), 1);
        assert_eq!(
            out.rejects[0].message,
            r#"stored count of key "bad": "many" is not a decimal number"#
        );
        assert_eq!(out.records.len(), 1);
        assert_eq!(h.state("counts", b"bad"), Some(b"many".to_vec()));
        assert_eq!(h.state("counts", b"the"), Some(b"3".to_vec()));
    }
}
