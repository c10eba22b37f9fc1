//! Run operators natively, in `cargo test`, against an in-memory host that
//! follows the host's rules.
//!
//! [`Harness`] runs a record operator (stateless or keyed) through the same
//! guest core the WebAssembly exports call, with batches encoded as the
//! host encodes them; [`TxnHarness`] runs a transactional operator with a
//! serial executor, the oracle every scheduling strategy of the host must
//! agree with. Both play the host's part in recovery: a record the
//! operator rejects leaves no trace (its outputs dropped, a keyed
//! operator's state writes undone), and a batch whose call fails is run
//! again record by record, so that only the failing records are
//! dead-lettered. A panic is not caught: it fails the test, where the host
//! would trap the instance.
//!
//! ```
//! use sluice::testing::Harness;
//! use sluice::{Emitter, Error, Keyed, OwnedRecord, Record, State};
//!
//! #[derive(Default)]
//! struct Count;
//!
//! impl Keyed for Count {
//!     fn process(&mut self, r: &Record<'_>, st: &mut State<'_>, out: &mut Emitter<'_>) -> Result<(), Error> {
//!         let n = st.get().map_or(0, |v| v[0]) + 1;
//!         st.put(&[n]);
//!         out.emit(&r.with_value(&[n]));
//!         Ok(())
//!     }
//! }
//!
//! let mut h = Harness::keyed(Count, &["counts"]);
//! let out = h.process(&[OwnedRecord::new("a", ""), OwnedRecord::new("a", "")]);
//! assert_eq!(out.records[1].record.value, vec![2]);
//! assert_eq!(h.state("counts", b"a"), Some(vec![2]));
//! ```
//!
//! The harness does not run the module itself: test the compiled module in
//! the real host with the Go package `sluicetest` (see the crate's README).
#![cfg(not(target_arch = "wasm32"))]

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use crate::abi::{self, OpDecl, OpOutcomeData, ReadValue};
use crate::guest::Guest;
use crate::record::{Header, Headers, OwnedRecord, Record};
use crate::sys;
use crate::{Config, Error, Filter, Keyed, Level, MapInPlace, Operator, Transactional};

/// The host functions, as the native build of the SDK calls them. The
/// harnesses implement it; implement it yourself to test against a host of
/// your own. Every method has a default that panics, naming the function.
pub trait Host {
    /// `emit`: an encoded batch of output records.
    fn emit(&mut self, batch: &[u8]) {
        let _ = batch;
        panic!("sluice::testing: this host has no emit");
    }
    /// `reject`: dead-letters input record `origin`.
    fn reject(&mut self, origin: u32, msg: &str) {
        let _ = (origin, msg);
        panic!("sluice::testing: this host has no reject");
    }
    /// `table_id`: a table's handle, or `STATUS_NOT_FOUND`.
    fn table_id(&mut self, name: &str) -> i32 {
        let _ = name;
        panic!("sluice::testing: this host has no table_id");
    }
    /// `state_get`, with its buffer protocol.
    fn state_get(&mut self, table: i32, key: &[u8], buf: &mut [u8]) -> i32 {
        let _ = (table, key, buf);
        panic!("sluice::testing: this host has no state_get");
    }
    /// `state_put`.
    fn state_put(&mut self, table: i32, key: &[u8], value: &[u8]) {
        let _ = (table, key, value);
        panic!("sluice::testing: this host has no state_put");
    }
    /// `state_delete`.
    fn state_delete(&mut self, table: i32, key: &[u8]) {
        let _ = (table, key);
        panic!("sluice::testing: this host has no state_delete");
    }
    /// `log`.
    fn log(&mut self, level: i32, msg: &str) {
        let _ = (level, msg);
    }
    /// `txn_plan`: encoded operation declarations.
    fn txn_plan(&mut self, decls: &[u8]) {
        let _ = decls;
        panic!("sluice::testing: this host has no txn_plan");
    }
    /// `txn_get`, with `state_get`'s buffer protocol.
    fn txn_get(&mut self, table: i32, key: &[u8], buf: &mut [u8]) -> i32 {
        let _ = (table, key, buf);
        panic!("sluice::testing: this host has no txn_get");
    }
    /// `txn_put`.
    fn txn_put(&mut self, table: i32, key: &[u8], value: &[u8]) -> i32 {
        let _ = (table, key, value);
        panic!("sluice::testing: this host has no txn_put");
    }
    /// `txn_delete`.
    fn txn_delete(&mut self, table: i32, key: &[u8]) -> i32 {
        let _ = (table, key);
        panic!("sluice::testing: this host has no txn_delete");
    }
}

/// Runs `f` as a guest call with `host` as the host.
pub fn with_host<R>(host: Box<dyn Host>, f: impl FnOnce() -> R) -> R {
    sys::with_host(host, f)
}

/// An output record and the index of the input record (or event) it was
/// emitted for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Emitted {
    /// The index of the input record in its batch.
    pub origin: u32,
    /// The record.
    pub record: OwnedRecord,
}

/// A dead-lettered input record: rejected by the operator, or one whose own
/// call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reject {
    /// The index of the input record in its batch.
    pub origin: u32,
    /// Why: the operator's error message, or the reason its call failed.
    pub message: String,
}

/// What one batch produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Output {
    /// The output records, in order.
    pub records: Vec<Emitted>,
    /// The dead-lettered input records, in order.
    pub rejects: Vec<Reject>,
}

/// A state table's entries.
type Table = BTreeMap<Vec<u8>, Vec<u8>>;

/// The in-memory host both harnesses share with the guest calls they make.
#[derive(Debug, Default)]
struct Sim {
    tables: Vec<String>,
    state: Vec<Table>,
    emits: Vec<Vec<u8>>,
    rejects: Vec<(u32, String)>,
    logs: Vec<(Level, String)>,
    /// The last error message of the call in progress.
    last_error: Option<String>,
    decls: Vec<u8>,
    access: Option<Access>,
}

impl Sim {
    fn begin_call(&mut self) {
        self.emits.clear();
        self.rejects.clear();
        self.last_error = None;
    }
}

/// A host sharing its state with a harness.
struct SimHost(Rc<RefCell<Sim>>);

fn level(l: i32) -> Level {
    match l {
        i32::MIN..=0 => Level::Debug,
        1 => Level::Info,
        2 => Level::Warn,
        _ => Level::Error,
    }
}

/// Copies `v` into `buf` when it fits, per the buffer protocol, and returns
/// its length.
fn copy_out(v: &[u8], buf: &mut [u8]) -> i32 {
    if v.len() <= buf.len() {
        buf[..v.len()].copy_from_slice(v);
    }
    v.len() as i32
}

impl Host for SimHost {
    fn emit(&mut self, batch: &[u8]) {
        self.0.borrow_mut().emits.push(batch.to_vec());
    }

    fn reject(&mut self, origin: u32, msg: &str) {
        self.0.borrow_mut().rejects.push((origin, msg.to_string()));
    }

    fn table_id(&mut self, name: &str) -> i32 {
        match self.0.borrow().tables.iter().position(|t| t == name) {
            Some(i) => i as i32,
            None => abi::STATUS_NOT_FOUND,
        }
    }

    fn state_get(&mut self, table: i32, key: &[u8], buf: &mut [u8]) -> i32 {
        let sim = self.0.borrow();
        match sim.state.get(table as usize) {
            None => panic!("sluice::testing: state_get of undeclared table {}", table),
            Some(t) => match t.get(key) {
                Some(v) => copy_out(v, buf),
                None => abi::STATUS_NOT_FOUND,
            },
        }
    }

    fn state_put(&mut self, table: i32, key: &[u8], value: &[u8]) {
        let mut sim = self.0.borrow_mut();
        match sim.state.get_mut(table as usize) {
            None => panic!("sluice::testing: state_put of undeclared table {}", table),
            Some(t) => {
                t.insert(key.to_vec(), value.to_vec());
            }
        }
    }

    fn state_delete(&mut self, table: i32, key: &[u8]) {
        let mut sim = self.0.borrow_mut();
        match sim.state.get_mut(table as usize) {
            None => panic!(
                "sluice::testing: state_delete of undeclared table {}",
                table
            ),
            Some(t) => {
                t.remove(key);
            }
        }
    }

    fn log(&mut self, l: i32, msg: &str) {
        let mut sim = self.0.borrow_mut();
        let l = level(l);
        if l == Level::Error {
            sim.last_error = Some(msg.to_string());
        }
        sim.logs.push((l, msg.to_string()));
    }

    fn txn_plan(&mut self, decls: &[u8]) {
        self.0.borrow_mut().decls.extend_from_slice(decls);
    }

    fn txn_get(&mut self, table: i32, key: &[u8], buf: &mut [u8]) -> i32 {
        let mut sim = self.0.borrow_mut();
        let sim = &mut *sim;
        let acc = match sim.access.as_mut() {
            Some(a) => a,
            None => panic!("sluice::testing: txn_get outside sluice_apply"),
        };
        match acc.get(&sim.state, table as u32, key) {
            Err(()) => abi::STATUS_UNDECLARED,
            Ok(None) => abi::STATUS_NOT_FOUND,
            Ok(Some(v)) => copy_out(&v, buf),
        }
    }

    fn txn_put(&mut self, table: i32, key: &[u8], value: &[u8]) -> i32 {
        self.write(table, key, Some(value))
    }

    fn txn_delete(&mut self, table: i32, key: &[u8]) -> i32 {
        self.write(table, key, None)
    }
}

impl SimHost {
    fn write(&mut self, table: i32, key: &[u8], value: Option<&[u8]>) -> i32 {
        let mut sim = self.0.borrow_mut();
        match sim.access.as_mut() {
            None => panic!("sluice::testing: txn_put or txn_delete outside sluice_apply"),
            Some(acc) => match acc.put(table as u32, key, value) {
                Ok(()) => abi::STATUS_OK,
                Err(()) => abi::STATUS_UNDECLARED,
            },
        }
    }
}

/// Builds the encoded batch of `records`.
fn encode_batch(records: &[OwnedRecord]) -> Vec<u8> {
    let mut b = Vec::new();
    abi::append_batch_header(&mut b, records.len() as u32);
    for (i, r) in records.iter().enumerate() {
        let hs: Vec<Header<'_>> = r
            .headers
            .iter()
            .map(|(n, v)| Header { name: n, value: v })
            .collect();
        let rec = Record {
            key: &r.key,
            value: &r.value,
            time: r.time,
            headers: Headers::from_list(&hs),
            input: r.input,
        };
        abi::append_record(&mut b, i as u32, &rec);
    }
    b
}

/// Decodes the records of the batches a call emitted.
fn decode_emits(emits: &[Vec<u8>]) -> Vec<Emitted> {
    let mut out = Vec::new();
    for b in emits {
        for r in abi::BatchReader::new(b).expect("the SDK emitted a malformed batch") {
            let (origin, r) = r.expect("the SDK emitted a malformed batch");
            out.push(Emitted {
                origin,
                record: OwnedRecord::from(&r),
            });
        }
    }
    out
}

type Configure<T> = fn(&mut T, &Config<'_>) -> Result<(), Error>;
type Process<T> = fn(&mut Guest<T>, &mut [u8]) -> i32;

/// Runs a record operator (stateless or keyed) natively; see the module
/// documentation.
pub struct Harness<T> {
    guest: Guest<T>,
    sim: Rc<RefCell<Sim>>,
    configure: Configure<T>,
    process: Process<T>,
    keyed: bool,
}

impl<T> Harness<T> {
    fn new(
        op: T,
        tables: &[&str],
        configure: Configure<T>,
        process: Process<T>,
        keyed: bool,
    ) -> Harness<T> {
        let sim = Sim {
            tables: tables.iter().map(|t| t.to_string()).collect(),
            state: vec![Table::new(); tables.len()],
            ..Sim::default()
        };
        Harness {
            guest: Guest::new(op),
            sim: Rc::new(RefCell::new(sim)),
            configure,
            process,
            keyed,
        }
    }

    /// Returns a harness of the stateless [`Operator`] `op`.
    pub fn operator(op: T) -> Harness<T>
    where
        T: Operator,
    {
        Harness::new(
            op,
            &[],
            T::configure,
            |g, b| g.run_operator(b, T::process),
            false,
        )
    }

    /// Returns a harness of the [`MapInPlace`] operator `op`.
    pub fn map_in_place(op: T) -> Harness<T>
    where
        T: MapInPlace,
    {
        Harness::new(
            op,
            &[],
            T::configure,
            |g, b| g.run_map_in_place(b, T::map),
            false,
        )
    }

    /// Returns a harness of the [`Filter`] `op`.
    pub fn filter(op: T) -> Harness<T>
    where
        T: Filter,
    {
        Harness::new(
            op,
            &[],
            T::configure,
            |g, b| g.run_filter(b, T::keep),
            false,
        )
    }

    /// Returns a harness of the [`Keyed`] operator `op` whose state tables
    /// are `tables`, the first one its default table.
    pub fn keyed(op: T, tables: &[&str]) -> Harness<T>
    where
        T: Keyed,
    {
        assert!(
            !tables.is_empty(),
            "sluice::testing: a keyed operator needs a state table"
        );
        Harness::new(
            op,
            tables,
            T::configure,
            |g, b| g.run_keyed(b, T::process),
            true,
        )
    }

    /// Returns the operator.
    pub fn operator_mut(&mut self) -> &mut T {
        self.guest.operator()
    }

    /// Passes `json` to the operator's `configure`, as the host does before
    /// the first batch; an error carries the reason the host would report.
    pub fn configure(&mut self, json: &[u8]) -> Result<(), Error> {
        configure(&mut self.guest, &self.sim, json, self.configure)
    }

    /// Returns the value of `key` in table `table`.
    pub fn state(&self, table: &str, key: &[u8]) -> Option<Vec<u8>> {
        let sim = self.sim.borrow();
        let t = sim.tables.iter().position(|n| n == table)?;
        sim.state[t].get(key).cloned()
    }

    /// Sets the value of `key` in table `table`, as a previous run may have
    /// left it.
    pub fn set_state(&mut self, table: &str, key: &[u8], value: &[u8]) {
        let mut sim = self.sim.borrow_mut();
        let t = match sim.tables.iter().position(|n| n == table) {
            Some(t) => t,
            None => panic!("sluice::testing: table {:?} is not declared", table),
        };
        sim.state[t].insert(key.to_vec(), value.to_vec());
    }

    /// Returns the messages the operator logged so far.
    pub fn logs(&self) -> Vec<(Level, String)> {
        self.sim.borrow().logs.clone()
    }

    /// Runs one call over `batch` and returns its status, outputs and
    /// rejects.
    fn call(&mut self, batch: &mut [u8]) -> (i32, Vec<Emitted>, Vec<Reject>, Option<String>) {
        self.sim.borrow_mut().begin_call();
        let process = self.process;
        let guest = &mut self.guest;
        let status = sys::with_host(Box::new(SimHost(self.sim.clone())), || {
            process(guest, batch)
        });
        let sim = self.sim.borrow();
        let rejects = sim
            .rejects
            .iter()
            .map(|(o, m)| Reject {
                origin: *o,
                message: m.clone(),
            })
            .collect();
        (
            status,
            decode_emits(&sim.emits),
            rejects,
            sim.last_error.clone(),
        )
    }

    /// Processes `records` as one batch, with the host's recovery: see the
    /// module documentation.
    pub fn process(&mut self, records: &[OwnedRecord]) -> Output {
        if records.is_empty() {
            return Output::default();
        }
        let before = self.sim.borrow().state.clone();
        let mut batch = encode_batch(records);
        let (status, records_out, rejects, _) = self.call(&mut batch);
        if status == abi::STATUS_OK && (rejects.is_empty() || !self.keyed) {
            let dropped = |o: u32| rejects.iter().any(|r| r.origin == o);
            let records_out = records_out
                .into_iter()
                .filter(|e| !dropped(e.origin))
                .collect();
            return Output {
                records: records_out,
                rejects,
            };
        }
        // Undo the batch and run its records one per call, each under its
        // own savepoint, as the host does.
        self.sim.borrow_mut().state = before;
        let mut out = Output::default();
        for (i, r) in records.iter().enumerate() {
            let save = self.sim.borrow().state.clone();
            let mut one = encode_batch(std::slice::from_ref(r));
            let (status, recs, rejects, reason) = self.call(&mut one);
            let failed = if status != abi::STATUS_OK {
                Some(reason.unwrap_or_else(|| format!("the call returned status {}", status)))
            } else {
                rejects.into_iter().next().map(|r| r.message)
            };
            match failed {
                Some(message) => {
                    self.sim.borrow_mut().state = save;
                    out.rejects.push(Reject {
                        origin: i as u32,
                        message,
                    });
                }
                None => out.records.extend(recs.into_iter().map(|e| Emitted {
                    origin: i as u32,
                    record: e.record,
                })),
            }
        }
        out
    }
}

fn configure<T>(
    guest: &mut Guest<T>,
    sim: &Rc<RefCell<Sim>>,
    json: &[u8],
    f: Configure<T>,
) -> Result<(), Error> {
    sim.borrow_mut().begin_call();
    let status = sys::with_host(Box::new(SimHost(sim.clone())), || guest.configure(json, f));
    if status == abi::STATUS_OK {
        return Ok(());
    }
    let reason = sim.borrow().last_error.clone().unwrap_or_default();
    Err(Error::new(reason))
}

// ---------------------------------------------------------------------------
// Transactional operators.

/// The state access of the operation being applied, with the rules of
/// ABI section 10.4.
#[derive(Debug)]
struct Access {
    nondet: bool,
    table: u32,
    own: Vec<u8>,
    reads: Vec<(u32, Vec<u8>)>,
    /// The writes of the event's earlier operations, then this one's
    /// (None: deleted), over the committed state.
    overlay: BTreeMap<(u32, Vec<u8>), Option<Vec<u8>>>,
    /// This operation's own writes (non-deterministic).
    written: Vec<(u32, Vec<u8>)>,
    /// The keys it read that are neither declared reads nor its own writes.
    gets: Vec<(u32, Vec<u8>, Option<Vec<u8>>)>,
}

impl Access {
    fn view(&self, state: &[Table], table: u32, key: &[u8]) -> Option<Vec<u8>> {
        match self.overlay.get(&(table, key.to_vec())) {
            Some(v) => v.clone(),
            None => state.get(table as usize).and_then(|t| t.get(key).cloned()),
        }
    }

    fn declared_read(&self, table: u32, key: &[u8]) -> bool {
        self.reads
            .iter()
            .any(|(t, k)| *t == table && k.as_slice() == key)
    }

    fn get(&mut self, state: &[Table], table: u32, key: &[u8]) -> Result<Option<Vec<u8>>, ()> {
        let declared = self.declared_read(table, key);
        if self.nondet {
            if !declared && table != self.table {
                return Err(());
            }
        } else if !(declared || table == self.table && key == self.own.as_slice()) {
            return Err(());
        }
        let v = self.view(state, table, key);
        let mine = self
            .written
            .iter()
            .any(|(t, k)| *t == table && k.as_slice() == key);
        let seen = self
            .gets
            .iter()
            .any(|(t, k, _)| *t == table && k.as_slice() == key);
        if self.nondet && !declared && !mine && !seen {
            self.gets.push((table, key.to_vec(), v.clone()));
        }
        Ok(v)
    }

    fn put(&mut self, table: u32, key: &[u8], value: Option<&[u8]>) -> Result<(), ()> {
        if !self.nondet || table != self.table {
            return Err(());
        }
        self.overlay
            .insert((table, key.to_vec()), value.map(|v| v.to_vec()));
        if !self
            .written
            .iter()
            .any(|(t, k)| *t == table && k.as_slice() == key)
        {
            self.written.push((table, key.to_vec()));
        }
        Ok(())
    }
}

/// What one batch of a transactional operator produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TxnOutput {
    /// Whether each event's transaction committed.
    pub committed: Vec<bool>,
    /// The output records of `post`, in order.
    pub records: Vec<Emitted>,
    /// The events `post` dead-lettered.
    pub rejects: Vec<Reject>,
}

/// Runs a [`Transactional`] operator natively with a serial executor: each
/// event's operations run in declaration order, events in batch order, as
/// the host's serial strategy runs them and as every other strategy must
/// agree with. The encodings are the ABI's, through the same guest core as
/// in WebAssembly.
pub struct TxnHarness<T> {
    guest: Guest<T>,
    sim: Rc<RefCell<Sim>>,
}

impl<T: Transactional> TxnHarness<T> {
    /// Returns a harness of `op` whose tables are `tables`, by handle.
    pub fn new(op: T, tables: &[&str]) -> TxnHarness<T> {
        let sim = Sim {
            tables: tables.iter().map(|t| t.to_string()).collect(),
            state: vec![Table::new(); tables.len()],
            ..Sim::default()
        };
        TxnHarness {
            guest: Guest::new(op),
            sim: Rc::new(RefCell::new(sim)),
        }
    }

    /// Passes `json` to the operator's `configure`.
    pub fn configure(&mut self, json: &[u8]) -> Result<(), Error> {
        configure(&mut self.guest, &self.sim, json, T::configure)
    }

    /// Returns the committed value of `key` in the table of handle `table`.
    pub fn state(&self, table: u32, key: &[u8]) -> Option<Vec<u8>> {
        self.sim
            .borrow()
            .state
            .get(table as usize)?
            .get(key)
            .cloned()
    }

    /// Sets the committed value of `key` in the table of handle `table`.
    pub fn set_state(&mut self, table: u32, key: &[u8], value: &[u8]) {
        let mut sim = self.sim.borrow_mut();
        match sim.state.get_mut(table as usize) {
            Some(t) => {
                t.insert(key.to_vec(), value.to_vec());
            }
            None => panic!("sluice::testing: there is no table {}", table),
        }
    }

    /// Returns every committed entry, by table handle.
    pub fn entries(&self) -> Vec<BTreeMap<Vec<u8>, Vec<u8>>> {
        self.sim.borrow().state.clone()
    }

    /// Returns the messages the operator logged so far.
    pub fn logs(&self) -> Vec<(Level, String)> {
        self.sim.borrow().logs.clone()
    }

    fn host(&self) -> Box<dyn Host> {
        Box::new(SimHost(self.sim.clone()))
    }

    fn failure(&self, export: &str, status: i32) -> Error {
        let reason = self.sim.borrow().last_error.clone();
        Error::new(format!(
            "{} returned status {}: {}",
            export,
            status,
            reason.unwrap_or_default()
        ))
    }

    /// Runs `events` as one batch: plans it, executes its operations
    /// serially, commits the events that did not abort, and posts it. An
    /// error is a failed batch (a failed plan or apply, or a declaration
    /// the host would refuse), whose state changes are discarded.
    pub fn process(&mut self, events: &[OwnedRecord]) -> Result<TxnOutput, Error> {
        if events.is_empty() {
            return Ok(TxnOutput::default());
        }
        let batch = encode_batch(events);
        // Plan.
        {
            let mut sim = self.sim.borrow_mut();
            sim.begin_call();
            sim.decls.clear();
        }
        let host = self.host();
        let guest = &mut self.guest;
        let status = sys::with_host(host, || guest.run_plan(&batch, T::FUNCTIONS, T::plan));
        if status != abi::STATUS_OK {
            return Err(self.failure("sluice_plan", status));
        }
        let decls = {
            let sim = self.sim.borrow();
            abi::decode_op_decls(&sim.decls).map_err(|e| Error::new(format!("txn_plan: {}", e)))?
        };
        let mut by_event: Vec<Vec<OpDecl>> = vec![Vec::new(); events.len()];
        let mut last = 0;
        for d in decls {
            if (d.event as usize) >= events.len() || d.event < last {
                return Err(Error::new(format!(
                    "txn_plan: event {} is not in the batch or comes after event {}",
                    d.event, last
                )));
            }
            if d.flags & abi::OP_FLAG_NONDET != 0 && !d.key.is_empty() {
                return Err(Error::new(
                    "txn_plan: a non-deterministic operation with a key",
                ));
            }
            if d.table as usize >= self.sim.borrow().state.len()
                || d.reads
                    .iter()
                    .any(|(t, _)| *t as usize >= self.sim.borrow().state.len())
            {
                return Err(Error::new(format!(
                    "txn_plan: event {} names a table the operator does not have",
                    d.event
                )));
            }
            last = d.event;
            by_event[d.event as usize].push(d);
        }
        // Execute.
        let before = self.sim.borrow().state.clone();
        let mut out = TxnOutput::default();
        let mut outcomes = Vec::new();
        abi::append_outcomes_header(&mut outcomes, events.len() as u32);
        for (e, ops) in by_event.iter().enumerate() {
            match self.run_event(e as u32, ops) {
                Ok((committed, data)) => {
                    out.committed.push(committed);
                    abi::append_event_outcome(&mut outcomes, committed, &data);
                }
                Err(err) => {
                    self.sim.borrow_mut().state = before;
                    return Err(err);
                }
            }
        }
        // Post.
        self.sim.borrow_mut().begin_call();
        let host = self.host();
        let guest = &mut self.guest;
        let status = sys::with_host(host, || guest.run_post(&batch, &outcomes, T::post));
        if status != abi::STATUS_OK {
            self.sim.borrow_mut().state = before;
            return Err(self.failure("sluice_post", status));
        }
        let sim = self.sim.borrow();
        let rejected = |o: u32| sim.rejects.iter().any(|(r, _)| *r == o);
        out.records = decode_emits(&sim.emits)
            .into_iter()
            .filter(|e| !rejected(e.origin))
            .collect();
        out.rejects = sim
            .rejects
            .iter()
            .map(|(o, m)| Reject {
                origin: *o,
                message: m.clone(),
            })
            .collect();
        Ok(out)
    }

    /// Runs the operations of event `e` serially, committing their writes
    /// unless one aborts, and returns whether it committed and its outcome.
    fn run_event(&mut self, e: u32, ops: &[OpDecl]) -> Result<(bool, Vec<OpOutcomeData>), Error> {
        let mut overlay: BTreeMap<(u32, Vec<u8>), Option<Vec<u8>>> = BTreeMap::new();
        let mut data = Vec::new();
        let mut aborted = false;
        let mut req = Vec::new();
        for (m, d) in ops.iter().enumerate() {
            if aborted {
                data.push(OpOutcomeData::default());
                continue;
            }
            let nondet = d.flags & abi::OP_FLAG_NONDET != 0;
            let acc = Access {
                nondet,
                table: d.table,
                own: d.key.clone(),
                reads: d.reads.clone(),
                overlay: overlay.clone(),
                written: Vec::new(),
                gets: Vec::new(),
            };
            let (own, reads) = {
                let sim = self.sim.borrow();
                let own = if nondet {
                    None
                } else {
                    acc.view(&sim.state, d.table, &d.key)
                };
                let reads: Vec<Option<Vec<u8>>> = d
                    .reads
                    .iter()
                    .map(|(t, k)| acc.view(&sim.state, *t, k))
                    .collect();
                (own, reads)
            };
            let rv: Vec<ReadValue<'_>> = d
                .reads
                .iter()
                .zip(&reads)
                .map(|((t, k), v)| ReadValue {
                    table: *t,
                    key: k,
                    value: v.as_deref(),
                })
                .collect();
            req.clear();
            abi::append_apply_request(
                &mut req,
                &abi::ApplyRequest {
                    func: d.func,
                    event: e,
                    op: m as u32,
                    flags: d.flags,
                    table: d.table,
                    key: &d.key,
                    own: own.as_deref(),
                    reads: &rv,
                    arg: &d.arg,
                },
            );
            {
                let mut sim = self.sim.borrow_mut();
                sim.begin_call();
                sim.access = Some(acc);
            }
            let host = self.host();
            let guest = &mut self.guest;
            let (code, value) = sys::with_host(host, || {
                guest.run_apply(&req, T::FUNCTIONS, T::apply, |code, v| (code, v.to_vec()))
            });
            let acc = self
                .sim
                .borrow_mut()
                .access
                .take()
                .expect("the access of the call");
            match code {
                abi::APPLY_WRITE | abi::APPLY_KEEP | abi::APPLY_DELETE if nondet => {
                    overlay = acc.overlay
                }
                abi::APPLY_WRITE => {
                    overlay.insert((d.table, d.key.clone()), Some(value));
                }
                abi::APPLY_KEEP => {}
                abi::APPLY_DELETE => {
                    overlay.insert((d.table, d.key.clone()), None);
                }
                abi::APPLY_ABORT => aborted = true,
                _ => {
                    return Err(self.failure(
                        &format!("sluice_apply of event {} operation {}", e, m),
                        code,
                    ))
                }
            }
            data.push(OpOutcomeData {
                executed: true,
                own,
                reads,
                gets: acc.gets,
            });
        }
        if !aborted {
            let mut sim = self.sim.borrow_mut();
            for ((t, k), v) in overlay {
                match v {
                    Some(v) => sim.state[t as usize].insert(k, v),
                    None => sim.state[t as usize].remove(&k),
                };
            }
        }
        Ok((!aborted, data))
    }
}
