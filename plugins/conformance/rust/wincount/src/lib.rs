//! The conformance operator `wincount` in Rust, an aggregate (ABI section
//! 13), exactly as the Go plugin `plugins/wincount`: per key and window,
//! the number of records and the sum of their values, each a decimal
//! integer (an optional '-', then digits, within i64); a record whose
//! value is not one is rejected. The accumulator is 16 bytes, count and sum
//! as little-endian 64-bit integers (the sum wraps around); a window's
//! result is "count,sum" in decimal.

use sluice::{Aggregate, Emitter, Error, Record, Window};

/// The operator, with the buffer its results are formatted into.
#[derive(Default)]
pub struct WinCount {
    buf: Vec<u8>,
}

/// Reads a decimal i64 as Go's `strconv.ParseInt(s, 10, 64)` does, but for
/// a leading '+', which it refuses.
pub fn parse(s: &[u8]) -> Option<i64> {
    let neg = s.first() == Some(&b'-');
    let digits = if neg { &s[1..] } else { s };
    if digits.is_empty() {
        return None;
    }
    let mut m: u64 = 0;
    for &c in digits {
        let d = c.wrapping_sub(b'0') as u64;
        if d > 9
            || m > 922_337_203_685_477_580
            || (m == 922_337_203_685_477_580 && d > 7 + neg as u64)
        {
            return None;
        }
        m = m * 10 + d;
    }
    Some(if neg {
        0u64.wrapping_sub(m) as i64
    } else {
        m as i64
    })
}

fn get(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

impl Aggregate for WinCount {
    fn add(&mut self, acc: &mut Vec<u8>, r: &Record<'_>) -> Result<(), Error> {
        let v = parse(r.value).ok_or_else(|| Error::new("value is not a decimal integer"))?;
        if acc.len() != 16 {
            acc.clear();
            acc.resize(16, 0);
        }
        let (c, s) = (get(acc, 0) + 1, get(acc, 8).wrapping_add(v as u64));
        acc[..8].copy_from_slice(&c.to_le_bytes());
        acc[8..].copy_from_slice(&s.to_le_bytes());
        Ok(())
    }

    fn merge(&mut self, a: &mut Vec<u8>, b: &[u8]) -> Result<(), Error> {
        if a.len() != 16 || b.len() != 16 {
            return Err(Error::new("accumulator is not 16 bytes"));
        }
        let (c, s) = (
            get(a, 0).wrapping_add(get(b, 0)),
            get(a, 8).wrapping_add(get(b, 8)),
        );
        a[..8].copy_from_slice(&c.to_le_bytes());
        a[8..].copy_from_slice(&s.to_le_bytes());
        Ok(())
    }

    fn fire(
        &mut self,
        key: &[u8],
        _w: &Window,
        acc: &[u8],
        out: &mut Emitter<'_>,
    ) -> Result<(), Error> {
        if acc.len() != 16 {
            return Err(Error::new("accumulator is not 16 bytes"));
        }
        self.buf.clear();
        self.buf
            .extend_from_slice(format!("{},{}", get(acc, 0), get(acc, 8) as i64).as_bytes());
        out.emit(&Record::new(key, &self.buf));
        Ok(())
    }
}

sluice::export_aggregate!(WinCount);
