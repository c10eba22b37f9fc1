//! Write [Sluice](https://github.com/sluicehq/sluice) stream operators in
//! Rust and compile them to WebAssembly.
//!
//! An operator is a type that implements one of the operator traits, and a
//! crate of type `cdylib` that exports it with the matching macro, once:
//!
//! | trait | what it does | export with |
//! |---|---|---|
//! | [`Operator`] | any number of outputs per record (map, filter, flatmap) | [`export_operator!`] |
//! | [`MapInPlace`] | changes each record's key and value bytes in place: the fastest map | [`export_map_in_place!`] |
//! | [`Filter`] | keeps or drops each record, forwarding it unchanged | [`export_filter!`] |
//! | [`Keyed`] | [`Operator`] plus the state of the record's key | [`export_keyed!`] |
//! | [`Transactional`] | each record is a transaction over shared state tables | [`export_transactional!`] |
//! | [`Aggregate`] | an accumulator per key and window, which the host keeps (ABI section 13) | [`export_aggregate!`] |
//! | [`WindowFunction`] | all of a key's records of a window, when it fires | [`export_window!`] |
//! | [`JoinFunction`] | the results of each pair of records a join matched (ABI section 14) | [`export_join!`] |
//!
//! ```
//! use sluice::{Emitter, Error, Operator, Record};
//!
//! /// Drops empty records and upper-cases the others.
//! #[derive(Default)]
//! struct Shout {
//!     buf: Vec<u8>, // reused from record to record
//! }
//!
//! impl Operator for Shout {
//!     fn process(&mut self, r: &Record<'_>, out: &mut Emitter<'_>) -> Result<(), Error> {
//!         if r.value.is_empty() {
//!             return Ok(()); // dropped
//!         }
//!         self.buf.clear();
//!         self.buf.extend(r.value.iter().map(u8::to_ascii_uppercase));
//!         out.emit(&r.with_value(&self.buf));
//!         Ok(())
//!     }
//! }
//!
//! sluice::export_operator!(Shout);
//! # fn main() {}
//! ```
//!
//! Build it with `cargo build --release --target wasm32-unknown-unknown`
//! and check it with `sluice plugin check`; the crate's README says how,
//! and how to run it in a pipeline.
//!
//! # Design
//!
//! - **The ABI stays inside.** Operators see [`Record`]s, an [`Emitter`], a
//!   [`State`], a [`Planner`], a [`Call`]; the crate decodes and encodes the
//!   ABI's batches (section 4 of `abi/ABI.md`, in [`abi`]) and owns the
//!   memory handed to the host. Operator code needs no `unsafe`: the only
//!   `unsafe` blocks are the host imports (module `sys`) and the one
//!   cell that holds the instance's operator, each with its safety
//!   argument.
//! - **One instance, one operator.** A WebAssembly instance runs one
//!   operator on one thread; the exports reach it through a static the
//!   export macro declares, created with `Default` at the first call.
//! - **Records are borrowed.** Inputs borrow the batch the host wrote into
//!   guest memory; outputs are encoded when emitted. Nothing is copied or
//!   allocated per record unless the operator does.
//! - **Forwarding.** [`MapInPlace`] and [`Filter`] hand the host its own
//!   input batch back when every record goes on, and copy runs of records
//!   otherwise: no encoding at all.
//! - **Errors are values.** A record handler's [`Error`] dead-letters the
//!   record and drops its outputs; a panic traps the instance (the host
//!   replaces it and re-runs the batch record by record). The panic
//!   message is logged at error level first.
//! - **No dependencies**, so that a guest builds offline with Rust 1.63.
//!   The same code runs natively in `cargo test` through [`testing`],
//!   which plays the host.
//!
//! Operators must be deterministic: the host may process a record more than
//! once (after a failure, on a fresh instance) and runs a transactional
//! function as often as its scheduler needs. Use the record's time, never a
//! clock; derive randomness from the record.

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod abi;
mod config;
mod error;
mod export;
mod guest;
mod join;
mod record;
mod sys;
pub mod testing;
mod txn;
mod window;

#[cfg(test)]
mod tests;

pub use config::Config;
pub use error::Error;
pub use guest::{Emitter, State};
pub use join::JoinFunction;
pub use record::{Header, HeaderIter, Headers, OwnedRecord, Record, RecordMut};
pub use txn::{Call, Effect, Get, Key, OpOutcome, Outcome, Planner, Table};
pub use window::{Aggregate, Firing, Window, WindowFunction};

/// A stateless operator: for each input record, any number of output
/// records. Maps, filters and flatmaps are all `Operator`s; see
/// [`MapInPlace`] and [`Filter`] for faster forms of the first two.
///
/// Export it with [`export_operator!`]; the pipeline's `kind` is `map`,
/// `filter` or `flatmap`.
pub trait Operator {
    /// Receives the operator's configuration, once per instance, before the
    /// first record. An error refuses it: the operator does not start and
    /// the host reports the message. The default accepts only an absent or
    /// empty configuration.
    fn configure(&mut self, config: &Config<'_>) -> Result<(), Error> {
        config.require_empty()
    }

    /// Handles one input record, emitting its outputs through `out`. An
    /// error dead-letters the record with the error's message and drops
    /// what was emitted for it; the batch goes on.
    fn process(&mut self, record: &Record<'_>, out: &mut Emitter<'_>) -> Result<(), Error>;
}

/// A map that changes each record in place: its key and value bytes (not
/// their lengths) and its time. The output record is the input record as
/// `map` leaves it, and the SDK forwards it without encoding it again.
///
/// Export it with [`export_map_in_place!`]; the pipeline's `kind` is `map`
/// (or `flatmap`).
pub trait MapInPlace {
    /// Receives the operator's configuration; see [`Operator::configure`].
    fn configure(&mut self, config: &Config<'_>) -> Result<(), Error> {
        config.require_empty()
    }

    /// Changes `record` in place. An error dead-letters it.
    fn map(&mut self, record: &mut RecordMut<'_>) -> Result<(), Error>;
}

/// A filter: keeps a record, which the SDK forwards unchanged without
/// encoding it again, or drops it.
///
/// Export it with [`export_filter!`]; the pipeline's `kind` is `filter` (or
/// `flatmap`).
pub trait Filter {
    /// Receives the operator's configuration; see [`Operator::configure`].
    fn configure(&mut self, config: &Config<'_>) -> Result<(), Error> {
        config.require_empty()
    }

    /// Returns whether `record` goes on. An error dead-letters it.
    fn keep(&mut self, record: &Record<'_>) -> Result<bool, Error>;
}

/// A keyed operator: like [`Operator`], with the state of the record's key.
///
/// The host partitions records by key; `state` reads and writes the value
/// of the record's key in the operator's first declared table, and other
/// tables through [`State::table`]. An error dead-letters the record and
/// leaves no trace of it: its outputs are dropped and the host undoes the
/// state changes made for it (running the batch's other records again, one
/// per call, to tell them apart: `process` must be deterministic).
///
/// Export it with [`export_keyed!`]; the pipeline's `kind` is `keyed`, with
/// its tables in `state:`.
pub trait Keyed {
    /// Receives the operator's configuration; see [`Operator::configure`].
    fn configure(&mut self, config: &Config<'_>) -> Result<(), Error> {
        config.require_empty()
    }

    /// Handles one input record with the state of its key.
    fn process(
        &mut self,
        record: &Record<'_>,
        state: &mut State<'_>,
        out: &mut Emitter<'_>,
    ) -> Result<(), Error>;
}

/// A transactional operator: each input record is an event, a transaction
/// over the operator's state tables, which any event may read and write at
/// any key. The host schedules the events of a batch on several workers,
/// with the result of running them one after the other in order.
///
/// Per batch, the host calls [`plan`](Transactional::plan) for each event,
/// in order, to declare its operations; [`apply`](Transactional::apply)
/// when its scheduler runs an operation (possibly more than once, on any
/// instance); and [`post`](Transactional::post) for each event once the
/// batch's outcome is known. An instance may serve parts of batches: plan
/// and post each event from the event alone (and the configuration).
///
/// Export it with [`export_transactional!`]; the pipeline's `kind` is
/// `transactional`, with its tables in `tables:`.
pub trait Transactional {
    /// The number of functions: operations name function `0..FUNCTIONS`.
    const FUNCTIONS: u32;

    /// Receives the operator's configuration; see [`Operator::configure`].
    fn configure(&mut self, config: &Config<'_>) -> Result<(), Error> {
        config.require_empty()
    }

    /// Declares the operations of one event, in order, from the event
    /// alone. An error fails the whole batch: it is for input that cannot
    /// be planned at all. A bad event that should just be skipped is better
    /// declared with no operations and dead-lettered by `post`.
    fn plan(&mut self, event: &Record<'_>, planner: &mut Planner<'_>) -> Result<(), Error>;

    /// Computes one operation, function [`Call::func`], from what `call`
    /// reads: the [`Effect`] on its own key. It must be a deterministic
    /// function of `call` (hence `&self`): the scheduler may run it more
    /// than once, on any instance.
    fn apply<'c>(&self, call: &'c mut Call<'_>) -> Effect<'c>;

    /// Emits the outputs of one event once its outcome is known. An error
    /// dead-letters the event and drops what was emitted for it; its state
    /// effects stay. The default emits nothing.
    fn post(
        &mut self,
        event: &Record<'_>,
        outcome: &Outcome<'_>,
        out: &mut Emitter<'_>,
    ) -> Result<(), Error> {
        let _ = (event, outcome, out);
        Ok(())
    }
}

/// The severity of a log message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Detail for debugging.
    Debug = 0,
    /// Normal events.
    Info = 1,
    /// Something unexpected that the operator worked around.
    Warn = 2,
    /// A failure: the last error message of a call is the reason the host
    /// reports when the call fails.
    Error = 3,
}

/// Writes `msg` to the host's log at `level`; the host adds the operator's
/// name and keeps the first 1 KiB of a message and the first 64 messages of
/// a call. Natively it goes to the [`testing`] harness running the operator,
/// or to stderr outside one.
///
/// Logging is a host call: keep it off the per-record path.
pub fn log(level: Level, msg: &str) {
    sys::log(level as i32, msg);
}

/// Returns `x`, hiding from the optimiser what happens to it, so that work
/// whose result is otherwise unused (a benchmark's busy loop) is not
/// optimised away. `std::hint::black_box` does this from Rust 1.66 on.
pub fn black_box<T>(x: T) -> T {
    let x = std::mem::ManuallyDrop::new(x);
    // SAFETY: `x` is a live, initialised value; the volatile read copies
    // it bit for bit, and `x` is never dropped, so the copy is the one
    // owner of whatever it holds.
    unsafe { std::ptr::read_volatile(&*x as *const T) }
}

#[doc(hidden)]
pub mod __private {
    //! What the export macros expand to. Not part of the API.

    pub use crate::guest::Guest;
    use crate::sys;

    /// Installs the panic hook, and runs the module's static constructors
    /// on WASI. The hook logs the panic message at error level through the
    /// host's `log` (the last error a call logs is the reason the host
    /// reports when it fails), and on WASI also writes it to stderr, whose
    /// tail the host quotes in the trap's error. A wasm32-unknown-unknown
    /// module imports nothing from WASI, so it has no stderr.
    pub fn initialize() {
        #[cfg(all(target_arch = "wasm32", target_os = "wasi"))]
        {
            extern "C" {
                fn __wasm_call_ctors();
            }
            // SAFETY: `_initialize` is the reactor's initialiser, which the
            // host calls once, first; the linker-made constructor function
            // is meant to run exactly there. Exporting `_initialize` also
            // stops the linker from wrapping every export in constructor
            // and destructor calls.
            unsafe { __wasm_call_ctors() };
        }
        std::panic::set_hook(Box::new(|info| {
            let msg = info.to_string();
            #[cfg(all(target_arch = "wasm32", target_os = "wasi"))]
            sys::stderr(&msg);
            sys::log(crate::Level::Error as i32, &msg);
        }));
    }

    /// Holds the instance's one guest core, for the exports, which take no
    /// receiver.
    #[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
    pub struct Slot<T> {
        cell: std::cell::UnsafeCell<Option<T>>,
        busy: std::cell::Cell<bool>,
    }

    // SAFETY: without the atomics feature a WebAssembly module has one
    // thread: a static Slot is never reached from two threads.
    #[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
    unsafe impl<T> Sync for Slot<T> {}

    #[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
    impl<T> Slot<T> {
        /// Returns an empty slot.
        #[allow(clippy::new_without_default)]
        pub const fn new() -> Slot<T> {
            Slot {
                cell: std::cell::UnsafeCell::new(None),
                busy: std::cell::Cell::new(false),
            }
        }

        /// Runs `f` with the value, made by `init` the first time.
        pub fn with<R>(&self, init: impl FnOnce() -> T, f: impl FnOnce(&mut T) -> R) -> R {
            if self.busy.replace(true) {
                // The host never calls an export from inside another.
                panic!("sluice: a guest export was entered during another");
            }
            // SAFETY: one thread (see the Sync impl), and `busy` rules out
            // a second reference from a nested call: this is the only
            // reference to the value while `f` runs. A panic traps the
            // instance, which is never called again.
            let v = unsafe { &mut *self.cell.get() };
            let r = f(v.get_or_insert_with(init));
            self.busy.set(false);
            r
        }
    }
}
