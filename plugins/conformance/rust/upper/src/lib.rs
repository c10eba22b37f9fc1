//! The conformance operator `upper` in Rust: upper-cases the ASCII letters
//! a-z of each record's value in place, every other byte (UTF-8 sequences
//! included) unchanged, exactly as the Go plugin `plugins/upper` does. Key,
//! time and headers go on as they are.
//!
//! It is a [`sluice::MapInPlace`]: the SDK hands the host its input batch
//! back as the output, changed in place, without encoding anything.

use sluice::{Error, MapInPlace, RecordMut};

/// The operator; it keeps nothing.
#[derive(Default)]
pub struct Upper;

impl MapInPlace for Upper {
    fn map(&mut self, r: &mut RecordMut<'_>) -> Result<(), Error> {
        r.value.make_ascii_uppercase();
        Ok(())
    }
}

sluice::export_map_in_place!(Upper);

#[cfg(test)]
mod tests {
    use super::*;
    use sluice::testing::Harness;
    use sluice::OwnedRecord;

    #[test]
    fn upper_cases_ascii_only() {
        let mut h = Harness::map_in_place(Upper);
        let input = [
            OwnedRecord::new("k", "hello, Wörld 42")
                .with_time(7)
                .with_header("h", "v"),
            OwnedRecord::new("", ""),
        ];
        let out = h.process(&input);
        assert!(out.rejects.is_empty());
        assert_eq!(out.records.len(), 2);
        let o = &out.records[0];
        assert_eq!(o.origin, 0);
        assert_eq!(
            o.record,
            OwnedRecord::new("k", "HELLO, WöRLD 42")
                .with_time(7)
                .with_header("h", "v")
        );
        assert_eq!(out.records[1].origin, 1);
        assert!(out.records[1].record.value.is_empty());
    }
}
