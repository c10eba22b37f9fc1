//! The pieces of transactional operators: planning, applying, outcomes.

use std::cell::Cell;
use std::fmt;

use crate::abi::{self, GetSpan, OpSpan, ReadSpan, Request, ValSpan};
use crate::error::Error;
use crate::guest::TableCache;
use crate::sys;

/// The handle of a state table: handle `i` is the `i`-th table the pipeline
/// declares for the operator, so [`Table::DEFAULT`] (0) is the first.
/// [`Planner::table_id`] and [`Call::table_id`] resolve a name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Table(pub u32);

impl Table {
    /// The operator's first declared table.
    pub const DEFAULT: Table = Table(0);
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// One state entry: a table and a key in it. An operation's declared reads
/// are `Key`s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key<'a> {
    /// The entry's table.
    pub table: Table,
    /// The entry's key.
    pub key: &'a [u8],
}

impl<'a> Key<'a> {
    /// Returns the key `key` of table `table`.
    pub fn new(table: Table, key: &'a [u8]) -> Key<'a> {
        Key { table, key }
    }
}

/// Quotes `key` for a message: printable ASCII as is, other bytes escaped.
pub(crate) fn quote(key: &[u8]) -> String {
    format!("\"{}\"", key.escape_ascii())
}

/// Declares the operations of one event. The SDK passes one to
/// [`Transactional::plan`](crate::Transactional::plan); it is valid only
/// during that call.
///
/// An operation either writes one key ([`write`](Planner::write):
/// deterministic), or reads and writes keys of one table that depend on
/// values it reads ([`nondet`](Planner::nondet)). Each names the function
/// that computes it (a number below
/// [`Transactional::FUNCTIONS`](crate::Transactional::FUNCTIONS), handed to
/// [`Transactional::apply`](crate::Transactional::apply) as
/// [`Call::func`]) and carries an argument, the event's parameters, which
/// the function receives unchanged. The operations of an event run in
/// declaration order, each seeing the writes of those before it; an
/// [`Effect::Abort`] from any of them aborts the event's transaction,
/// undoing every write of it.
///
/// Keys, arguments and reads are copied during the call: their memory may
/// be reused at once.
pub struct Planner<'a> {
    buf: &'a mut Vec<u8>,
    err: &'a mut Option<Error>,
    tables: &'a mut TableCache,
    event: u32,
    functions: u32,
}

impl<'a> Planner<'a> {
    pub(crate) fn new(
        buf: &'a mut Vec<u8>,
        err: &'a mut Option<Error>,
        tables: &'a mut TableCache,
        event: u32,
        functions: u32,
    ) -> Planner<'a> {
        Planner {
            buf,
            err,
            tables,
            event,
            functions,
        }
    }

    /// Returns the index of the event being planned in its batch.
    pub fn event(&self) -> u32 {
        self.event
    }

    /// Declares a deterministic operation: function `func` computes the
    /// new value of `key` in `table` from that key's value and the values
    /// of `reads`, other keys the operation reads (which orders it after
    /// the earlier writers of those keys).
    pub fn write(&mut self, table: Table, key: &[u8], func: u32, arg: &[u8], reads: &[Key<'_>]) {
        self.declare(0, table, key, func, arg, reads);
    }

    /// Declares a non-deterministic operation over `table`: function `func`
    /// may read ([`Call::get`]) and write ([`Call::put`], [`Call::delete`])
    /// any key of `table`, chosen from the values it reads, besides reading
    /// the declared `reads` (of any table). The host orders it after every
    /// earlier and before every later operation on `table`, and records
    /// what it actually touched. The operation has no own key: only an
    /// [`Effect::Abort`] or [`Effect::Fail`] of its function counts.
    pub fn nondet(&mut self, table: Table, func: u32, arg: &[u8], reads: &[Key<'_>]) {
        self.declare(abi::OP_FLAG_NONDET, table, &[], func, arg, reads);
    }

    fn declare(
        &mut self,
        flags: u32,
        table: Table,
        key: &[u8],
        func: u32,
        arg: &[u8],
        reads: &[Key<'_>],
    ) {
        if func >= self.functions {
            if self.err.is_none() {
                *self.err = Some(Error::new(format!(
                    "event {}: operation names function {}, but the operator has {} functions (Transactional::FUNCTIONS)",
                    self.event, func, self.functions
                )));
            }
            return;
        }
        abi::append_op_decl(self.buf, self.event, func, flags, table.0, key, reads, arg);
    }

    /// Returns the handle of the operator's table called `name`, or an
    /// error naming it when the pipeline declares no such table. Handles
    /// are cached for the life of the instance.
    pub fn table_id(&mut self, name: &str) -> Result<Table, Error> {
        self.tables.resolve(name)
    }
}

/// What a function decides for its operation.
#[derive(Debug, PartialEq, Eq)]
pub enum Effect<'a> {
    /// Store this value as the key's new value (it may be empty, which is
    /// not a delete). The SDK hands the host the value's address, and the
    /// host copies it right after the function returns: it may borrow the
    /// [`Call`] (its scratch buffer, a value it read).
    Write(&'a [u8]),
    /// Leave the key unchanged: no version is written, so the operation
    /// does not count as a write of the key.
    Keep,
    /// Delete the key.
    Delete,
    /// Abort the event's transaction: a condition failed. Every write of
    /// the transaction is undone, its later operations do not run, and
    /// [`Transactional::post`](crate::Transactional::post) sees the event
    /// as not committed.
    Abort,
    /// Fail the operation: not an abort but a fault (a value that cannot be
    /// decoded, an access refused by the host). It fails the whole batch,
    /// whose error carries the message.
    Fail(Error),
}

impl<'a> Effect<'a> {
    /// Returns `Effect::Fail` with an error whose message is `msg`.
    pub fn fail<M: fmt::Display>(msg: M) -> Effect<'a> {
        Effect::Fail(Error::new(msg))
    }
}

impl<'a> From<Error> for Effect<'a> {
    fn from(e: Error) -> Effect<'a> {
        Effect::Fail(e)
    }
}

/// Buffers a [`Call`] reuses from call to call.
#[derive(Debug, Default)]
pub(crate) struct CallBufs {
    get: Vec<u8>,
    scratch: Vec<u8>,
}

/// One execution of an operation, handed to
/// [`Transactional::apply`](crate::Transactional::apply): what the
/// operation is, the values it reads, and tracked access to state.
///
/// The byte slices it returns borrow the request the host wrote into guest
/// memory, and are valid during the call only, as their lifetime says.
pub struct Call<'a> {
    req: &'a [u8],
    q: Request,
    reads: &'a [ReadSpan],
    bufs: &'a mut CallBufs,
    tables: &'a mut TableCache,
    faults: &'a Faults,
}

/// The accesses of a [`Call`] the host refused, kept apart from the call so
/// that the SDK can read them while the function's [`Effect`] still borrows
/// the call.
#[derive(Default)]
pub(crate) struct Faults {
    refused: Cell<Option<Error>>,
    bad_read: Cell<Option<usize>>,
}

impl Faults {
    /// Reports whether an access was refused.
    pub fn any(&self) -> bool {
        let r = self.refused.take();
        let any = r.is_some() || self.bad_read.get().is_some();
        self.refused.set(r);
        any
    }

    /// Returns the reason of the first refused access, for an operation
    /// that declared `reads` reads, or None.
    pub fn reason(&self, reads: usize) -> Option<Error> {
        if let Some(e) = self.refused.take() {
            return Some(e);
        }
        self.bad_read.get().map(|i| {
            Error::new(format!(
                "sluice: state access outside the operation's declaration: read index {} of {} declared reads",
                i, reads
            ))
        })
    }

    fn refuse(&self, e: Error) {
        let first = self.refused.take();
        self.refused.set(Some(first.unwrap_or(e)));
    }
}

impl<'a> Call<'a> {
    pub(crate) fn new(
        req: &'a [u8],
        q: Request,
        reads: &'a [ReadSpan],
        bufs: &'a mut CallBufs,
        tables: &'a mut TableCache,
        faults: &'a Faults,
    ) -> Call<'a> {
        Call {
            req,
            q,
            reads,
            bufs,
            tables,
            faults,
        }
    }

    /// Returns the function the operation names: the `func` it was
    /// declared with.
    pub fn func(&self) -> u32 {
        self.q.func
    }

    /// Returns the index of the operation's event in its batch.
    pub fn event(&self) -> u32 {
        self.q.event
    }

    /// Returns the index of the operation within its event (declaration
    /// order).
    pub fn op(&self) -> u32 {
        self.q.op
    }

    /// Reports whether the operation was declared with [`Planner::nondet`].
    pub fn is_nondet(&self) -> bool {
        self.q.nondet
    }

    /// Returns the table of the operation's own key, or the table a
    /// non-deterministic operation is scoped to.
    pub fn table(&self) -> Table {
        Table(self.q.table)
    }

    /// Returns the operation's own key: the key it writes (empty for a
    /// non-deterministic operation).
    pub fn key(&self) -> &'a [u8] {
        self.q.key.of(self.req)
    }

    /// Returns the own key's value before the operation, or None when the
    /// key does not exist (and for a non-deterministic operation).
    pub fn own(&self) -> Option<&'a [u8]> {
        self.q.own.of(self.req)
    }

    /// Returns the operation's argument, as declared.
    pub fn arg(&self) -> &'a [u8] {
        self.q.arg.of(self.req)
    }

    /// Returns the number of declared reads.
    pub fn reads(&self) -> usize {
        self.reads.len()
    }

    /// Returns the value of declared read `i` (in the order of the
    /// declaration's reads) as of the operation's place in event order, or
    /// None when the key does not exist. An index out of range is an access
    /// outside the declaration: it returns None and fails the operation,
    /// whatever the function returns.
    pub fn read(&self, i: usize) -> Option<&'a [u8]> {
        match self.reads.get(i) {
            Some(r) => r.val.of(self.req),
            None => {
                if self.faults.bad_read.get().is_none() {
                    self.faults.bad_read.set(Some(i));
                }
                None
            }
        }
    }

    /// Returns the key of declared read `i` and its table, or None for an
    /// index out of range.
    pub fn read_key(&self, i: usize) -> Option<Key<'a>> {
        self.reads.get(i).map(|r| Key {
            table: Table(r.table),
            key: r.key.of(self.req),
        })
    }

    /// Returns the value of `key` in `table` as of the operation's place in
    /// event order, None when it does not exist. A deterministic operation
    /// may get its own key and its declared reads; a non-deterministic one
    /// its declared reads and any key of its table, and sees its own puts
    /// and deletes. The host records each key a non-deterministic operation
    /// reads (the outcome's gets). Anything else is refused with an error,
    /// and the operation fails whatever the function returns: return the
    /// error as [`Effect::Fail`] (`?` does, in a function returning a
    /// `Result`).
    ///
    /// The value is valid until the next `get`.
    pub fn get(&mut self, table: Table, key: &[u8]) -> Result<Option<&[u8]>, Error> {
        let mut retried = false;
        loop {
            if self.bufs.get.is_empty() {
                self.bufs.get = vec![0; 256];
            }
            let n = sys::txn_get(table.0 as i32, key, &mut self.bufs.get);
            if n == abi::STATUS_NOT_FOUND {
                return Ok(None);
            }
            if n == abi::STATUS_UNDECLARED {
                return Err(self.refused("get", table, key));
            }
            if n < 0 {
                panic!("sluice: txn_get returned the unknown status {}", n);
            }
            let n = n as usize;
            if n <= self.bufs.get.len() {
                return Ok(Some(&self.bufs.get[..n]));
            }
            if retried {
                panic!(
                    "sluice: txn_get reported {} bytes after a retry with a {}-byte buffer",
                    n,
                    self.bufs.get.len()
                );
            }
            retried = true;
            self.bufs.get = vec![0; n + n / 4];
        }
    }

    /// Stores `value` for `key` in `table`: only a non-deterministic
    /// operation may, and only in its table; anything else is refused as
    /// [`get`](Call::get) says. The host copies key and value.
    pub fn put(&mut self, table: Table, key: &[u8], value: &[u8]) -> Result<(), Error> {
        let st = sys::txn_put(table.0 as i32, key, value);
        self.status("put", table, key, st)
    }

    /// Deletes `key` in `table`, under [`put`](Call::put)'s rules.
    pub fn delete(&mut self, table: Table, key: &[u8]) -> Result<(), Error> {
        let st = sys::txn_delete(table.0 as i32, key);
        self.status("delete", table, key, st)
    }

    fn status(&mut self, what: &str, table: Table, key: &[u8], st: i32) -> Result<(), Error> {
        match st {
            abi::STATUS_OK => Ok(()),
            abi::STATUS_UNDECLARED => Err(self.refused(what, table, key)),
            _ => panic!("sluice: txn_{} returned the unknown status {}", what, st),
        }
    }

    /// Records and returns the error of an access the host refused.
    fn refused(&mut self, what: &str, table: Table, key: &[u8]) -> Error {
        let e = Error::new(format!(
            "sluice: state access outside the operation's declaration: {} of table {} key {}",
            what,
            table,
            quote(key)
        ));
        self.faults.refuse(e.clone());
        e
    }

    /// Returns `n` bytes (of unspecified content) that the SDK reuses from
    /// call to call, for building the value the function writes without
    /// allocating; return them with [`Effect::Write`].
    pub fn scratch(&mut self, n: usize) -> &mut [u8] {
        if self.bufs.scratch.len() < n {
            self.bufs.scratch = vec![0; n.max(64)];
        }
        &mut self.bufs.scratch[..n]
    }

    /// Returns the [`Effect::Write`] of a copy of `value`, made in the
    /// scratch buffer: `return call.write(&balance.to_le_bytes())`.
    pub fn write(&mut self, value: &[u8]) -> Effect<'_> {
        let s = self.scratch(value.len());
        s.copy_from_slice(value);
        Effect::Write(s)
    }

    /// Returns the handle of the operator's table called `name`, or an
    /// error naming it when the pipeline declares no such table.
    pub fn table_id(&mut self, name: &str) -> Result<Table, Error> {
        self.tables.resolve(name)
    }
}

/// One event's outcome, handed to
/// [`Transactional::post`](crate::Transactional::post): whether its
/// transaction committed and, per operation in declaration order, what it
/// read. Valid only during the call.
#[derive(Clone, Copy)]
pub struct Outcome<'a> {
    committed: bool,
    b: &'a [u8],
    ops: &'a [OpSpan],
    vals: &'a [ValSpan],
    gets: &'a [GetSpan],
}

impl<'a> Outcome<'a> {
    pub(crate) fn new(
        committed: bool,
        b: &'a [u8],
        ops: &'a [OpSpan],
        vals: &'a [ValSpan],
        gets: &'a [GetSpan],
    ) -> Outcome<'a> {
        Outcome {
            committed,
            b,
            ops,
            vals,
            gets,
        }
    }

    /// Reports whether the event's transaction committed.
    pub fn committed(&self) -> bool {
        self.committed
    }

    /// Returns the number of operations the event declared.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Reports whether the event declared no operation.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Returns the outcome of operation `i`, or None for an index out of
    /// range.
    pub fn op(&self, i: usize) -> Option<OpOutcome<'a>> {
        self.ops.get(i).map(|s| OpOutcome {
            s: *s,
            b: self.b,
            vals: self.vals,
            gets: self.gets,
        })
    }

    /// Returns the operations' outcomes in declaration order.
    pub fn ops(&self) -> impl ExactSizeIterator<Item = OpOutcome<'a>> + 'a {
        let (b, vals, gets) = (self.b, self.vals, self.gets);
        self.ops.iter().map(move |s| OpOutcome {
            s: *s,
            b,
            vals,
            gets,
        })
    }
}

impl fmt::Debug for Outcome<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Outcome")
            .field("committed", &self.committed)
            .field("ops", &self.ops().collect::<Vec<_>>())
            .finish()
    }
}

/// What one operation read, in an [`Outcome`]: the values of the execution
/// that counts, the one a serial execution performs.
#[derive(Clone, Copy)]
pub struct OpOutcome<'a> {
    s: OpSpan,
    b: &'a [u8],
    vals: &'a [ValSpan],
    gets: &'a [GetSpan],
}

/// A key a non-deterministic operation read through [`Call::get`], with
/// the value it saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Get<'a> {
    /// The key's table.
    pub table: Table,
    /// The key.
    pub key: &'a [u8],
    /// Its value, None when it did not exist.
    pub value: Option<&'a [u8]>,
}

impl<'a> OpOutcome<'a> {
    /// Reports whether the operation ran: false for the operations after
    /// the one that aborted their event's transaction.
    pub fn executed(&self) -> bool {
        self.s.executed
    }

    /// Returns the own key's value before the operation, None when it did
    /// not exist (or the operation did not run).
    pub fn own(&self) -> Option<&'a [u8]> {
        self.s.own.of(self.b)
    }

    /// Returns the number of declared reads the outcome holds (0 when the
    /// operation did not run).
    pub fn read_count(&self) -> usize {
        (self.s.reads.1 - self.s.reads.0) as usize
    }

    /// Returns the value declared read `i` saw, None when the key did not
    /// exist or `i` is out of range.
    pub fn read(&self, i: usize) -> Option<&'a [u8]> {
        if i >= self.read_count() {
            return None;
        }
        self.vals[self.s.reads.0 as usize + i].of(self.b)
    }

    /// Returns the values of the declared reads, in declaration order.
    pub fn reads(&self) -> impl ExactSizeIterator<Item = Option<&'a [u8]>> + 'a {
        let b = self.b;
        self.vals[self.s.reads.0 as usize..self.s.reads.1 as usize]
            .iter()
            .map(move |v| v.of(b))
    }

    /// Returns the keys a non-deterministic operation read through
    /// [`Call::get`], in call order: keys that are neither declared reads
    /// (whose values [`reads`](OpOutcome::reads) holds) nor keys it had
    /// written itself.
    pub fn gets(&self) -> impl ExactSizeIterator<Item = Get<'a>> + 'a {
        let b = self.b;
        self.gets[self.s.gets.0 as usize..self.s.gets.1 as usize]
            .iter()
            .map(move |g| Get {
                table: Table(g.table),
                key: g.key.of(b),
                value: g.val.of(b),
            })
    }
}

impl fmt::Debug for OpOutcome<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpOutcome")
            .field("executed", &self.executed())
            .field("own", &self.own())
            .field("reads", &self.reads().collect::<Vec<_>>())
            .field("gets", &self.gets().collect::<Vec<_>>())
            .finish()
    }
}
