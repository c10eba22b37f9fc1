//! Join functions (ABI section 14): the results of the pairs of records a
//! join of the host matched.

use crate::{Config, Emitter, Error, Record, Window};

/// A join function: builds the results of each pair of records with equal
/// keys that the host's join matched, in a window or an interval. The host
/// keeps both inputs' records and finds the pairs; the function sees one
/// pair at a time.
///
/// Export it with [`export_join!`](crate::export_join); the pipeline's
/// `kind` is `join`. `join` must be a deterministic function of its
/// arguments: the host calls it again with the same pair after a failure,
/// a restart or a recovery.
///
/// ```
/// use sluice::{Emitter, Error, JoinFunction, Record, Window};
///
/// /// Emits, for each matched order and payment, "order,payment".
/// #[derive(Default)]
/// struct Paid {
///     buf: Vec<u8>,
/// }
///
/// impl JoinFunction for Paid {
///     fn join(
///         &mut self,
///         key: &[u8],
///         _w: Option<&Window>,
///         left: Option<&Record<'_>>,
///         right: Option<&Record<'_>>,
///         out: &mut Emitter<'_>,
///     ) -> Result<(), Error> {
///         let (order, payment) = match (left, right) {
///             (Some(o), Some(p)) => (o, p),
///             _ => return Ok(()), // an outer join's lone record: no result
///         };
///         if payment.value.is_empty() {
///             return Err(Error::new("empty payment")); // dead-letters the pair
///         }
///         self.buf.clear();
///         self.buf.extend_from_slice(order.value);
///         self.buf.push(b',');
///         self.buf.extend_from_slice(payment.value);
///         out.emit(&Record::new(key, &self.buf));
///         Ok(())
///     }
/// }
///
/// sluice::export_join!(Paid);
/// # fn main() {}
/// ```
pub trait JoinFunction {
    /// Receives the operator's configuration; see
    /// [`Operator::configure`](crate::Operator::configure).
    fn configure(&mut self, config: &Config<'_>) -> Result<(), Error> {
        config.require_empty()
    }

    /// Emits the results of the pair of `key`: any number, none included.
    /// `left` is the record of the join's first input, `right` that of its
    /// second; one of them is None for an outer join's record that matched
    /// nothing. `w` is the pair's window, None for an interval join. The
    /// host sets each result's time: `w.end - 1` for a window join, the
    /// later of the two records' times for an interval join.
    ///
    /// An error dead-letters the pair (the result the join makes without a
    /// plugin, a JSON object of the key and both values, with the error's
    /// message) and drops what was emitted for it.
    fn join(
        &mut self,
        key: &[u8],
        w: Option<&Window>,
        left: Option<&Record<'_>>,
        right: Option<&Record<'_>>,
        out: &mut Emitter<'_>,
    ) -> Result<(), Error>;
}
