//! Semantic search at scale: 1,000 items embedded with the deterministic test
//! embedder (two fields each), and for several queries the store's top-k, with and
//! without a filter, a namespace prefix and an offset, equals a brute-force
//! reference computed here: every item's best-field cosine, sorted by score, then
//! namespace, then key.

use serde_json::{Value, json};
use stategraph::store::{
    Filter, InMemoryStore, IndexConfig, PutOptions, SearchQuery, Store, StoreOp,
};
use stategraph_tests::store_conformance::{HashEmbedder, reference_cosine};

const DIMS: usize = 32;
const ITEMS: usize = 1_000;
const WORDS: [&str; 40] = [
    "apple", "river", "stone", "cloud", "tea", "rain", "paper", "lamp", "tiger", "salt", "violin",
    "snow", "garden", "copper", "mirror", "forest", "engine", "candle", "harbor", "pepper",
    "silver", "window", "desert", "thunder", "marble", "velvet", "orchard", "compass", "lantern",
    "meadow", "glacier", "falcon", "ember", "quartz", "willow", "canyon", "saffron", "beacon",
    "cobalt", "juniper",
];

/// A small deterministic generator (64-bit LCG), so the corpus is the same on
/// every run and platform.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % bound as u64) as usize
    }

    fn sentence(&mut self, min: usize, spread: usize) -> String {
        let n = min + self.next(spread);
        (0..n)
            .map(|_| WORDS[self.next(WORDS.len())])
            .collect::<Vec<_>>()
            .join(" ")
    }
}

struct Doc {
    namespace: Vec<String>,
    key: String,
    value: Value,
    vectors: Vec<Vec<f32>>,
}

fn corpus(embedder: &HashEmbedder) -> Vec<Doc> {
    let mut rng = Lcg(42);
    (0..ITEMS)
        .map(|i| {
            let title = rng.sentence(1, 3);
            let body = rng.sentence(3, 6);
            let team = format!("team{}", i % 4);
            // Every 10th item has no body: it scores by its title alone.
            let value = if i % 10 == 0 {
                json!({"title": title, "category": format!("c{}", i % 5), "rank": i})
            } else {
                json!({"title": title, "body": body, "category": format!("c{}", i % 5), "rank": i})
            };
            let mut vectors = vec![embedder.vector(&title)];
            if i % 10 != 0 {
                vectors.push(embedder.vector(&body));
            }
            Doc {
                namespace: vec!["docs".into(), team],
                key: format!("item-{i:04}"),
                value,
                vectors,
            }
        })
        .collect()
}

/// The brute-force top-k: (namespace, key, score) of every matching doc, best first.
fn reference(
    docs: &[Doc],
    embedder: &HashEmbedder,
    query: &str,
    keep: impl Fn(&Doc) -> bool,
    offset: usize,
    limit: usize,
) -> Vec<(Vec<String>, String, f64)> {
    let q = embedder.vector(query);
    let mut scored: Vec<_> = docs
        .iter()
        .filter(|d| keep(d))
        .map(|d| {
            let best = d
                .vectors
                .iter()
                .map(|v| reference_cosine(&q, v))
                .fold(f64::NEG_INFINITY, f64::max);
            (d.namespace.clone(), d.key.clone(), best)
        })
        .collect();
    scored.sort_by(|a, b| {
        b.2.total_cmp(&a.2)
            .then_with(|| (&a.0, &a.1).cmp(&(&b.0, &b.1)))
    });
    scored.into_iter().skip(offset).take(limit).collect()
}

async fn store_with_corpus(embedder: HashEmbedder, docs: &[Doc]) -> InMemoryStore {
    let index = IndexConfig::new(DIMS, embedder).fields(["title", "body"]);
    let store = InMemoryStore::new().with_index(index);
    for chunk in docs.chunks(100) {
        let ops = chunk
            .iter()
            .map(|d| StoreOp::Put {
                namespace: d.namespace.clone(),
                key: d.key.clone(),
                value: Some(d.value.clone()),
                options: PutOptions::default(),
            })
            .collect();
        store.batch(ops).await.unwrap();
    }
    store
}

fn assert_matches_reference(
    hits: &[stategraph::store::SearchItem],
    want: &[(Vec<String>, String, f64)],
    what: &str,
) {
    let got: Vec<_> = hits
        .iter()
        .map(|h| (h.item.namespace.clone(), h.item.key.clone()))
        .collect();
    let expected: Vec<_> = want
        .iter()
        .map(|(n, k, _)| (n.clone(), k.clone()))
        .collect();
    assert_eq!(got, expected, "{what}");
    for (hit, (_, key, score)) in hits.iter().zip(want) {
        let s = hit.score.expect("ranked hits have scores");
        assert!((s - score).abs() < 1e-12, "{what}: {key} {s} vs {score}");
    }
}

#[tokio::test]
async fn top_k_equals_a_brute_force_reference() {
    let embedder = HashEmbedder::new(DIMS);
    let docs = corpus(&embedder);
    let store = store_with_corpus(embedder, &docs).await;
    assert_eq!(store.len(), ITEMS);

    let queries = [
        "apple river",
        "thunder over the glacier",
        "copper lantern in the harbor",
        "saffron",
        "velvet velvet meadow falcon ember",
        "a query of words the corpus never uses",
    ];
    for query in queries {
        for k in [1, 10, 25] {
            let hits = store
                .search(&["docs"], SearchQuery::new().query(query).limit(k))
                .await
                .unwrap();
            let want = reference(&docs, &embedder, query, |_| true, 0, k);
            assert_eq!(want.len(), k);
            assert_matches_reference(&hits, &want, &format!("{query:?} top {k}"));
        }

        let filter = json!({"category": "c2", "rank": {"$lt": 700}});
        let hits = store
            .search(
                &["docs"],
                SearchQuery::new()
                    .query(query)
                    .filter(Filter::parse(&filter).unwrap())
                    .limit(10),
            )
            .await
            .unwrap();
        let keep = |d: &Doc| d.value["category"] == "c2" && d.value["rank"].as_u64() < Some(700);
        let want = reference(&docs, &embedder, query, keep, 0, 10);
        assert_matches_reference(&hits, &want, &format!("{query:?} filtered"));

        let hits = store
            .search(
                &["docs", "team3"],
                SearchQuery::new().query(query).offset(5).limit(15),
            )
            .await
            .unwrap();
        let want = reference(
            &docs,
            &embedder,
            query,
            |d| d.namespace[1] == "team3",
            5,
            15,
        );
        assert_matches_reference(&hits, &want, &format!("{query:?} team3 page 2"));
    }
}
