//! The conformance operator `joiner` in Rust, a join function (ABI section
//! 14), exactly as the Go plugin `plugins/joiner`: for each pair, one
//! record with the pair's key and the value "L|R", L the left record's
//! value and R the right one's ("-" for a side an outer join left empty),
//! and, for a window join, a header "window" holding the window's start and
//! end as two 8-byte little-endian integers. A left value "twice" emits the
//! result twice, a left value "none" emits nothing, and a value "bad" on
//! either side dead-letters the pair with the error "bad value in pair".

use sluice::{Emitter, Error, Header, Headers, JoinFunction, Record, Window};

/// The operator, with the buffer its results are built in.
#[derive(Default)]
pub struct Joiner {
    buf: Vec<u8>,
}

impl JoinFunction for Joiner {
    fn join(
        &mut self,
        key: &[u8],
        w: Option<&Window>,
        left: Option<&Record<'_>>,
        right: Option<&Record<'_>>,
        out: &mut Emitter<'_>,
    ) -> Result<(), Error> {
        let l = left.map_or(&b"-"[..], |r| r.value);
        let r = right.map_or(&b"-"[..], |r| r.value);
        if l == b"bad" || r == b"bad" {
            return Err(Error::new("bad value in pair"));
        }
        if left.is_some() && l == b"none" {
            return Ok(());
        }
        self.buf.clear();
        self.buf.extend_from_slice(l);
        self.buf.push(b'|');
        self.buf.extend_from_slice(r);
        let mut res = Record::new(key, &self.buf);
        let mut bounds = [0u8; 16];
        let window;
        if let Some(w) = w {
            bounds[..8].copy_from_slice(&w.start.to_le_bytes());
            bounds[8..].copy_from_slice(&w.end.to_le_bytes());
            window = [Header {
                name: b"window",
                value: &bounds,
            }];
            res = res.with_headers(Headers::from_list(&window));
        }
        out.emit(&res);
        if left.is_some() && l == b"twice" {
            out.emit(&res);
        }
        Ok(())
    }
}

sluice::export_join!(Joiner);
