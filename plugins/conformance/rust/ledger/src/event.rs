//! The wire format of Streaming Ledger, as package
//! `txn/apps/ledger/event` (and the `wire` package under it) defines it:
//! events, balances and keys, with the Go decoder's error messages.

use std::fmt;

/// The first byte of every Streaming Ledger event (format v1).
pub const TAG: u8 = b'L';
/// The number of decimal digits of a key.
pub const KEY_WIDTH: usize = 8;
/// Keys are below this.
const MAX_KEYS: u32 = 100_000_000;
const FLAG_DEPOSIT: u8 = 1;

/// A deposit or a transfer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Event {
    /// True for a deposit, false for a transfer.
    pub deposit: bool,
    /// Credited by a deposit, debited by a transfer.
    pub account: u32,
    /// Credited by a deposit, debited by a transfer.
    pub book: u32,
    /// Credited by a transfer.
    pub dst_account: u32,
    /// Credited by a transfer.
    pub dst_book: u32,
    /// The amount moved, at least 0.
    pub amount: i64,
    /// The busy work of each operation, in nanoseconds.
    pub busy_nanos: u32,
}

/// A malformed event or balance: which format, which field, where, why
/// (Go's `wire.FieldError`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    format: &'static str,
    field: &'static str,
    offset: usize,
    reason: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: field {} at byte {}: {}",
            self.format, self.field, self.offset, self.reason
        )
    }
}

/// Decodes fields in order, keeping the first failure (Go's `wire.Reader`).
struct Reader<'a> {
    format: &'static str,
    b: &'a [u8],
    off: usize,
    err: Option<FieldError>,
}

impl<'a> Reader<'a> {
    fn fail_at(&mut self, field: &'static str, offset: usize, reason: String) {
        if self.err.is_none() {
            self.err = Some(FieldError {
                format: self.format,
                field,
                offset,
                reason,
            });
        }
    }

    fn byte(&mut self, field: &'static str) -> u8 {
        if self.err.is_some() {
            return 0;
        }
        match self.b.get(self.off) {
            Some(c) => {
                self.off += 1;
                *c
            }
            None => {
                self.fail_at(field, self.off, "truncated".to_string());
                0
            }
        }
    }

    fn uvarint(&mut self, field: &'static str) -> u64 {
        if self.err.is_some() {
            return 0;
        }
        let mut v: u64 = 0;
        for (i, &c) in self.b[self.off..].iter().enumerate() {
            if i == 9 {
                // A 10th byte holds bit 63 only.
                if c > 1 {
                    self.fail_at(field, self.off, "varint overflows 64 bits".to_string());
                    return 0;
                }
                self.off += 10;
                return v | (c as u64) << 63;
            }
            if c < 0x80 {
                self.off += i + 1;
                return v | (c as u64) << (7 * i);
            }
            v |= ((c & 0x7f) as u64) << (7 * i);
        }
        self.fail_at(field, self.off, "truncated".to_string());
        0
    }

    fn uvarint32(&mut self, field: &'static str, max: u32) -> u32 {
        let off = self.off;
        let v = self.uvarint(field);
        if v > max as u64 {
            self.fail_at(field, off, format!("out of range (over {})", max));
            return 0;
        }
        v as u32
    }

    fn int64(&mut self, field: &'static str) -> i64 {
        let off = self.off;
        let v = self.uvarint(field);
        if v > i64::MAX as u64 {
            self.fail_at(field, off, "out of range (over 2^63-1)".to_string());
            return 0;
        }
        v as i64
    }

    fn tag(&mut self, want: u8, name: &str) {
        let off = self.off;
        let c = self.byte("tag");
        if self.err.is_none() && c != want {
            self.fail_at(
                "tag",
                off,
                format!("not {} (tag {:#04x}, want {:#04x})", name, c, want),
            );
        }
    }

    fn finish(mut self) -> Result<(), FieldError> {
        if self.err.is_none() && self.off != self.b.len() {
            let n = self.b.len() - self.off;
            self.fail_at("end", self.off, format!("{} trailing bytes", n));
        }
        match self.err {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }
}

/// Decodes an event written by Go's `event.AppendEvent`.
pub fn decode_event(b: &[u8]) -> Result<Event, FieldError> {
    let mut r = Reader {
        format: "ledger event",
        b,
        off: 0,
        err: None,
    };
    let mut e = Event::default();
    r.tag(TAG, "a Streaming Ledger event");
    let flags = r.byte("flags");
    if flags & !FLAG_DEPOSIT != 0 {
        r.fail_at("flags", 1, "unknown flag bits".to_string());
    }
    e.deposit = flags & FLAG_DEPOSIT != 0;
    e.account = r.uvarint32("account", MAX_KEYS - 1);
    e.book = r.uvarint32("book", MAX_KEYS - 1);
    if !e.deposit {
        e.dst_account = r.uvarint32("dst account", MAX_KEYS - 1);
        e.dst_book = r.uvarint32("dst book", MAX_KEYS - 1);
    }
    e.amount = r.int64("amount");
    e.busy_nanos = r.uvarint32("busy-ns", u32::MAX);
    r.finish().map(|_| e)
}

/// Returns key `k` of either table: `k` in [`KEY_WIDTH`] decimal digits.
pub fn key(k: u32) -> [u8; KEY_WIDTH] {
    let mut d = [0u8; KEY_WIDTH];
    let mut k = k;
    for c in d.iter_mut().rev() {
        *c = b'0' + (k % 10) as u8;
        k /= 10;
    }
    d
}

/// Decodes a balance: 8 bytes little endian, or empty (a key never
/// written) for 0.
pub fn decode_balance(b: &[u8]) -> Result<i64, FieldError> {
    match b.len() {
        0 => Ok(0),
        8 => {
            let mut w = [0u8; 8];
            w.copy_from_slice(b);
            Ok(i64::from_le_bytes(w))
        }
        n => Err(FieldError {
            format: "ledger balance",
            field: "balance",
            offset: 0,
            reason: format!("length {}, want 0 or 8", n),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uvarint(dst: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            dst.push(v as u8 | 0x80);
            v >>= 7;
        }
        dst.push(v as u8);
    }

    /// Go's event.AppendEvent.
    fn append_event(e: &Event) -> Vec<u8> {
        let mut b = vec![TAG, e.deposit as u8];
        uvarint(&mut b, e.account as u64);
        uvarint(&mut b, e.book as u64);
        if !e.deposit {
            uvarint(&mut b, e.dst_account as u64);
            uvarint(&mut b, e.dst_book as u64);
        }
        uvarint(&mut b, e.amount.max(0) as u64);
        uvarint(&mut b, e.busy_nanos as u64);
        b
    }

    #[test]
    fn round_trip_and_errors() {
        let e = Event {
            account: 1,
            book: 2,
            dst_account: 3,
            dst_book: 99_999_999,
            amount: i64::MAX,
            busy_nanos: u32::MAX,
            ..Event::default()
        };
        assert_eq!(decode_event(&append_event(&e)), Ok(e));
        let d = Event {
            deposit: true,
            account: 7,
            book: 8,
            amount: 10,
            ..Event::default()
        };
        assert_eq!(decode_event(&append_event(&d)), Ok(d));
        let good = append_event(&Event {
            account: 1,
            book: 2,
            dst_account: 3,
            dst_book: 4,
            amount: 100,
            ..Event::default()
        });
        let with = |i: usize, c: u8| {
            let mut b = good.clone();
            b[i] = c;
            b
        };
        let err = |b: &[u8]| decode_event(b).unwrap_err().to_string();
        assert_eq!(
            err(&with(0, b'X')),
            "ledger event: field tag at byte 0: not a Streaming Ledger event (tag 0x58, want 0x4c)"
        );
        assert_eq!(
            err(&with(1, 4)),
            "ledger event: field flags at byte 1: unknown flag bits"
        );
        assert_eq!(
            err(&[TAG, 0, 0x80, 0xc2, 0xd7, 0x2f]),
            "ledger event: field account at byte 2: out of range (over 99999999)"
        );
        assert_eq!(err(&[]), "ledger event: field tag at byte 0: truncated");
        assert_eq!(
            err(&[&good[..], &[0]].concat()),
            "ledger event: field end at byte 8: 1 trailing bytes"
        );
        let mut amount = good[..6].to_vec();
        amount.extend_from_slice(&[
            0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0,
        ]);
        assert_eq!(
            err(&amount),
            "ledger event: field amount at byte 6: out of range (over 2^63-1)"
        );
        assert_eq!(decode_balance(&[]), Ok(0));
        assert_eq!(decode_balance(&(-5i64).to_le_bytes()), Ok(-5));
        assert_eq!(
            decode_balance(&[0; 7]).unwrap_err().to_string(),
            "ledger balance: field balance at byte 0: length 7, want 0 or 8"
        );
        assert_eq!(&key(42), b"00000042");
    }
}
