//! Checks of semantic search: ranking equals a brute-force reference over the test
//! embedder, per-put index fields, the wrong-dimension error, and a query on a store
//! without an index.

use serde_json::json;
use stategraph::store::{
    Filter, IndexFields, PutOptions, SearchItem, SearchQuery, StoreError, StoreOp, TtlConfig,
};

use super::{
    HashEmbedder, MakeStore, StoreSetup, TEST_DIMS, WRONG_DIMS_MARKER, keys, ns, reference_cosine,
};

const WORDS: [&str; 12] = [
    "apple", "river", "stone", "cloud", "tea", "rain", "paper", "lamp", "tiger", "salt", "violin",
    "snow",
];

/// (namespace, key, score) of a hit.
type Ranked = (Vec<String>, String, Option<f64>);
/// (namespace, key, kind, reference score) of a document.
type Doc = (Vec<String>, String, &'static str, f64);

/// (namespace, key) of hits, in order, with their scores.
fn ranked(hits: &[SearchItem]) -> Vec<Ranked> {
    hits.iter()
        .map(|h| (h.item.namespace.clone(), h.item.key.clone(), h.score))
        .collect()
}

fn assert_same_ranking(got: &[Ranked], want: &[Ranked], what: &str) {
    let addresses = |v: &[Ranked]| {
        v.iter()
            .map(|(n, k, _)| (n.clone(), k.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(addresses(got), addresses(want), "{what}");
    for ((_, key, g), (_, _, w)) in got.iter().zip(want) {
        let (g, w) = (g.expect("a ranked hit has a score"), w.unwrap_or(f64::NAN));
        assert!(
            (g - w).abs() < 1e-9,
            "{what}: {key} scored {g}, reference {w}"
        );
    }
}

/// Query ranking equals a brute-force reference (cosine over the test embedder's
/// vectors, ties by namespace then key), with and without a filter and a prefix,
/// with `limit`/`offset` applied after ranking.
pub async fn semantic_ranking(make: &MakeStore) {
    let store = make(StoreSetup::standard()).await;
    let embedder = HashEmbedder::new(TEST_DIMS);
    let mut docs = Vec::new();
    let mut ops = Vec::new();
    for i in 0..40usize {
        let text = format!(
            "{} {} {}",
            WORDS[(i * 7) % 12],
            WORDS[(i * 5 + 3) % 12],
            WORDS[(i * 3 + 1) % 12]
        );
        let space = ns(&["sem", if i % 2 == 0 { "a" } else { "b" }]);
        let key = format!("doc{i:02}");
        let kind = ["x", "y", "z"][i % 3];
        ops.push(StoreOp::Put {
            namespace: space.clone(),
            key: key.clone(),
            value: Some(json!({"text": text, "kind": kind})),
            options: PutOptions::default(),
        });
        docs.push((space, key, kind, embedder.vector(&text)));
    }
    store.batch(ops).await.unwrap();

    for query in [
        "apple river",
        "stone",
        "cloud apple apple",
        "tiger snow salt",
        "!!!",
    ] {
        let q = embedder.vector(query);
        let mut reference: Vec<Doc> = docs
            .iter()
            .map(|(space, key, kind, v)| {
                (space.clone(), key.clone(), *kind, reference_cosine(&q, v))
            })
            .collect();
        reference.sort_by(|a, b| {
            b.3.total_cmp(&a.3)
                .then_with(|| (&a.0, &a.1).cmp(&(&b.0, &b.1)))
        });
        let want = |keep: &dyn Fn(&Doc) -> bool, offset: usize, limit: usize| {
            reference
                .iter()
                .filter(|r| keep(r))
                .skip(offset)
                .take(limit)
                .map(|(n, k, _, s)| (n.clone(), k.clone(), Some(*s)))
                .collect::<Vec<_>>()
        };

        let top = store
            .search(&["sem"], SearchQuery::new().query(query).limit(5))
            .await
            .unwrap();
        assert_same_ranking(&ranked(&top), &want(&|_| true, 0, 5), query);

        let page = store
            .search(&["sem"], SearchQuery::new().query(query).offset(3).limit(4))
            .await
            .unwrap();
        assert_same_ranking(&ranked(&page), &want(&|_| true, 3, 4), query);

        let filter = Filter::parse(&json!({"kind": {"$in": ["x", "z"]}})).unwrap();
        let filtered = store
            .search(
                &["sem", "a"],
                SearchQuery::new().query(query).filter(filter).limit(6),
            )
            .await
            .unwrap();
        let keep = |r: &Doc| r.0[1] == "a" && r.2 != "y";
        assert_same_ranking(&ranked(&filtered), &want(&keep, 0, 6), query);
    }
}

/// Which fields are embedded: the configured ones, none (`Skip`: found by plain
/// searches, unscored and last in ranked ones), or a put's own paths (an item
/// scores as its best field); an overwrite embeds the new value.
pub async fn index_fields(make: &MakeStore) {
    let store = make(StoreSetup::standard()).await;
    let e = HashEmbedder::new(TEST_DIMS);
    let cos = |a: &str, b: &str| reference_cosine(&e.vector(a), &e.vector(b));
    let paths = |p: &[&str]| IndexFields::Paths(p.iter().map(|s| (*s).to_owned()).collect());
    let put = |key: &str, value: serde_json::Value, index: IndexFields| StoreOp::Put {
        namespace: ns(&["i"]),
        key: key.to_owned(),
        value: Some(value),
        options: PutOptions::new().index(index),
    };
    store
        .batch(vec![
            put("a", json!({"text": "apple pie"}), IndexFields::Configured),
            put("skip", json!({"text": "apple pie"}), IndexFields::Skip),
            put(
                "notext",
                json!({"title": "apple pie"}),
                IndexFields::Configured,
            ),
            put(
                "paths",
                json!({"title": "banana split", "text": "apple pie"}),
                paths(&["title"]),
            ),
            put(
                "multi",
                json!({"title": "apple", "body": "cherry"}),
                paths(&["title", "body"]),
            ),
        ])
        .await
        .unwrap();
    let hits = store
        .search(&["i"], SearchQuery::new().query("apple pie"))
        .await
        .unwrap();
    let score = |key: &str| {
        hits.iter()
            .find(|h| h.item.key == key)
            .and_then(|h| h.score)
    };
    assert_eq!(hits.len(), 5);
    assert_eq!(hits[0].item.key, "a");
    assert!((score("a").unwrap() - 1.0).abs() < 1e-6);
    let multi = cos("apple pie", "apple").max(cos("apple pie", "cherry"));
    assert!((score("multi").unwrap() - multi).abs() < 1e-9);
    assert!((score("paths").unwrap() - cos("apple pie", "banana split")).abs() < 1e-9);
    assert_eq!(
        keys(&hits[3..]),
        ["notext", "skip"],
        "unscored items come last"
    );
    assert_eq!((hits[3].score, hits[4].score), (None, None));

    let banana = store
        .search(&["i"], SearchQuery::new().query("banana split").limit(1))
        .await
        .unwrap();
    assert_eq!(keys(&banana), ["paths"]);

    store
        .put(&["i"], "a", json!({"text": "cherry"}))
        .await
        .unwrap();
    let cherry = store
        .search(&["i"], SearchQuery::new().query("cherry").limit(2))
        .await
        .unwrap();
    assert_eq!(keys(&cherry), ["a", "multi"], "equal scores tie by key");
    assert!(cherry.iter().all(|h| (h.score.unwrap() - 1.0).abs() < 1e-6));

    let plain = store.search(&["i"], SearchQuery::new()).await.unwrap();
    assert_eq!(plain.len(), 5, "a plain search finds unindexed items too");
}

/// An embedder vector of the wrong length is a dimension error naming both lengths,
/// and nothing of the put or its batch is stored; fields that are not embedded
/// are not checked.
pub async fn wrong_dimension(make: &MakeStore) {
    let store = make(StoreSetup::standard()).await;
    let bad = json!({"text": format!("bad {WRONG_DIMS_MARKER}")});
    match store.put(&["w"], "bad", bad.clone()).await {
        Err(StoreError::Dimension { expected, got }) => {
            assert_eq!((expected, got), (TEST_DIMS, TEST_DIMS + 1));
        }
        other => panic!("expected a dimension error, got {other:?}"),
    }
    let ops = vec![
        StoreOp::Put {
            namespace: ns(&["w"]),
            key: "good".into(),
            value: Some(json!({"text": "fine"})),
            options: PutOptions::default(),
        },
        StoreOp::Put {
            namespace: ns(&["w"]),
            key: "bad".into(),
            value: Some(bad.clone()),
            options: PutOptions::default(),
        },
    ];
    assert!(matches!(
        store.batch(ops).await,
        Err(StoreError::Dimension { .. })
    ));
    assert!(
        store
            .search(&[], SearchQuery::new())
            .await
            .unwrap()
            .is_empty(),
        "nothing stored"
    );
    assert!(matches!(
        store
            .search(&["w"], SearchQuery::new().query(WRONG_DIMS_MARKER))
            .await,
        Err(StoreError::Dimension { .. })
    ));
    store
        .put(&["w"], "title", json!({"title": WRONG_DIMS_MARKER}))
        .await
        .unwrap();
    store
        .put_with(
            &["w"],
            "skipped",
            bad,
            PutOptions::new().index(IndexFields::Skip),
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .search(&["w"], SearchQuery::new())
            .await
            .unwrap()
            .len(),
        2
    );
}

/// A query on a store without an index is a clear error; everything else works.
pub async fn no_index(make: &MakeStore) {
    let store = make(StoreSetup {
        index: None,
        ttl: TtlConfig::new(),
    })
    .await;
    store
        .put(&["n"], "k", json!({"text": "apple"}))
        .await
        .unwrap();
    let hits = store.search(&["n"], SearchQuery::new()).await.unwrap();
    assert_eq!(keys(&hits), ["k"]);
    match store
        .search(&["n"], SearchQuery::new().query("apple"))
        .await
    {
        Err(e @ StoreError::NoIndex) => assert!(e.to_string().contains("with_index"), "{e}"),
        other => panic!("expected NoIndex, got {other:?}"),
    }
}
