//! The conformance operator `winmedian` in Rust, a window function (ABI
//! section 13), exactly as the Go plugin `plugins/winmedian`: the median of
//! a window's values, each a decimal integer (an optional '-', then digits,
//! within i64), in decimal: the middle value once sorted, the upper of the
//! two middle values for an even count. A value that is not an integer
//! dead-letters the whole window.

use sluice::{Emitter, Error, Record, Window, WindowFunction};

/// The operator.
#[derive(Default)]
pub struct WinMedian;

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

impl WindowFunction for WinMedian {
    fn fire(
        &mut self,
        key: &[u8],
        _w: &Window,
        recs: &[Record<'_>],
        out: &mut Emitter<'_>,
    ) -> Result<(), Error> {
        if recs.is_empty() {
            return Ok(());
        }
        let mut vs = Vec::with_capacity(recs.len());
        for (i, r) in recs.iter().enumerate() {
            vs.push(parse(r.value).ok_or_else(|| {
                Error::new(format!("record {}: value is not a decimal integer", i))
            })?);
        }
        vs.sort_unstable();
        let v = vs[vs.len() / 2].to_string();
        out.emit(&Record::new(key, v.as_bytes()));
        Ok(())
    }
}

sluice::export_window!(WinMedian);
