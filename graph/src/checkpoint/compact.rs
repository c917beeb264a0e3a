//! A compact binary form for the in-memory saver's records: variable-length integers,
//! length-prefixed strings, JSON values with a tag byte each, and channel and node
//! names as indices into a table of names shared by the saver.
//!
//! The in-memory saver keeps every checkpoint for as long as the process runs; kept as
//! the public types, each costs some forty small heap objects (maps, their keys,
//! strings). Written in this form it is one buffer. The form is private to the
//! process: nothing written here is ever read by another build.
//!
//! A long string (a message, a document) can be written as a reference to a string
//! shared by content ([`LongStrings`]) instead of inline: a task's write and the
//! channel value it becomes (and every later whole copy of that value) then hold the
//! text once.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

use serde_json::{Map, Number, Value};

/// A hasher for the short names the table holds (FxHash's mixing step, a word at a
/// time). Names come from graph definitions, not from untrusted input, and there are
/// few of them; SipHash would cost more than the rest of a lookup.
#[derive(Default)]
pub(crate) struct NameHasher(u64);

impl Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word))
                .wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Channel and node names by index. A name is added the first time it is written and
/// kept as long as the saver: names come from graph definitions, so the table stays
/// as small as the graphs that use the saver.
#[derive(Default)]
pub(crate) struct Names {
    index: HashMap<Arc<str>, u32, BuildHasherDefault<NameHasher>>,
    names: Vec<Arc<str>>,
}

impl Names {
    /// The index of `name`, added when new.
    pub(crate) fn intern(&mut self, name: &str) -> u32 {
        if let Some(&at) = self.index.get(name) {
            return at;
        }
        let at = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        let shared: Arc<str> = Arc::from(name);
        self.names.push(shared.clone());
        self.index.insert(shared, at);
        at
    }

    /// The name at `index`.
    pub(crate) fn get(&self, index: u64) -> Option<&str> {
        let at = usize::try_from(index).ok()?;
        self.names.get(at).map(|n| &**n)
    }
}

/// Strings at least this long are shared by content when the writer shares them.
pub(crate) const LONG: usize = 128;

/// Long strings by content, each held once however many records refer to it. A
/// string stays while a record refers to it; [`sweep`](Self::sweep) drops the rest.
#[derive(Clone, Default)]
pub(crate) struct LongStrings(HashSet<Arc<str>>);

impl LongStrings {
    /// The shared copy of `s`, added when new.
    fn share(&mut self, s: &str) -> Arc<str> {
        if let Some(found) = self.0.get(s) {
            return found.clone();
        }
        let shared: Arc<str> = Arc::from(s);
        self.0.insert(shared.clone());
        shared
    }

    /// Drops the strings no record refers to any more.
    pub(crate) fn sweep(&mut self) {
        self.0.retain(|s| Arc::strong_count(s) > 1);
    }

    /// How many strings are held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

/// Whether `value` holds a string [`Writer::value`] would share.
pub(crate) fn has_long(value: &Value) -> bool {
    match value {
        Value::String(s) => s.len() >= LONG,
        Value::Array(items) => items.iter().any(has_long),
        Value::Object(fields) => fields.values().any(has_long),
        _ => false,
    }
}

/// Where a writer puts the long strings it shares: the table they are shared
/// through, and the record's own list of them (the references index into it).
pub(crate) struct Sharing<'a> {
    strings: &'a mut LongStrings,
    refs: &'a mut Vec<Arc<str>>,
}

/// A record written by `write` with its long strings shared through `strings`: its
/// bytes, and the shared strings they refer to.
pub(crate) fn pack_shared(
    scratch: &mut Vec<u8>,
    names: &mut Names,
    strings: &mut LongStrings,
    write: impl FnOnce(&mut Writer<'_>),
) -> (Box<[u8]>, Box<[Arc<str>]>) {
    scratch.clear();
    let mut refs = Vec::new();
    let mut w = Writer {
        out: scratch,
        names,
        sharing: Some(Sharing {
            strings,
            refs: &mut refs,
        }),
    };
    write(&mut w);
    (Box::from(&scratch[..]), refs.into_boxed_slice())
}

/// Appends records to a byte buffer.
pub(crate) struct Writer<'a> {
    pub(crate) out: &'a mut Vec<u8>,
    pub(crate) names: &'a mut Names,
    /// Where long strings go; `None` writes them inline.
    pub(crate) sharing: Option<Sharing<'a>>,
}

impl Writer<'_> {
    pub(crate) fn byte(&mut self, b: u8) {
        self.out.push(b);
    }

    /// LEB128: seven bits a byte, low bits first.
    pub(crate) fn uint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }

    /// Zigzag, so that small negative numbers stay short.
    pub(crate) fn int(&mut self, v: i64) {
        self.uint(((v << 1) ^ (v >> 63)) as u64);
    }

    pub(crate) fn len(&mut self, n: usize) {
        self.uint(n as u64);
    }

    pub(crate) fn str(&mut self, s: &str) {
        self.len(s.len());
        self.out.extend_from_slice(s.as_bytes());
    }

    pub(crate) fn opt_str(&mut self, s: Option<&str>) {
        match s {
            Some(s) => {
                self.byte(1);
                self.str(s);
            }
            None => self.byte(0),
        }
    }

    /// A channel or node name, as its index in the table.
    pub(crate) fn name(&mut self, name: &str) {
        let at = self.names.intern(name);
        self.uint(u64::from(at));
    }

    /// A JSON value: a tag byte, then its content.
    pub(crate) fn value(&mut self, value: &Value) {
        match value {
            Value::Null => self.byte(0),
            Value::Bool(false) => self.byte(1),
            Value::Bool(true) => self.byte(2),
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    self.byte(3);
                    self.uint(u);
                } else if let Some(i) = n.as_i64() {
                    self.byte(4);
                    self.int(i);
                } else {
                    // Bit for bit: the float read back is the float stored.
                    self.byte(5);
                    let f = n.as_f64().unwrap_or(0.0);
                    self.out.extend_from_slice(&f.to_bits().to_le_bytes());
                }
            }
            Value::String(s) => match &mut self.sharing {
                Some(sharing) if s.len() >= LONG => {
                    let at = sharing.refs.len();
                    sharing.refs.push(sharing.strings.share(s));
                    self.byte(9);
                    self.len(at);
                }
                _ => {
                    self.byte(6);
                    self.str(s);
                }
            },
            Value::Array(items) => {
                self.byte(7);
                self.len(items.len());
                for item in items {
                    self.value(item);
                }
            }
            Value::Object(fields) => {
                self.byte(8);
                self.len(fields.len());
                for (k, v) in fields {
                    self.str(k);
                    self.value(v);
                }
            }
        }
    }

    /// A map of names to versions.
    pub(crate) fn versions<'n>(
        &mut self,
        len: usize,
        entries: impl Iterator<Item = (&'n String, &'n u64)>,
    ) {
        self.len(len);
        for (name, &version) in entries {
            self.name(name);
            self.uint(version);
        }
    }
}

/// Why a record could not be read back: only a bug in this module makes one.
#[derive(Debug)]
pub(crate) struct Damaged;

pub(crate) type Read<T> = Result<T, Damaged>;

/// Reads what a [`Writer`] wrote.
pub(crate) struct Reader<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) names: &'a Names,
    /// The record's shared long strings.
    pub(crate) long: &'a [Arc<str>],
}

impl<'a> Reader<'a> {
    pub(crate) fn byte(&mut self) -> Read<u8> {
        let (&b, rest) = self.bytes.split_first().ok_or(Damaged)?;
        self.bytes = rest;
        Ok(b)
    }

    pub(crate) fn uint(&mut self) -> Read<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(Damaged)
    }

    pub(crate) fn int(&mut self) -> Read<i64> {
        let z = self.uint()?;
        Ok(((z >> 1) as i64) ^ -((z & 1) as i64))
    }

    /// A length, bounded by what is left to read (each item takes at least a byte),
    /// so a damaged length cannot reserve a huge vector.
    pub(crate) fn len(&mut self) -> Read<usize> {
        let n = usize::try_from(self.uint()?).map_err(|_| Damaged)?;
        if n > self.bytes.len() {
            return Err(Damaged);
        }
        Ok(n)
    }

    pub(crate) fn str(&mut self) -> Read<&'a str> {
        let n = self.len()?;
        let (s, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        std::str::from_utf8(s).map_err(|_| Damaged)
    }

    pub(crate) fn string(&mut self) -> Read<String> {
        self.str().map(str::to_string)
    }

    pub(crate) fn opt_string(&mut self) -> Read<Option<String>> {
        match self.byte()? {
            0 => Ok(None),
            _ => self.string().map(Some),
        }
    }

    pub(crate) fn name(&mut self) -> Read<String> {
        let at = self.uint()?;
        self.names.get(at).map(str::to_string).ok_or(Damaged)
    }

    pub(crate) fn value(&mut self) -> Read<Value> {
        Ok(match self.byte()? {
            0 => Value::Null,
            1 => Value::Bool(false),
            2 => Value::Bool(true),
            3 => Value::Number(self.uint()?.into()),
            4 => Value::Number(self.int()?.into()),
            5 => {
                let (bits, rest) = self.bytes.split_first_chunk::<8>().ok_or(Damaged)?;
                self.bytes = rest;
                let f = f64::from_bits(u64::from_le_bytes(*bits));
                Value::Number(Number::from_f64(f).ok_or(Damaged)?)
            }
            6 => Value::String(self.string()?),
            7 => {
                let n = self.len()?;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value()?);
                }
                Value::Array(items)
            }
            8 => {
                let n = self.len()?;
                let mut fields = Map::new();
                for _ in 0..n {
                    let k = self.string()?;
                    fields.insert(k, self.value()?);
                }
                Value::Object(fields)
            }
            9 => {
                let at = usize::try_from(self.uint()?).map_err(|_| Damaged)?;
                Value::String(self.long.get(at).ok_or(Damaged)?.to_string())
            }
            _ => return Err(Damaged),
        })
    }

    /// A list of `n` items, each read by `item`.
    pub(crate) fn list<T>(&mut self, mut item: impl FnMut(&mut Self) -> Read<T>) -> Read<Vec<T>> {
        let n = self.len()?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(item(self)?);
        }
        Ok(out)
    }

    /// A map of names to versions.
    pub(crate) fn versions(&mut self) -> Read<std::collections::BTreeMap<String, u64>> {
        let n = self.len()?;
        let mut out = std::collections::BTreeMap::new();
        for _ in 0..n {
            let name = self.name()?;
            out.insert(name, self.uint()?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(value: &Value) -> Value {
        let mut names = Names::default();
        let mut out = Vec::new();
        Writer {
            out: &mut out,
            names: &mut names,
            sharing: None,
        }
        .value(value);
        let mut r = Reader {
            bytes: &out,
            names: &names,
            long: &[],
        };
        let back = r.value().unwrap();
        assert!(r.bytes.is_empty(), "the value is read to its end");
        back
    }

    #[test]
    fn values_read_back_equal_including_number_kinds() {
        let value = json!({
            "null": null, "t": true, "f": false,
            "u": u64::MAX, "i": i64::MIN, "neg": -1, "zero": 0,
            "float": 0.1, "tiny": 5e-324, "big": 1.7976931348623157e308, "negzero": -0.0,
            "s": "é\u{0}\"", "empty": {}, "list": [[], [1, "a", {"k": [null]}]],
        });
        let back = round_trip(&value);
        assert_eq!(back, value);
        // `==` on numbers compares kinds too, but check the float bits explicitly.
        assert_eq!(
            back["negzero"].as_f64().map(f64::to_bits),
            Some((-0.0f64).to_bits())
        );
        assert!(back["u"].is_u64() && back["i"].is_i64() && back["float"].is_f64());
        assert_eq!(
            serde_json::to_string(&back).unwrap(),
            serde_json::to_string(&value).unwrap()
        );
    }

    #[test]
    fn integers_survive_every_width() {
        let mut names = Names::default();
        let mut out = Vec::new();
        let ints = [0, 1, -1, 63, -64, 64, i64::MAX, i64::MIN];
        let uints = [0, 127, 128, 16_383, 16_384, u64::MAX];
        let mut w = Writer {
            out: &mut out,
            names: &mut names,
            sharing: None,
        };
        ints.iter().for_each(|&i| w.int(i));
        uints.iter().for_each(|&u| w.uint(u));
        let mut r = Reader {
            bytes: &out,
            names: &names,
            long: &[],
        };
        for i in ints {
            assert_eq!(r.int().unwrap(), i);
        }
        for u in uints {
            assert_eq!(r.uint().unwrap(), u);
        }
        assert!(r.byte().is_err(), "nothing is left");
    }

    #[test]
    fn names_are_interned_once_and_damaged_input_is_refused() {
        let mut names = Names::default();
        let mut out = Vec::new();
        let mut w = Writer {
            out: &mut out,
            names: &mut names,
            sharing: None,
        };
        for n in ["a", "bb", "a", "a-much-longer-name-than-a-word", "bb"] {
            w.name(n);
        }
        assert_eq!(names.names.len(), 3);
        let mut r = Reader {
            bytes: &out,
            names: &names,
            long: &[],
        };
        let read: Vec<String> = (0..5).map(|_| r.name().unwrap()).collect();
        assert_eq!(
            read,
            ["a", "bb", "a", "a-much-longer-name-than-a-word", "bb"]
        );
        // An unknown name index, a truncated string, an unknown tag.
        let reader = |bytes| Reader {
            bytes,
            names: &names,
            long: &[],
        };
        assert!(reader(&[9]).name().is_err());
        assert!(reader(&[5, b'a']).str().is_err());
        assert!(reader(&[200]).value().is_err());
        assert_eq!(reader(&[1, b'a']).str().ok(), Some("a"));
        let mut r = Reader {
            bytes: &[0xff; 11],
            names: &names,
            long: &[],
        };
        assert!(r.uint().is_err(), "a varint longer than 64 bits is refused");
    }
}
