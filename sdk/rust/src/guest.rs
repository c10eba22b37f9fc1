//! The guest core: the memory handed to the host, and the loops that run
//! an operator over the batches the exports receive.
//!
//! The exports (see `export.rs`) call it in WebAssembly, with the regions
//! located by address; [`testing`](crate::testing) calls it natively with
//! slices. Every host call goes through [`sys`](crate::sys).

use std::mem;

use crate::abi::{self, OutcomeDecoder, ReadSpan, RecordSpan};
use crate::config::Config;
use crate::error::Error;
use crate::record::{Headers, Record, RecordMut};
use crate::sys;
use crate::txn::{quote, Call, CallBufs, Effect, Faults, Outcome, Planner, Table};
use crate::Level;

/// The output size past which the outputs gathered so far go to the host
/// before the next input record.
const FLUSH_SIZE: usize = 1 << 20;
/// The starting capacity of the output buffer.
const INITIAL_OUT: usize = 64 << 10;
/// The output capacity kept between batches; a larger buffer (from one
/// record that emitted a lot) is let go.
const MAX_KEPT_OUT: usize = 8 * FLUSH_SIZE;
/// Bounds one `sluice_alloc` request (1 GiB, far above any batch the host
/// sends); larger or negative requests get 0.
const MAX_ALLOC: i32 = 1 << 30;
/// The smallest input region: batches growing a little at a time then do
/// not reallocate each time.
const MIN_REGION: usize = 4096;

/// Table handles resolved by name, cached for the life of the instance.
#[derive(Debug, Default)]
pub(crate) struct TableCache {
    names: Vec<(String, Table)>,
}

impl TableCache {
    /// Returns the handle of the table called `name`, asking the host the
    /// first time.
    pub fn resolve(&mut self, name: &str) -> Result<Table, Error> {
        if let Some((_, t)) = self.names.iter().find(|(n, _)| n == name) {
            return Ok(*t);
        }
        let id = sys::table_id(name);
        if id < 0 {
            return Err(Error::new(format!(
                "sluice: state table {} is not declared for the operator; declare it in the operator's state tables in the pipeline",
                quote(name.as_bytes())
            )));
        }
        self.names.push((name.to_string(), Table(id as u32)));
        Ok(Table(id as u32))
    }
}

/// The output batch being gathered: a batch header and `count` records.
#[derive(Debug)]
pub(crate) struct Out {
    buf: Vec<u8>,
    count: u32,
}

impl Out {
    fn new() -> Out {
        Out {
            buf: Vec::new(),
            count: 0,
        }
    }

    /// Starts a new, empty output batch.
    fn reset(&mut self) {
        if self.buf.capacity() == 0 {
            self.buf.reserve(INITIAL_OUT);
        }
        self.buf.clear();
        abi::append_batch_header(&mut self.buf, 0);
        self.count = 0;
    }

    /// Hands the gathered outputs to the host and starts a new batch.
    fn flush(&mut self) {
        abi::set_batch_count(&mut self.buf, self.count);
        sys::emit(&self.buf);
        self.reset();
    }

    fn mark(&self) -> (usize, u32) {
        (self.buf.len(), self.count)
    }

    fn truncate(&mut self, mark: (usize, u32)) {
        self.buf.truncate(mark.0);
        self.count = mark.1;
    }

    /// Flushes what is left at the end of a batch.
    fn finish(&mut self) {
        if self.count > 0 {
            self.flush();
        }
        if self.buf.capacity() > MAX_KEPT_OUT {
            self.buf = Vec::new();
        }
    }

    /// Flushes between two input records once enough has gathered.
    fn maybe_flush(&mut self) {
        if self.buf.len() >= FLUSH_SIZE {
            self.flush();
        }
    }
}

/// Sends an operator's output records to the host. The SDK passes one to
/// record handlers and to `post`; it is valid only during that call.
///
/// Every output has as its origin the input record (or event) being
/// handled. Outputs reach the host at the end of the batch, or earlier,
/// between two input records, once about 1 MiB of them has gathered; the
/// outputs of a record whose handler returns an error are dropped.
#[derive(Debug)]
pub struct Emitter<'a> {
    out: &'a mut Out,
    origin: u32,
}

impl<'a> Emitter<'a> {
    /// Encodes `r` into the output batch at once: `r` may borrow anything
    /// (the input record, a buffer the operator reuses).
    pub fn emit(&mut self, r: &Record<'_>) {
        abi::append_record(&mut self.out.buf, self.origin, r);
        self.out.count += 1;
    }

    /// Returns the index of the input record (or event) whose outputs this
    /// emitter sends.
    pub fn origin(&self) -> u32 {
        self.origin
    }
}

/// Reads and writes one key of a keyed operator's state: the key of the
/// record being handled, in one declared table. The SDK passes a `State`
/// bound to the operator's first table ([`Table::DEFAULT`]);
/// [`table`](State::table) and [`with_table`](State::with_table) reach the
/// others. Valid only during the call it was passed to.
#[derive(Debug)]
pub struct State<'a> {
    key: &'a [u8],
    table: Table,
    buf: &'a mut Vec<u8>,
    tables: &'a mut TableCache,
}

impl<'a> State<'a> {
    /// Returns the key this state reads and writes: the record's key.
    pub fn key(&self) -> &'a [u8] {
        self.key
    }

    /// Returns the table this state reads and writes.
    pub fn handle(&self) -> Table {
        self.table
    }

    /// Returns the value stored for the key, or None when there is none.
    /// The value is copied into a buffer the SDK reuses: it is valid until
    /// the next `get`, as its borrow says.
    pub fn get(&mut self) -> Option<&[u8]> {
        let mut retried = false;
        loop {
            if self.buf.is_empty() {
                *self.buf = vec![0; 256];
            }
            let n = sys::state_get(self.table.0 as i32, self.key, self.buf);
            if n == abi::STATUS_NOT_FOUND {
                return None;
            }
            if n < 0 {
                panic!("sluice: state_get returned the unknown status {}", n);
            }
            let n = n as usize;
            if n <= self.buf.len() {
                return Some(&self.buf[..n]);
            }
            if retried {
                panic!(
                    "sluice: state_get reported {} bytes after a retry with a {}-byte buffer",
                    n,
                    self.buf.len()
                );
            }
            retried = true;
            *self.buf = vec![0; n + n / 4];
        }
    }

    /// Stores `value` as the key's value; the host copies it.
    pub fn put(&mut self, value: &[u8]) {
        sys::state_put(self.table.0 as i32, self.key, value);
    }

    /// Removes the key's value; `get` then returns None.
    pub fn delete(&mut self) {
        sys::state_delete(self.table.0 as i32, self.key);
    }

    /// Returns a state for the same key in `table`.
    pub fn with_table(&mut self, table: Table) -> State<'_> {
        State {
            key: self.key,
            table,
            buf: self.buf,
            tables: self.tables,
        }
    }

    /// Returns a state for the same key in the table called `name`, which
    /// the pipeline must declare for the operator: an error names it
    /// otherwise. Handles are cached for the life of the instance.
    pub fn table(&mut self, name: &str) -> Result<State<'_>, Error> {
        let t = self.tables.resolve(name)?;
        Ok(self.with_table(t))
    }
}

/// Where a region handed out by `sluice_alloc` lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Which {
    Input,
    Extra(usize),
}

/// Why a consuming call could not run at all.
const NOT_A_REGION: &str = "was not handed out by sluice_alloc";

/// The guest core of one operator instance: the operator, the regions
/// handed to the host, and the buffers reused from call to call.
///
/// Invariants: `out` starts with a batch header and holds `out.count`
/// records after it; outputs go to the host only between two input
/// records, so the outputs of the record in progress can always be dropped
/// when its handler fails. `input` is the region `sluice_alloc` hands out,
/// kept (and not written by the guest) until the next `sluice_alloc`:
/// a host may write request after request into it for `sluice_apply`.
#[doc(hidden)]
pub struct Guest<T> {
    op: T,
    input: Vec<u8>,
    /// Whether `input` is handed out and no call consumed it yet.
    pending: bool,
    /// Regions handed out while `input` was pending; kept until the next
    /// `sluice_alloc` that is not.
    extra: Vec<Vec<u8>>,
    out: Out,
    state_buf: Vec<u8>,
    tables: TableCache,
    plan_buf: Vec<u8>,
    plan_err: Option<Error>,
    reads: Vec<ReadSpan>,
    call: CallBufs,
    odec: OutcomeDecoder,
}

impl<T> Guest<T> {
    /// Returns the guest core of `op`.
    pub fn new(op: T) -> Guest<T> {
        Guest {
            op,
            input: Vec::new(),
            pending: false,
            extra: Vec::new(),
            out: Out::new(),
            state_buf: Vec::new(),
            tables: TableCache::default(),
            plan_buf: Vec::new(),
            plan_err: None,
            reads: Vec::new(),
            call: CallBufs::default(),
            odec: OutcomeDecoder::default(),
        }
    }

    /// Returns the operator.
    pub fn operator(&mut self) -> &mut T {
        &mut self.op
    }

    // -- Memory -------------------------------------------------------------

    /// Implements `sluice_alloc`: returns the address of `size` writable
    /// bytes for the next consuming call, or 0. A second request before a
    /// call consumed the first gets a region of its own, so regions handed
    /// out together never overlap. The address is never 0 for a valid size,
    /// 0 included.
    pub fn alloc(&mut self, size: i32) -> usize {
        if !(0..=MAX_ALLOC).contains(&size) {
            return 0;
        }
        let size = size as usize;
        if self.pending {
            let b = vec![0u8; size.max(1)];
            let addr = b.as_ptr() as usize;
            self.extra.push(b);
            return addr;
        }
        self.extra.clear();
        if self.input.len() < size || self.input.is_empty() {
            self.input = vec![0; (size + size / 4).max(MIN_REGION)];
        }
        self.pending = true;
        self.input.as_ptr() as usize
    }

    /// Finds the region holding `[addr, addr+len)` and the range's offset
    /// in it.
    fn locate(&self, addr: usize, len: usize) -> Option<(Which, usize)> {
        let within = |b: &Vec<u8>| {
            let base = b.as_ptr() as usize;
            if addr >= base && addr - base <= b.len() && len <= b.len() - (addr - base) {
                Some(addr - base)
            } else {
                None
            }
        };
        if let Some(off) = within(&self.input) {
            return Some((Which::Input, off));
        }
        self.extra
            .iter()
            .enumerate()
            .find_map(|(i, b)| within(b).map(|off| (Which::Extra(i), off)))
    }

    fn take(&mut self, w: Which) -> Vec<u8> {
        match w {
            Which::Input => mem::take(&mut self.input),
            Which::Extra(i) => mem::take(&mut self.extra[i]),
        }
    }

    fn put_back(&mut self, w: Which, b: Vec<u8>) {
        match w {
            Which::Input => self.input = b,
            Which::Extra(i) => self.extra[i] = b,
        }
    }

    /// Runs `f` over the `len` bytes at `addr`, a range of a region
    /// `sluice_alloc` handed out, and ends the regions' pending state.
    /// A zero length needs no region. A range outside every region fails
    /// the call with `STATUS_ERROR`, after logging why.
    pub fn with_region<R: From<i32>>(
        &mut self,
        export: &str,
        addr: usize,
        len: usize,
        f: impl FnOnce(&mut Self, &mut [u8]) -> R,
    ) -> R {
        self.pending = false;
        if len == 0 {
            return f(self, &mut []);
        }
        let (w, off) = match self.locate(addr, len) {
            Some(l) => l,
            None => {
                sys::log(
                    Level::Error as i32,
                    &format!(
                        "{}: the region of {} bytes at {:#x} {}",
                        export, len, addr, NOT_A_REGION
                    ),
                );
                return R::from(abi::STATUS_ERROR);
            }
        };
        let mut b = self.take(w);
        let r = f(self, &mut b[off..off + len]);
        self.put_back(w, b);
        r
    }

    /// Runs `f` over two ranges of one region: `sluice_post`'s events and
    /// outcomes.
    pub fn with_regions2(
        &mut self,
        export: &str,
        a: (usize, usize),
        b: (usize, usize),
        f: impl FnOnce(&mut Self, &[u8], &[u8]) -> i32,
    ) -> i32 {
        self.pending = false;
        let la = if a.1 == 0 {
            None
        } else {
            self.locate(a.0, a.1)
        };
        let lb = if b.1 == 0 {
            None
        } else {
            self.locate(b.0, b.1)
        };
        match (la, lb) {
            (Some((wa, oa)), Some((wb, ob))) if wa == wb => {
                let buf = self.take(wa);
                let r = f(self, &buf[oa..oa + a.1], &buf[ob..ob + b.1]);
                self.put_back(wa, buf);
                r
            }
            (Some((wa, oa)), None) if b.1 == 0 => {
                let buf = self.take(wa);
                let r = f(self, &buf[oa..oa + a.1], &[]);
                self.put_back(wa, buf);
                r
            }
            (None, Some((wb, ob))) if a.1 == 0 => {
                let buf = self.take(wb);
                let r = f(self, &[], &buf[ob..ob + b.1]);
                self.put_back(wb, buf);
                r
            }
            (None, None) if a.1 == 0 && b.1 == 0 => f(self, &[], &[]),
            _ => {
                sys::log(
                    Level::Error as i32,
                    &format!(
                        "{}: its arguments do not lie in one region that sluice_alloc handed out",
                        export
                    ),
                );
                abi::STATUS_ERROR
            }
        }
    }

    // -- Configuration ------------------------------------------------------

    /// Implements `sluice_configure` with `f`, the operator kind's
    /// `configure`.
    pub fn configure(
        &mut self,
        raw: &[u8],
        f: impl FnOnce(&mut T, &Config<'_>) -> Result<(), Error>,
    ) -> i32 {
        match f(&mut self.op, &Config::new(raw)) {
            Ok(()) => abi::STATUS_OK,
            Err(e) => {
                sys::log(
                    Level::Error as i32,
                    &format!("invalid configuration: {}", e),
                );
                abi::STATUS_BAD_CONFIG
            }
        }
    }

    /// Logs why `batch` cannot be processed and returns `STATUS_ERROR`.
    #[cold]
    fn bad_batch(&mut self, e: abi::DecodeError) -> i32 {
        self.out.reset();
        sys::log(Level::Error as i32, &format!("input batch: {}", e));
        abi::STATUS_ERROR
    }

    // -- Record operators ---------------------------------------------------

    /// Runs `handle` over each record of `batch`, which emits through an
    /// [`Emitter`]; a record whose handler fails is rejected and its
    /// outputs dropped. `handle` gets the state buffer and table cache for
    /// keyed operators.
    pub(crate) fn run_emitting<F>(&mut self, batch: &[u8], mut handle: F) -> i32
    where
        F: FnMut(
            &mut T,
            &Record<'_>,
            &mut Emitter<'_>,
            &mut Vec<u8>,
            &mut TableCache,
        ) -> Result<(), Error>,
    {
        let count = match abi::batch_count(batch) {
            Ok(c) => c,
            Err(e) => return self.bad_batch(e),
        };
        self.out.reset();
        let mut off = abi::BATCH_HEADER_SIZE;
        for i in 0..count {
            let s = match abi::parse_record(batch, off, i) {
                Ok(s) => s,
                Err(e) => return self.bad_batch(e),
            };
            off = s.end;
            let r = s.record(batch);
            let mark = self.out.mark();
            let mut em = Emitter {
                out: &mut self.out,
                origin: i,
            };
            match handle(
                &mut self.op,
                &r,
                &mut em,
                &mut self.state_buf,
                &mut self.tables,
            ) {
                Ok(()) => self.out.maybe_flush(),
                Err(e) => {
                    self.out.truncate(mark);
                    sys::reject(i, e.message());
                }
            }
        }
        if off != batch.len() {
            return self.bad_batch(abi::trailing_error(batch, off, count));
        }
        self.out.finish();
        abi::STATUS_OK
    }

    /// Runs the stateless handler `handle` over `batch`.
    pub fn run_operator<F>(&mut self, batch: &[u8], mut handle: F) -> i32
    where
        F: FnMut(&mut T, &Record<'_>, &mut Emitter<'_>) -> Result<(), Error>,
    {
        self.run_emitting(batch, |op, r, em, _, _| handle(op, r, em))
    }

    /// Runs the keyed handler `handle` over `batch`.
    pub fn run_keyed<F>(&mut self, batch: &[u8], mut handle: F) -> i32
    where
        F: FnMut(&mut T, &Record<'_>, &mut State<'_>, &mut Emitter<'_>) -> Result<(), Error>,
    {
        self.run_emitting(batch, |op, r, em, buf, tables| {
            let mut st = State {
                key: r.key,
                table: Table::DEFAULT,
                buf,
                tables,
            };
            handle(op, r, &mut st, em)
        })
    }

    /// Runs `handle` over each record of `batch`, which says whether the
    /// record goes on as it lies in the batch (changed in place or not),
    /// is dropped (false), or is rejected (an error). Forwarded records are
    /// not encoded again: consecutive ones join the output in one copy, and
    /// a batch forwarded whole is emitted where it lies.
    pub(crate) fn run_forwarding<F>(&mut self, batch: &mut [u8], mut handle: F) -> i32
    where
        F: FnMut(&mut T, &mut [u8], &RecordSpan) -> Result<bool, Error>,
    {
        let count = match abi::batch_count(batch) {
            Ok(c) => c,
            Err(e) => return self.bad_batch(e),
        };
        self.out.reset();
        let mut off = abi::BATCH_HEADER_SIZE;
        // The run of forwarded records not yet in the output: records
        // run_first.. starting at offset run_start.
        let mut run_start = off;
        let mut run_first = 0u32;
        for i in 0..count {
            let s = match abi::parse_record(batch, off, i) {
                Ok(s) => s,
                Err(e) => return self.bad_batch(e),
            };
            match handle(&mut self.op, batch, &s) {
                Ok(true) => batch[s.start + 4..s.start + 8].copy_from_slice(&i.to_le_bytes()),
                res => {
                    self.end_run(batch, run_start, run_first, s.start, i);
                    run_start = s.end;
                    run_first = i + 1;
                    if let Err(e) = res {
                        sys::reject(i, e.message());
                    }
                }
            }
            off = s.end;
        }
        if off != batch.len() {
            return self.bad_batch(abi::trailing_error(batch, off, count));
        }
        if run_first == 0 {
            // Every record went on: the batch is the output.
            if count > 0 {
                sys::emit(batch);
            }
            return abi::STATUS_OK;
        }
        self.end_run(batch, run_start, run_first, off, count);
        self.out.finish();
        abi::STATUS_OK
    }

    /// Adds the run of forwarded records `first..i`, which lie at
    /// `batch[start..at]`, to the output.
    fn end_run(&mut self, batch: &[u8], start: usize, first: u32, at: usize, i: u32) {
        if first < i {
            self.out.buf.extend_from_slice(&batch[start..at]);
            self.out.count += i - first;
            self.out.maybe_flush();
        }
    }

    /// Runs the in-place map `map` over `batch`.
    pub fn run_map_in_place<F>(&mut self, batch: &mut [u8], mut map: F) -> i32
    where
        F: FnMut(&mut T, &mut RecordMut<'_>) -> Result<(), Error>,
    {
        self.run_forwarding(batch, |op, b, s| {
            // Key, value and headers lie in this order, apart: split the
            // batch into them.
            let (front, rest) = b.split_at_mut(s.value.0);
            let (value, rest) = rest.split_at_mut(s.value.1 - s.value.0);
            let headers = &rest[s.headers.0 - s.value.1..s.headers.1 - s.value.1];
            let mut r = RecordMut {
                key: &mut front[s.key.0..s.key.1],
                value,
                time: s.time,
                headers: Headers::from_wire(s.header_count, headers),
                input: s.input,
            };
            map(op, &mut r)?;
            let time = r.time;
            if time != s.time {
                b[s.start + 12..s.start + 20].copy_from_slice(&time.to_le_bytes());
            }
            Ok(true)
        })
    }

    /// Runs the filter `keep` over `batch`.
    pub fn run_filter<F>(&mut self, batch: &mut [u8], mut keep: F) -> i32
    where
        F: FnMut(&mut T, &Record<'_>) -> Result<bool, Error>,
    {
        self.run_forwarding(batch, |op, b, s| keep(op, &s.record(b)))
    }
}

/// What a transactional operator provides the core: its functions' count
/// and its three phases, as closures so that the core need not name the
/// trait.
impl<T> Guest<T> {
    /// Implements `sluice_plan` with `plan`: declares each event's
    /// operations and hands them to the host in one `txn_plan` call, or one
    /// per megabyte of them.
    pub fn run_plan<F>(&mut self, batch: &[u8], functions: u32, mut plan: F) -> i32
    where
        F: FnMut(&mut T, &Record<'_>, &mut Planner<'_>) -> Result<(), Error>,
    {
        let count = match abi::batch_count(batch) {
            Ok(c) => c,
            Err(e) => return self.bad_batch(e),
        };
        self.plan_buf.clear();
        self.plan_err = None;
        let mut off = abi::BATCH_HEADER_SIZE;
        for i in 0..count {
            let s = match abi::parse_record(batch, off, i) {
                Ok(s) => s,
                Err(e) => return self.bad_batch(e),
            };
            off = s.end;
            let r = s.record(batch);
            let mut p = Planner::new(
                &mut self.plan_buf,
                &mut self.plan_err,
                &mut self.tables,
                i,
                functions,
            );
            let res = plan(&mut self.op, &r, &mut p);
            let err = match res {
                Err(e) => Some(e.context(format!("event {}", i))),
                Ok(()) => self.plan_err.take(),
            };
            if let Some(e) = err {
                self.plan_buf.clear();
                sys::log(Level::Error as i32, &format!("plan: {}", e));
                return abi::STATUS_ERROR;
            }
            if self.plan_buf.len() >= FLUSH_SIZE {
                sys::txn_plan(&self.plan_buf);
                self.plan_buf.clear();
            }
        }
        if off != batch.len() {
            return self.bad_batch(abi::trailing_error(batch, off, count));
        }
        if !self.plan_buf.is_empty() {
            sys::txn_plan(&self.plan_buf);
        }
        self.plan_buf.clear();
        if self.plan_buf.capacity() > MAX_KEPT_OUT {
            self.plan_buf = Vec::new();
        }
        abi::STATUS_OK
    }

    /// Implements `sluice_apply` with `apply`: decodes the request, calls
    /// the function, and returns what `done` makes of the result code and
    /// the value to write (empty unless the code is `APPLY_WRITE`). The code
    /// is `STATUS_ERROR`, after the reason is logged, when the operation
    /// failed.
    pub fn run_apply<F, D, R>(&mut self, req: &[u8], functions: u32, apply: F, done: D) -> R
    where
        F: for<'c> FnOnce(&T, &'c mut Call<'_>) -> Effect<'c>,
        D: FnOnce(i32, &[u8]) -> R,
    {
        let q = match abi::decode_request(req, &mut self.reads) {
            Ok(q) => q,
            Err(e) => {
                sys::log(Level::Error as i32, &format!("apply: {}", e));
                return done(abi::STATUS_ERROR, &[]);
            }
        };
        if q.func >= functions {
            sys::log(
                Level::Error as i32,
                &format!(
                    "apply: event {} operation {} names function {}, but the operator has {} functions (Transactional::FUNCTIONS)",
                    q.event, q.op, q.func, functions
                ),
            );
            return done(abi::STATUS_ERROR, &[]);
        }
        let faults = Faults::default();
        let mut call = Call::new(
            req,
            q,
            &self.reads,
            &mut self.call,
            &mut self.tables,
            &faults,
        );
        let effect = apply(&self.op, &mut call);
        let (code, value, failure) = match effect {
            Effect::Write(v) => (abi::APPLY_WRITE, v, None),
            Effect::Keep => (abi::APPLY_KEEP, &[][..], None),
            Effect::Delete => (abi::APPLY_DELETE, &[][..], None),
            Effect::Abort => (abi::APPLY_ABORT, &[][..], None),
            Effect::Fail(e) => (abi::STATUS_ERROR, &[][..], Some(e)),
        };
        if failure.is_none() && !faults.any() {
            return done(code, value);
        }
        let err = match failure {
            Some(e) => e,
            None => faults
                .reason(self.reads.len())
                .unwrap_or_else(|| Error::new("sluice: internal error: a fault without a reason")),
        };
        sys::log(
            Level::Error as i32,
            &format!(
                "apply: event {} operation {}: function {} failed: {}",
                q.event, q.op, q.func, err
            ),
        );
        done(abi::STATUS_ERROR, &[])
    }

    /// Implements `sluice_post` with `post`: hands each event and its
    /// outcome to `post`, which emits as a record handler does; an error
    /// rejects its event and drops what it emitted.
    pub fn run_post<F>(&mut self, events: &[u8], outcomes: &[u8], mut post: F) -> i32
    where
        F: FnMut(&mut T, &Record<'_>, &Outcome<'_>, &mut Emitter<'_>) -> Result<(), Error>,
    {
        let count = match abi::batch_count(events) {
            Ok(c) => c,
            Err(e) => return self.bad_batch(e),
        };
        let n = match self.odec.reset(outcomes) {
            Ok(n) => n,
            Err(e) => return self.bad_outcomes(e),
        };
        if n != count as usize {
            sys::log(
                Level::Error as i32,
                &format!("post: outcomes of {} events for a batch of {}", n, count),
            );
            return abi::STATUS_ERROR;
        }
        self.out.reset();
        let mut off = abi::BATCH_HEADER_SIZE;
        for i in 0..count {
            let s = match abi::parse_record(events, off, i) {
                Ok(s) => s,
                Err(e) => return self.bad_batch(e),
            };
            off = s.end;
            let committed = match self.odec.next(outcomes) {
                Ok(Some(c)) => c,
                Ok(None) => unreachable!("the outcome count was checked"),
                Err(e) => return self.bad_outcomes(e),
            };
            let r = s.record(events);
            let o = Outcome::new(
                committed,
                outcomes,
                &self.odec.ops,
                &self.odec.vals,
                &self.odec.gets,
            );
            let mark = self.out.mark();
            let mut em = Emitter {
                out: &mut self.out,
                origin: i,
            };
            match post(&mut self.op, &r, &o, &mut em) {
                Ok(()) => self.out.maybe_flush(),
                Err(e) => {
                    self.out.truncate(mark);
                    sys::reject(i, e.message());
                }
            }
        }
        if off != events.len() {
            return self.bad_batch(abi::trailing_error(events, off, count));
        }
        if let Err(e) = self.odec.next(outcomes) {
            return self.bad_outcomes(e);
        }
        self.out.finish();
        abi::STATUS_OK
    }

    #[cold]
    fn bad_outcomes(&mut self, e: abi::DecodeError) -> i32 {
        self.out.reset();
        sys::log(Level::Error as i32, &format!("post: {}", e));
        abi::STATUS_ERROR
    }
}

// -- Window functions (ABI section 13) ----------------------------------------

impl<T> Guest<T> {
    /// Logs that the input of `export` is malformed and returns
    /// `STATUS_ERROR`.
    #[cold]
    fn bad_window_input(&mut self, export: &str, e: &dyn std::fmt::Display) -> i32 {
        self.out.reset();
        sys::log(
            Level::Error as i32,
            &format!("{}: malformed input: {}", export, e),
        );
        abi::STATUS_ERROR
    }

    /// Implements `sluice_agg_add` over a group batch with `add`.
    pub fn run_agg_add<F>(&mut self, batch: &[u8], mut add: F) -> i32
    where
        F: FnMut(&mut T, &mut Vec<u8>, &Record<'_>) -> Result<(), Error>,
    {
        const EXPORT: &str = "sluice_agg_add";
        let groups = match abi::batch_count(batch) {
            Ok(c) => c,
            Err(e) => return self.bad_window_input(EXPORT, &e),
        };
        self.out.reset();
        let mut acc = std::mem::take(&mut self.state_buf);
        let mut off = abi::BATCH_HEADER_SIZE;
        let mut member = 0u32;
        for g in 0..groups {
            let head = match abi::parse_record(batch, off, g) {
                Ok(s) => s,
                Err(e) => return self.bad_window_input(EXPORT, &e),
            };
            acc.clear();
            acc.extend_from_slice(head.record(batch).value);
            off = head.end;
            if batch.len() - off < 4 {
                return self.bad_window_input(EXPORT, &"truncated member count");
            }
            let n =
                u32::from_le_bytes([batch[off], batch[off + 1], batch[off + 2], batch[off + 3]]);
            off += 4;
            for _ in 0..n {
                let s = match abi::parse_record(batch, off, member) {
                    Ok(s) => s,
                    Err(e) => return self.bad_window_input(EXPORT, &e),
                };
                off = s.end;
                match add(&mut self.op, &mut acc, &s.record(batch)) {
                    Err(e) => sys::reject(member, e.message()),
                    Ok(()) if acc.is_empty() => {
                        sys::log(
                            Level::Error as i32,
                            &format!("{}: add left an empty accumulator for record {}: an accumulator takes at least one byte", EXPORT, member),
                        );
                        return abi::STATUS_ERROR;
                    }
                    Ok(()) => {}
                }
                member += 1;
            }
            abi::append_record(&mut self.out.buf, g, &Record::new(b"", &acc));
            self.out.count += 1;
            self.out.maybe_flush();
        }
        self.state_buf = acc;
        if off != batch.len() {
            return self.bad_window_input(EXPORT, &"bytes after the last group");
        }
        self.out.finish();
        abi::STATUS_OK
    }

    /// Implements `sluice_agg_merge` over a batch of pairs with `merge`.
    pub fn run_agg_merge<F>(&mut self, batch: &[u8], mut merge: F) -> i32
    where
        F: FnMut(&mut T, &mut Vec<u8>, &[u8]) -> Result<(), Error>,
    {
        const EXPORT: &str = "sluice_agg_merge";
        let n = match abi::batch_count(batch) {
            Ok(c) if c % 2 == 0 => c,
            Ok(_) => return self.bad_window_input(EXPORT, &"an odd number of accumulators"),
            Err(e) => return self.bad_window_input(EXPORT, &e),
        };
        self.out.reset();
        let mut acc = std::mem::take(&mut self.state_buf);
        let mut off = abi::BATCH_HEADER_SIZE;
        for j in 0..n / 2 {
            let a = match abi::parse_record(batch, off, 2 * j) {
                Ok(s) => s,
                Err(e) => return self.bad_window_input(EXPORT, &e),
            };
            let b = match abi::parse_record(batch, a.end, 2 * j + 1) {
                Ok(s) => s,
                Err(e) => return self.bad_window_input(EXPORT, &e),
            };
            off = b.end;
            acc.clear();
            acc.extend_from_slice(a.record(batch).value);
            let r = merge(&mut self.op, &mut acc, b.record(batch).value);
            if let Err(e) = r {
                sys::log(
                    Level::Error as i32,
                    &format!("{}: pair {}: {}", EXPORT, j, e.message()),
                );
                return abi::STATUS_ERROR;
            }
            if acc.is_empty() {
                sys::log(
                    Level::Error as i32,
                    &format!("{}: pair {}: merge left an empty accumulator", EXPORT, j),
                );
                return abi::STATUS_ERROR;
            }
            abi::append_record(&mut self.out.buf, j, &Record::new(b"", &acc));
            self.out.count += 1;
            self.out.maybe_flush();
        }
        self.state_buf = acc;
        if off != batch.len() {
            return self.bad_window_input(EXPORT, &"bytes after the last pair");
        }
        self.out.finish();
        abi::STATUS_OK
    }

    /// Implements `sluice_agg_fire` over a batch of firings with `fire`.
    pub fn run_agg_fire<F>(&mut self, batch: &[u8], mut fire: F) -> i32
    where
        F: FnMut(&mut T, &[u8], &crate::Window, &[u8], &mut Emitter<'_>) -> Result<(), Error>,
    {
        const EXPORT: &str = "sluice_agg_fire";
        let n = match abi::batch_count(batch) {
            Ok(c) => c,
            Err(e) => return self.bad_window_input(EXPORT, &e),
        };
        self.out.reset();
        let mut off = abi::BATCH_HEADER_SIZE;
        for j in 0..n {
            let s = match abi::parse_record(batch, off, j) {
                Ok(s) => s,
                Err(e) => return self.bad_window_input(EXPORT, &e),
            };
            off = s.end;
            let r = s.record(batch);
            let w = match crate::Window::of(&r) {
                Some(w) => w,
                None => {
                    return self.bad_window_input(
                        EXPORT,
                        &format!("firing {} lacks the window headers", j),
                    )
                }
            };
            let mark = self.out.mark();
            let mut em = Emitter {
                out: &mut self.out,
                origin: j,
            };
            match fire(&mut self.op, r.key, &w, r.value, &mut em) {
                Ok(()) => self.out.maybe_flush(),
                Err(e) => {
                    self.out.truncate(mark);
                    sys::reject(j, e.message());
                }
            }
        }
        if off != batch.len() {
            return self.bad_window_input(EXPORT, &"bytes after the last firing");
        }
        self.out.finish();
        abi::STATUS_OK
    }

    /// Implements `sluice_window_fire` over a group batch with `fire`.
    pub fn run_window_fire<F>(&mut self, batch: &[u8], mut fire: F) -> i32
    where
        F: FnMut(
            &mut T,
            &[u8],
            &crate::Window,
            &[Record<'_>],
            &mut Emitter<'_>,
        ) -> Result<(), Error>,
    {
        const EXPORT: &str = "sluice_window_fire";
        let groups = match abi::batch_count(batch) {
            Ok(c) => c,
            Err(e) => return self.bad_window_input(EXPORT, &e),
        };
        self.out.reset();
        let mut off = abi::BATCH_HEADER_SIZE;
        let mut member = 0u32;
        let mut recs: Vec<Record<'_>> = Vec::new();
        for g in 0..groups {
            let head = match abi::parse_record(batch, off, g) {
                Ok(s) => s,
                Err(e) => return self.bad_window_input(EXPORT, &e),
            };
            off = head.end;
            let h = head.record(batch);
            let w = match crate::Window::of(&h) {
                Some(w) => w,
                None => {
                    return self.bad_window_input(
                        EXPORT,
                        &format!("window {} lacks the window headers", g),
                    )
                }
            };
            if batch.len() - off < 4 {
                return self.bad_window_input(EXPORT, &"truncated member count");
            }
            let n =
                u32::from_le_bytes([batch[off], batch[off + 1], batch[off + 2], batch[off + 3]]);
            off += 4;
            recs.clear();
            for k in 0..n {
                let s = match abi::parse_record(batch, off, member + k) {
                    Ok(s) => s,
                    Err(e) => return self.bad_window_input(EXPORT, &e),
                };
                off = s.end;
                recs.push(s.record(batch));
            }
            let mark = self.out.mark();
            let mut em = Emitter {
                out: &mut self.out,
                origin: g,
            };
            match fire(&mut self.op, h.key, &w, &recs, &mut em) {
                Ok(()) => self.out.maybe_flush(),
                Err(e) => {
                    self.out.truncate(mark);
                    for k in 0..n {
                        sys::reject(member + k, e.message());
                    }
                }
            }
            member += n;
        }
        if off != batch.len() {
            return self.bad_window_input(EXPORT, &"bytes after the last window");
        }
        self.out.finish();
        abi::STATUS_OK
    }
}

// -- Join functions (ABI section 14) ------------------------------------------

impl<T> Guest<T> {
    /// Implements `sluice_join` over a group batch, one group per pair, with
    /// `join`. A pair's head says which sides it has: its value is one byte
    /// of `JOIN_LEFT` and `JOIN_RIGHT`, and its members are those records,
    /// left first. An error from `join` rejects the pair and drops what it
    /// emitted.
    pub fn run_join<F>(&mut self, batch: &[u8], mut join: F) -> i32
    where
        F: FnMut(
            &mut T,
            &[u8],
            Option<&crate::Window>,
            Option<&Record<'_>>,
            Option<&Record<'_>>,
            &mut Emitter<'_>,
        ) -> Result<(), Error>,
    {
        const EXPORT: &str = "sluice_join";
        const SIDES: u8 = abi::JOIN_LEFT | abi::JOIN_RIGHT;
        let pairs = match abi::batch_count(batch) {
            Ok(c) => c,
            Err(e) => return self.bad_window_input(EXPORT, &e),
        };
        self.out.reset();
        let mut off = abi::BATCH_HEADER_SIZE;
        let mut member = 0u32;
        for j in 0..pairs {
            let head = match abi::parse_record(batch, off, j) {
                Ok(s) => s,
                Err(e) => return self.bad_window_input(EXPORT, &e),
            };
            off = head.end;
            let h = head.record(batch);
            // An interval join's heads have no headers.
            let w = if h.headers.is_empty() {
                None
            } else {
                match crate::Window::of(&h) {
                    Some(w) => Some(w),
                    None => {
                        return self.bad_window_input(
                            EXPORT,
                            &format!("pair {} has headers that are not a window's", j),
                        )
                    }
                }
            };
            let sides = match *h.value {
                [s] if s != 0 && s & !SIDES == 0 => s,
                _ => {
                    return self.bad_window_input(
                        EXPORT,
                        &format!("pair {}: the head's value is not one byte of sides", j),
                    )
                }
            };
            if batch.len() - off < 4 {
                return self.bad_window_input(EXPORT, &"truncated member count");
            }
            let n =
                u32::from_le_bytes([batch[off], batch[off + 1], batch[off + 2], batch[off + 3]]);
            off += 4;
            let want =
                u32::from(sides & abi::JOIN_LEFT != 0) + u32::from(sides & abi::JOIN_RIGHT != 0);
            if n != want {
                return self.bad_window_input(
                    EXPORT,
                    &format!("pair {} has {} records, and its head says {}", j, n, want),
                );
            }
            let mut recs: [Option<Record<'_>>; 2] = [None, None];
            for (k, slot) in recs.iter_mut().take(n as usize).enumerate() {
                let s = match abi::parse_record(batch, off, member + k as u32) {
                    Ok(s) => s,
                    Err(e) => return self.bad_window_input(EXPORT, &e),
                };
                off = s.end;
                *slot = Some(s.record(batch));
            }
            member += n;
            let (left, right) = match sides {
                abi::JOIN_LEFT => (recs[0], None),
                abi::JOIN_RIGHT => (None, recs[0]),
                _ => (recs[0], recs[1]),
            };
            let mark = self.out.mark();
            let mut em = Emitter {
                out: &mut self.out,
                origin: j,
            };
            match join(
                &mut self.op,
                h.key,
                w.as_ref(),
                left.as_ref(),
                right.as_ref(),
                &mut em,
            ) {
                Ok(()) => self.out.maybe_flush(),
                Err(e) => {
                    self.out.truncate(mark);
                    sys::reject(j, e.message());
                }
            }
        }
        if off != batch.len() {
            return self.bad_window_input(EXPORT, &"bytes after the last pair");
        }
        self.out.finish();
        abi::STATUS_OK
    }
}
