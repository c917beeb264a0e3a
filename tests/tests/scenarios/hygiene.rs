//! Generated code must not be affected by user items that share a name with its
//! internal bindings: constants in scope turn `let x`/`|x|`/`fn f(x: ..)` into patterns.
#![allow(non_upper_case_globals, dead_code)]

use stategraph::prelude::*;

const write: u8 = 0;
const writes: u8 = 0;
const writers: u8 = 0;
const update: u8 = 0;
const changes: u8 = 0;
const change: u8 = 0;
const value: u8 = 0;
const index: u8 = 0;
const name: u8 = 0;
const from: u8 = 0;
const delta: u8 = 0;
const current: u8 = 0;
const overwrite: u8 = 0;
const map: u8 = 0;
const entry: u8 = 0;
const tag: u8 = 0;
const items: u8 = 0;
const entries: u8 = 0;
const serializer: u8 = 0;
const deserializer: u8 = 0;
const input: u8 = 0;
const ctx: u8 = 0;
const i: u8 = 0;
const w: u8 = 0;
const u: u8 = 0;
const v: u8 = 0;
const d: u8 = 0;
const f: u8 = 0;

fn keep(current_value: &mut u32, next: u32) {
    *current_value = next;
}

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct S {
    a: u32,
    #[reducer(append)]
    b: Vec<String>,
    #[reducer(merge)]
    c: std::collections::BTreeMap<String, u32>,
    #[reducer(with = keep)]
    e: u32,
    #[channel(untracked)]
    g: u32,
}

#[node]
fn step_one(state: &S, context: &NodeContext) -> SUpdate {
    S::update()
        .a(state.a + 1)
        .b([context.node()])
        .c([("k", 1u32)])
        .e(3u32)
}

#[node]
async fn step_two(state: &S) -> SUpdate {
    S::update().b([format!("{}", state.a)])
}

#[tokio::test]
async fn generated_code_ignores_user_constants_named_like_its_bindings() {
    let graph = StateGraph::<S>::new()
        .add_node(step_one)
        .add_node(step_two)
        .add_edge(START, step_one)
        .add_edge(step_one, step_two)
        .compile()
        .unwrap();
    let out = graph
        .invoke(S::update().g(1u32), &RunConfig::new())
        .await
        .unwrap();
    assert_eq!(out.values.b, ["step_one", "1"]);
    assert_eq!(out.values.e, 3);
    let json = serde_json::to_value(S::update().b(["x"])).unwrap();
    let back: SUpdate = serde_json::from_value(json).unwrap();
    assert!(back.b.is_some());
    let mut s = S::default();
    for channel in S::CHANNELS {
        if let Some(encoded) = out.values.encode_channel(channel.index).unwrap() {
            s.decode_channel(channel.index, encoded).unwrap();
        }
    }
    assert_eq!(s.b, out.values.b);
    assert!(s.encode_channel_since(S::B.index(), 1).is_ok());
    assert_eq!(
        format!("{:?}", S::update().g(2u32)),
        "SUpdate { g: <untracked> }"
    );
}
