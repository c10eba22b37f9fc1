//! The operator's configuration.

use crate::error::Error;

/// The operator's `config` from the pipeline file, encoded as JSON, handed
/// to an operator's `configure` once per instance, before the first record.
///
/// When the pipeline gives no `config`, the JSON is `null`. The SDK does not
/// parse JSON (it has no dependencies, to stay small and build offline):
/// match the few shapes an operator accepts, or bring a parser.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config<'a> {
    json: &'a [u8],
}

/// Reports whether `c` is JSON white space.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

/// Returns `b` without leading and trailing JSON white space.
fn trim(b: &[u8]) -> &[u8] {
    let start = b.iter().position(|c| !is_space(*c)).unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !is_space(*c))
        .map_or(start, |e| e + 1);
    &b[start..end]
}

impl<'a> Config<'a> {
    /// Returns the configuration the host passed: `raw`, or `null` when it
    /// holds nothing but white space.
    pub fn new(raw: &'a [u8]) -> Config<'a> {
        if trim(raw).is_empty() {
            Config { json: b"null" }
        } else {
            Config { json: raw }
        }
    }

    /// Returns the configuration's JSON text.
    pub fn json(&self) -> &'a [u8] {
        self.json
    }

    /// Returns the configuration's JSON text as a string, or an error when
    /// it is not UTF-8.
    pub fn as_str(&self) -> Result<&'a str, Error> {
        std::str::from_utf8(self.json)
            .map_err(|e| Error::new(format!("configuration is not UTF-8: {}", e)))
    }

    /// Reports whether there is no configuration: `null` or an empty
    /// object `{}`.
    pub fn is_empty(&self) -> bool {
        matches!(trim(self.json), b"null" | b"{}")
    }

    /// Returns an error unless the configuration is empty
    /// ([`is_empty`](Config::is_empty)): what an operator that implements
    /// no `configure` of its own does.
    pub fn require_empty(&self) -> Result<(), Error> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(Error::new(
                "this operator takes no configuration (it does not implement configure)",
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_null() {
        assert_eq!(Config::new(b"").json(), b"null");
        assert_eq!(Config::new(b" \n").json(), b"null");
        assert!(Config::new(b"").is_empty());
        assert!(Config::new(b" {} ").is_empty());
        assert!(Config::new(b"null").require_empty().is_ok());
        assert!(Config::new(b"{\"a\":1}").require_empty().is_err());
        assert!(
            !Config::new(b"{ }").is_empty(),
            "only {{}} exactly, as the Go SDK"
        );
        assert_eq!(Config::new(b"{\"a\":1}").as_str().unwrap(), "{\"a\":1}");
        assert!(Config::new(b"\xff").as_str().is_err());
    }
}
