//! The wire side of the Sluice ABI, version 1 (`abi/ABI.md` in the Sluice
//! repository): constants, and the encodings of record batches (section 4)
//! and of transactional operators (section 10.5).
//!
//! Operators never need this module: the SDK decodes what the host sends
//! and encodes what it returns. It is public for tests and tools that build
//! or read the encodings themselves. Decoders refuse exactly what the ABI
//! says a decoder must refuse, with the messages of the Go reference
//! (package `abi`): the byte offset and the reason of the first problem.

use std::fmt;

use crate::record::{Headers, Record};
use crate::txn::Key;

/// The ABI version this crate implements.
pub const VERSION: i32 = 1;

/// The bits of `sluice_features`' result (section 9): what a module
/// understands beyond version 1 as first published. The SDK declares
/// `FEATURE_INPUTS`.
pub const FEATURE_INPUTS: i32 = 1;

/// The bits of a record's flags that hold its input (section 4), for a
/// module that declares [`FEATURE_INPUTS`]. Other bits are reserved.
pub const FLAGS_INPUT: u32 = 0xffff;

/// The bits of the one-byte value of a `sluice_join` group's head (section
/// 14), which say the sides its pair has: a left record, the group's first
/// member.
pub const JOIN_LEFT: u8 = 1;
/// A right record, the group's last member. A matched pair has both sides;
/// an outer join's record that matched nothing comes alone.
pub const JOIN_RIGHT: u8 = 2;

/// Status codes of host functions and guest exports (section 8).
pub const STATUS_OK: i32 = 0;
/// Returned by `table_id`, `state_get` and `txn_get` for what does not exist.
pub const STATUS_NOT_FOUND: i32 = -1;
/// Returned by a guest export that failed.
pub const STATUS_ERROR: i32 = -2;
/// Returned by `sluice_configure` for a configuration it refuses.
pub const STATUS_BAD_CONFIG: i32 = -3;
/// Returned by `txn_get`, `txn_put` and `txn_delete` for an access outside
/// the operation's declaration.
pub const STATUS_UNDECLARED: i32 = -4;

/// Results of `sluice_apply` (section 10.2).
pub const APPLY_WRITE: i32 = 0;
/// Leave the key unchanged.
pub const APPLY_KEEP: i32 = 1;
/// Delete the key.
pub const APPLY_DELETE: i32 = 2;
/// Abort the event's transaction.
pub const APPLY_ABORT: i32 = 3;

/// Marks a non-deterministic operation in a declaration's and a request's
/// flags.
pub const OP_FLAG_NONDET: u32 = 1;
/// Bit 1 of a request's flags: the own key was found.
const APPLY_FLAG_OWN_FOUND: u32 = 2;

/// The size of the result slot at the start of an apply request.
pub const APPLY_RESULT_SIZE: usize = 8;

/// The size of a batch's leading record count.
pub const BATCH_HEADER_SIZE: usize = 4;

/// The size of a record's fixed fields after its size prefix: origin,
/// flags, time, key length, value length, header count.
const RECORD_FIXED: usize = 4 + 4 + 8 + 4 + 4 + 4;

/// Bounds the encoded size of one record (16 MiB); the pipeline may set a
/// lower limit.
pub const MAX_RECORD_SIZE: usize = 16 << 20;

/// What a [`DecodeError`] was decoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum What {
    /// A batch's header (its record count or its length).
    BatchHeader,
    /// Record number `n` of a batch (`n` equal to the count for bytes after
    /// the last record).
    Record(u32),
    /// Operation declarations (`txn_plan`'s argument).
    Declaration,
    /// An apply request.
    ApplyRequest,
    /// A batch's outcomes.
    Outcomes,
}

/// Where and why an encoding failed to decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// What was being decoded.
    pub what: What,
    /// The byte offset of the problem.
    pub offset: usize,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.what {
            What::BatchHeader => write!(
                f,
                "abi: malformed batch header at byte {}: {}",
                self.offset, self.reason
            ),
            What::Record(n) => write!(
                f,
                "abi: malformed record {} at byte {}: {}",
                n, self.offset, self.reason
            ),
            What::Declaration => write!(
                f,
                "abi: malformed operation declaration at byte {}: {}",
                self.offset, self.reason
            ),
            What::ApplyRequest => write!(
                f,
                "abi: malformed apply request at byte {}: {}",
                self.offset, self.reason
            ),
            What::Outcomes => write!(
                f,
                "abi: malformed outcomes at byte {}: {}",
                self.offset, self.reason
            ),
        }
    }
}

impl std::error::Error for DecodeError {}

#[inline]
fn le32(b: &[u8], p: usize) -> u32 {
    u32::from_le_bytes([b[p], b[p + 1], b[p + 2], b[p + 3]])
}

#[inline]
fn le64(b: &[u8], p: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[p..p + 8]);
    u64::from_le_bytes(w)
}

// ---------------------------------------------------------------------------
// Batches of records (section 4).

/// Where the fields of one record lie in its batch.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RecordSpan {
    pub start: usize, // offset of the size field
    pub input: u16,
    pub time: i64,
    pub key: (usize, usize),     // [from, to)
    pub value: (usize, usize),   // [from, to)
    pub headers: (usize, usize), // the headers' encoding, count excluded
    pub header_count: u32,
    pub end: usize, // offset after the record
}

impl RecordSpan {
    /// Returns the record, borrowing `batch`.
    #[inline]
    pub fn record<'a>(&self, batch: &'a [u8]) -> Record<'a> {
        Record {
            key: &batch[self.key.0..self.key.1],
            value: &batch[self.value.0..self.value.1],
            time: self.time,
            input: self.input,
            headers: Headers::from_wire(self.header_count, &batch[self.headers.0..self.headers.1]),
        }
    }
}

/// Reads a length-prefixed field of record bytes `b` (which start at batch
/// offset `base`) at `p`: its range in the batch and the offset after it,
/// or None when it runs past the record.
#[inline]
fn field(b: &[u8], base: usize, p: usize) -> Option<((usize, usize), usize)> {
    if b.len() - p < 4 {
        return None;
    }
    let n = le32(b, p) as usize;
    if n > b.len() - p - 4 {
        return None;
    }
    Some(((base + p + 4, base + p + 4 + n), p + 4 + n))
}

/// Checks the header of `batch` and returns its record count.
pub(crate) fn batch_count(batch: &[u8]) -> Result<u32, DecodeError> {
    if batch.len() < BATCH_HEADER_SIZE {
        return Err(DecodeError {
            what: What::BatchHeader,
            offset: 0,
            reason: format!(
                "batch is {} bytes, shorter than its 4-byte header",
                batch.len()
            ),
        });
    }
    let count = le32(batch, 0);
    // Every record takes at least 4+RECORD_FIXED bytes.
    if count as u64 * (4 + RECORD_FIXED) as u64 > (batch.len() - BATCH_HEADER_SIZE) as u64 {
        return Err(DecodeError {
            what: What::BatchHeader,
            offset: 0,
            reason: format!("count {} does not fit in {} bytes", count, batch.len()),
        });
    }
    Ok(count)
}

/// Decodes record number `index` of `batch` at offset `start`.
pub(crate) fn parse_record(
    batch: &[u8],
    start: usize,
    index: u32,
) -> Result<RecordSpan, DecodeError> {
    let fail = |offset: usize, reason: String| DecodeError {
        what: What::Record(index),
        offset,
        reason,
    };
    if start > batch.len() || batch.len() - start < 4 + RECORD_FIXED {
        return Err(fail(start, "truncated record header".to_string()));
    }
    let size = le32(batch, start) as usize;
    let left = batch.len() - start - 4;
    if size < RECORD_FIXED || size > left {
        return Err(fail(
            start,
            format!(
                "record size {} does not fit in the {} bytes left",
                size, left
            ),
        ));
    }
    let base = start + 4;
    let b = &batch[base..base + size];
    // The SDK declares FEATURE_INPUTS: the flags hold the record's input
    // and no other bit.
    let flags = le32(b, 4);
    if flags & !FLAGS_INPUT != 0 {
        return Err(fail(
            start + 8,
            format!(
                "reserved flags are {:#x}, want 0 beside the input bits {:#x}",
                flags & !FLAGS_INPUT,
                FLAGS_INPUT
            ),
        ));
    }
    let time = le64(b, 8) as i64;
    let (key, p) = match field(b, base, 16) {
        Some(f) => f,
        None => return Err(fail(base + 16, "key length exceeds the record".to_string())),
    };
    let (value, p) = match field(b, base, p) {
        Some(f) => f,
        None => {
            return Err(fail(
                base + p,
                "value length exceeds the record".to_string(),
            ))
        }
    };
    if b.len() - p < 4 {
        return Err(fail(base + p, "truncated header count".to_string()));
    }
    let n = le32(b, p);
    let h0 = p + 4;
    if n as u64 * 8 > (b.len() - h0) as u64 {
        return Err(fail(
            base + p,
            format!("header count {} does not fit in the record", n),
        ));
    }
    let mut p = h0;
    for i in 0..n {
        p = match field(b, base, p) {
            Some((_, q)) => q,
            None => {
                return Err(fail(
                    base + p,
                    format!("header {} name length exceeds the record", i),
                ))
            }
        };
        p = match field(b, base, p) {
            Some((_, q)) => q,
            None => {
                return Err(fail(
                    base + p,
                    format!("header {} value length exceeds the record", i),
                ))
            }
        };
    }
    if p != b.len() {
        return Err(fail(
            base + p,
            format!("{} unused bytes at the end of the record", b.len() - p),
        ));
    }
    Ok(RecordSpan {
        start,
        input: flags as u16,
        time,
        key,
        value,
        headers: (base + h0, base + size),
        header_count: n,
        end: base + size,
    })
}

/// The error of bytes after the last of `count` records, at `off`.
pub(crate) fn trailing_error(batch: &[u8], off: usize, count: u32) -> DecodeError {
    DecodeError {
        what: What::Record(count),
        offset: off,
        reason: format!(
            "{} trailing bytes after the last of {} records",
            batch.len() - off,
            count
        ),
    }
}

/// Decodes every record of an encoded batch, checking it as the host does.
///
/// ```
/// # use sluice::{abi, Record};
/// let mut batch = Vec::new();
/// abi::append_batch_header(&mut batch, 1);
/// abi::append_record(&mut batch, 0, &Record::new(b"k", b"v1").with_time(5));
/// let mut n = 0;
/// for r in abi::BatchReader::new(&batch).unwrap() {
///     let (origin, r) = r.unwrap();
///     assert_eq!((origin, r.key, r.value, r.time), (0, &b"k"[..], &b"v1"[..], 5));
///     n += 1;
/// }
/// assert_eq!(n, 1);
/// ```
#[derive(Clone, Debug)]
pub struct BatchReader<'a> {
    batch: &'a [u8],
    off: usize,
    count: u32,
    index: u32,
    done: bool,
}

impl<'a> BatchReader<'a> {
    /// Returns a reader of `batch`, having checked its header.
    pub fn new(batch: &'a [u8]) -> Result<BatchReader<'a>, DecodeError> {
        let count = batch_count(batch)?;
        Ok(BatchReader {
            batch,
            off: BATCH_HEADER_SIZE,
            count,
            index: 0,
            done: false,
        })
    }

    /// Returns the number of records the batch header announces.
    pub fn record_count(&self) -> u32 {
        self.count
    }
}

impl<'a> Iterator for BatchReader<'a> {
    /// A record with its origin, or the first decoding error, after which
    /// the iterator ends.
    type Item = Result<(u32, Record<'a>), DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.index == self.count {
            self.done = true;
            if self.off != self.batch.len() {
                return Some(Err(trailing_error(self.batch, self.off, self.count)));
            }
            return None;
        }
        match parse_record(self.batch, self.off, self.index) {
            Ok(s) => {
                self.off = s.end;
                self.index += 1;
                Some(Ok((le32(self.batch, s.start + 4), s.record(self.batch))))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Appends a batch header announcing `count` records.
pub fn append_batch_header(dst: &mut Vec<u8>, count: u32) {
    dst.extend_from_slice(&count.to_le_bytes());
}

/// Overwrites the record count of the batch that starts at `batch[0]`.
pub fn set_batch_count(batch: &mut [u8], count: u32) {
    batch[..4].copy_from_slice(&count.to_le_bytes());
}

/// Returns the number of bytes [`append_record`] adds for `r`.
pub fn encoded_size(r: &Record<'_>) -> usize {
    4 + RECORD_FIXED + r.key.len() + r.value.len() + r.headers.encoded_len()
}

/// Appends the encoding of `r`, with `origin`, to `dst`.
pub fn append_record(dst: &mut Vec<u8>, origin: u32, r: &Record<'_>) {
    let size = encoded_size(r);
    dst.reserve(size);
    dst.extend_from_slice(&((size - 4) as u32).to_le_bytes());
    dst.extend_from_slice(&origin.to_le_bytes());
    dst.extend_from_slice(&u32::from(r.input).to_le_bytes()); // flags: the input
    dst.extend_from_slice(&r.time.to_le_bytes());
    dst.extend_from_slice(&(r.key.len() as u32).to_le_bytes());
    dst.extend_from_slice(r.key);
    dst.extend_from_slice(&(r.value.len() as u32).to_le_bytes());
    dst.extend_from_slice(r.value);
    dst.extend_from_slice(&(r.headers.len() as u32).to_le_bytes());
    r.headers.append_to(dst);
}

// ---------------------------------------------------------------------------
// Transactional encodings (section 10.5).

/// A byte string in an input, as an offset and a length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span {
    pub off: u32,
    pub len: u32,
}

impl Span {
    #[inline]
    pub fn of<'a>(&self, b: &'a [u8]) -> &'a [u8] {
        &b[self.off as usize..(self.off + self.len) as usize]
    }
}

/// A value read from state, in an input: whether the key exists, and its
/// bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ValSpan {
    pub found: bool,
    pub bytes: Span,
}

impl ValSpan {
    #[inline]
    pub fn of<'a>(&self, b: &'a [u8]) -> Option<&'a [u8]> {
        if self.found {
            Some(self.bytes.of(b))
        } else {
            None
        }
    }
}

/// Decodes the transactional encodings, keeping the first error as the Go
/// reference's reader does: after it, every read returns zero.
struct Reader<'a> {
    what: What,
    b: &'a [u8],
    p: usize,
    err: Option<DecodeError>,
}

impl<'a> Reader<'a> {
    fn new(what: What, b: &'a [u8]) -> Reader<'a> {
        Reader {
            what,
            b,
            p: 0,
            err: None,
        }
    }

    #[cold]
    fn fail(&mut self, reason: String) {
        if self.err.is_none() {
            self.err = Some(DecodeError {
                what: self.what,
                offset: self.p,
                reason,
            });
        }
    }

    #[inline]
    fn ok(&self) -> bool {
        self.err.is_none()
    }

    #[inline]
    fn u32(&mut self, name: &str) -> u32 {
        if !self.ok() {
            return 0;
        }
        if self.b.len() - self.p < 4 {
            self.fail(format!("truncated {}", name));
            return 0;
        }
        let v = le32(self.b, self.p);
        self.p += 4;
        v
    }

    #[inline]
    fn bytes(&mut self, name: &str) -> Span {
        if !self.ok() {
            return Span::default();
        }
        let left = self.b.len() - self.p;
        if left < 4 {
            self.fail(format!("{} length exceeds the input", name));
            return Span::default();
        }
        let n = le32(self.b, self.p);
        if n as usize > left - 4 || n > i32::MAX as u32 {
            self.fail(format!("{} length exceeds the input", name));
            return Span::default();
        }
        let s = Span {
            off: (self.p + 4) as u32,
            len: n,
        };
        self.p += 4 + n as usize;
        s
    }

    /// Reads a count of items of at least `min` bytes each, refusing one
    /// that cannot fit in what is left.
    #[inline]
    fn count(&mut self, name: &str, min: usize) -> usize {
        let n = self.u32(name);
        if self.ok() && n as u64 * min as u64 > (self.b.len() - self.p) as u64 {
            self.p -= 4;
            let left = self.b.len() - self.p - 4;
            self.fail(format!(
                "{} {} does not fit in the {} bytes left",
                name, n, left
            ));
            return 0;
        }
        n as usize
    }

    #[inline]
    fn value(&mut self, name: &str) -> ValSpan {
        if !self.ok() {
            return ValSpan::default();
        }
        if self.b.len() - self.p < 4 {
            self.fail(format!("truncated {} found flag", name));
            return ValSpan::default();
        }
        let found = le32(self.b, self.p);
        if found > 1 {
            self.fail(format!("{} found flag is {}, want 0 or 1", name, found));
            return ValSpan::default();
        }
        self.p += 4;
        ValSpan {
            found: found == 1,
            bytes: self.bytes(name),
        }
    }

    #[inline]
    fn flag(&mut self, name: &str) -> bool {
        let v = self.u32(name);
        if v > 1 && self.ok() {
            self.p -= 4;
            self.fail(format!("{} is {}, want 0 or 1", name, v));
        }
        v == 1
    }

    fn finish(self) -> Result<(), DecodeError> {
        match self.err {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }
}

fn append_u32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

fn append_field(dst: &mut Vec<u8>, b: &[u8]) {
    append_u32(dst, b.len() as u32);
    dst.extend_from_slice(b);
}

fn append_value(dst: &mut Vec<u8>, v: Option<&[u8]>) {
    append_u32(dst, v.is_some() as u32);
    append_field(dst, v.unwrap_or(&[]));
}

/// The size of a declaration's fixed fields: event, fn, flags, table, key
/// length, read count, argument length.
pub(crate) const DECL_FIXED: usize = 7 * 4;

/// Appends the encoding of one operation declaration to `dst`.
#[allow(clippy::too_many_arguments)]
pub fn append_op_decl(
    dst: &mut Vec<u8>,
    event: u32,
    func: u32,
    flags: u32,
    table: u32,
    key: &[u8],
    reads: &[Key<'_>],
    arg: &[u8],
) {
    let size =
        DECL_FIXED + key.len() + arg.len() + reads.iter().map(|r| 8 + r.key.len()).sum::<usize>();
    dst.reserve(size);
    append_u32(dst, event);
    append_u32(dst, func);
    append_u32(dst, flags);
    append_u32(dst, table);
    append_field(dst, key);
    append_u32(dst, reads.len() as u32);
    for r in reads {
        append_u32(dst, r.table.0);
        append_field(dst, r.key);
    }
    append_field(dst, arg);
}

/// One operation declaration, decoded, owning its bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpDecl {
    /// The index of the operation's event in the planned batch.
    pub event: u32,
    /// The function that computes the operation.
    pub func: u32,
    /// [`OP_FLAG_NONDET`] or 0.
    pub flags: u32,
    /// The table of the key the operation writes, or that a
    /// non-deterministic operation may touch.
    pub table: u32,
    /// The key the operation writes (empty for a non-deterministic one).
    pub key: Vec<u8>,
    /// The keys the operation reads besides its own: (table, key).
    pub reads: Vec<(u32, Vec<u8>)>,
    /// The argument handed back unchanged in the apply request.
    pub arg: Vec<u8>,
}

/// Decodes the operation declarations of one `txn_plan` call.
pub fn decode_op_decls(b: &[u8]) -> Result<Vec<OpDecl>, DecodeError> {
    let mut r = Reader::new(What::Declaration, b);
    let mut out = Vec::new();
    while r.ok() && r.p != b.len() {
        let mut d = OpDecl {
            event: r.u32("event"),
            func: r.u32("fn"),
            ..OpDecl::default()
        };
        d.flags = r.u32("flags");
        if d.flags & !OP_FLAG_NONDET != 0 && r.ok() {
            r.p -= 4;
            r.fail(format!("unknown flags {:#x}", d.flags));
        }
        d.table = r.u32("table");
        d.key = r.bytes("key").of(b).to_vec();
        let n = r.count("read count", 8);
        for _ in 0..n {
            if !r.ok() {
                break;
            }
            let t = r.u32("read table");
            let k = r.bytes("read key").of(b).to_vec();
            d.reads.push((t, k));
        }
        d.arg = r.bytes("argument").of(b).to_vec();
        if r.ok() {
            out.push(d);
        }
    }
    r.finish().map(|_| out)
}

/// A declared read of an apply request, in its input.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ReadSpan {
    pub table: u32,
    pub key: Span,
    pub val: ValSpan,
}

/// An apply request, decoded into offsets of its input; its declared reads
/// go to a vector the caller reuses.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Request {
    pub func: u32,
    pub event: u32,
    pub op: u32,
    pub nondet: bool,
    pub table: u32,
    pub key: Span,
    pub own: ValSpan,
    pub arg: Span,
}

/// Decodes an apply request, putting its declared reads in `reads`.
pub(crate) fn decode_request(b: &[u8], reads: &mut Vec<ReadSpan>) -> Result<Request, DecodeError> {
    if b.len() < APPLY_RESULT_SIZE {
        return Err(DecodeError {
            what: What::ApplyRequest,
            offset: 0,
            reason: "shorter than the result slot".to_string(),
        });
    }
    let mut r = Reader::new(What::ApplyRequest, b);
    r.p = APPLY_RESULT_SIZE;
    let mut q = Request {
        func: r.u32("fn"),
        event: r.u32("event"),
        op: r.u32("op"),
        ..Request::default()
    };
    let flags = r.u32("flags");
    q.nondet = flags & OP_FLAG_NONDET != 0;
    q.own.found = flags & APPLY_FLAG_OWN_FOUND != 0;
    q.table = r.u32("table");
    q.key = r.bytes("key");
    q.own.bytes = r.bytes("own value");
    let n = r.count("read count", 16);
    reads.clear();
    for _ in 0..n {
        if !r.ok() {
            break;
        }
        let table = r.u32("read table");
        let key = r.bytes("read key");
        let val = r.value("read value");
        reads.push(ReadSpan { table, key, val });
    }
    q.arg = r.bytes("argument");
    if r.ok() && r.p != b.len() {
        let n = b.len() - r.p;
        r.fail(format!("{} trailing bytes", n));
    }
    r.finish().map(|_| q)
}

/// One declared read of an apply request, for [`append_apply_request`].
#[derive(Clone, Copy, Debug)]
pub struct ReadValue<'a> {
    /// The read key's table.
    pub table: u32,
    /// The read key.
    pub key: &'a [u8],
    /// Its value as of the operation's timestamp, None when absent.
    pub value: Option<&'a [u8]>,
}

/// What an apply request holds, for [`append_apply_request`].
#[derive(Clone, Copy, Debug)]
pub struct ApplyRequest<'a> {
    /// The function that computes the operation.
    pub func: u32,
    /// The event's index in the batch.
    pub event: u32,
    /// The operation's index within its event.
    pub op: u32,
    /// [`OP_FLAG_NONDET`] or 0.
    pub flags: u32,
    /// The own key's table.
    pub table: u32,
    /// The own key (empty for a non-deterministic operation).
    pub key: &'a [u8],
    /// The own key's value before the operation, None when absent.
    pub own: Option<&'a [u8]>,
    /// The declared reads.
    pub reads: &'a [ReadValue<'a>],
    /// The declaration's argument.
    pub arg: &'a [u8],
}

/// Appends the encoding of an apply request, its result slot zero.
pub fn append_apply_request(dst: &mut Vec<u8>, q: &ApplyRequest<'_>) {
    dst.extend_from_slice(&[0; APPLY_RESULT_SIZE]);
    append_u32(dst, q.func);
    append_u32(dst, q.event);
    append_u32(dst, q.op);
    let mut f = q.flags & !APPLY_FLAG_OWN_FOUND;
    if q.own.is_some() {
        f |= APPLY_FLAG_OWN_FOUND;
    }
    append_u32(dst, f);
    append_u32(dst, q.table);
    append_field(dst, q.key);
    append_field(dst, q.own.unwrap_or(&[]));
    append_u32(dst, q.reads.len() as u32);
    for rv in q.reads {
        append_u32(dst, rv.table);
        append_field(dst, rv.key);
        append_value(dst, rv.value);
    }
    append_field(dst, q.arg);
}

/// A key a non-deterministic operation read through `txn_get`, in an
/// outcomes input.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct GetSpan {
    pub table: u32,
    pub key: Span,
    pub val: ValSpan,
}

/// One operation's outcome, in an outcomes input; its reads and gets are
/// ranges of vectors the decoder fills.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct OpSpan {
    pub executed: bool,
    pub own: ValSpan,
    pub reads: (u32, u32),
    pub gets: (u32, u32),
}

/// Decodes outcomes event by event into vectors it reuses.
#[derive(Debug, Default)]
pub(crate) struct OutcomeDecoder {
    pub ops: Vec<OpSpan>,
    pub vals: Vec<ValSpan>,
    pub gets: Vec<GetSpan>,
    p: usize,
    n: usize,
    i: usize,
}

impl OutcomeDecoder {
    /// Starts decoding `b` and returns its event count.
    pub fn reset(&mut self, b: &[u8]) -> Result<usize, DecodeError> {
        let mut r = Reader::new(What::Outcomes, b);
        self.n = r.count("event count", 8);
        self.i = 0;
        self.p = r.p;
        r.finish().map(|_| self.n)
    }

    /// Decodes the next event's outcome into the decoder's vectors and
    /// returns whether it committed, or None after the last event.
    pub fn next(&mut self, b: &[u8]) -> Result<Option<bool>, DecodeError> {
        let mut r = Reader::new(What::Outcomes, b);
        r.p = self.p;
        if self.i == self.n {
            if r.p != b.len() {
                let left = b.len() - r.p;
                r.fail(format!("{} trailing bytes after {} events", left, self.n));
                return r.finish().map(|_| None);
            }
            return Ok(None);
        }
        self.i += 1;
        let committed = r.flag("committed");
        let n = r.count("operation count", 20);
        self.ops.clear();
        self.vals.clear();
        self.gets.clear();
        for _ in 0..n {
            if !r.ok() {
                break;
            }
            let mut o = OpSpan {
                executed: r.flag("executed"),
                ..OpSpan::default()
            };
            o.own = r.value("own value");
            let r0 = self.vals.len() as u32;
            let nr = r.count("read count", 8);
            for _ in 0..nr {
                if !r.ok() {
                    break;
                }
                let v = r.value("read value");
                self.vals.push(v);
            }
            o.reads = (r0, self.vals.len() as u32);
            let g0 = self.gets.len() as u32;
            let ng = r.count("get count", 16);
            for _ in 0..ng {
                if !r.ok() {
                    break;
                }
                let table = r.u32("get table");
                let key = r.bytes("get key");
                let val = r.value("get value");
                self.gets.push(GetSpan { table, key, val });
            }
            o.gets = (g0, self.gets.len() as u32);
            self.ops.push(o);
        }
        self.p = r.p;
        r.finish().map(|_| Some(committed))
    }
}

/// One operation's outcome, for [`append_event_outcome`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpOutcomeData {
    /// False for the operations after the one that aborted their event.
    pub executed: bool,
    /// The own key's value before the operation.
    pub own: Option<Vec<u8>>,
    /// The declared reads' values.
    pub reads: Vec<Option<Vec<u8>>>,
    /// The other keys a non-deterministic operation read: (table, key,
    /// value).
    pub gets: Vec<(u32, Vec<u8>, Option<Vec<u8>>)>,
}

/// Appends the event count of an outcomes encoding.
pub fn append_outcomes_header(dst: &mut Vec<u8>, events: u32) {
    append_u32(dst, events);
}

/// Appends one event's outcome.
pub fn append_event_outcome(dst: &mut Vec<u8>, committed: bool, ops: &[OpOutcomeData]) {
    append_u32(dst, committed as u32);
    append_u32(dst, ops.len() as u32);
    for o in ops {
        append_u32(dst, o.executed as u32);
        append_value(dst, o.own.as_deref());
        append_u32(dst, o.reads.len() as u32);
        for v in &o.reads {
            append_value(dst, v.as_deref());
        }
        append_u32(dst, o.gets.len() as u32);
        for (t, k, v) in &o.gets {
            append_u32(dst, *t);
            append_field(dst, k);
            append_value(dst, v.as_deref());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Header;
    use crate::txn::Table;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// The example of ABI.md section 4, byte for byte.
    #[test]
    fn record_example() {
        let want = hex(
            "01000000 29000000 00000000 00000000 00002a36fe9c9717 01000000 6b 02000000 7631
             01000000 01000000 68 01000000 78",
        );
        assert_eq!(want.len(), 49);
        let hs = [Header {
            name: b"h",
            value: b"x",
        }];
        let r = Record::new(b"k", b"v1")
            .with_time(1_700_000_000_000_000_000)
            .with_headers(Headers::from_list(&hs));
        let mut b = Vec::new();
        append_batch_header(&mut b, 1);
        append_record(&mut b, 0, &r);
        assert_eq!(b, want);
        assert_eq!(encoded_size(&r), 45);
        let got: Vec<_> = BatchReader::new(&b)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(got, vec![(0, r)]);
    }

    fn batch_of(records: &[Record<'_>]) -> Vec<u8> {
        let mut b = Vec::new();
        append_batch_header(&mut b, records.len() as u32);
        for (i, r) in records.iter().enumerate() {
            append_record(&mut b, i as u32, r);
        }
        b
    }

    fn first_error(b: &[u8]) -> String {
        match BatchReader::new(b) {
            Err(e) => e.to_string(),
            Ok(rd) => rd
                .filter_map(|r| r.err())
                .next()
                .map(|e| e.to_string())
                .unwrap_or_default(),
        }
    }

    #[test]
    fn round_trip() {
        let hs = [
            Header {
                name: b"",
                value: b"",
            },
            Header {
                name: b"a",
                value: b"bb",
            },
            Header {
                name: b"a",
                value: b"c",
            },
        ];
        let big = vec![7u8; 70_000];
        let rs = [
            Record::new(b"", b""),
            Record::new(b"key", &big).with_time(i64::MIN),
            Record::new(b"\xff\x00", b"v")
                .with_time(-1)
                .with_headers(Headers::from_list(&hs)),
        ];
        let b = batch_of(&rs);
        let got: Vec<_> = BatchReader::new(&b)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(got.len(), 3);
        for (i, (origin, r)) in got.iter().enumerate() {
            assert_eq!(*origin as usize, i);
            assert_eq!(*r, rs[i]);
        }
        // Re-encoding a decoded record (wire headers) gives the same bytes.
        let again = batch_of(&got.iter().map(|(_, r)| *r).collect::<Vec<_>>());
        assert_eq!(again, b);
    }

    /// Every way ABI.md says a batch is malformed, with the reference's
    /// messages.
    #[test]
    fn malformed_batches() {
        let good = batch_of(&[Record::new(b"k", b"v").with_headers(Headers::from_list(&[
            Header {
                name: b"n",
                value: b"w",
            },
        ]))]);
        let set = |at: usize, v: u32| {
            let mut b = good.clone();
            b[at..at + 4].copy_from_slice(&v.to_le_bytes());
            b
        };
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (vec![1, 0], "abi: malformed batch header at byte 0: batch is 2 bytes, shorter than its 4-byte header"),
            (set(0, 2), "abi: malformed batch header at byte 0: count 2 does not fit in 48 bytes"),
            (set(4, 27), "abi: malformed record 0 at byte 4: record size 27 does not fit in the 40 bytes left"),
            (set(4, 41), "abi: malformed record 0 at byte 4: record size 41 does not fit in the 40 bytes left"),
            (set(12, 0x50003), "abi: malformed record 0 at byte 12: reserved flags are 0x50000, want 0 beside the input bits 0xffff"),
            (set(24, 99), "abi: malformed record 0 at byte 24: key length exceeds the record"),
            (set(29, 99), "abi: malformed record 0 at byte 29: value length exceeds the record"),
            (set(34, 9), "abi: malformed record 0 at byte 34: header count 9 does not fit in the record"),
            (set(38, 99), "abi: malformed record 0 at byte 38: header 0 name length exceeds the record"),
            (set(43, 99), "abi: malformed record 0 at byte 43: header 0 value length exceeds the record"),
            (set(34, 0), "abi: malformed record 0 at byte 38: 10 unused bytes at the end of the record"),
            ([&good[..], &[0]].concat(), "abi: malformed record 1 at byte 48: 1 trailing bytes after the last of 1 records"),
        ];
        for (b, want) in cases {
            assert_eq!(first_error(&b), want);
        }
        // A truncated record header: the count fits, the record does not.
        let mut b = vec![1, 0, 0, 0];
        b.extend_from_slice(&[0; 31]);
        b.extend_from_slice(&[0; 1]);
        assert_eq!(
            first_error(&b[..36]),
            "abi: malformed record 0 at byte 4: record size 0 does not fit in the 28 bytes left"
        );
        assert_eq!(first_error(&good), "");
    }

    /// The declaration, request and outcomes examples of ABI.md section
    /// 10.5, byte for byte, both ways.
    #[test]
    fn txn_examples() {
        let mut d = Vec::new();
        let reads = [Key {
            table: Table(1),
            key: b"b",
        }];
        append_op_decl(&mut d, 2, 1, 0, 0, b"a7", &reads, &[5, 0, 0, 0]);
        assert_eq!(
            d,
            hex("02000000 01000000 00000000 00000000 02000000 6137 01000000 01000000 01000000 62 04000000 05000000")
        );
        let decls = decode_op_decls(&d).unwrap();
        assert_eq!(
            decls,
            vec![OpDecl {
                event: 2,
                func: 1,
                flags: 0,
                table: 0,
                key: b"a7".to_vec(),
                reads: vec![(1, b"b".to_vec())],
                arg: vec![5, 0, 0, 0],
            }]
        );

        let own = 100u64.to_le_bytes();
        let rv = [ReadValue {
            table: 1,
            key: b"b",
            value: None,
        }];
        let mut q = Vec::new();
        append_apply_request(
            &mut q,
            &ApplyRequest {
                func: 1,
                event: 2,
                op: 0,
                flags: 0,
                table: 0,
                key: b"a7",
                own: Some(&own),
                reads: &rv,
                arg: &[5, 0, 0, 0],
            },
        );
        assert_eq!(
            q,
            hex("0000000000000000 01000000 02000000 00000000 02000000 00000000 02000000 6137 08000000
                 6400000000000000 01000000 01000000 01000000 62 00000000 00000000 04000000 05000000")
        );
        let mut rs = Vec::new();
        let req = decode_request(&q, &mut rs).unwrap();
        assert_eq!(
            (req.func, req.event, req.op, req.nondet, req.table),
            (1, 2, 0, false, 0)
        );
        assert_eq!(req.key.of(&q), b"a7");
        assert_eq!(req.own.of(&q), Some(&own[..]));
        assert_eq!(rs.len(), 1);
        assert_eq!(
            (rs[0].table, rs[0].key.of(&q), rs[0].val.of(&q)),
            (1, &b"b"[..], None)
        );
        assert_eq!(req.arg.of(&q), &[5, 0, 0, 0]);

        let mut o = Vec::new();
        append_outcomes_header(&mut o, 1);
        append_event_outcome(
            &mut o,
            true,
            &[OpOutcomeData {
                executed: true,
                own: Some(own.to_vec()),
                reads: vec![None],
                gets: vec![],
            }],
        );
        assert_eq!(
            o,
            hex(
                "01000000 01000000 01000000 01000000 01000000 08000000 6400000000000000 01000000
                 00000000 00000000 00000000"
            )
        );
        let mut dec = OutcomeDecoder::default();
        assert_eq!(dec.reset(&o), Ok(1));
        assert_eq!(dec.next(&o), Ok(Some(true)));
        assert_eq!(dec.ops.len(), 1);
        assert!(dec.ops[0].executed);
        assert_eq!(dec.ops[0].own.of(&o), Some(&own[..]));
        assert_eq!(dec.vals.len(), 1);
        assert_eq!(dec.next(&o), Ok(None));
    }

    #[test]
    fn malformed_txn_encodings() {
        let mut rs = Vec::new();
        let err =
            |b: &[u8], rs: &mut Vec<ReadSpan>| decode_request(b, rs).err().map(|e| e.to_string());
        assert_eq!(
            err(&[0; 7], &mut rs).unwrap(),
            "abi: malformed apply request at byte 0: shorter than the result slot"
        );
        assert_eq!(
            err(&[0; 10], &mut rs).unwrap(),
            "abi: malformed apply request at byte 8: truncated fn"
        );
        let mut q = Vec::new();
        append_apply_request(
            &mut q,
            &ApplyRequest {
                func: 0,
                event: 0,
                op: 0,
                flags: 1,
                table: 0,
                key: b"",
                own: None,
                reads: &[ReadValue {
                    table: 0,
                    key: b"k",
                    value: Some(b"v"),
                }],
                arg: b"",
            },
        );
        assert!(err(&q, &mut rs).is_none());
        let mut bad = q.clone();
        bad[49..53].copy_from_slice(&2u32.to_le_bytes()); // found flag
        assert_eq!(
            err(&bad, &mut rs).unwrap(),
            "abi: malformed apply request at byte 49: read value found flag is 2, want 0 or 1"
        );
        let mut bad = q.clone();
        bad[36..40].copy_from_slice(&9u32.to_le_bytes()); // read count
        assert_eq!(err(&bad, &mut rs).unwrap(), "abi: malformed apply request at byte 36: read count 9 does not fit in the 22 bytes left");
        let long = [&q[..], &[0]].concat();
        assert_eq!(
            err(&long, &mut rs).unwrap(),
            "abi: malformed apply request at byte 62: 1 trailing bytes"
        );

        let mut dec = OutcomeDecoder::default();
        assert_eq!(
            dec.reset(&[9, 0, 0, 0]).unwrap_err().to_string(),
            "abi: malformed outcomes at byte 0: event count 9 does not fit in the 0 bytes left"
        );
        let mut o = Vec::new();
        append_outcomes_header(&mut o, 1);
        append_event_outcome(&mut o, false, &[]);
        o[4] = 2;
        dec.reset(&o).unwrap();
        assert_eq!(
            dec.next(&o).unwrap_err().to_string(),
            "abi: malformed outcomes at byte 4: committed is 2, want 0 or 1"
        );
        o[4] = 0;
        o.push(1);
        dec.reset(&o).unwrap();
        assert_eq!(dec.next(&o), Ok(Some(false)));
        assert_eq!(
            dec.next(&o).unwrap_err().to_string(),
            "abi: malformed outcomes at byte 12: 1 trailing bytes after 1 events"
        );

        let mut d = Vec::new();
        append_op_decl(&mut d, 0, 0, 4, 0, b"", &[], b"");
        assert_eq!(
            decode_op_decls(&d).unwrap_err().to_string(),
            "abi: malformed operation declaration at byte 8: unknown flags 0x4"
        );
    }
}
