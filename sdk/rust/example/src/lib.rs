//! An example Sluice operator in Rust: `changes`, a keyed operator that
//! passes a record on only when its value differs from the previous value
//! of its key, with that previous value in a `previous` header. It keeps
//! the last value of each key in the operator's first state table.
//!
//! Values longer than 1 KiB are dead-lettered: the state would hold them.
//!
//! Build and check (see the SDK's README):
//!
//! ```text
//! RUSTC=/usr/bin/rustc /usr/bin/cargo build --release --target wasm32-unknown-unknown --offline
//! sluice plugin check target/wasm32-unknown-unknown/release/changes.wasm
//! ```

use sluice::{Emitter, Error, Header, Headers, Keyed, Record, State};

/// The longest value the operator keeps.
pub const MAX_VALUE: usize = 1024;

/// The operator. It keeps nothing between records but a buffer: the state
/// lives in the host, and an instance may be replaced at any time.
#[derive(Default)]
pub struct Changes {
    previous: Vec<u8>,
}

impl Keyed for Changes {
    fn process(
        &mut self,
        r: &Record<'_>,
        st: &mut State<'_>,
        out: &mut Emitter<'_>,
    ) -> Result<(), Error> {
        if r.value.len() > MAX_VALUE {
            // Dead-letters the record; nothing it did stays.
            return Err(Error::new(format!(
                "value of {} bytes, over the {}-byte limit",
                r.value.len(),
                MAX_VALUE
            )));
        }
        // The value `get` returns borrows the state: copy what must
        // outlive the next state call.
        let seen = match st.get() {
            Some(v) if v == r.value => return Ok(()), // unchanged: dropped
            Some(v) => {
                self.previous.clear();
                self.previous.extend_from_slice(v);
                true
            }
            None => false,
        };
        st.put(r.value);
        if seen {
            let previous = [Header {
                name: b"previous",
                value: &self.previous,
            }];
            out.emit(&r.with_headers(Headers::from_list(&previous)));
        } else {
            out.emit(r);
        }
        Ok(())
    }
}

sluice::export_keyed!(Changes);

#[cfg(test)]
mod tests {
    use super::*;
    use sluice::testing::Harness;
    use sluice::OwnedRecord;

    #[test]
    fn passes_changes_only() {
        let mut h = Harness::keyed(Changes::default(), &["last"]);
        let out = h.process(&[
            OwnedRecord::new("door", "open").with_time(1),
            OwnedRecord::new("door", "open").with_time(2),
            OwnedRecord::new("light", "on").with_time(3),
            OwnedRecord::new("door", "closed").with_time(4),
        ]);
        assert!(out.rejects.is_empty());
        let got: Vec<_> = out
            .records
            .iter()
            .map(|e| (e.origin, e.record.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, OwnedRecord::new("door", "open").with_time(1)),
                (2, OwnedRecord::new("light", "on").with_time(3)),
                (
                    3,
                    OwnedRecord::new("door", "closed")
                        .with_time(4)
                        .with_header("previous", "open")
                ),
            ]
        );
        assert_eq!(h.state("last", b"door"), Some(b"closed".to_vec()));
    }

    #[test]
    fn long_values_leave_no_trace() {
        let mut h = Harness::keyed(Changes::default(), &["last"]);
        h.set_state("last", b"k", b"old");
        let long = vec![b'x'; MAX_VALUE + 1];
        let out = h.process(&[OwnedRecord::new("k", long), OwnedRecord::new("k", "new")]);
        assert_eq!(out.rejects.len(), 1);
        assert_eq!(out.rejects[0].origin, 0);
        assert_eq!(
            out.rejects[0].message,
            "value of 1025 bytes, over the 1024-byte limit"
        );
        assert_eq!(out.records.len(), 1);
        assert_eq!(out.records[0].record.header(b"previous"), Some(&b"old"[..]));
        assert_eq!(h.state("last", b"k"), Some(b"new".to_vec()));
    }

    #[test]
    fn refuses_a_configuration() {
        let mut h = Harness::keyed(Changes::default(), &["last"]);
        assert!(h.configure(b"null").is_ok());
        let err = h.configure(br#"{"limit": 5}"#).unwrap_err();
        assert!(err.message().contains("takes no configuration"), "{}", err);
    }
}
