//! Tests of the guest core, run natively through `testing`.

use std::cell::RefCell;
use std::rc::Rc;

use crate::abi;
use crate::guest::Guest;
use crate::testing::{with_host, Harness, Host, TxnHarness};
use crate::{
    Call, Effect, Emitter, Error, Filter, Key, Keyed, MapInPlace, Operator, Outcome, OwnedRecord,
    Planner, Record, RecordMut, State, Table, Transactional,
};

/// A host that records the batches emitted and the messages logged.
#[derive(Default)]
struct Recorder {
    emits: Rc<RefCell<Vec<Vec<u8>>>>,
    logs: Rc<RefCell<Vec<String>>>,
}

impl Host for Recorder {
    fn emit(&mut self, batch: &[u8]) {
        self.emits.borrow_mut().push(batch.to_vec());
    }
    fn reject(&mut self, _: u32, _: &str) {}
    fn log(&mut self, _: i32, msg: &str) {
        self.logs.borrow_mut().push(msg.to_string());
    }
}

fn batch(values: &[&str]) -> Vec<u8> {
    let mut b = Vec::new();
    abi::append_batch_header(&mut b, values.len() as u32);
    for (i, v) in values.iter().enumerate() {
        abi::append_record(
            &mut b,
            i as u32,
            &Record::new(b"k", v.as_bytes()).with_time(i as i64),
        );
    }
    b
}

#[derive(Default)]
struct Upper;

impl MapInPlace for Upper {
    fn map(&mut self, r: &mut RecordMut<'_>) -> Result<(), Error> {
        if r.value == b"bad" {
            return Err(Error::new("bad value"));
        }
        r.value.make_ascii_uppercase();
        r.key.make_ascii_uppercase();
        r.time += 100;
        Ok(())
    }
}

#[test]
fn regions() {
    let mut g = Guest::new(Upper);
    assert_eq!(g.alloc(-1), 0);
    assert_eq!(g.alloc((1 << 30) + 1), 0);
    let a = g.alloc(0);
    assert_ne!(a, 0, "a region of 0 bytes has an address");
    let b = g.alloc(100);
    assert_ne!(a, b, "a second region before a call is distinct");
    // Both are valid until the call that consumes them.
    let seen = g.with_region("test", b, 100, |_, r| r.len() as i32);
    assert_eq!(seen, 100);
    let c = g.alloc(10);
    assert_eq!(c, a, "the input region is reused after a call");
    let rec = Recorder::default();
    let logs = rec.logs.clone();
    let status = with_host(Box::new(rec), || {
        g.with_region("test", c + 4096 * 4, 8, |_, _| 0)
    });
    assert_eq!(status, abi::STATUS_ERROR);
    assert!(
        logs.borrow()[0].contains("was not handed out by sluice_alloc"),
        "{:?}",
        logs.borrow()
    );
    // A region larger than the input region grows it.
    let d = g.alloc(100_000);
    assert_ne!(d, 0);
    assert_eq!(
        g.with_region("test", d + 99_999, 1, |_, r| r.len() as i32),
        1
    );
}

#[test]
fn map_in_place_forwards_the_batch() {
    let mut g = Guest::new(Upper);
    let mut b = batch(&["a", "b", "c"]);
    let rec = Recorder::default();
    let emits = rec.emits.clone();
    let status = with_host(Box::new(rec), || g.run_map_in_place(&mut b, Upper::map));
    assert_eq!(status, abi::STATUS_OK);
    let emits = emits.borrow();
    assert_eq!(emits.len(), 1, "one emit, of the batch itself");
    assert_eq!(emits[0], b);
    let got: Vec<_> = abi::BatchReader::new(&emits[0])
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(got[2], (2, Record::new(b"K", b"C").with_time(102)));
}

#[test]
fn map_in_place_with_rejects() {
    let mut h = Harness::map_in_place(Upper);
    let input: Vec<OwnedRecord> = ["a", "bad", "c", "d", "bad"]
        .iter()
        .map(|v| OwnedRecord::new("k", *v).with_header("h", "1"))
        .collect();
    let out = h.process(&input);
    let got: Vec<_> = out
        .records
        .iter()
        .map(|e| {
            (
                e.origin,
                String::from_utf8(e.record.value.clone()).unwrap(),
                e.record.time,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (0, "A".into(), 100),
            (2, "C".into(), 100),
            (3, "D".into(), 100)
        ]
    );
    assert!(out
        .records
        .iter()
        .all(|e| e.record.header(b"h") == Some(b"1")));
    let rejected: Vec<_> = out
        .rejects
        .iter()
        .map(|r| (r.origin, r.message.as_str()))
        .collect();
    assert_eq!(rejected, vec![(1, "bad value"), (4, "bad value")]);
}

#[derive(Default)]
struct Odd;

impl Filter for Odd {
    fn keep(&mut self, r: &Record<'_>) -> Result<bool, Error> {
        match r.value.first() {
            Some(b'x') => Err(Error::new("x")),
            Some(c) => Ok(c % 2 == 1),
            None => Ok(false),
        }
    }
}

#[test]
fn filter_runs() {
    let mut h = Harness::filter(Odd);
    let input: Vec<OwnedRecord> = ["1", "3", "2", "5", "x", "7", ""]
        .iter()
        .enumerate()
        .map(|(i, v)| OwnedRecord::new(format!("k{}", i), *v).with_time(i as i64))
        .collect();
    let out = h.process(&input);
    let origins: Vec<u32> = out.records.iter().map(|e| e.origin).collect();
    assert_eq!(origins, vec![0, 1, 3, 5]);
    for e in &out.records {
        assert_eq!(e.record, input[e.origin as usize], "forwarded unchanged");
    }
    assert_eq!(out.rejects.len(), 1);
}

/// Records the input of every record it sees, whatever its kind.
#[derive(Default)]
struct Inputs {
    seen: Vec<u16>,
}

impl Operator for Inputs {
    fn process(&mut self, r: &Record<'_>, out: &mut Emitter<'_>) -> Result<(), Error> {
        self.seen.push(r.input);
        out.emit(r);
        Ok(())
    }
}

impl MapInPlace for Inputs {
    fn map(&mut self, r: &mut RecordMut<'_>) -> Result<(), Error> {
        self.seen.push(r.input);
        Ok(())
    }
}

/// The SDK declares `FEATURE_INPUTS` and hands operators each record's
/// input, the low 16 bits of its flags; other flag bits are refused.
#[test]
fn operators_see_inputs() {
    let input: Vec<OwnedRecord> = [1u16, 0, 65535]
        .iter()
        .map(|&i| OwnedRecord::new("k", "v").with_input(i))
        .collect();
    let mut h = Harness::operator(Inputs::default());
    assert_eq!(h.process(&input).records.len(), 3);
    assert_eq!(h.operator_mut().seen, vec![1, 0, 65535]);
    let mut h = Harness::map_in_place(Inputs::default());
    assert_eq!(h.process(&input).records.len(), 3);
    assert_eq!(h.operator_mut().seen, vec![1, 0, 65535]);

    let mut batch = Vec::new();
    abi::append_batch_header(&mut batch, 1);
    abi::append_record(&mut batch, 0, &Record::new(b"k", b"v"));
    batch[12..16].copy_from_slice(&0x1_0001u32.to_le_bytes());
    let err = abi::BatchReader::new(&batch)
        .unwrap()
        .next()
        .unwrap()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "abi: malformed record 0 at byte 12: reserved flags are 0x10000, want 0 beside the input bits 0xffff"
    );
}

/// Emits `value`'s first byte copies of 100 KiB records, then fails when the
/// value's second byte is 'f'.
#[derive(Default)]
struct Burst {
    buf: Vec<u8>,
}

impl Operator for Burst {
    fn process(&mut self, r: &Record<'_>, out: &mut Emitter<'_>) -> Result<(), Error> {
        self.buf.resize(100 << 10, b'b');
        for _ in 0..r.value[0] {
            out.emit(&r.with_value(&self.buf));
        }
        if r.value.get(1) == Some(&b'f') {
            return Err(Error::new("failed after emitting"));
        }
        Ok(())
    }
}

#[test]
fn large_outputs_flush_between_records() {
    let mut g = Guest::new(Burst::default());
    let mut b = Vec::new();
    abi::append_batch_header(&mut b, 3);
    abi::append_record(&mut b, 0, &Record::new(b"a", &[8]));
    abi::append_record(&mut b, 1, &Record::new(b"b", &[9]));
    abi::append_record(&mut b, 2, &Record::new(b"c", &[20, b'f']));
    let rec = Recorder::default();
    let emits = rec.emits.clone();
    let status = with_host(Box::new(rec), || g.run_operator(&b, Burst::process));
    assert_eq!(status, abi::STATUS_OK);
    let emits = emits.borrow();
    assert_eq!(
        emits.len(),
        1,
        "8 and 9 records of 100 KiB: one flush after the second record"
    );
    let n: usize = emits
        .iter()
        .map(|e| abi::BatchReader::new(e).unwrap().record_count() as usize)
        .sum();
    assert_eq!(n, 17, "the failed record's outputs are dropped");
}

#[test]
fn malformed_batch_fails_the_call() {
    let mut g = Guest::new(Burst::default());
    let mut b = batch(&["x"]);
    b.push(0);
    let rec = Recorder::default();
    let logs = rec.logs.clone();
    let status = with_host(Box::new(rec), || g.run_operator(&b, Burst::process));
    assert_eq!(status, abi::STATUS_ERROR);
    assert_eq!(
        logs.borrow().last().unwrap(),
        "input batch: abi: malformed record 1 at byte 38: 1 trailing bytes after the last of 1 records"
    );
}

/// Sums the values (decimal) of each key in table "sums", counting records
/// in table "counts"; a value "x" is rejected after its state writes.
#[derive(Default)]
struct Sum;

impl Keyed for Sum {
    fn process(
        &mut self,
        r: &Record<'_>,
        st: &mut State<'_>,
        out: &mut Emitter<'_>,
    ) -> Result<(), Error> {
        let v: u64 = std::str::from_utf8(r.value)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let sum = st.get().map_or(0, |b| {
            std::str::from_utf8(b).unwrap().parse::<u64>().unwrap()
        }) + v;
        st.put(sum.to_string().as_bytes());
        let mut counts = st.table("counts")?;
        let n = counts.get().map_or(0, |b| b[0]) + 1;
        counts.put(&[n]);
        if r.value == b"x" {
            return Err(Error::new("x is not a number"));
        }
        if r.value == b"reset" {
            st.delete();
        }
        out.emit(&Record::new(r.key, sum.to_string().as_bytes()));
        Ok(())
    }
}

#[test]
fn keyed_state_and_rejects() {
    let mut h = Harness::keyed(Sum, &["sums", "counts"]);
    let out = h.process(&[
        OwnedRecord::new("a", "1"),
        OwnedRecord::new("b", "5"),
        OwnedRecord::new("a", "x"),
        OwnedRecord::new("a", "2"),
    ]);
    let got: Vec<_> = out
        .records
        .iter()
        .map(|e| (e.origin, String::from_utf8(e.record.value.clone()).unwrap()))
        .collect();
    assert_eq!(got, vec![(0, "1".into()), (1, "5".into()), (3, "3".into())]);
    assert_eq!(out.rejects.len(), 1);
    assert_eq!(h.state("sums", b"a"), Some(b"3".to_vec()));
    assert_eq!(
        h.state("counts", b"a"),
        Some(vec![2]),
        "the rejected record's writes are undone"
    );
    h.process(&[OwnedRecord::new("a", "reset")]);
    assert_eq!(h.state("sums", b"a"), None);
}

#[derive(Default)]
struct Undeclared;

impl Keyed for Undeclared {
    fn process(
        &mut self,
        _: &Record<'_>,
        st: &mut State<'_>,
        _: &mut Emitter<'_>,
    ) -> Result<(), Error> {
        st.table("nope")?;
        Ok(())
    }
}

#[test]
fn undeclared_table() {
    let mut h = Harness::keyed(Undeclared, &["t"]);
    let out = h.process(&[OwnedRecord::new("a", "")]);
    assert_eq!(
        out.rejects[0].message,
        "sluice: state table \"nope\" is not declared for the operator; declare it in the operator's state tables in the pipeline"
    );
}

/// Events "from to": a non-deterministic move of the value of key `from`
/// to the key it names, through table 0; "bad" reads outside its
/// declaration; "read9" reads a declared read that does not exist.
#[derive(Default)]
struct Mover;

impl Transactional for Mover {
    const FUNCTIONS: u32 = 3;

    fn plan(&mut self, ev: &Record<'_>, p: &mut Planner<'_>) -> Result<(), Error> {
        match ev.value {
            b"bad" => p.write(Table(0), b"k", 1, b"", &[]),
            b"read9" => p.write(Table(0), b"k", 2, b"", &[]),
            v => p.nondet(Table(0), 0, v, &[Key::new(Table(1), b"limit")]),
        }
        Ok(())
    }

    fn apply<'c>(&self, c: &'c mut Call<'_>) -> Effect<'c> {
        match c.func() {
            0 => {
                let from = c.arg().to_vec();
                let (to, v) = match c.get(Table(0), &from) {
                    Ok(Some(v)) => (v.to_vec(), v.to_vec()),
                    Ok(None) => return Effect::Abort,
                    Err(e) => return Effect::Fail(e),
                };
                if c.read(0) == Some(&b"stop"[..]) {
                    return Effect::Abort;
                }
                if let Err(e) = c
                    .put(Table(0), &to, &v)
                    .and_then(|_| c.delete(Table(0), &from))
                {
                    return Effect::Fail(e);
                }
                Effect::Keep
            }
            1 => match c.get(Table(1), b"elsewhere") {
                Err(e) => Effect::Fail(e),
                Ok(_) => Effect::Keep,
            },
            _ => {
                let _ = c.read(9);
                Effect::Keep
            }
        }
    }

    fn post(
        &mut self,
        ev: &Record<'_>,
        o: &Outcome<'_>,
        out: &mut Emitter<'_>,
    ) -> Result<(), Error> {
        let op = o.op(0).unwrap();
        let gets: Vec<String> = op
            .gets()
            .map(|g| {
                format!(
                    "{}={:?}",
                    String::from_utf8_lossy(g.key),
                    g.value.map(|v| v.len())
                )
            })
            .collect();
        let text = format!("{} {} {}", o.committed(), op.read_count(), gets.join(","));
        out.emit(&Record::new(ev.key, text.as_bytes()));
        Ok(())
    }
}

#[test]
fn transactional_serial() {
    let mut h = TxnHarness::new(Mover, &["kv", "conf"]);
    h.set_state(0, b"a", b"b");
    let out = h
        .process(&[OwnedRecord::new("e0", "a"), OwnedRecord::new("e1", "zz")])
        .unwrap();
    assert_eq!(out.committed, vec![true, false]);
    let texts: Vec<_> = out
        .records
        .iter()
        .map(|e| String::from_utf8(e.record.value.clone()).unwrap())
        .collect();
    assert_eq!(texts, vec!["true 1 a=Some(1)", "false 1 zz=None"]);
    assert_eq!(h.state(0, b"a"), None);
    assert_eq!(h.state(0, b"b"), Some(b"b".to_vec()));

    let err = h.process(&[OwnedRecord::new("e", "bad")]).unwrap_err();
    assert!(
        err.message().contains(
            "apply: event 0 operation 0: function 1 failed: sluice: state access outside the operation's declaration: get of table 1 key \"elsewhere\""
        ),
        "{}",
        err
    );
    let err = h.process(&[OwnedRecord::new("e", "read9")]).unwrap_err();
    assert!(
        err.message().contains("read index 9 of 0 declared reads"),
        "{}",
        err
    );
    assert_eq!(
        h.state(0, b"b"),
        Some(b"b".to_vec()),
        "a failed batch changes nothing"
    );
}

/// A host that records emitted batches and rejects.
#[derive(Default)]
struct WindowRecorder {
    emits: Rc<RefCell<Vec<Vec<u8>>>>,
    rejects: Rc<RefCell<Vec<(u32, String)>>>,
}

impl Host for WindowRecorder {
    fn emit(&mut self, batch: &[u8]) {
        self.emits.borrow_mut().push(batch.to_vec());
    }
    fn reject(&mut self, origin: u32, msg: &str) {
        self.rejects.borrow_mut().push((origin, msg.to_string()));
    }
    fn log(&mut self, _: i32, _: &str) {}
}

/// A count in one byte, refusing values "bad".
#[derive(Default)]
struct ByteCount;

impl crate::Aggregate for ByteCount {
    fn add(&mut self, acc: &mut Vec<u8>, r: &Record<'_>) -> Result<(), Error> {
        if r.value == b"bad" {
            return Err(Error::new("bad value"));
        }
        if acc.is_empty() {
            acc.push(0);
        }
        acc[0] += 1;
        Ok(())
    }
    fn merge(&mut self, a: &mut Vec<u8>, b: &[u8]) -> Result<(), Error> {
        a[0] += b[0];
        Ok(())
    }
    fn fire(
        &mut self,
        key: &[u8],
        w: &crate::Window,
        acc: &[u8],
        out: &mut Emitter<'_>,
    ) -> Result<(), Error> {
        let v = format!("{}@{}/{}", acc[0], w.end, w.firing.as_str());
        out.emit(&Record::new(key, v.as_bytes()));
        Ok(())
    }
}

fn outputs(emits: &[Vec<u8>]) -> Vec<(u32, Vec<u8>, Vec<u8>)> {
    emits
        .iter()
        .flat_map(|e| {
            abi::BatchReader::new(e)
                .unwrap()
                .map(|r| r.unwrap())
                .map(|(o, r)| (o, r.key.to_vec(), r.value.to_vec()))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn firing_head(key: &[u8], start: i64, end: i64, firing: &[u8], value: &[u8]) -> Vec<u8> {
    let s = start.to_le_bytes();
    let e = end.to_le_bytes();
    let hs = [
        (&b"sluice-window-start"[..], &s[..]),
        (&b"sluice-window-end"[..], &e[..]),
        (&b"sluice-firing"[..], firing),
    ];
    let mut b = Vec::new();
    let size =
        28 + key.len() + value.len() + hs.iter().map(|(n, v)| 8 + n.len() + v.len()).sum::<usize>();
    b.extend_from_slice(&(size as u32).to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&(end - 1).to_le_bytes());
    b.extend_from_slice(&(key.len() as u32).to_le_bytes());
    b.extend_from_slice(key);
    b.extend_from_slice(&(value.len() as u32).to_le_bytes());
    b.extend_from_slice(value);
    b.extend_from_slice(&3u32.to_le_bytes());
    for (n, v) in hs {
        b.extend_from_slice(&(n.len() as u32).to_le_bytes());
        b.extend_from_slice(n);
        b.extend_from_slice(&(v.len() as u32).to_le_bytes());
        b.extend_from_slice(v);
    }
    b
}

#[test]
fn aggregate_exports() {
    let mut g = Guest::new(ByteCount);
    // Two groups: a with no accumulator and records x, bad; b with 5 and y.
    let mut b = Vec::new();
    abi::append_batch_header(&mut b, 2);
    abi::append_record(&mut b, 0, &Record::new(b"a", b""));
    abi::append_batch_header(&mut b, 2);
    abi::append_record(&mut b, 0, &Record::new(b"a", b"x"));
    abi::append_record(&mut b, 1, &Record::new(b"a", b"bad"));
    abi::append_record(&mut b, 1, &Record::new(b"b", &[5]));
    abi::append_batch_header(&mut b, 1);
    abi::append_record(&mut b, 2, &Record::new(b"b", b"y"));
    let rec = WindowRecorder::default();
    let (emits, rejects) = (rec.emits.clone(), rec.rejects.clone());
    let status = with_host(Box::new(rec), || {
        g.run_agg_add(&b, <ByteCount as crate::Aggregate>::add)
    });
    assert_eq!(status, abi::STATUS_OK);
    assert_eq!(
        outputs(&emits.borrow()),
        vec![(0, vec![], vec![1]), (1, vec![], vec![6])]
    );
    assert_eq!(*rejects.borrow(), vec![(1, "bad value".to_string())]);

    let mut b = Vec::new();
    abi::append_batch_header(&mut b, 2);
    abi::append_record(&mut b, 0, &Record::new(b"a", &[2]));
    abi::append_record(&mut b, 1, &Record::new(b"a", &[3]));
    let rec = WindowRecorder::default();
    let emits = rec.emits.clone();
    let status = with_host(Box::new(rec), || {
        g.run_agg_merge(&b, <ByteCount as crate::Aggregate>::merge)
    });
    assert_eq!(status, abi::STATUS_OK);
    assert_eq!(outputs(&emits.borrow()), vec![(0, vec![], vec![5])]);

    let mut b = Vec::new();
    abi::append_batch_header(&mut b, 1);
    b.extend_from_slice(&firing_head(b"k", 0, 60, b"late", &[4]));
    let rec = WindowRecorder::default();
    let emits = rec.emits.clone();
    let status = with_host(Box::new(rec), || {
        g.run_agg_fire(&b, <ByteCount as crate::Aggregate>::fire)
    });
    assert_eq!(status, abi::STATUS_OK);
    assert_eq!(
        outputs(&emits.borrow()),
        vec![(0, b"k".to_vec(), b"4@60/late".to_vec())]
    );
}

#[derive(Default)]
struct Concat;

impl crate::WindowFunction for Concat {
    fn fire(
        &mut self,
        key: &[u8],
        _: &crate::Window,
        recs: &[Record<'_>],
        out: &mut Emitter<'_>,
    ) -> Result<(), Error> {
        let mut v = Vec::new();
        for r in recs {
            if r.value == b"bad" {
                return Err(Error::new("bad window"));
            }
            v.extend_from_slice(r.header(b"h").unwrap_or(b""));
            v.extend_from_slice(r.value);
        }
        out.emit(&Record::new(key, &v));
        Ok(())
    }
}

#[test]
fn window_export() {
    let mut g = Guest::new(Concat);
    let mut b = Vec::new();
    abi::append_batch_header(&mut b, 2);
    b.extend_from_slice(&firing_head(b"a", 0, 10, b"on-time", b""));
    abi::append_batch_header(&mut b, 2);
    let hs = [crate::Header {
        name: b"h",
        value: b"p",
    }];
    abi::append_record(
        &mut b,
        0,
        &Record::new(b"a", b"1").with_headers(crate::Headers::from_list(&hs)),
    );
    abi::append_record(&mut b, 1, &Record::new(b"a", b"2"));
    b.extend_from_slice(&firing_head(b"b", 0, 10, b"early", b""));
    abi::append_batch_header(&mut b, 2);
    abi::append_record(&mut b, 2, &Record::new(b"b", b"bad"));
    abi::append_record(&mut b, 3, &Record::new(b"b", b"3"));
    let rec = WindowRecorder::default();
    let (emits, rejects) = (rec.emits.clone(), rec.rejects.clone());
    let status = with_host(Box::new(rec), || {
        g.run_window_fire(&b, <Concat as crate::WindowFunction>::fire)
    });
    assert_eq!(status, abi::STATUS_OK);
    assert_eq!(
        outputs(&emits.borrow()),
        vec![(0, b"a".to_vec(), b"p12".to_vec())]
    );
    let r: Vec<u32> = rejects.borrow().iter().map(|(o, _)| *o).collect();
    assert_eq!(r, vec![2, 3]);
}

/// Emits, per pair, "L|R" (L the left value, R the right one, "-" for a
/// side the pair lacks), then "@start-end/firing" for a window join, then
/// "#" and each record's input, then the left record's header h, if any.
/// A left value "twice" emits the result twice; a value "bad" on either
/// side rejects the pair after emitting it.
#[derive(Default)]
struct Pairs;

impl crate::JoinFunction for Pairs {
    fn join(
        &mut self,
        key: &[u8],
        w: Option<&crate::Window>,
        left: Option<&Record<'_>>,
        right: Option<&Record<'_>>,
        out: &mut Emitter<'_>,
    ) -> Result<(), Error> {
        let side = |r: Option<&Record<'_>>| match r {
            Some(r) => (
                String::from_utf8_lossy(r.value).into_owned(),
                r.input.to_string(),
            ),
            None => ("-".to_string(), "-".to_string()),
        };
        let ((l, li), (r, ri)) = (side(left), side(right));
        let mut v = format!("{}|{}", l, r);
        if let Some(w) = w {
            v += &format!("@{}-{}/{}", w.start, w.end, w.firing.as_str());
        }
        v += &format!("#{}{}", li, ri);
        if let Some(h) = left.and_then(|r| r.header(b"h")) {
            v += &format!(" h={}", String::from_utf8_lossy(h));
        }
        out.emit(&Record::new(key, v.as_bytes()));
        if l == "twice" {
            out.emit(&Record::new(key, v.as_bytes()));
        }
        if l == "bad" || r == "bad" {
            return Err(Error::new("bad value in pair"));
        }
        Ok(())
    }
}

/// Appends to `b` the head of an interval join's pair: the key, the time
/// and the sides' byte, no headers.
fn interval_head(b: &mut Vec<u8>, pair: u32, key: &[u8], time: i64, sides: &[u8]) {
    abi::append_record(b, pair, &Record::new(key, sides).with_time(time));
}

/// What a call of `sluice_join` did.
struct JoinCall {
    status: i32,
    outputs: Vec<(u32, Vec<u8>, Vec<u8>)>,
    rejects: Vec<(u32, String)>,
    logs: Vec<String>,
}

/// Runs `Pairs` over `batch`.
fn run_pairs(batch: &[u8]) -> JoinCall {
    struct Both(WindowRecorder, Rc<RefCell<Vec<String>>>);
    impl Host for Both {
        fn emit(&mut self, batch: &[u8]) {
            self.0.emit(batch);
        }
        fn reject(&mut self, origin: u32, msg: &str) {
            self.0.reject(origin, msg);
        }
        fn log(&mut self, _: i32, msg: &str) {
            self.1.borrow_mut().push(msg.to_string());
        }
    }
    let rec = WindowRecorder::default();
    let (emits, rejects) = (rec.emits.clone(), rec.rejects.clone());
    let logs = Rc::new(RefCell::new(Vec::new()));
    let mut g = Guest::new(Pairs);
    let status = with_host(Box::new(Both(rec, logs.clone())), || {
        g.run_join(batch, <Pairs as crate::JoinFunction>::join)
    });
    let outputs = outputs(&emits.borrow());
    let rejects = rejects.borrow().clone();
    let logs = logs.borrow().clone();
    JoinCall {
        status,
        outputs,
        rejects,
        logs,
    }
}

#[test]
fn join_export() {
    let mut b = Vec::new();
    abi::append_batch_header(&mut b, 6);
    // 0: a window join's matched pair; the left record has a header and
    // arrived on input 0, the right one on input 1.
    b.extend_from_slice(&firing_head(b"a", 0, 100, b"on-time", &[3]));
    abi::append_batch_header(&mut b, 2);
    let hs = [crate::Header {
        name: b"h",
        value: b"1",
    }];
    abi::append_record(
        &mut b,
        0,
        &Record::new(b"a", b"x").with_headers(crate::Headers::from_list(&hs)),
    );
    let mut right = Record::new(b"a", b"y");
    right.input = 1;
    abi::append_record(&mut b, 1, &right);
    // 1: a late window's lone right record.
    b.extend_from_slice(&firing_head(b"c", -100, 0, b"late", &[2]));
    abi::append_batch_header(&mut b, 1);
    abi::append_record(&mut b, 2, &right.with_value(b""));
    // 2: an interval join's lone left record.
    interval_head(&mut b, 2, b"d", 70, &[1]);
    abi::append_batch_header(&mut b, 1);
    abi::append_record(&mut b, 3, &Record::new(b"d", b"p"));
    // 3: emits twice.
    interval_head(&mut b, 3, b"e", 5, &[3]);
    abi::append_batch_header(&mut b, 2);
    abi::append_record(&mut b, 4, &Record::new(b"e", b"twice"));
    abi::append_record(&mut b, 5, &right.with_value(b"z"));
    // 4: rejected after emitting: its output is dropped.
    interval_head(&mut b, 4, b"g", 5, &[3]);
    abi::append_batch_header(&mut b, 2);
    abi::append_record(&mut b, 6, &Record::new(b"g", b"twice"));
    abi::append_record(&mut b, 7, &right.with_value(b"bad"));
    // 5: a lone left record rejected.
    interval_head(&mut b, 5, b"h", 5, &[1]);
    abi::append_batch_header(&mut b, 1);
    abi::append_record(&mut b, 8, &Record::new(b"h", b"bad"));

    let c = run_pairs(&b);
    assert_eq!(c.status, abi::STATUS_OK, "{:?}", c.logs);
    let got: Vec<(u32, String, String)> = c
        .outputs
        .into_iter()
        .map(|(o, k, v)| {
            (
                o,
                String::from_utf8(k).unwrap(),
                String::from_utf8(v).unwrap(),
            )
        })
        .collect();
    let want: Vec<(u32, String, String)> = [
        (0, "a", "x|y@0-100/on-time#01 h=1"),
        (1, "c", "-|@-100-0/late#-1"),
        (2, "d", "p|-#0-"),
        (3, "e", "twice|z#01"),
        (3, "e", "twice|z#01"),
    ]
    .iter()
    .map(|(o, k, v)| (*o, k.to_string(), v.to_string()))
    .collect();
    assert_eq!(got, want);
    assert_eq!(
        c.rejects,
        vec![
            (4, "bad value in pair".to_string()),
            (5, "bad value in pair".to_string())
        ]
    );
}

#[test]
fn join_refuses_malformed_pairs() {
    /// A batch of one interval pair whose head's value is `sides` and
    /// whose members are `members` records.
    fn pair(sides: &[u8], members: u32) -> Vec<u8> {
        let mut b = Vec::new();
        abi::append_batch_header(&mut b, 1);
        interval_head(&mut b, 0, b"k", 1, sides);
        abi::append_batch_header(&mut b, members);
        for m in 0..members {
            abi::append_record(&mut b, m, &Record::new(b"k", b"v"));
        }
        b
    }
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            pair(&[], 0),
            "sluice_join: malformed input: pair 0: the head's value is not one byte of sides",
        ),
        (
            pair(&[0], 0),
            "sluice_join: malformed input: pair 0: the head's value is not one byte of sides",
        ),
        (
            pair(&[4], 1),
            "sluice_join: malformed input: pair 0: the head's value is not one byte of sides",
        ),
        (
            pair(&[3, 0], 2),
            "sluice_join: malformed input: pair 0: the head's value is not one byte of sides",
        ),
        (
            pair(&[3], 1),
            "sluice_join: malformed input: pair 0 has 1 records, and its head says 2",
        ),
        (
            pair(&[1], 2),
            "sluice_join: malformed input: pair 0 has 2 records, and its head says 1",
        ),
        (
            pair(&[2], 0),
            "sluice_join: malformed input: pair 0 has 0 records, and its head says 1",
        ),
        (
            {
                let mut b = pair(&[1], 1);
                b.push(0);
                b
            },
            "sluice_join: malformed input: bytes after the last pair",
        ),
        (
            {
                let mut b = Vec::new();
                abi::append_batch_header(&mut b, 1);
                let hs = [crate::Header {
                    name: b"sluice-window-start",
                    value: &[0; 8],
                }];
                abi::append_record(
                    &mut b,
                    0,
                    &Record::new(b"k", &[1]).with_headers(crate::Headers::from_list(&hs)),
                );
                abi::append_batch_header(&mut b, 1);
                abi::append_record(&mut b, 0, &Record::new(b"k", b"v"));
                b
            },
            "sluice_join: malformed input: pair 0 has headers that are not a window's",
        ),
    ];
    for (b, want) in cases {
        let c = run_pairs(&b);
        assert_eq!(c.status, abi::STATUS_ERROR, "{}", want);
        assert!(c.outputs.is_empty() && c.rejects.is_empty(), "{}", want);
        assert_eq!(c.logs.last().map(String::as_str), Some(want));
    }
}
