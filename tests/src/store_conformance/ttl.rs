//! Checks of time-to-live: expiry hides items from every read before any sweep,
//! reads refresh expiry (or not, as asked), the default TTL, `sweep` and the
//! background sweeper.
//!
//! Short TTLs are only ever asserted *expired*, after waiting well past them; that an
//! item is still alive is asserted only for TTLs of a minute, and refreshes are seen
//! in `expires_at`, so a slow machine cannot make these checks fail. Backends must
//! keep timestamps to the millisecond at least (reads 15 ms apart must differ), and a
//! read must return the `expires_at` it stored.

use std::time::{Duration, SystemTime};

use serde_json::json;
use stategraph::store::{
    Item, NamespaceQuery, PutOptions, SearchQuery, Store, StoreOp, StoreOutput, TtlConfig,
};

use super::{MakeStore, StoreSetup, keys, ns};

const SHORT: Duration = Duration::from_millis(100);
const LONG: Duration = Duration::from_secs(60);
/// Waited after a put with [`SHORT`] before asserting it expired.
const WELL_PAST_SHORT: Duration = Duration::from_millis(300);
/// Between reads whose expiry must differ.
const TICK: Duration = Duration::from_millis(15);

/// Whether `expires` is [`LONG`] after a time between `before` and now, give or take
/// the second a backend may round timestamps by.
fn about_now_plus_long(expires: SystemTime, before: SystemTime) -> bool {
    let slack = Duration::from_secs(1);
    expires + slack >= before + LONG && expires <= SystemTime::now() + LONG + slack
}

/// Reads `namespace`/`key` without refreshing its expiry.
async fn peek(store: &dyn Store, namespace: &[&str], key: &str) -> Option<Item> {
    let op = StoreOp::Get {
        namespace: namespace.iter().map(|l| (*l).to_owned()).collect(),
        key: key.to_owned(),
        refresh_ttl: Some(false),
    };
    match store.batch(vec![op]).await.unwrap().pop() {
        Some(StoreOutput::Item(item)) => item,
        other => panic!("a get returned {other:?}"),
    }
}

/// An expired item is gone from gets, searches and listings before any sweep; a
/// put on its key starts a new item (new `created_at`); long TTLs set `expires_at`
/// to about now + TTL; no TTL means no expiry.
pub async fn ttl_expiry(make: &MakeStore) {
    let store = make(StoreSetup::standard()).await;
    let before = SystemTime::now();
    store
        .put_with(
            &["t", "gone"],
            "x",
            json!({"v": 1}),
            PutOptions::new().ttl(SHORT),
        )
        .await
        .unwrap();
    store
        .put_with(&["t"], "y", json!({"v": 2}), PutOptions::new().ttl(LONG))
        .await
        .unwrap();
    store.put(&["t"], "z", json!({"v": 3})).await.unwrap();
    let y = peek(&*store, &["t"], "y").await.expect("a minute-long TTL");
    let expires = y.expires_at.expect("a TTL sets expires_at");
    assert!(about_now_plus_long(expires, before), "{expires:?}");
    assert_eq!(
        peek(&*store, &["t"], "z").await.expect("no TTL").expires_at,
        None
    );

    tokio::time::sleep(WELL_PAST_SHORT).await;
    assert_eq!(store.get(&["t", "gone"], "x").await.unwrap(), None);
    let hits = store.search(&["t"], SearchQuery::new()).await.unwrap();
    let mut found = keys(&hits);
    found.sort();
    assert_eq!(found, ["y", "z"]);
    let listed = store.list_namespaces(NamespaceQuery::new()).await.unwrap();
    assert_eq!(listed, [ns(&["t"])]);

    store
        .put(&["t", "gone"], "x", json!({"v": 4}))
        .await
        .unwrap();
    let again = store
        .get(&["t", "gone"], "x")
        .await
        .unwrap()
        .expect("put again");
    assert_eq!(again.value, json!({"v": 4}));
    assert_eq!(
        again.created_at, again.updated_at,
        "a new item, not the expired one"
    );
    assert_eq!(again.expires_at, None);
}

/// With refresh on read (the standard setup), a get or a search hit moves
/// `expires_at` forward; a read that asks not to refresh leaves it.
pub async fn ttl_refresh_on_read(make: &MakeStore) {
    let store = make(StoreSetup::standard()).await;
    store
        .put_with(&["r"], "k", json!({"v": 1}), PutOptions::new().ttl(LONG))
        .await
        .unwrap();
    let e0 = peek(&*store, &["r"], "k")
        .await
        .unwrap()
        .expires_at
        .unwrap();
    tokio::time::sleep(TICK).await;
    let got = store.get(&["r"], "k").await.unwrap().unwrap();
    let e1 = got.expires_at.unwrap();
    assert!(e1 > e0, "a get refreshes");
    tokio::time::sleep(TICK).await;
    assert_eq!(
        peek(&*store, &["r"], "k").await.unwrap().expires_at,
        Some(e1)
    );

    let hits = store.search(&["r"], SearchQuery::new()).await.unwrap();
    let e2 = hits[0].item.expires_at.unwrap();
    assert!(e2 > e1, "a search hit refreshes");
    assert_eq!(
        peek(&*store, &["r"], "k").await.unwrap().expires_at,
        Some(e2)
    );
    tokio::time::sleep(TICK).await;
    let hits = store
        .search(&["r"], SearchQuery::new().refresh_ttl(false))
        .await
        .unwrap();
    assert_eq!(hits[0].item.expires_at, Some(e2), "asked not to refresh");
    assert_eq!(
        peek(&*store, &["r"], "k").await.unwrap().expires_at,
        Some(e2)
    );
}

/// A store's default TTL applies to puts without one; with refresh on read off,
/// reads leave expiry alone unless they ask; a put's own TTL wins over the default.
pub async fn default_ttl_without_refresh(make: &MakeStore) {
    let ttl = TtlConfig::new().default_ttl(LONG).refresh_on_read(false);
    let store = make(StoreSetup {
        ttl,
        ..StoreSetup::standard()
    })
    .await;
    let before = SystemTime::now();
    store.put(&["d"], "k", json!({"v": 1})).await.unwrap();
    let e0 = store.get(&["d"], "k").await.unwrap().unwrap().expires_at;
    let e0 = e0.expect("the default TTL applies");
    assert!(about_now_plus_long(e0, before), "{e0:?}");
    tokio::time::sleep(TICK).await;
    let e1 = store.get(&["d"], "k").await.unwrap().unwrap().expires_at;
    assert_eq!(e1, Some(e0), "no refresh by default");
    let refreshed = store
        .batch(vec![StoreOp::Get {
            namespace: ns(&["d"]),
            key: "k".into(),
            refresh_ttl: Some(true),
        }])
        .await
        .unwrap();
    assert!(
        matches!(&refreshed[0], StoreOutput::Item(Some(i)) if i.expires_at > Some(e0)),
        "a read may ask to refresh: {refreshed:?}"
    );
    store
        .put_with(
            &["d"],
            "short",
            json!({"v": 2}),
            PutOptions::new().ttl(SHORT),
        )
        .await
        .unwrap();
    tokio::time::sleep(WELL_PAST_SHORT).await;
    assert_eq!(store.get(&["d"], "short").await.unwrap(), None);
    assert!(store.get(&["d"], "k").await.unwrap().is_some());
}

/// `sweep` removes expired items, returns how many, and leaves the others.
pub async fn sweep(make: &MakeStore) {
    let store = make(StoreSetup::standard()).await;
    assert_eq!(store.sweep().await.unwrap(), 0);
    for key in ["a", "b", "c"] {
        store
            .put_with(&["s"], key, json!({"v": key}), PutOptions::new().ttl(SHORT))
            .await
            .unwrap();
    }
    store.put(&["s"], "forever", json!({"v": 1})).await.unwrap();
    store
        .put_with(
            &["s"],
            "later",
            json!({"v": 2}),
            PutOptions::new().ttl(LONG),
        )
        .await
        .unwrap();
    tokio::time::sleep(WELL_PAST_SHORT).await;
    assert_eq!(store.sweep().await.unwrap(), 3);
    assert_eq!(store.sweep().await.unwrap(), 0);
    let hits = store.search(&["s"], SearchQuery::new()).await.unwrap();
    let mut found = keys(&hits);
    found.sort();
    assert_eq!(found, ["forever", "later"]);
}

/// A store with a sweep interval removes expired items by itself: a later `sweep`
/// finds nothing left to remove.
pub async fn background_sweeper(make: &MakeStore) {
    let ttl = TtlConfig::new().sweep_interval(Duration::from_millis(20));
    let store = make(StoreSetup {
        ttl,
        ..StoreSetup::standard()
    })
    .await;
    for key in ["a", "b"] {
        store
            .put_with(
                &["w"],
                key,
                json!({"v": key}),
                PutOptions::new().ttl(Duration::from_millis(30)),
            )
            .await
            .unwrap();
    }
    store.put(&["w"], "stays", json!({"v": 0})).await.unwrap();
    // Well past the TTL and fifty sweep intervals. (Only one `sweep` call: it would
    // remove the items itself.)
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        store.sweep().await.unwrap(),
        0,
        "the background sweeper never removed the expired items"
    );
    let hits = store.search(&["w"], SearchQuery::new()).await.unwrap();
    assert_eq!(keys(&hits), ["stays"]);
}
