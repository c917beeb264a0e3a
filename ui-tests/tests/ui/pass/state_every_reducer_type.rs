//! Every built-in reducer on each field type it supports, plus `with = path` with and
//! without `update = Type`; the generated builders and `apply_writes` type-check in use.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use stategraph::Message;
use stategraph::prelude::*;

fn keep_max(current: &mut f64, update: f64) {
    if update > *current {
        *current = update;
    }
}

fn push_char(current: &mut String, c: char) {
    current.push(c);
}

fn count_len(current: &mut usize, items: Vec<String>) {
    *current += items.len();
}

#[derive(GraphState, Clone, Debug, Default)]
struct Everything {
    last: String,
    #[reducer(append)]
    vec: Vec<String>,
    #[reducer(append)]
    deque: VecDeque<u32>,
    #[reducer(add)]
    a_u8: u8,
    #[reducer(add)]
    a_u16: u16,
    #[reducer(add)]
    a_u32: u32,
    #[reducer(add)]
    a_u64: u64,
    #[reducer(add)]
    a_u128: u128,
    #[reducer(add)]
    a_usize: usize,
    #[reducer(add)]
    a_i8: i8,
    #[reducer(add)]
    a_i16: i16,
    #[reducer(add)]
    a_i32: i32,
    #[reducer(add)]
    a_i64: i64,
    #[reducer(add)]
    a_i128: i128,
    #[reducer(add)]
    a_isize: isize,
    #[reducer(add)]
    a_f32: f32,
    #[reducer(add)]
    a_f64: f64,
    #[reducer(merge)]
    btree_map: BTreeMap<String, f64>,
    #[reducer(merge)]
    hash_map: HashMap<String, u32>,
    #[reducer(union)]
    btree_set: BTreeSet<String>,
    #[reducer(union)]
    hash_set: HashSet<u64>,
    #[reducer(messages)]
    chat: Vec<Message>,
    #[reducer(with = keep_max)]
    best: f64,
    #[reducer(with = push_char, update = char)]
    words: String,
    #[reducer(with = count_len, update = Vec<String>)]
    seen: usize,
}

pub fn main() {
    let update = Everything::update()
        .last("topic")
        .vec(["a", "b"])
        .deque([1u32, 2])
        .a_u8(1u8)
        .a_u16(1u16)
        .a_u32(1u32)
        .a_u64(1u64)
        .a_u128(1u128)
        .a_usize(1usize)
        .a_i8(-1i8)
        .a_i16(-1i16)
        .a_i32(-1i32)
        .a_i64(-1i64)
        .a_i128(-1i128)
        .a_isize(-1isize)
        .a_f32(0.5f32)
        .a_f64(0.5f64)
        .btree_map([("x", 1.0)])
        .hash_map([("y".to_string(), 2u32)])
        .btree_set(["s"])
        .hash_set([7u64])
        .chat([Message::user("hi")])
        .best(2.0)
        .words('h')
        .seen(vec!["a".to_string(), "b".to_string()]);
    let second = Everything::update()
        .overwrite_vec(vec!["fresh".to_string()])
        .overwrite_a_u32(10u32)
        .overwrite_best(1.0)
        .overwrite_words("reset");

    let mut state = Everything::default();
    let changes = state
        .apply_writes(vec![Write::new("one", update)])
        .expect("first step applies");
    assert_eq!(changes.len(), Everything::CHANNELS.len());
    state
        .apply_writes(vec![Write::new("two", second)])
        .expect("second step applies");
    assert_eq!(state.vec, ["fresh"]);
    assert_eq!(state.deque, [1, 2]);
    assert_eq!(state.a_u32, 10);
    assert_eq!(state.a_i128, -1);
    assert_eq!(state.btree_map["x"], 1.0);
    assert_eq!(state.hash_map["y"], 2);
    assert!(state.btree_set.contains("s"));
    assert!(state.hash_set.contains(&7));
    assert_eq!(state.chat.len(), 1);
    assert_eq!(state.best, 1.0);
    assert_eq!(state.words, "reset");
    assert_eq!(state.seen, 2);
    assert_eq!(Everything::SEEN.name(), "seen");
}
