//! Records as operators see them.

use std::fmt;

/// One event as an operator sees it: a key, a value, an event time and
/// headers.
///
/// A `Record` handed to an operator borrows the batch the host wrote into
/// guest memory: it is valid only during the call, as its lifetime says.
/// To output a record, build one from borrowed bytes (the input's, a buffer
/// of the operator's) and pass it to [`Emitter::emit`](crate::Emitter::emit),
/// which encodes it at once:
///
/// ```
/// # use sluice::Record;
/// # let input = Record::new(b"k", b"v");
/// let upper = input.value.to_ascii_uppercase();
/// let output = input.with_value(&upper); // same key, time and headers
/// # assert_eq!(output.value, b"V");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// The record's key; keyed operators partition and keep state by it.
    pub key: &'a [u8],
    /// The record's payload.
    pub value: &'a [u8],
    /// The event time in nanoseconds since the Unix epoch.
    pub time: i64,
    /// The record's headers, in order. Names may repeat.
    pub headers: Headers<'a>,
    /// The position, in the operator's `inputs` list of the pipeline
    /// file, of the input the record arrived on: 0 for an operator with one
    /// input. A join tells its sides apart by it. Set on the records the
    /// SDK hands an operator; the host ignores it on the records an
    /// operator emits.
    pub input: u16,
}

impl<'a> Record<'a> {
    /// Returns a record with `key` and `value`, time 0 and no headers.
    pub fn new(key: &'a [u8], value: &'a [u8]) -> Record<'a> {
        Record {
            key,
            value,
            time: 0,
            headers: Headers::NONE,
            input: 0,
        }
    }

    /// Returns the record with its time set to `time`.
    pub fn with_time(mut self, time: i64) -> Record<'a> {
        self.time = time;
        self
    }

    /// Returns the record with its key replaced.
    pub fn with_key<'b>(self, key: &'b [u8]) -> Record<'b>
    where
        'a: 'b,
    {
        Record { key, ..self }
    }

    /// Returns the record with its value replaced.
    pub fn with_value<'b>(self, value: &'b [u8]) -> Record<'b>
    where
        'a: 'b,
    {
        Record { value, ..self }
    }

    /// Returns the record with its headers replaced.
    pub fn with_headers<'b>(self, headers: Headers<'b>) -> Record<'b>
    where
        'a: 'b,
    {
        Record { headers, ..self }
    }

    /// Returns the value of the first header called `name` (compared byte
    /// for byte), if any.
    pub fn header(&self, name: &[u8]) -> Option<&'a [u8]> {
        self.headers.get(name)
    }
}

/// A record whose key and value bytes an operator changes in place, handed
/// to [`MapInPlace::map`](crate::MapInPlace::map).
///
/// Lengths cannot change, which is what lets the SDK hand the host its input
/// batch back as the output without encoding anything again. The time may
/// change; the headers are read-only.
#[derive(Debug)]
pub struct RecordMut<'a> {
    /// The record's key, writable in place.
    pub key: &'a mut [u8],
    /// The record's value, writable in place.
    pub value: &'a mut [u8],
    /// The event time in nanoseconds since the Unix epoch; the output
    /// record gets what it holds when `map` returns.
    pub time: i64,
    /// The record's headers.
    pub headers: Headers<'a>,
    /// The input the record arrived on, as [`Record::input`]; changing it
    /// changes nothing.
    pub input: u16,
}

/// One name/value pair carried with a record, like a NATS message header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<'a> {
    /// The header's name.
    pub name: &'a [u8],
    /// The header's value.
    pub value: &'a [u8],
}

/// A record's headers: either those of an input record, read in place from
/// their encoding, or a list of [`Header`]s built by the operator.
///
/// ```
/// # use sluice::{Header, Headers, Record};
/// let list = [Header { name: b"source", value: b"web" }];
/// let r = Record::new(b"k", b"v").with_headers(Headers::from_list(&list));
/// assert_eq!(r.header(b"source"), Some(&b"web"[..]));
/// ```
#[derive(Clone, Copy)]
pub struct Headers<'a> {
    repr: Repr<'a>,
}

#[derive(Clone, Copy)]
enum Repr<'a> {
    /// `count` headers encoded as the ABI encodes them (section 4), which
    /// the decoder checked make up `bytes` exactly.
    Wire { count: u32, bytes: &'a [u8] },
    /// Headers built by the operator.
    List(&'a [Header<'a>]),
}

impl<'a> Headers<'a> {
    /// No headers.
    pub const NONE: Headers<'static> = Headers {
        repr: Repr::List(&[]),
    };

    /// Returns the headers of `list`, in order.
    pub fn from_list(list: &'a [Header<'a>]) -> Headers<'a> {
        Headers {
            repr: Repr::List(list),
        }
    }

    /// Returns `count` headers whose encoding is `bytes`, which the caller
    /// has checked (see `abi::parse_record`).
    pub(crate) fn from_wire(count: u32, bytes: &'a [u8]) -> Headers<'a> {
        Headers {
            repr: Repr::Wire { count, bytes },
        }
    }

    /// Returns the number of headers.
    pub fn len(&self) -> usize {
        match self.repr {
            Repr::Wire { count, .. } => count as usize,
            Repr::List(l) => l.len(),
        }
    }

    /// Reports whether there are no headers.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Returns the headers in order.
    pub fn iter(&self) -> HeaderIter<'a> {
        match self.repr {
            Repr::Wire { count, bytes } => HeaderIter {
                repr: IterRepr::Wire { left: count, bytes },
            },
            Repr::List(l) => HeaderIter {
                repr: IterRepr::List(l.iter()),
            },
        }
    }

    /// Returns the value of the first header called `name`, if any.
    pub fn get(&self, name: &[u8]) -> Option<&'a [u8]> {
        self.iter().find(|h| h.name == name).map(|h| h.value)
    }

    /// Returns the number of bytes the headers take in a record's encoding,
    /// the count excluded.
    pub(crate) fn encoded_len(&self) -> usize {
        match self.repr {
            Repr::Wire { bytes, .. } => bytes.len(),
            Repr::List(l) => l.iter().map(|h| 8 + h.name.len() + h.value.len()).sum(),
        }
    }

    /// Appends the headers' encoding, the count excluded.
    pub(crate) fn append_to(&self, dst: &mut Vec<u8>) {
        match self.repr {
            Repr::Wire { bytes, .. } => dst.extend_from_slice(bytes),
            Repr::List(l) => {
                for h in l {
                    dst.extend_from_slice(&(h.name.len() as u32).to_le_bytes());
                    dst.extend_from_slice(h.name);
                    dst.extend_from_slice(&(h.value.len() as u32).to_le_bytes());
                    dst.extend_from_slice(h.value);
                }
            }
        }
    }
}

impl Default for Headers<'_> {
    fn default() -> Self {
        Headers::NONE
    }
}

impl fmt::Debug for Headers<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Headers<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Headers<'_> {}

impl<'a> IntoIterator for Headers<'a> {
    type Item = Header<'a>;
    type IntoIter = HeaderIter<'a>;
    fn into_iter(self) -> HeaderIter<'a> {
        self.iter()
    }
}

/// An iterator over [`Headers`].
#[derive(Clone, Debug)]
pub struct HeaderIter<'a> {
    repr: IterRepr<'a>,
}

#[derive(Clone, Debug)]
enum IterRepr<'a> {
    Wire { left: u32, bytes: &'a [u8] },
    List(std::slice::Iter<'a, Header<'a>>),
}

/// Splits a u32-length-prefixed byte string off the front of `b`. The wire
/// headers were checked when decoded, so this cannot fail on them; it
/// returns empty strings rather than panicking on anything else.
fn split_field(b: &[u8]) -> (&[u8], &[u8]) {
    if b.len() < 4 {
        return (&[], &[]);
    }
    let n = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
    let rest = &b[4..];
    if n > rest.len() {
        return (&[], &[]);
    }
    rest.split_at(n)
}

impl<'a> Iterator for HeaderIter<'a> {
    type Item = Header<'a>;

    fn next(&mut self) -> Option<Header<'a>> {
        match &mut self.repr {
            IterRepr::Wire { left, bytes } => {
                if *left == 0 {
                    return None;
                }
                *left -= 1;
                let (name, rest) = split_field(bytes);
                let (value, rest) = split_field(rest);
                *bytes = rest;
                Some(Header { name, value })
            }
            IterRepr::List(it) => it.next().copied(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = match &self.repr {
            IterRepr::Wire { left, .. } => *left as usize,
            IterRepr::List(it) => it.len(),
        };
        (n, Some(n))
    }
}

impl ExactSizeIterator for HeaderIter<'_> {}

/// A record that owns its bytes, for keeping one past the call that handed
/// it over, and for tests (see [`testing`](crate::testing)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnedRecord {
    /// The record's key.
    pub key: Vec<u8>,
    /// The record's value.
    pub value: Vec<u8>,
    /// The event time in nanoseconds since the Unix epoch.
    pub time: i64,
    /// The record's headers, in order.
    pub headers: Vec<(Vec<u8>, Vec<u8>)>,
    /// The input the record arrived on, as [`Record::input`].
    pub input: u16,
}

impl OwnedRecord {
    /// Returns a record with `key` and `value`, time 0 and no headers.
    pub fn new(key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) -> OwnedRecord {
        OwnedRecord {
            key: key.into(),
            value: value.into(),
            ..OwnedRecord::default()
        }
    }

    /// Returns the record with its time set to `time`.
    pub fn with_time(mut self, time: i64) -> OwnedRecord {
        self.time = time;
        self
    }

    /// Returns the record with a header appended.
    pub fn with_header(
        mut self,
        name: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
    ) -> OwnedRecord {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Returns the record with its input set to `input`: in a test, the
    /// input an operator with several inputs receives it on.
    pub fn with_input(mut self, input: u16) -> OwnedRecord {
        self.input = input;
        self
    }

    /// Returns the value of the first header called `name`, if any.
    pub fn header(&self, name: &[u8]) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.as_slice() == name)
            .map(|(_, v)| v.as_slice())
    }
}

impl<'a> From<&Record<'a>> for OwnedRecord {
    fn from(r: &Record<'a>) -> OwnedRecord {
        OwnedRecord {
            key: r.key.to_vec(),
            value: r.value.to_vec(),
            time: r.time,
            headers: r
                .headers
                .iter()
                .map(|h| (h.name.to_vec(), h.value.to_vec()))
                .collect(),
            input: r.input,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_and_headers() {
        let list = [
            Header {
                name: b"a",
                value: b"1",
            },
            Header {
                name: b"a",
                value: b"2",
            },
        ];
        let r = Record::new(b"k", b"v")
            .with_time(-3)
            .with_headers(Headers::from_list(&list));
        assert_eq!(
            r.header(b"a"),
            Some(&b"1"[..]),
            "the first header of a name counts"
        );
        assert_eq!(r.header(b"b"), None);
        let v = b"w".to_vec();
        let r2 = r.with_value(&v);
        assert_eq!(
            (r2.key, r2.value, r2.time, r2.headers.len()),
            (&b"k"[..], &b"w"[..], -3, 2)
        );
        let owned = OwnedRecord::from(&r2);
        assert_eq!(
            owned,
            OwnedRecord::new("k", "w")
                .with_time(-3)
                .with_header("a", "1")
                .with_header("a", "2")
        );
        assert_eq!(Headers::NONE.len(), 0);
        assert!(Headers::default().is_empty());
        assert_eq!(Headers::from_list(&list).encoded_len(), 2 * (8 + 2));
    }
}
