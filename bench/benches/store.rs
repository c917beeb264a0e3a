//! The SQLite store at 10,000 and 100,000 items: a single put and a batch of 100
//! puts into the filled store, a filtered search and a semantic search (exact scan
//! of 128-dimensional vectors) over every item.
//!
//! `cargo bench -p stategraph-bench --bench store` (add `-- --quick` for a shorter
//! run). The databases are temporary files, removed at the end.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use futures::executor::block_on;
use serde_json::json;
use stategraph::BoxFuture;
use stategraph::store::{
    Embed, Filter, IndexConfig, PutOptions, SearchQuery, Store, StoreError, StoreOp,
};
use stategraph_sqlite::{SqliteOptions, SqliteStore, Synchronous};

/// Dimensions of the vectors (small embedding models use 128–384).
const DIMS: usize = 128;
/// The store sizes measured.
const SIZES: [usize; 2] = [10_000, 100_000];
/// Items per batch when filling and in the batched put.
const BATCH: usize = 100;

/// A deterministic embedder: each word adds a pseudo-random unit vector, so texts
/// sharing words point the same way. Cheap, so the store's own cost is measured.
struct WordHash;

fn word_vector(word: &str, out: &mut [f32]) {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in word.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    for x in out.iter_mut() {
        h ^= h << 13;
        h ^= h >> 7;
        h ^= h << 17;
        *x += (h % 2001) as f32 / 1000.0 - 1.0;
    }
}

impl Embed for WordHash {
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, StoreError>> {
        Box::pin(async move {
            Ok(texts
                .iter()
                .map(|text| {
                    let mut v = vec![0.0; DIMS];
                    for word in text.split_whitespace() {
                        word_vector(word, &mut v);
                    }
                    v
                })
                .collect())
        })
    }
}

const TOPICS: [&str; 8] = [
    "billing", "shipping", "returns", "login", "privacy", "pricing", "support", "bugs",
];

/// The `i`th item: a short note about a topic, with fields to filter on.
fn item(i: usize) -> (Vec<String>, String, serde_json::Value) {
    let topic = TOPICS[i % TOPICS.len()];
    let user = format!("u{}", i % 500);
    (
        vec!["users".to_string(), user],
        format!("note-{i}"),
        json!({
            "topic": topic,
            "priority": i % 5,
            "text": format!("customer asked about {topic} issue number {i} and was answered"),
        }),
    )
}

fn put(i: usize) -> StoreOp {
    let (namespace, key, value) = item(i);
    StoreOp::Put {
        namespace,
        key,
        value: Some(value),
        options: PutOptions::default(),
    }
}

/// A store in a temporary file holding `n` items.
fn filled(n: usize) -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    // `Normal`: durable across a crash of the process, flushed at checkpoints; the
    // default `Full` measures the disk's flush time more than the store.
    let options = SqliteOptions::new().synchronous(Synchronous::Normal);
    let store = SqliteStore::open_with(dir.path().join("store.db"), options)
        .expect("open the store")
        .with_index(IndexConfig::new(DIMS, WordHash).fields(["text"]));
    for start in (0..n).step_by(1000) {
        let ops = (start..(start + 1000).min(n)).map(put).collect();
        block_on(store.batch(ops)).expect("fill the store");
    }
    (dir, store)
}

fn store_benches(c: &mut Criterion) {
    for n in SIZES {
        let (dir, store) = filled(n);
        let mut g = c.benchmark_group(format!("store_sqlite_{}k", n / 1000));
        g.sample_size(10);
        g.measurement_time(Duration::from_secs(5));
        let mut next = n;
        g.bench_function(BenchmarkId::new("put", "single"), |b| {
            b.iter(|| {
                next += 1;
                block_on(store.batch(vec![put(next)])).expect("put");
            });
        });
        g.bench_function(BenchmarkId::new("put", "batch_100"), |b| {
            b.iter(|| {
                let ops = (next..next + BATCH).map(put).collect();
                next += BATCH;
                block_on(store.batch(ops)).expect("put a batch");
            });
        });
        let filter =
            Filter::parse(&json!({"topic": "returns", "priority": {"$gte": 3}})).expect("a filter");
        g.bench_function(BenchmarkId::new("search", "filter"), |b| {
            b.iter(|| {
                let query = SearchQuery::new().filter(filter.clone()).limit(10);
                black_box(block_on(store.search(&["users"], query)).expect("search"));
            });
        });
        g.bench_function(BenchmarkId::new("search", "semantic"), |b| {
            b.iter(|| {
                let query = SearchQuery::new()
                    .query("refund for a returned parcel")
                    .limit(10);
                black_box(block_on(store.search(&["users"], query)).expect("search"));
            });
        });
        g.bench_function(BenchmarkId::new("search", "one_namespace"), |b| {
            b.iter(|| {
                let query = SearchQuery::new().limit(10);
                black_box(block_on(store.search(&["users", "u7"], query)).expect("search"));
            });
        });
        g.finish();
        drop(store);
        drop(dir);
    }
}

criterion_group!(benches, store_benches);
criterion_main!(benches);
