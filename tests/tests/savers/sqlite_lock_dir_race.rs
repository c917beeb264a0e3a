//! Runs locking different threads of one SQLite database at the same time: the last
//! lock released removes `<database>.locks/`, and a lock taken at that moment must
//! create it again, not fail. (The many-threads scale curve failed this way:
//! "cannot lock thread `t-4` …: File exists (os error 17)", from `create_dir_all`
//! finding the directory and then not finding it.)

use std::sync::Arc;
use std::time::Duration;

use stategraph::checkpoint::CheckpointSaver;
use stategraph_sqlite::SqliteSaver;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_locks_of_different_threads_never_fail_while_the_directory_comes_and_goes() {
    let dir = tempfile::tempdir().unwrap();
    let saver = Arc::new(SqliteSaver::open(dir.path().join("race.db")).unwrap());
    let tasks: Vec<_> = (0..4)
        .map(|t| {
            let saver = saver.clone();
            tokio::spawn(async move {
                for i in 0..3000 {
                    let thread = format!("t-{t}-{i}");
                    let held = saver.lock_thread(&thread, Duration::from_secs(5)).await;
                    if let Err(e) = held {
                        return Err(format!("{thread}: {e}"));
                    }
                }
                Ok(())
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    // Every lock was released: no file, no directory left.
    assert!(!dir.path().join("race.db.locks").exists());
}
