//! Decoder fuzz: real serialized checkpoints (from a run, with `Send` payloads, joins
//! and delta channels) are mutated — random bytes, truncation, inserted garbage,
//! structural JSON edits — and fully random bytes are fed too. Decoding never panics;
//! whatever decodes, stored in a fresh `InMemorySaver`, makes `get_state`,
//! `get_state_history` and `invoke(None)` return `Ok` or a clean `Err`, never panic.

use std::cell::Cell;
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use stategraph::checkpoint::{
    Checkpoint, CheckpointConfig, CheckpointMetadata, CheckpointSaver, CheckpointSource,
    InMemorySaver, ListOptions,
};
use stategraph::prelude::*;
use stategraph_tests::rows::{count_nodes, replace_nth};

#[derive(GraphState, Clone, Debug, Default, PartialEq)]
struct Fz {
    #[reducer(append)]
    trace: Vec<String>,
    #[reducer(add)]
    total: u64,
    label: String,
    items: Vec<Job>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Job {
    id: u32,
    name: String,
}

#[node]
fn plan(s: &Fz) -> FzUpdate {
    Fz::update().trace([format!("plan:{}", s.label)])
}

#[node]
fn side(_s: &Fz) -> FzUpdate {
    Fz::update().trace(["side".to_string()]).total(1)
}

#[node]
fn worker(job: &Job) -> FzUpdate {
    Fz::update()
        .trace([format!("worker:{}", job.name)])
        .total(u64::from(job.id))
}

#[node]
fn join(_s: &Fz) -> FzUpdate {
    Fz::update().trace(["join".to_string()])
}

fn graph(saver: Arc<InMemorySaver>) -> CompiledGraph<Fz> {
    StateGraph::<Fz>::new()
        .add_node(plan)
        .add_node(side)
        .add_node(worker)
        .add_node(join)
        .add_edge(START, plan)
        .add_edge(START, side)
        .add_conditional_edges(
            plan,
            |s: &Fz| {
                Route::sends(
                    s.items
                        .iter()
                        .map(|j| stategraph::Send::new(worker, j.clone()))
                        .collect::<Vec<_>>(),
                )
            },
            [worker],
        )
        .add_edge([plan, side], join)
        .compile_with(CompileOptions::new().shared_checkpointer(saver))
        .unwrap()
}

/// Rewrites `cp` so it carries every channel value itself (whole values), so it
/// restores from a saver holding nothing else.
fn self_contained(cp: &Checkpoint, values: &Fz) -> Checkpoint {
    let mut cp = cp.clone();
    cp.channel_values.clear();
    cp.channel_bases.clear();
    for info in Fz::CHANNELS {
        if let Some(&version) = cp.channel_versions.get(info.name) {
            let value = values.encode_channel(info.index).unwrap().unwrap();
            cp.channel_values.insert(
                info.name.to_string(),
                stategraph::checkpoint::StoredValue::Full(value),
            );
            if info.delta {
                cp.channel_bases.insert(info.name.to_string(), version);
            }
        }
    }
    cp
}

/// Serialized checkpoints of a real run: the input checkpoint, and the checkpoint
/// after step 0 (three `Send` tasks and `join` planned, a join barrier half done),
/// both made self-contained.
async fn seeds() -> Vec<Vec<u8>> {
    let saver = Arc::new(InMemorySaver::new());
    let g = graph(saver.clone());
    let cfg = RunConfig::new().thread("seed");
    let jobs: Vec<Job> = (1..=3)
        .map(|id| Job {
            id,
            name: format!("job-{id}"),
        })
        .collect();
    g.invoke(Fz::update().label("L").items(jobs).total(7), &cfg)
        .await
        .unwrap();
    let history = saver
        .list(&CheckpointConfig::thread("seed"), &ListOptions::new())
        .await
        .unwrap();
    let mut out = Vec::new();
    for t in history.iter().rev().take(2) {
        let at = RunConfig::new()
            .thread("seed")
            .checkpoint(t.checkpoint.id.clone());
        let values = g.get_state(&at).await.unwrap().unwrap().values;
        out.push(serde_json::to_vec(&self_contained(&t.checkpoint, &values)).unwrap());
    }
    let step0: Checkpoint = serde_json::from_slice(&out[1]).unwrap();
    assert_eq!(step0.next.len(), 4, "{:?}", step0.next);
    assert!(step0.next.iter().any(|t| t.payload.is_some()));
    out
}

/// A mutation of a serialized checkpoint.
#[derive(Clone, Debug)]
enum Mutation {
    /// Overwrite bytes (positions taken modulo the length).
    Bytes(Vec<(usize, u8)>),
    /// Keep only a prefix.
    Truncate(usize),
    /// Insert garbage at a position.
    Insert(usize, Vec<u8>),
    /// Remove a range.
    Remove(usize, usize),
    /// Replace the n-th JSON node (pre-order, modulo the node count) with a value.
    Replace(usize, Value),
    /// Rename the n-th object key.
    RenameKey(usize, String),
}

fn interesting() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        Just(json!(true)),
        Just(json!(0)),
        Just(json!(1)),
        Just(json!(-1)),
        Just(json!(2)),
        Just(json!(u64::MAX)),
        Just(json!(u64::MAX - 1)),
        Just(json!(i64::MAX)),
        Just(json!(i64::MIN)),
        Just(json!(u32::MAX)),
        Just(json!(1e308)),
        Just(json!(0.5)),
        Just(json!("")),
        Just(json!("ghost")),
        Just(json!("worker")),
        Just(json!("plan")),
        Just(json!("trace")),
        Just(json!([])),
        Just(json!({})),
        Just(json!([1, 2, 3])),
        Just(json!({"kind": "append", "value": ["x"]})),
        Just(json!({"kind": "full", "value": null})),
        Just(json!({"node": "worker", "payload": {"id": 1, "name": "x"}})),
        Just(json!({"node": "worker"})),
        Just(json!({"node": "join"})),
        any::<i64>().prop_map(Value::from),
        "[a-z_]{0,8}".prop_map(Value::from),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        prop::collection::vec((any::<usize>(), any::<u8>()), 1..8).prop_map(Mutation::Bytes),
        any::<usize>().prop_map(Mutation::Truncate),
        (
            any::<usize>(),
            prop_oneof![
                prop::collection::vec(any::<u8>(), 1..16),
                prop::sample::select(vec![
                    b"9".to_vec(),
                    b"-".to_vec(),
                    b"\"".to_vec(),
                    b"99999999999999999999".to_vec(),
                    b"null,".to_vec(),
                    b"{}".to_vec(),
                    b"[".to_vec(),
                    b"\\u0000".to_vec(),
                ]),
            ]
        )
            .prop_map(|(at, bytes)| Mutation::Insert(at, bytes)),
        (any::<usize>(), 1..32usize).prop_map(|(at, n)| Mutation::Remove(at, n)),
        (any::<usize>(), interesting()).prop_map(|(n, v)| Mutation::Replace(n, v)),
        (
            any::<usize>(),
            prop::sample::select(vec![
                "v", "id", "kind", "value", "node", "payload", "trace", "total", "label", "items",
                "ghost", "",
            ])
        )
            .prop_map(|(n, k)| Mutation::RenameKey(n, k.to_string())),
    ]
}

fn keys(v: &Value) -> usize {
    match v {
        Value::Array(a) => a.iter().map(keys).sum(),
        Value::Object(o) => o.len() + o.values().map(keys).sum::<usize>(),
        _ => 0,
    }
}

fn rename_nth(v: &mut Value, n: &mut usize, to: &str) -> bool {
    match v {
        Value::Array(a) => a.iter_mut().any(|c| rename_nth(c, n, to)),
        Value::Object(o) => {
            if *n < o.len() {
                let key = o.keys().nth(*n).unwrap().clone();
                let value = o.remove(&key).unwrap();
                o.insert(to.to_string(), value);
                return true;
            }
            *n -= o.len();
            o.values_mut().any(|c| rename_nth(c, n, to))
        }
        _ => false,
    }
}

fn apply(seed: &[u8], m: &Mutation) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    let len = bytes.len().max(1);
    match m {
        Mutation::Bytes(edits) => {
            for &(at, b) in edits {
                let at = at % len;
                if at < bytes.len() {
                    bytes[at] = b;
                }
            }
        }
        Mutation::Truncate(at) => bytes.truncate(at % len),
        Mutation::Insert(at, garbage) => {
            let at = at % (bytes.len() + 1);
            bytes.splice(at..at, garbage.iter().copied());
        }
        Mutation::Remove(at, n) => {
            let at = at % len;
            let end = (at + n).min(bytes.len());
            bytes.drain(at.min(end)..end);
        }
        Mutation::Replace(n, with) => {
            let mut v: Value = serde_json::from_slice(seed).unwrap();
            let mut n = n % count_nodes(&v);
            replace_nth(&mut v, &mut n, with);
            bytes = serde_json::to_vec(&v).unwrap();
        }
        Mutation::RenameKey(n, to) => {
            let mut v: Value = serde_json::from_slice(seed).unwrap();
            let total = keys(&v).max(1);
            let mut n = n % total;
            rename_nth(&mut v, &mut n, to);
            bytes = serde_json::to_vec(&v).unwrap();
        }
    }
    bytes
}

/// Decodes `bytes`; if they are a checkpoint, loads and continues it. Panics only if
/// the runtime panics (or an error fails to display).
async fn exercise(bytes: &[u8], metadata: CheckpointMetadata) -> Option<bool> {
    let cp = serde_json::from_slice::<Checkpoint>(bytes).ok()?;
    let saver = Arc::new(InMemorySaver::new());
    let id = cp.id.clone();
    saver
        .put(&CheckpointConfig::thread("fz"), cp, metadata)
        .await
        .unwrap();
    let g = graph(saver);
    let cfg = RunConfig::new().thread("fz").recursion_limit(25);
    let mut all_ok = true;
    let mut check = |r: Result<(), RunError>| {
        if let Err(e) = r {
            assert!(!e.to_string().is_empty());
            all_ok = false;
        }
    };
    check(g.get_state(&cfg).await.map(drop));
    check(
        g.get_state(&cfg.clone().checkpoint(id.clone()))
            .await
            .map(drop),
    );
    check(
        g.get_state_history(&cfg, &ListOptions::new())
            .await
            .map(drop),
    );
    check(g.invoke(None, &cfg.clone().checkpoint(id)).await.map(drop));
    check(g.invoke(None, &cfg).await.map(drop));
    check(g.invoke(Fz::update().label("again"), &cfg).await.map(drop));
    Some(all_ok)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    })
}

fn loop_metadata() -> CheckpointMetadata {
    CheckpointMetadata::new(CheckpointSource::Loop, 0)
}

#[test]
fn the_unmutated_seeds_load_and_continue() {
    let rt = runtime();
    let seeds = rt.block_on(seeds());
    for (i, seed) in seeds.iter().enumerate() {
        let step = if i == 0 { -1 } else { 0 };
        let meta = CheckpointMetadata::new(CheckpointSource::Loop, step);
        assert_eq!(
            rt.block_on(exercise(seed, meta)),
            Some(true),
            "seed {i} must load and run"
        );
    }
}

#[test]
fn mutated_checkpoints_never_panic_the_decoder_or_the_runtime() {
    let rt = runtime();
    let seeds = rt.block_on(seeds());
    let decoded = Cell::new(0usize);
    let total = Cell::new(0usize);
    runner(1024)
        .run(&(0..seeds.len(), mutation()), |(seed, m)| {
            let bytes = apply(&seeds[seed], &m);
            total.set(total.get() + 1);
            if rt.block_on(exercise(&bytes, loop_metadata())).is_some() {
                decoded.set(decoded.get() + 1);
            }
            Ok(())
        })
        .unwrap();
    let (decoded, total) = (decoded.get(), total.get());
    println!("mutated checkpoints: {decoded} of {total} decoded and were exercised");
    // The structural mutations keep many documents decodable: the runtime was reached.
    assert!(decoded > total / 10, "{decoded} of {total}");
}

#[test]
fn random_bytes_never_panic_the_decoder() {
    let rt = runtime();
    runner(256)
        .run(&prop::collection::vec(any::<u8>(), 0..600), |bytes| {
            rt.block_on(exercise(&bytes, loop_metadata()));
            Ok(())
        })
        .unwrap();
}

#[test]
fn any_metadata_step_never_panics() {
    // The step comes from stored metadata: a corrupt value must be a clean outcome too.
    let rt = runtime();
    let seeds = rt.block_on(seeds());
    let steps = prop_oneof![
        Just(i64::MAX),
        Just(i64::MAX - 1),
        Just(i64::MIN),
        Just(-2i64),
        any::<i64>()
    ];
    runner(64)
        .run(&(0..seeds.len(), steps), |(seed, step)| {
            let meta = CheckpointMetadata::new(CheckpointSource::Loop, step);
            rt.block_on(exercise(&seeds[seed], meta));
            Ok(())
        })
        .unwrap();
}

#[test]
fn extreme_channel_versions_never_panic() {
    // Deterministic companions of the fuzz: every stored channel version set to an
    // extreme value, one channel at a time, then load and continue.
    let rt = runtime();
    let seeds = rt.block_on(seeds());
    for (i, seed) in seeds.iter().enumerate() {
        let cp: Checkpoint = serde_json::from_slice(seed).unwrap();
        for channel in cp.channel_versions.keys() {
            for version in [0, u64::MAX - 1, u64::MAX] {
                let mut bad = cp.clone();
                bad.channel_versions.insert(channel.clone(), version);
                if let Some(b) = bad.channel_bases.get_mut(channel) {
                    *b = version;
                }
                let bytes = serde_json::to_vec(&bad).unwrap();
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    rt.block_on(exercise(&bytes, loop_metadata()))
                }));
                assert!(
                    outcome.is_ok(),
                    "seed {i}: channel `{channel}` at version {version} panicked"
                );
            }
        }
    }
}
