//! The conformance operator `ledger` in Rust: MorphStream's Streaming
//! Ledger ("SL") as a transactional operator, exactly as the Go plugin
//! `plugins/ledger` (package `ledgerop`) does it: the same tables, event
//! decoding, declarations, functions and outputs.
//!
//! Tables, by handle: 0 `accounts`, 1 `book_entries`; balances are i64 in 8
//! bytes little endian (a missing key holds 0); keys are the 8-digit
//! decimal of the index. A deposit is two read-modify-writes: credit the
//! account, then the book entry. A transfer is four, each reading the
//! source account's balance and aborting the transaction when it is below
//! the amount: debit the source book entry, credit the destination account
//! and book entry, and last debit the source account itself; a debit also
//! aborts when its own balance is below the amount, so a transfer commits
//! only when both the source account and the source book entry hold the
//! amount. An operation whose result would overflow an i64 aborts too. Each operation first
//! spins for the event's busy-ns.
//!
//! One output per event, with its key and time, whose value is the result
//! in text: `deposit committed <account> <book entry>` or `transfer
//! committed|aborted <source account> <source book entry> <destination
//! account> <destination book entry>`, the balances the event read before
//! it changed them, `-` for one its transaction never read. An event that
//! does not decode declares nothing and is dead-lettered by `post` with the
//! decoder's message.

pub mod event;

use sluice::{Call, Effect, Emitter, Error, Key, Outcome, Planner, Record, Table, Transactional};

use event::{decode_balance, decode_event, key};

/// Adds the amount to the own balance.
pub const FN_CREDIT: u32 = 0;
/// Adds the amount to the own balance when the source balance (declared
/// read 0) covers it, and aborts otherwise.
pub const FN_CREDIT_IF_FUNDED: u32 = 1;
/// Subtracts the amount from the own balance when the source balance
/// (declared read 0, or the own balance without reads) covers it, and
/// aborts otherwise.
pub const FN_DEBIT_IF_FUNDED: u32 = 2;

/// The accounts table.
pub const ACCOUNTS: Table = Table(0);
/// The book entries table.
pub const BOOKS: Table = Table(1);

/// The size of an operation's argument: the amount (i64) and the busy work
/// in nanoseconds (u32), little endian.
const ARG_SIZE: usize = 8 + 4;

/// The operator: the buffer `post` formats results into.
#[derive(Default)]
pub struct Ledger {
    out: Vec<u8>,
}

impl Transactional for Ledger {
    const FUNCTIONS: u32 = 3;

    fn plan(&mut self, ev: &Record<'_>, p: &mut Planner<'_>) -> Result<(), Error> {
        let e = match decode_event(ev.value) {
            Ok(e) => e,
            Err(_) => return Ok(()), // no operations: post dead-letters it
        };
        let mut arg = [0u8; ARG_SIZE];
        arg[..8].copy_from_slice(&e.amount.to_le_bytes());
        arg[8..].copy_from_slice(&e.busy_nanos.to_le_bytes());
        if e.deposit {
            p.write(ACCOUNTS, &key(e.account), FN_CREDIT, &arg, &[]);
            p.write(BOOKS, &key(e.book), FN_CREDIT, &arg, &[]);
            return Ok(());
        }
        let src_key = key(e.account);
        let src = [Key::new(ACCOUNTS, &src_key)];
        p.write(BOOKS, &key(e.book), FN_DEBIT_IF_FUNDED, &arg, &src);
        p.write(
            ACCOUNTS,
            &key(e.dst_account),
            FN_CREDIT_IF_FUNDED,
            &arg,
            &src,
        );
        p.write(BOOKS, &key(e.dst_book), FN_CREDIT_IF_FUNDED, &arg, &src);
        p.write(ACCOUNTS, &src_key, FN_DEBIT_IF_FUNDED, &arg, &[]);
        Ok(())
    }

    fn apply<'c>(&self, c: &'c mut Call<'_>) -> Effect<'c> {
        let r = match c.func() {
            FN_CREDIT => credit(c),
            FN_CREDIT_IF_FUNDED => if_funded(c, i64::checked_add, false),
            _ => if_funded(c, i64::checked_sub, true),
        };
        match r {
            Ok(Some(v)) => c.write(&v.to_le_bytes()),
            Ok(None) => Effect::Abort,
            Err(e) => Effect::Fail(e),
        }
    }

    fn post(
        &mut self,
        ev: &Record<'_>,
        oc: &Outcome<'_>,
        out: &mut Emitter<'_>,
    ) -> Result<(), Error> {
        let e = decode_event(ev.value).map_err(Error::new)?;
        // What the event read before it changed anything: a deposit its
        // two own keys; a transfer the source account (read 0 of its first
        // operation), then the own keys of its first three operations.
        let mut vals: [Option<&[u8]>; 4] = [None; 4];
        let n = if e.deposit {
            vals[0] = own(oc, 0);
            vals[1] = own(oc, 1);
            2
        } else {
            vals[0] = read0(oc, 0);
            for m in 0..3 {
                vals[m + 1] = own(oc, m);
            }
            4
        };
        self.out.clear();
        self.out
            .extend_from_slice(if e.deposit { b"deposit" } else { b"transfer" });
        self.out.extend_from_slice(if oc.committed() {
            b" committed"
        } else {
            b" aborted"
        });
        for v in &vals[..n] {
            self.out.push(b' ');
            match v {
                None => self.out.push(b'-'),
                Some(b) => {
                    let b = decode_balance(b).map_err(Error::new)?;
                    self.out.extend_from_slice(b.to_string().as_bytes());
                }
            }
        }
        out.emit(&Record::new(ev.key, &self.out).with_time(ev.time));
        Ok(())
    }
}

sluice::export_transactional!(Ledger);

/// Returns what operation `m` read of its own key (empty when absent), or
/// None when it did not run.
fn own<'a>(oc: &Outcome<'a>, m: usize) -> Option<&'a [u8]> {
    match oc.op(m) {
        Some(o) if o.executed() => Some(o.own().unwrap_or(&[])),
        _ => None,
    }
}

/// Returns what operation `m` read of its declared read 0 (empty when
/// absent), or None when it did not run or declares no read.
fn read0<'a>(oc: &Outcome<'a>, m: usize) -> Option<&'a [u8]> {
    match oc.op(m) {
        Some(o) if o.executed() && o.read_count() > 0 => Some(o.read(0).unwrap_or(&[])),
        _ => None,
    }
}

/// Decodes an operation's argument and does its busy work.
fn args(c: &Call<'_>) -> Result<i64, Error> {
    let a = c.arg();
    if a.len() != ARG_SIZE {
        return Err(Error::new(format!(
            "ledger: operation on key {}: argument of {} bytes, want {}",
            gocompat::quote(c.key()),
            a.len(),
            ARG_SIZE
        )));
    }
    let mut w = [0u8; 4];
    w.copy_from_slice(&a[8..]);
    sluice::black_box(spin(u32::from_le_bytes(w)));
    let mut v = [0u8; 8];
    v.copy_from_slice(&a[..8]);
    Ok(i64::from_le_bytes(v))
}

/// Works for about `ns` nanoseconds, deterministically (Go's `busy.Spin`:
/// 600 iterations per microsecond).
fn spin(ns: u32) -> u64 {
    let n = ns as u64 * 600 / 1000;
    let mut h = ns as u64 | 1;
    for _ in 0..n {
        h ^= h >> 31;
        h = h.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    h
}

/// Decodes a balance read from `key`.
fn balance(key: &[u8], v: Option<&[u8]>) -> Result<i64, Error> {
    decode_balance(v.unwrap_or(&[]))
        .map_err(|e| Error::new(format!("ledger: key {}: {}", gocompat::quote(key), e)))
}

/// Adds the amount to the own balance; None aborts (overflow).
fn credit(c: &Call<'_>) -> Result<Option<i64>, Error> {
    let amount = args(c)?;
    let b = balance(c.key(), c.own())?;
    Ok(b.checked_add(amount))
}

/// Applies `op` to the own balance and the amount when the source balance
/// covers the amount, and for a debit the own balance too; None aborts
/// (not funded, or overflow).
fn if_funded(c: &Call<'_>, op: fn(i64, i64) -> Option<i64>, debit: bool) -> Result<Option<i64>, Error> {
    let amount = args(c)?;
    let b = balance(c.key(), c.own())?;
    let funded = if c.reads() == 0 {
        b >= amount
    } else {
        balance(b"source account", c.read(0))? >= amount
    };
    if !funded || (debit && b < amount) {
        return Ok(None);
    }
    Ok(op(b, amount))
}

#[cfg(test)]
mod tests {
    use super::*;
    use event::Event;
    use sluice::testing::TxnHarness;
    use sluice::OwnedRecord;

    fn uvarint(dst: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            dst.push(v as u8 | 0x80);
            v >>= 7;
        }
        dst.push(v as u8);
    }

    fn encode(e: &Event) -> Vec<u8> {
        let mut b = vec![event::TAG, e.deposit as u8];
        uvarint(&mut b, e.account as u64);
        uvarint(&mut b, e.book as u64);
        if !e.deposit {
            uvarint(&mut b, e.dst_account as u64);
            uvarint(&mut b, e.dst_book as u64);
        }
        uvarint(&mut b, e.amount.max(0) as u64);
        uvarint(&mut b, e.busy_nanos as u64);
        b
    }

    /// Runs `events` as one batch over keys 0 to 2 of both tables holding
    /// `balances`, and returns the outputs' values and the final balances.
    fn run(balances: [i64; 3], events: &[Event]) -> (Vec<String>, Vec<[i64; 3]>) {
        let mut h = TxnHarness::new(Ledger::default(), &["accounts", "book_entries"]);
        for t in 0..2 {
            for (k, b) in balances.iter().enumerate() {
                h.set_state(t, &key(k as u32), &b.to_le_bytes());
            }
        }
        let evs: Vec<OwnedRecord> = events
            .iter()
            .map(|e| OwnedRecord::new("k", encode(e)))
            .collect();
        let out = h.process(&evs).unwrap();
        let outs = out
            .records
            .iter()
            .map(|e| String::from_utf8(e.record.value.clone()).unwrap())
            .collect();
        let fin = (0..2)
            .map(|t| {
                let mut f = [0; 3];
                for (k, v) in f.iter_mut().enumerate() {
                    *v = decode_balance(&h.state(t, &key(k as u32)).unwrap_or_default()).unwrap();
                }
                f
            })
            .collect();
        (outs, fin)
    }

    /// The Go plugin's own table of cases (ledgerop_test.go).
    #[test]
    fn operations() {
        let deposit = Event {
            deposit: true,
            account: 0,
            book: 1,
            amount: 10,
            ..Event::default()
        };
        let transfer = |amount| Event {
            account: 0,
            book: 1,
            dst_account: 2,
            dst_book: 0,
            amount,
            ..Event::default()
        };
        let big = i64::MAX - 250;
        let initial = [100, 200, 300];
        // Events, outputs, and the final balances of both tables.
        type Case = (Vec<Event>, Vec<&'static str>, [[i64; 3]; 2]);
        let cases: Vec<Case> = vec![
            (
                vec![deposit],
                vec!["deposit committed 100 200"],
                [[110, 200, 300], [100, 210, 300]],
            ),
            (
                vec![transfer(100)],
                vec!["transfer committed 100 200 300 100"],
                [[0, 200, 400], [200, 100, 300]],
            ),
            (
                vec![transfer(101)],
                vec!["transfer aborted 100 200 - -"],
                [initial, initial],
            ),
            (
                vec![Event {
                    account: 2,
                    book: 0,
                    dst_account: 1,
                    dst_book: 2,
                    amount: 101,
                    ..Event::default()
                }],
                vec!["transfer aborted 300 100 - -"],
                [initial, initial],
            ),
            (
                vec![Event {
                    account: 2,
                    book: 0,
                    dst_account: 1,
                    dst_book: 2,
                    amount: 100,
                    ..Event::default()
                }],
                vec!["transfer committed 300 100 200 300"],
                [[100, 300, 200], [0, 200, 400]],
            ),
            (
                vec![deposit, transfer(101), transfer(10)],
                vec![
                    "deposit committed 100 200",
                    "transfer committed 110 210 300 100",
                    "transfer aborted 9 109 - -",
                ],
                [[9, 200, 401], [201, 109, 300]],
            ),
            (
                vec![
                    Event {
                        deposit: true,
                        account: 1,
                        book: 2,
                        amount: big,
                        ..Event::default()
                    },
                    Event {
                        deposit: true,
                        account: 1,
                        book: 0,
                        amount: big,
                        ..Event::default()
                    },
                    Event {
                        deposit: true,
                        account: 1,
                        book: 0,
                        amount: 51,
                        ..Event::default()
                    },
                ],
                vec![
                    "deposit aborted 200 300",
                    "deposit committed 200 100",
                    "deposit aborted 9223372036854775757 -",
                ],
                [[100, big + 200, 300], [big + 100, 200, 300]],
            ),
        ];
        for (events, outs, fin) in cases {
            let (got, got_fin) = run(initial, &events);
            assert_eq!(got, outs);
            assert_eq!(got_fin, fin.to_vec(), "{:?}", outs);
        }
    }

    #[test]
    fn malformed_event_is_dead_lettered() {
        let mut h = TxnHarness::new(Ledger::default(), &["accounts", "book_entries"]);
        let out = h
            .process(&[
                OwnedRecord::new("bad", "X"),
                OwnedRecord::new(
                    "ok",
                    encode(&Event {
                        deposit: true,
                        amount: 1,
                        ..Event::default()
                    }),
                ),
            ])
            .unwrap();
        assert_eq!(out.committed, vec![true, true]);
        assert_eq!(out.rejects.len(), 1);
        assert_eq!(
            out.rejects[0].message,
            "ledger event: field tag at byte 0: not a Streaming Ledger event (tag 0x58, want 0x4c)"
        );
        assert_eq!(out.records.len(), 1);
        assert_eq!(out.records[0].record.value, b"deposit committed 0 0");
    }

    #[test]
    fn bad_balance_fails_the_batch() {
        let mut h = TxnHarness::new(Ledger::default(), &["accounts", "book_entries"]);
        h.set_state(0, &key(0), &[1, 2, 3]);
        let err = h
            .process(&[OwnedRecord::new(
                "k",
                encode(&Event {
                    deposit: true,
                    amount: 1,
                    ..Event::default()
                }),
            )])
            .unwrap_err();
        assert!(
            err.message().contains(
                r#"apply: event 0 operation 0: function 0 failed: ledger: key "00000000": ledger balance: field balance at byte 0: length 3, want 0 or 8"#
            ),
            "{}",
            err
        );
    }
}
