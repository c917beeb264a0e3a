//! Checks of the key-value core: put/get/overwrite, delete, namespace listing,
//! filters, search order and paging, typed values, batches and bad input.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use stategraph::store::{
    Filter, MAX_VALUE_BYTES, NamespaceQuery, PutOptions, SearchQuery, Store, StoreError, StoreExt,
    StoreOp, StoreOutput,
};

use super::{MakeStore, StoreSetup, keys, ns};

/// Long enough that two puts get different timestamps even at millisecond precision.
const TICK: Duration = Duration::from_millis(15);

/// A put of a fresh key is read back with its namespace, key and value, and
/// `created_at == updated_at`; an overwrite keeps `created_at` and moves
/// `updated_at`; the same key in another namespace is another item.
pub async fn put_get_overwrite(make: &MakeStore) {
    let store = make(StoreSetup::standard()).await;
    assert_eq!(store.get(&["docs"], "a").await.unwrap(), None);
    store
        .put(&["docs"], "a", json!({"text": "first", "n": 1}))
        .await
        .unwrap();
    let first = store.get(&["docs"], "a").await.unwrap().expect("stored");
    assert_eq!(first.namespace, ns(&["docs"]));
    assert_eq!(first.key, "a");
    assert_eq!(first.value, json!({"text": "first", "n": 1}));
    assert_eq!(first.created_at, first.updated_at);
    assert_eq!(first.expires_at, None);

    tokio::time::sleep(TICK).await;
    store
        .put(&["docs"], "a", json!({"text": "second"}))
        .await
        .unwrap();
    store
        .put(&["docs", "sub"], "a", json!({"text": "other"}))
        .await
        .unwrap();
    let second = store.get(&["docs"], "a").await.unwrap().expect("stored");
    assert_eq!(second.value, json!({"text": "second"}));
    assert_eq!(second.created_at, first.created_at, "created_at stays");
    assert!(second.updated_at > first.updated_at, "updated_at moves");
    let other = store
        .get(&["docs", "sub"], "a")
        .await
        .unwrap()
        .expect("stored");
    assert_eq!(other.value, json!({"text": "other"}));
}

/// A delete removes the item from gets, searches and listings; deleting a missing
/// key is not an error.
pub async fn delete(make: &MakeStore) {
    let store = make(StoreSetup::standard()).await;
    store.put(&["d", "x"], "a", json!({"v": 1})).await.unwrap();
    store.put(&["d", "y"], "b", json!({"v": 2})).await.unwrap();
    store.delete(&["d", "x"], "a").await.unwrap();
    store.delete(&["d", "x"], "never-there").await.unwrap();
    assert_eq!(store.get(&["d", "x"], "a").await.unwrap(), None);
    assert!(store.get(&["d", "y"], "b").await.unwrap().is_some());
    let hits = store.search(&["d"], SearchQuery::new()).await.unwrap();
    assert_eq!(keys(&hits), ["b"]);
    let listed = store.list_namespaces(NamespaceQuery::new()).await.unwrap();
    assert_eq!(listed, [ns(&["d", "y"])]);
    store.delete(&["d", "y"], "b").await.unwrap();
    assert!(
        store
            .list_namespaces(NamespaceQuery::new())
            .await
            .unwrap()
            .is_empty()
    );
}

/// Listings are sorted and honour prefix, suffix, `*` wildcards, `max_depth` (cut and
/// deduplicated), `limit` and `offset`.
pub async fn list_namespaces(make: &MakeStore) {
    let store = make(StoreSetup::standard()).await;
    let spaces: [&[&str]; 5] = [
        &["x", "y"],
        &["a", "b", "d"],
        &["a", "e"],
        &["x", "b", "c"],
        &["a", "b", "c"],
    ];
    for space in spaces {
        store.put(space, "k", json!({"v": 1})).await.unwrap();
    }
    // Two items in one namespace list it once.
    store.put(&["a", "e"], "k2", json!({"v": 2})).await.unwrap();
    let list = |q: NamespaceQuery| {
        let store = store.clone();
        async move { store.list_namespaces(q).await.unwrap() }
    };
    let abc = ns(&["a", "b", "c"]);
    let abd = ns(&["a", "b", "d"]);
    let ae = ns(&["a", "e"]);
    let xbc = ns(&["x", "b", "c"]);
    let xy = ns(&["x", "y"]);
    let all = vec![
        abc.clone(),
        abd.clone(),
        ae.clone(),
        xbc.clone(),
        xy.clone(),
    ];
    assert_eq!(list(NamespaceQuery::new()).await, all);
    assert_eq!(
        list(NamespaceQuery::new().prefix(&["a"])).await,
        [abc.clone(), abd.clone(), ae.clone()]
    );
    assert_eq!(
        list(NamespaceQuery::new().prefix(&["a", "b"])).await,
        [abc.clone(), abd.clone()]
    );
    assert_eq!(
        list(NamespaceQuery::new().suffix(&["c"])).await,
        [abc.clone(), xbc.clone()]
    );
    assert_eq!(
        list(NamespaceQuery::new().prefix(&["*", "b"])).await,
        [abc.clone(), abd.clone(), xbc.clone()]
    );
    assert_eq!(
        list(NamespaceQuery::new().suffix(&["b", "*"])).await,
        [abc.clone(), abd.clone(), xbc.clone()]
    );
    assert_eq!(
        list(NamespaceQuery::new().prefix(&["a"]).suffix(&["d"])).await,
        [abd]
    );
    assert!(
        list(NamespaceQuery::new().prefix(&["a", "e", "f"]))
            .await
            .is_empty()
    );
    assert_eq!(
        list(NamespaceQuery::new().max_depth(1)).await,
        [ns(&["a"]), ns(&["x"])]
    );
    assert_eq!(
        list(NamespaceQuery::new().max_depth(2)).await,
        [ns(&["a", "b"]), ae.clone(), ns(&["x", "b"]), xy.clone()]
    );
    assert_eq!(list(NamespaceQuery::new().limit(2)).await, all[..2]);
    assert_eq!(
        list(NamespaceQuery::new().offset(2).limit(2)).await,
        all[2..4]
    );
    assert!(list(NamespaceQuery::new().offset(10)).await.is_empty());
}

/// The keys of the items under `["f"]` matching `filter`, sorted.
async fn matching(store: &dyn Store, filter: Value) -> Vec<String> {
    let filter = Filter::parse(&filter).unwrap();
    let hits = store
        .search(&["f"], SearchQuery::new().filter(filter).limit(100))
        .await
        .unwrap();
    let mut found = keys(&hits);
    found.sort();
    found
}

/// Every filter operator selects exactly the documented items, on top-level and
/// nested fields, combined with AND.
pub async fn filters(make: &MakeStore) {
    let store = make(StoreSetup::standard()).await;
    let items = [
        (
            "k1",
            json!({"text": "one", "n": 1, "tag": "red", "meta": {"lang": "en"}}),
        ),
        (
            "k2",
            json!({"n": 2.5, "tag": "blue", "meta": {"lang": "fr"}, "flag": true}),
        ),
        ("k3", json!({"n": 3, "tag": "red", "list": [1, 2]})),
        ("k4", json!({"n": "3", "tag": null})),
    ];
    for (key, value) in items {
        store.put(&["f"], key, value).await.unwrap();
    }
    store
        .put(&["g"], "k5", json!({"tag": "red"}))
        .await
        .unwrap();
    let s = &*store;
    let cases = [
        (json!({}), vec!["k1", "k2", "k3", "k4"]),
        (json!({"tag": "red"}), vec!["k1", "k3"]),
        (json!({"tag": {"$eq": "blue"}}), vec!["k2"]),
        (json!({"tag": {"$ne": "red"}}), vec!["k2", "k4"]),
        (json!({"n": {"$gt": 1}}), vec!["k2", "k3"]),
        (json!({"n": {"$gte": 2.5}}), vec!["k2", "k3"]),
        (json!({"n": {"$lt": 3}}), vec!["k1", "k2"]),
        (json!({"n": {"$lte": 1}}), vec!["k1"]),
        (json!({"n": 3}), vec!["k3"]),
        (json!({"n": 3.0}), vec!["k3"]),
        (json!({"n": {"$in": [1, "3"]}}), vec!["k1", "k4"]),
        (json!({"n": {"$nin": [1, 3]}}), vec!["k2", "k4"]),
        (json!({"flag": {"$exists": true}}), vec!["k2"]),
        (json!({"flag": {"$exists": false}}), vec!["k1", "k3", "k4"]),
        (
            json!({"tag": {"$exists": true}}),
            vec!["k1", "k2", "k3", "k4"],
        ),
        (json!({"tag": null}), vec!["k4"]),
        (json!({"meta.lang": "fr"}), vec!["k2"]),
        (json!({"meta": {"lang": "en"}}), vec!["k1"]),
        (json!({"list": [1, 2]}), vec!["k3"]),
        (json!({"tag": {"$gt": "blue"}}), vec!["k1", "k3"]),
        (json!({"tag": "red", "n": {"$gt": 1}}), vec!["k3"]),
        (json!({"n": {"$gt": 1, "$lt": 3}}), vec!["k2"]),
        (json!({"missing": 1}), vec![]),
    ];
    for (filter, expected) in cases {
        assert_eq!(
            matching(s, filter.clone()).await,
            expected,
            "filter {filter}"
        );
    }
    let page = store
        .search(
            &["f"],
            SearchQuery::new()
                .filter(Filter::parse(&json!({"tag": {"$exists": true}})).unwrap())
                .offset(1)
                .limit(2),
        )
        .await
        .unwrap();
    assert_eq!(page.len(), 2, "filters apply before paging");
}

/// Filters outside the language are refused when parsed, naming the operator or
/// path and what is accepted.
pub async fn bad_filter(make: &MakeStore) {
    let store = make(StoreSetup::standard()).await;
    let message = |filter: Value| match Filter::parse(&filter) {
        Err(e @ StoreError::BadFilter { .. }) => e.to_string(),
        other => panic!("{filter} should be a bad filter, got {other:?}"),
    };
    let unknown = message(json!({"n": {"$regex": "a.*"}}));
    assert!(
        unknown.contains("$regex") && unknown.contains("$exists"),
        "{unknown}"
    );
    assert!(message(json!(["n"])).contains("object"));
    assert!(message(json!({"n": {"$in": 1}})).contains("$in"));
    assert!(message(json!({"n": {"$nin": "x"}})).contains("$nin"));
    assert!(message(json!({"n": {"$exists": 1}})).contains("$exists"));
    assert!(message(json!({"n": {"$gt": 1, "plain": 2}})).contains("mixes"));
    assert!(Filter::try_from(json!({"n": {"$gt": 1}})).is_ok());
    // A valid filter on a field no item has finds nothing, without error.
    store.put(&["f"], "k", json!({"n": 1})).await.unwrap();
    let filter = Filter::parse(&json!({"absent": {"$gt": 0}})).unwrap();
    let hits = store
        .search(&["f"], SearchQuery::new().filter(filter))
        .await
        .unwrap();
    assert!(hits.is_empty());
}

/// Without a query, hits are newest first, ties (one batch) by namespace then key;
/// pages of `limit`/`offset` cover the whole result; the prefix selects namespaces
/// label by label; scores are `None`.
pub async fn search_order_and_pages(make: &MakeStore) {
    let store = make(StoreSetup::standard()).await;
    for i in 0..6 {
        store
            .put(&["p", "q"], &format!("d{i}"), json!({"i": i}))
            .await
            .unwrap();
        tokio::time::sleep(TICK).await;
    }
    store
        .put(&["pq"], "elsewhere", json!({"i": 9}))
        .await
        .unwrap();
    let newest_first: Vec<String> = (0..6).rev().map(|i| format!("d{i}")).collect();
    let all = store
        .search(&["p"], SearchQuery::new().limit(100))
        .await
        .unwrap();
    assert_eq!(keys(&all), newest_first);
    assert!(all.iter().all(|h| h.score.is_none()));
    let mut paged = Vec::new();
    for offset in [0, 2, 4] {
        let page = store
            .search(&["p", "q"], SearchQuery::new().offset(offset).limit(2))
            .await
            .unwrap();
        paged.extend(keys(&page));
    }
    assert_eq!(paged, newest_first);
    let beyond = store
        .search(&["p"], SearchQuery::new().offset(6))
        .await
        .unwrap();
    assert!(beyond.is_empty());
    assert_eq!(
        store.search(&[], SearchQuery::new()).await.unwrap().len(),
        7,
        "an empty prefix searches every namespace"
    );
    assert!(
        store
            .search(&["p", "q", "r"], SearchQuery::new())
            .await
            .unwrap()
            .is_empty()
    );
    // An overwrite makes an item the newest.
    store
        .put(&["p", "q"], "d1", json!({"i": 10}))
        .await
        .unwrap();
    let top = store
        .search(&["p"], SearchQuery::new().limit(1))
        .await
        .unwrap();
    assert_eq!(keys(&top), ["d1"]);
    // The writes of one batch share a timestamp: ordered by namespace, then key.
    tokio::time::sleep(TICK).await;
    let put = |space: &[&str], key: &str| StoreOp::Put {
        namespace: ns(space),
        key: key.to_owned(),
        value: Some(json!({})),
        options: PutOptions::default(),
    };
    store
        .batch(vec![
            put(&["t", "b"], "a"),
            put(&["t", "a"], "z"),
            put(&["t", "a"], "c"),
        ])
        .await
        .unwrap();
    let ties = store.search(&["t"], SearchQuery::new()).await.unwrap();
    assert_eq!(keys(&ties), ["c", "z", "a"]);
    assert_eq!(ties[0].item.updated_at, ties[2].item.updated_at);
}

#[derive(Serialize, Deserialize, Debug, PartialEq)]
struct Profile {
    name: String,
    age: u32,
}

#[derive(Deserialize, Debug)]
struct Other {
    #[allow(dead_code)]
    street: String,
}

/// Typed puts read back as the type written; another type is a decode error naming
/// the item and type; a type that is not a JSON object is refused, nothing stored.
pub async fn typed_values(make: &MakeStore) {
    let store = make(StoreSetup::standard()).await;
    let ada = Profile {
        name: "Ada".into(),
        age: 36,
    };
    store
        .put_typed(&["users", "u1"], "profile", &ada)
        .await
        .unwrap();
    let back: Option<Profile> = store.get_typed(&["users", "u1"], "profile").await.unwrap();
    assert_eq!(back, Some(ada));
    let missing: Option<Profile> = store.get_typed(&["users", "u2"], "profile").await.unwrap();
    assert_eq!(missing, None);
    match store.get_typed::<Other>(&["users", "u1"], "profile").await {
        Err(StoreError::Decode {
            namespace,
            key,
            type_name,
            ..
        }) => {
            assert_eq!((namespace, key.as_str()), (ns(&["users", "u1"]), "profile"));
            assert!(type_name.ends_with("Other"), "{type_name}");
        }
        other => panic!("expected a decode error, got {other:?}"),
    }
    let err = store
        .put_typed(&["users", "u1"], "list", &vec![1, 2, 3])
        .await
        .expect_err("a list is not an object");
    assert!(matches!(err, StoreError::NotAnObject { .. }), "{err:?}");
    assert_eq!(store.get(&["users", "u1"], "list").await.unwrap(), None);
}

/// A batch returns one output per op, in order, and later ops see earlier writes.
pub async fn batch_outputs(make: &MakeStore) {
    let store = make(StoreSetup::standard()).await;
    let outputs = store
        .batch(vec![
            StoreOp::Put {
                namespace: ns(&["b"]),
                key: "a".into(),
                value: Some(json!({"v": 1})),
                options: PutOptions::default(),
            },
            StoreOp::Get {
                namespace: ns(&["b"]),
                key: "a".into(),
                refresh_ttl: None,
            },
            StoreOp::Search {
                namespace_prefix: ns(&["b"]),
                query: SearchQuery::new(),
            },
            StoreOp::ListNamespaces(NamespaceQuery::new()),
            StoreOp::Put {
                namespace: ns(&["b"]),
                key: "a".into(),
                value: None,
                options: PutOptions::default(),
            },
            StoreOp::Get {
                namespace: ns(&["b"]),
                key: "a".into(),
                refresh_ttl: None,
            },
        ])
        .await
        .unwrap();
    assert_eq!(outputs.len(), 6);
    assert_eq!(outputs[0], StoreOutput::Done);
    assert!(matches!(&outputs[1], StoreOutput::Item(Some(i)) if i.value == json!({"v": 1})));
    assert!(matches!(&outputs[2], StoreOutput::Items(hits) if hits.len() == 1));
    assert_eq!(outputs[3], StoreOutput::Namespaces(vec![ns(&["b"])]));
    assert_eq!(outputs[4], StoreOutput::Done);
    assert_eq!(outputs[5], StoreOutput::Item(None));
    assert!(store.batch(Vec::new()).await.unwrap().is_empty());
}

/// A batch with one invalid op stores nothing, also the valid puts and deletes
/// before it.
pub async fn batch_atomicity(make: &MakeStore) {
    let store = make(StoreSetup::standard()).await;
    store.put(&["b"], "keep", json!({"v": 0})).await.unwrap();
    let put = |space: &[&str], key: &str, value: Value| StoreOp::Put {
        namespace: ns(space),
        key: key.to_owned(),
        value: Some(value),
        options: PutOptions::default(),
    };
    let delete_keep = StoreOp::Put {
        namespace: ns(&["b"]),
        key: "keep".into(),
        value: None,
        options: PutOptions::default(),
    };
    let oversize = json!({"text": "x".repeat(MAX_VALUE_BYTES)});
    let bad_batches = [
        vec![
            put(&["b"], "new", json!({"v": 1})),
            put(&["bad.label"], "k", json!({})),
        ],
        vec![
            put(&["b"], "new", json!({"v": 1})),
            delete_keep.clone(),
            put(&["b"], "big", oversize),
        ],
        vec![
            delete_keep,
            put(&["b"], "new", json!({})),
            put(&["b"], "list", json!([1])),
        ],
        vec![put(&["b"], "new", json!({})), put(&["b"], "", json!({}))],
    ];
    for ops in bad_batches {
        assert!(store.batch(ops).await.is_err());
        assert_eq!(
            store.get(&["b"], "new").await.unwrap(),
            None,
            "nothing stored"
        );
        assert!(
            store.get(&["b"], "keep").await.unwrap().is_some(),
            "nothing deleted"
        );
    }
    let all = store.search(&[], SearchQuery::new()).await.unwrap();
    assert_eq!(keys(&all), ["keep"]);
}

/// Invalid namespaces, keys and values are refused with their own error, naming the
/// namespace; nothing is stored.
pub async fn invalid_input(make: &MakeStore) {
    let store = make(StoreSetup::standard()).await;
    let none: &[&str] = &[];
    for bad in [
        none,
        &["users", ""],
        &["a.b"],
        &["users", "u.1"],
        &["langgraph", "x"],
    ] {
        match store.put(bad, "k", json!({"v": 1})).await {
            Err(e @ StoreError::InvalidNamespace { .. }) => {
                assert!(e.to_string().contains("invalid namespace"), "{e}");
            }
            other => panic!("{bad:?} should be refused, got {other:?}"),
        }
    }
    assert!(matches!(
        store.put(&["ok"], "", json!({})).await,
        Err(StoreError::InvalidKey { .. })
    ));
    assert!(matches!(
        store.put(&["ok"], "k", json!("text")).await,
        Err(StoreError::NotAnObject { kind: "string", .. })
    ));
    let big = json!({"text": "x".repeat(MAX_VALUE_BYTES)});
    match store.put(&["ok"], "big", big).await {
        Err(e @ StoreError::TooLarge { bytes, limit, .. }) => {
            assert!(bytes > limit && limit == MAX_VALUE_BYTES);
            assert!(e.to_string().contains("big"), "{e}");
        }
        other => panic!("an oversize value should be refused, got {other:?}"),
    }
    assert!(matches!(
        store.get(&["a.b"], "k").await,
        Err(StoreError::InvalidNamespace { .. })
    ));
    assert!(matches!(
        store.search(&["a", ""], SearchQuery::new()).await,
        Err(StoreError::InvalidNamespace { .. })
    ));
    assert!(matches!(
        store
            .list_namespaces(NamespaceQuery::new().prefix(&["a.b"]))
            .await,
        Err(StoreError::InvalidNamespace { .. })
    ));
    assert!(
        store
            .search(&[], SearchQuery::new())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .list_namespaces(NamespaceQuery::new())
            .await
            .unwrap()
            .is_empty()
    );
}
