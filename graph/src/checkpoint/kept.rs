//! How the in-memory saver keeps a stored channel value: as it came, or, when it
//! holds long strings, in the [compact](super::compact) form with those strings
//! shared by content, so that the task write it came from and every later whole copy
//! of the channel hold each text once.

use std::sync::Arc;

use super::compact::{Damaged, LongStrings, Names, Read, Reader, has_long, pack_shared};
use super::types::StoredValue;

const FULL: u8 = 0;
const APPEND: u8 = 1;

/// A stored channel value.
#[derive(Clone)]
pub(crate) enum KeptValue {
    /// A value with no long string, as it came (moving it costs nothing).
    Plain(StoredValue),
    /// A value with long strings: its kind and value in one buffer, the strings
    /// shared.
    Packed {
        body: Box<[u8]>,
        long: Box<[Arc<str>]>,
    },
}

impl KeptValue {
    /// Keeps `value`, sharing its long strings through `strings`.
    pub(crate) fn keep(
        value: StoredValue,
        scratch: &mut Vec<u8>,
        names: &mut Names,
        strings: &mut LongStrings,
    ) -> Self {
        let (kind, inner) = match &value {
            StoredValue::Full(v) => (FULL, v),
            StoredValue::Append(v) => (APPEND, v),
        };
        if !has_long(inner) {
            return Self::Plain(value);
        }
        let (body, long) = pack_shared(scratch, names, strings, |w| {
            w.byte(kind);
            w.value(inner);
        });
        Self::Packed { body, long }
    }

    /// The value as it was stored.
    pub(crate) fn get(&self, names: &Names) -> Read<StoredValue> {
        match self {
            Self::Plain(value) => Ok(value.clone()),
            Self::Packed { body, long } => {
                let mut r = Reader {
                    bytes: body,
                    names,
                    long,
                };
                let kind = r.byte()?;
                let value = r.value()?;
                match kind {
                    FULL => Ok(StoredValue::Full(value)),
                    APPEND => Ok(StoredValue::Append(value)),
                    _ => Err(Damaged),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::PendingWrite;
    use crate::checkpoint::packed::PackedWrite;
    use serde_json::json;

    #[test]
    fn a_write_and_the_values_it_becomes_hold_a_long_text_once() {
        let (mut scratch, mut names, mut strings) =
            (Vec::new(), Names::default(), LongStrings::default());
        let text = "a message long enough to be shared ".repeat(8);
        let write = PendingWrite {
            task_id: "t".into(),
            idx: 0,
            channel: "update".into(),
            value: json!({"messages": [text], "n": 1}),
        };
        let packed = PackedWrite::pack(&mut scratch, &mut names, &mut strings, &write);
        let append = StoredValue::Append(json!([text]));
        let full = StoredValue::Full(json!(["short", text, {"k": text}]));
        let kept_append = KeptValue::keep(append.clone(), &mut scratch, &mut names, &mut strings);
        let kept_full = KeptValue::keep(full.clone(), &mut scratch, &mut names, &mut strings);
        assert_eq!(strings.len(), 1, "one copy of the text");
        assert!(matches!(kept_append, KeptValue::Packed { .. }));
        // Read back equal.
        assert_eq!(packed.unpack(&names).unwrap(), write);
        assert_eq!(kept_append.get(&names).unwrap(), append);
        assert_eq!(kept_full.get(&names).unwrap(), full);
        // Still held while a record refers to it, dropped after the last one goes.
        drop((packed, kept_append));
        strings.sweep();
        assert_eq!(strings.len(), 1);
        drop(kept_full);
        strings.sweep();
        assert_eq!(strings.len(), 0);
    }

    #[test]
    fn values_without_long_strings_are_kept_as_they_came() {
        let (mut scratch, mut names, mut strings) =
            (Vec::new(), Names::default(), LongStrings::default());
        let short = "x".repeat(crate::checkpoint::compact::LONG - 1);
        for value in [
            StoredValue::Full(json!(7)),
            StoredValue::Append(json!([short, {"k": short}])),
        ] {
            let kept = KeptValue::keep(value.clone(), &mut scratch, &mut names, &mut strings);
            assert!(matches!(kept, KeptValue::Plain(_)));
            assert_eq!(kept.get(&names).unwrap(), value);
        }
        assert_eq!(strings.len(), 0);
    }

    #[test]
    fn a_damaged_reference_is_refused() {
        let names = Names::default();
        // An append whose string refers to a shared string the record does not have.
        let kept = KeptValue::Packed {
            body: Box::from(&[APPEND, 9, 3][..]),
            long: Box::new([]),
        };
        assert!(kept.get(&names).is_err());
    }
}
