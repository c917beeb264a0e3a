//! The SQLite saver's thread locks: files in `<database>.locks`, named by a hash so any
//! thread id works, held against every other saver on the file (in this process or
//! another) and released when the guard is dropped.

use std::time::Duration;

use stategraph::checkpoint::{CheckpointError, CheckpointSaver};
use stategraph_sqlite::SqliteSaver;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_savers_on_one_file_hold_threads_against_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locks.db");
    let (a, b) = (
        SqliteSaver::open(&path).unwrap(),
        SqliteSaver::open(&path).unwrap(),
    );
    let odd = "tenant/42 ✓ ../../etc";
    let held = a.lock_thread(odd, Duration::ZERO).await.unwrap();
    let locks: Vec<String> = std::fs::read_dir(dir.path().join("locks.db.locks"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(locks.len(), 1, "{locks:?}");
    assert!(
        locks[0].ends_with(".lock") && locks[0].len() == 32 + 5,
        "{locks:?}"
    );

    let err = b
        .lock_thread(odd, Duration::from_millis(100))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, CheckpointError::ThreadBusy { thread_id, waited }
            if thread_id == odd && *waited >= Duration::from_millis(100)),
        "{err:?}"
    );
    // Another thread of the same file is free.
    drop(b.lock_thread("other", Duration::ZERO).await.unwrap());
    drop(held);
    drop(b.lock_thread(odd, Duration::ZERO).await.unwrap());
}

#[test]
fn locks_work_without_an_async_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let saver = SqliteSaver::open(dir.path().join("plain.db")).unwrap();
    futures::executor::block_on(async {
        let held = saver.lock_thread("t", Duration::ZERO).await.unwrap();
        let err = saver
            .lock_thread("t", Duration::from_millis(30))
            .await
            .unwrap_err();
        assert!(matches!(err, CheckpointError::ThreadBusy { .. }), "{err:?}");
        drop(held);
        drop(saver.lock_thread("t", Duration::ZERO).await.unwrap());
    });
}

#[tokio::test]
async fn an_in_memory_database_locks_within_the_process() {
    let saver = SqliteSaver::open_in_memory().unwrap();
    let clone = saver.clone();
    let held = saver.lock_thread("t", Duration::ZERO).await.unwrap();
    let err = clone
        .lock_thread("t", Duration::from_millis(30))
        .await
        .unwrap_err();
    assert!(matches!(err, CheckpointError::ThreadBusy { .. }), "{err:?}");
    drop(held);
    drop(clone.lock_thread("t", Duration::ZERO).await.unwrap());
}

/// Every path reaching the file is one lock: through a symbolic link, or spelled
/// with `.` and `..`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lock_follows_the_file_not_the_path_string() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.db");
    let link = dir.path().join("link.db");
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let direct = SqliteSaver::open(&real).unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let others = [
        SqliteSaver::open(&link).unwrap(),
        SqliteSaver::open(dir.path().join(".").join("real.db")).unwrap(),
        SqliteSaver::open(dir.path().join("sub").join("..").join("real.db")).unwrap(),
    ];
    let held = direct.lock_thread("t", Duration::ZERO).await.unwrap();
    for other in &others {
        let err = other
            .lock_thread("t", Duration::from_millis(50))
            .await
            .unwrap_err();
        assert!(
            matches!(err, CheckpointError::ThreadBusy { .. }),
            "{:?}: {err:?}",
            other.path()
        );
    }
    drop(held);
    let via_link = others[0].lock_thread("t", Duration::ZERO).await.unwrap();
    let err = direct
        .lock_thread("t", Duration::from_millis(50))
        .await
        .unwrap_err();
    assert!(matches!(err, CheckpointError::ThreadBusy { .. }), "{err:?}");
    drop(via_link);
    assert!(!dir.path().join("link.db.locks").exists());
}

fn lock_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    match std::fs::read_dir(dir) {
        Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
        Err(_) => Vec::new(),
    }
}

/// A released lock removes its file, and the directory once it is empty: runs,
/// tests and doc-tests leave no `<db>.locks` behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn released_locks_leave_no_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("clean.db");
    let locks = dir.path().join("clean.db.locks");
    let saver = SqliteSaver::open(&path).unwrap();
    let a = saver.lock_thread("a", Duration::ZERO).await.unwrap();
    let b = saver.lock_thread("b", Duration::ZERO).await.unwrap();
    assert_eq!(lock_files(&locks).len(), 2);
    drop(a);
    assert_eq!(
        lock_files(&locks).len(),
        1,
        "b's file stays while b is held"
    );
    drop(b);
    assert!(!locks.exists(), "{:?}", lock_files(&locks));
}

/// A run waiting on a lock file that its holder removes on release must not end up
/// holding the removed file while a newcomer holds the new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_and_a_newcomer_never_share_a_thread_after_its_file_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("race.db");
    let (a, b, c) = (
        SqliteSaver::open(&path).unwrap(),
        SqliteSaver::open(&path).unwrap(),
        SqliteSaver::open(&path).unwrap(),
    );
    for _ in 0..20 {
        let held = a.lock_thread("t", Duration::ZERO).await.unwrap();
        let b2 = b.clone();
        let waiter = tokio::spawn(async move { b2.lock_thread("t", Duration::from_secs(5)).await });
        tokio::time::sleep(Duration::from_millis(30)).await;
        drop(held);
        let b_held = waiter.await.unwrap().expect("the waiter gets the thread");
        match c.lock_thread("t", Duration::ZERO).await {
            Err(CheckpointError::ThreadBusy { .. }) => {}
            other => panic!("the newcomer must wait while the waiter holds the thread: {other:?}"),
        }
        drop(b_held);
        drop(c.lock_thread("t", Duration::ZERO).await.unwrap());
    }
}

/// `delete_thread` also removes a lock file a killed process left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_thread_removes_its_stale_lock_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stale.db");
    let locks = dir.path().join("stale.db.locks");
    let saver = SqliteSaver::open(&path).unwrap();
    let held = saver.lock_thread("t", Duration::ZERO).await.unwrap();
    let file = lock_files(&locks).pop().unwrap();
    drop(held);
    // What a process killed while holding the thread leaves: an unheld file.
    std::fs::create_dir_all(&locks).unwrap();
    std::fs::File::create(&file).unwrap();
    saver.delete_thread("t").await.unwrap();
    assert!(!file.exists());
    // A lock held by a live run is left alone.
    let held = saver.lock_thread("u", Duration::ZERO).await.unwrap();
    saver.delete_thread("u").await.unwrap();
    assert_eq!(lock_files(&locks).len(), 1);
    drop(held);
}
