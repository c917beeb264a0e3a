//! Micro-benchmarks of the runtime's hot paths: applying a superstep's writes,
//! one superstep end to end (planning the next frontier from edges, a router and
//! `Send`s), encoding and decoding a checkpoint, and a `GraphState` with 50 fields.
//!
//! `cargo bench -p stategraph-bench` (add `-- GROUP` to run one group).

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use stategraph::checkpoint::{Checkpoint, CheckpointConfig, CheckpointSaver, InMemorySaver};
use stategraph::prelude::*;
use stategraph_bench::{CounterState, FanState, chain, fanout, router_loop};

#[derive(GraphState, Clone, Debug, Default)]
struct Big {
    counter: u64,
    #[reducer(append)]
    items: Vec<String>,
}

/// 50 channels: last-value integers and strings, `append` lists and `add` counters.
#[derive(GraphState, Clone, Debug, Default)]
struct Wide {
    #[reducer(append)]
    f00: Vec<u64>,
    #[reducer(add)]
    f01: u64,
    f02: String,
    f03: u64,
    f04: u64,
    #[reducer(append)]
    f05: Vec<u64>,
    #[reducer(add)]
    f06: u64,
    f07: String,
    f08: u64,
    f09: u64,
    #[reducer(append)]
    f10: Vec<u64>,
    #[reducer(add)]
    f11: u64,
    f12: String,
    f13: u64,
    f14: u64,
    #[reducer(append)]
    f15: Vec<u64>,
    #[reducer(add)]
    f16: u64,
    f17: String,
    f18: u64,
    f19: u64,
    #[reducer(append)]
    f20: Vec<u64>,
    #[reducer(add)]
    f21: u64,
    f22: String,
    f23: u64,
    f24: u64,
    #[reducer(append)]
    f25: Vec<u64>,
    #[reducer(add)]
    f26: u64,
    f27: String,
    f28: u64,
    f29: u64,
    #[reducer(append)]
    f30: Vec<u64>,
    #[reducer(add)]
    f31: u64,
    f32: String,
    f33: u64,
    f34: u64,
    #[reducer(append)]
    f35: Vec<u64>,
    #[reducer(add)]
    f36: u64,
    f37: String,
    f38: u64,
    f39: u64,
    #[reducer(append)]
    f40: Vec<u64>,
    #[reducer(add)]
    f41: u64,
    f42: String,
    f43: u64,
    f44: u64,
    #[reducer(append)]
    f45: Vec<u64>,
    #[reducer(add)]
    f46: u64,
    f47: String,
    f48: u64,
    f49: u64,
}

fn wide_update_all() -> WideUpdate {
    Wide::update()
        .f00([1u64])
        .f01(1u64)
        .f02("v")
        .f03(1u64)
        .f04(1u64)
        .f05([1u64])
        .f06(1u64)
        .f07("v")
        .f08(1u64)
        .f09(1u64)
        .f10([1u64])
        .f11(1u64)
        .f12("v")
        .f13(1u64)
        .f14(1u64)
        .f15([1u64])
        .f16(1u64)
        .f17("v")
        .f18(1u64)
        .f19(1u64)
        .f20([1u64])
        .f21(1u64)
        .f22("v")
        .f23(1u64)
        .f24(1u64)
        .f25([1u64])
        .f26(1u64)
        .f27("v")
        .f28(1u64)
        .f29(1u64)
        .f30([1u64])
        .f31(1u64)
        .f32("v")
        .f33(1u64)
        .f34(1u64)
        .f35([1u64])
        .f36(1u64)
        .f37("v")
        .f38(1u64)
        .f39(1u64)
        .f40([1u64])
        .f41(1u64)
        .f42("v")
        .f43(1u64)
        .f44(1u64)
        .f45([1u64])
        .f46(1u64)
        .f47("v")
        .f48(1u64)
        .f49(1u64)
}

fn wide_update_per_field() -> Vec<WideUpdate> {
    vec![
        Wide::update().f00([1u64]),
        Wide::update().f01(1u64),
        Wide::update().f02("v"),
        Wide::update().f03(1u64),
        Wide::update().f04(1u64),
        Wide::update().f05([1u64]),
        Wide::update().f06(1u64),
        Wide::update().f07("v"),
        Wide::update().f08(1u64),
        Wide::update().f09(1u64),
        Wide::update().f10([1u64]),
        Wide::update().f11(1u64),
        Wide::update().f12("v"),
        Wide::update().f13(1u64),
        Wide::update().f14(1u64),
        Wide::update().f15([1u64]),
        Wide::update().f16(1u64),
        Wide::update().f17("v"),
        Wide::update().f18(1u64),
        Wide::update().f19(1u64),
        Wide::update().f20([1u64]),
        Wide::update().f21(1u64),
        Wide::update().f22("v"),
        Wide::update().f23(1u64),
        Wide::update().f24(1u64),
        Wide::update().f25([1u64]),
        Wide::update().f26(1u64),
        Wide::update().f27("v"),
        Wide::update().f28(1u64),
        Wide::update().f29(1u64),
        Wide::update().f30([1u64]),
        Wide::update().f31(1u64),
        Wide::update().f32("v"),
        Wide::update().f33(1u64),
        Wide::update().f34(1u64),
        Wide::update().f35([1u64]),
        Wide::update().f36(1u64),
        Wide::update().f37("v"),
        Wide::update().f38(1u64),
        Wide::update().f39(1u64),
        Wide::update().f40([1u64]),
        Wide::update().f41(1u64),
        Wide::update().f42("v"),
        Wide::update().f43(1u64),
        Wide::update().f44(1u64),
        Wide::update().f45([1u64]),
        Wide::update().f46(1u64),
        Wide::update().f47("v"),
        Wide::update().f48(1u64),
        Wide::update().f49(1u64),
    ]
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn apply_writes(c: &mut Criterion) {
    let mut g = c.benchmark_group("apply_writes");
    g.bench_function("last_value_1_write", |b| {
        b.iter_batched(
            CounterState::default,
            |mut s| {
                let w = vec![Write::new("n0", CounterState::update().counter(1u64))];
                black_box(s.apply_writes(w).expect("valid"));
                s
            },
            BatchSize::SmallInput,
        );
    });
    g.bench_function("append_1000_writers", |b| {
        b.iter_batched(
            || {
                let writes: Vec<_> = (0..1000u64)
                    .map(|i| Write::new("worker", FanState::update().results([i * 2])))
                    .collect();
                (FanState::default(), writes)
            },
            |(mut s, w)| {
                black_box(s.apply_writes(w).expect("valid"));
                s
            },
            BatchSize::SmallInput,
        );
    });
    g.bench_function("wide50_1_writer_all_fields", |b| {
        b.iter_batched(
            || (Wide::default(), vec![Write::new("all", wide_update_all())]),
            |(mut s, w)| {
                black_box(s.apply_writes(w).expect("valid"));
                s
            },
            BatchSize::SmallInput,
        );
    });
    g.bench_function("wide50_50_writers_1_field_each", |b| {
        b.iter_batched(
            || {
                let w: Vec<_> = wide_update_per_field()
                    .into_iter()
                    .enumerate()
                    .map(|(i, u)| Write::new(format!("n{i}"), u))
                    .collect();
                (Wide::default(), w)
            },
            |(mut s, w)| {
                black_box(s.apply_writes(w).expect("valid"));
                s
            },
            BatchSize::SmallInput,
        );
    });
    g.finish();
}

/// The frontier is planned inside the run loop, so it is measured through whole
/// supersteps: a plain edge, a router looping back, and a router emitting 1 000 Sends.
fn superstep(c: &mut Criterion) {
    let rt = rt();
    let mut g = c.benchmark_group("superstep");

    let chain = chain(100, CompileOptions::new()).expect("compiles");
    g.bench_function("chain100_invoke", |b| {
        b.iter(|| {
            let out = rt
                .block_on(chain.invoke(CounterState::update().counter(0u64), &RunConfig::new()))
                .expect("runs");
            assert_eq!(out.values.counter, 100);
        });
    });

    let lp = router_loop(100).expect("compiles");
    g.bench_function("router_loop100_invoke", |b| {
        b.iter(|| {
            let out = rt
                .block_on(lp.invoke(CounterState::update().counter(0u64), &RunConfig::new()))
                .expect("runs");
            assert_eq!(out.values.counter, 100);
        });
    });

    let fan = fanout().expect("compiles");
    g.sample_size(20);
    g.bench_function("fanout1000_invoke", |b| {
        b.iter(|| {
            let out = rt
                .block_on(fan.invoke(FanState::update().n(1000u64), &RunConfig::new()))
                .expect("runs");
            assert_eq!(out.values.total, 999_000);
        });
    });
    g.finish();
}

/// A checkpoint as the runtime stores it, read back from an in-memory saver.
fn stored_checkpoint<S: GraphState>(
    rt: &tokio::runtime::Runtime,
    graph: impl FnOnce(CompileOptions) -> CompiledGraph<S>,
    input: impl Into<stategraph::RunInput<S>>,
) -> (Checkpoint, CompiledGraph<S>) {
    let saver = Arc::new(InMemorySaver::new());
    let graph = graph(CompileOptions::new().shared_checkpointer(saver.clone()));
    rt.block_on(graph.invoke(input, &RunConfig::new().thread("t")))
        .expect("runs");
    let tuple = rt
        .block_on(saver.get_tuple(&CheckpointConfig::thread("t")))
        .expect("reads")
        .expect("saved");
    (tuple.checkpoint, graph)
}

fn checkpoint_codec(c: &mut Criterion) {
    let rt = rt();
    let mut g = c.benchmark_group("checkpoint");

    // The checkpoint after step 999 of `state_big`: counter whole, items as a delta.
    let (big, big_graph) = stored_checkpoint(
        &rt,
        |opts| {
            let mut g = StateGraph::<Big>::new();
            let append = g.add_node_fn("append", |s: &Big| {
                Big::update()
                    .counter(s.counter + 1)
                    .items(["x".repeat(1024)])
            });
            let target = append.clone();
            g.add_edge(START, &append).add_conditional_edges(
                &append,
                move |s: &Big| {
                    if s.counter >= 1000 {
                        Route::end()
                    } else {
                        Route::to(&target)
                    }
                },
                (&append, END),
            );
            g.compile_with(opts).expect("compiles")
        },
        Big::update(),
    );
    let bytes = serde_json::to_vec(&big).expect("encodes");
    g.bench_function("state_big_last_encode", |b| {
        b.iter(|| serde_json::to_vec(black_box(&big)).expect("encodes"));
    });
    g.bench_function("state_big_last_decode", |b| {
        b.iter(|| serde_json::from_slice::<Checkpoint>(black_box(&bytes)).expect("decodes"));
    });
    let thread = RunConfig::new().thread("t");
    g.sample_size(20);
    g.bench_function("state_big_restore_latest", |b| {
        b.iter(|| {
            let s = rt
                .block_on(big_graph.get_state(&thread))
                .expect("restores")
                .expect("saved");
            assert_eq!(s.values.items.len(), 1000);
        });
    });
    g.sample_size(100);

    // A checkpoint of the 50-field state after every field was written.
    let (wide, _) = stored_checkpoint(
        &rt,
        |opts| {
            let mut g = StateGraph::<Wide>::new();
            let n = g.add_node_fn("all", |_: &Wide| wide_update_all());
            g.add_edge(START, &n).add_edge(&n, END);
            g.compile_with(opts).expect("compiles")
        },
        Wide::update(),
    );
    let bytes = serde_json::to_vec(&wide).expect("encodes");
    g.bench_function("wide50_encode", |b| {
        b.iter(|| serde_json::to_vec(black_box(&wide)).expect("encodes"));
    });
    g.bench_function("wide50_decode", |b| {
        b.iter(|| serde_json::from_slice::<Checkpoint>(black_box(&bytes)).expect("decodes"));
    });
    g.finish();
}

fn wide_state(c: &mut Criterion) {
    let mut g = c.benchmark_group("wide50");
    let mut state = Wide::default();
    state
        .apply_writes(vec![Write::new("all", wide_update_all())])
        .expect("valid");
    g.bench_function("clone", |b| b.iter(|| black_box(&state).clone()));
    g.bench_function("encode_all_channels", |b| {
        b.iter(|| {
            let s = black_box(&state);
            (0..Wide::CHANNELS.len())
                .map(|i| s.encode_channel(i).expect("encodes"))
                .collect::<Vec<_>>()
        });
    });
    let values: Vec<_> = (0..Wide::CHANNELS.len())
        .map(|i| state.encode_channel(i).expect("encodes").expect("tracked"))
        .collect();
    g.bench_function("decode_all_channels", |b| {
        b.iter_batched(
            || values.clone(),
            |values| {
                let mut s = Wide::default();
                for (i, v) in values.into_iter().enumerate() {
                    s.decode_channel(i, v).expect("decodes");
                }
                s
            },
            BatchSize::SmallInput,
        );
    });
    let update = wide_update_all();
    g.bench_function("encode_update", |b| {
        b.iter(|| Wide::encode_update(black_box(&update)).expect("encodes"));
    });
    let encoded = Wide::encode_update(&update).expect("encodes");
    g.bench_function("decode_update", |b| {
        b.iter_batched(
            || encoded.clone(),
            |v| Wide::decode_update(v).expect("decodes"),
            BatchSize::SmallInput,
        );
    });
    g.finish();
}

criterion_group!(
    benches,
    apply_writes,
    superstep,
    checkpoint_codec,
    wide_state
);
criterion_main!(benches);
