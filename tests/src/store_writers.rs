//! The two-process writers of the store concurrency tests: each `store_worker`
//! process puts, round after round, one batch holding keys of its own and the keys
//! both share (in opposite orders, to provoke lock-order conflicts). Afterwards
//! [`check`] finds every key of its own with its value, and every shared key intact
//! and from one writer's last batch (batches are atomic, so the shared keys all
//! come from whichever batch committed last).

use serde_json::{Value, json};
use stategraph::store::{SearchQuery, Store, StoreOp};

/// The namespace the writers put in.
pub const NAMESPACE: [&str; 2] = ["concurrency", "writers"];
/// Keys of its own each writer puts per round.
pub const OWN_KEYS: usize = 3;
/// Keys both writers put every round.
pub const SHARED_KEYS: usize = 6;
/// Characters of each value's payload.
const PAYLOAD: usize = 2000;

fn ns() -> Vec<String> {
    NAMESPACE.iter().map(|l| (*l).to_string()).collect()
}

/// The key of `writer`'s `j`th own key of `round`.
pub fn own_key(writer: &str, round: usize, j: usize) -> String {
    format!("{writer}-{round}-{j}")
}

/// The `j`th shared key.
pub fn shared_key(j: usize) -> String {
    format!("shared-{j}")
}

/// What `writer` puts at `key` in `round`: a payload of the writer's name repeated,
/// and a check naming all three, so a torn or mixed value is seen.
pub fn value(writer: &str, round: usize, key: &str) -> Value {
    json!({
        "writer": writer,
        "round": round,
        "key": key,
        "payload": writer.repeat(PAYLOAD / writer.len().max(1)),
        "check": format!("{writer}/{round}/{key}"),
    })
}

/// The batch `writer` puts in `round`: its own keys, then the shared keys (ascending
/// for writer `a`, descending for the others).
pub fn batch(writer: &str, round: usize) -> Vec<StoreOp> {
    let mut keys: Vec<String> = (0..OWN_KEYS).map(|j| own_key(writer, round, j)).collect();
    let mut shared: Vec<String> = (0..SHARED_KEYS).map(shared_key).collect();
    if writer != "a" {
        shared.reverse();
    }
    keys.extend(shared);
    keys.into_iter()
        .map(|key| StoreOp::Put {
            namespace: ns(),
            value: Some(value(writer, round, &key)),
            key,
            options: Default::default(),
        })
        .collect()
}

/// Checks what `writers`, each having put `rounds` batches, left in `store`;
/// returns the writer whose batch committed last.
///
/// # Panics
/// When an own key is missing or wrong, a shared key is torn, the shared keys come
/// from different batches, or anything else is in the namespace.
pub async fn check(store: &dyn Store, writers: &[&str], rounds: usize) -> String {
    let labels: Vec<&str> = NAMESPACE.to_vec();
    for writer in writers {
        for round in 0..rounds {
            for j in 0..OWN_KEYS {
                let key = own_key(writer, round, j);
                let item = store.get(&labels, &key).await.unwrap();
                let item = item.unwrap_or_else(|| panic!("own key {key} was lost"));
                assert_eq!(item.value, value(writer, round, &key), "{key}");
            }
        }
    }
    let mut last = None;
    for j in 0..SHARED_KEYS {
        let key = shared_key(j);
        let item = store.get(&labels, &key).await.unwrap();
        let item = item.unwrap_or_else(|| panic!("shared key {key} was lost"));
        let writer = item.value["writer"].as_str().unwrap().to_string();
        let round = usize::try_from(item.value["round"].as_u64().unwrap()).unwrap();
        assert!(writers.contains(&writer.as_str()), "{key}: {}", item.value);
        assert_eq!(item.value, value(&writer, round, &key), "{key} is torn");
        let from = (writer, round);
        match &last {
            None => last = Some(from),
            Some(seen) => assert_eq!(
                seen, &from,
                "shared keys from two batches: a batch was not atomic"
            ),
        }
    }
    let (writer, round) = last.unwrap();
    assert_eq!(round, rounds - 1, "the last batch is a writer's last round");
    let all = store
        .search(&labels, SearchQuery::new().limit(usize::MAX))
        .await
        .unwrap();
    assert_eq!(all.len(), writers.len() * rounds * OWN_KEYS + SHARED_KEYS);
    writer
}

/// Runs two `store_worker` processes (`worker` is the binary), writers `a` and `b`,
/// each putting `rounds` batches into `target`, starting at one moment; waits for
/// both.
///
/// # Panics
/// When a worker cannot be started or fails.
pub fn run_two_writers(worker: &str, target: &crate::workloads::Store, rounds: usize) {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};
    // Far enough ahead that both processes have opened the store by then.
    let start = (SystemTime::now() + Duration::from_millis(1500))
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
        .to_string();
    let children: Vec<_> = ["a", "b"]
        .iter()
        .map(|writer| {
            std::process::Command::new(worker)
                .args(["write", &target.arg(), writer, &rounds.to_string(), &start])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "worker failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "done");
    }
}
