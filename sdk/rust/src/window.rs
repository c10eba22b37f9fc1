//! Window functions (ABI section 13): aggregates and window functions,
//! over the windows the host keeps.

use crate::{Config, Emitter, Error, Record};

/// Why a window fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Firing {
    /// The firing at the window's end.
    OnTime,
    /// A firing before the window's end, from an early trigger: the window
    /// fires again later.
    Early,
    /// A firing after the window's end, when records that arrived late,
    /// within the allowed lateness, changed the window.
    Late,
}

impl Firing {
    /// Returns the firing as the host's `sluice-firing` header names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Firing::OnTime => "on-time",
            Firing::Early => "early",
            Firing::Late => "late",
        }
    }

    fn parse(b: &[u8]) -> Option<Firing> {
        match b {
            b"on-time" => Some(Firing::OnTime),
            b"early" => Some(Firing::Early),
            b"late" => Some(Firing::Late),
            _ => None,
        }
    }
}

/// A firing window `[start, end)`, in nanoseconds since the Unix epoch.
/// The host stamps its results with `end - 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// The window's first instant.
    pub start: i64,
    /// The instant after the window.
    pub end: i64,
    /// Why the window fires.
    pub firing: Firing,
}

impl Window {
    /// Reads the window of a firing from its headers.
    pub(crate) fn of(r: &Record<'_>) -> Option<Window> {
        let bound = |name: &[u8]| {
            r.header(name)
                .and_then(|v| <[u8; 8]>::try_from(v).ok())
                .map(i64::from_le_bytes)
        };
        Some(Window {
            start: bound(b"sluice-window-start")?,
            end: bound(b"sluice-window-end")?,
            firing: Firing::parse(r.header(b"sluice-firing")?)?,
        })
    }
}

/// An aggregate operator: an incremental accumulator per key and window,
/// which the host keeps (in its state, committed with the sources'
/// positions) and hands back with the records to fold in. An accumulator
/// is bytes of the operator's own encoding and takes at least one byte:
/// the host marks "none yet" with none.
///
/// Export it with [`export_aggregate!`](crate::export_aggregate); the
/// pipeline's `kind` is `aggregate`. The methods must be deterministic: the
/// host calls them again with the same input after a failure.
pub trait Aggregate {
    /// Receives the operator's configuration; see
    /// [`Operator::configure`](crate::Operator::configure).
    fn configure(&mut self, config: &Config<'_>) -> Result<(), Error> {
        config.require_empty()
    }

    /// Folds `record` into `acc`, empty when the window has none yet. An
    /// error dead-letters the record, which must then leave `acc` as it
    /// was.
    fn add(&mut self, acc: &mut Vec<u8>, record: &Record<'_>) -> Result<(), Error>;

    /// Merges accumulator `b` into `a`. An error fails the host's call.
    fn merge(&mut self, a: &mut Vec<u8>, b: &[u8]) -> Result<(), Error>;

    /// Emits the results of `key`'s window `w` from its accumulator. An
    /// error dead-letters the firing and drops what it emitted.
    fn fire(
        &mut self,
        key: &[u8],
        w: &Window,
        acc: &[u8],
        out: &mut Emitter<'_>,
    ) -> Result<(), Error>;
}

/// A window function: all of a key's records of a window, when it fires,
/// for what cannot be computed incrementally (a median, a top-k with ties).
///
/// Export it with [`export_window!`](crate::export_window); the pipeline's
/// `kind` is `window`.
pub trait WindowFunction {
    /// Receives the operator's configuration; see
    /// [`Operator::configure`](crate::Operator::configure).
    fn configure(&mut self, config: &Config<'_>) -> Result<(), Error> {
        config.require_empty()
    }

    /// Emits the results of `key`'s window `w`, whose records are `recs`
    /// in arrival order. An error dead-letters every record of the window
    /// and drops what it emitted.
    fn fire(
        &mut self,
        key: &[u8],
        w: &Window,
        recs: &[Record<'_>],
        out: &mut Emitter<'_>,
    ) -> Result<(), Error>;
}
