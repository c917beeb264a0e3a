//! Crons and delayed runs over HTTP: a schedule fires runs on a thread or on new
//! threads, pauses, changes and ends; a delayed run waits, survives a restart, and
//! can be cancelled before it starts; bad schedules, zones, ends and delays are 422s
//! naming the field. The multi-process exactly-once drill is in `drills/cron.rs`.

use crate::common;
use crate::pg;

use std::time::{Duration, Instant};

use common::Harness;
use serde_json::{Value, json};

/// The runs of `thread`, oldest first.
async fn runs_of(h: &Harness, thread: &str) -> Vec<Value> {
    let (status, runs) = h.get(&format!("/threads/{thread}/runs?limit=100")).await;
    assert_eq!(status, 200, "{runs}");
    let mut runs = runs.as_array().cloned().unwrap_or_default();
    runs.reverse();
    runs
}

/// Waits until `thread` has at least `n` runs; them.
async fn wait_for_runs(h: &Harness, thread: &str, n: usize, within: Duration) -> Vec<Value> {
    let until = Instant::now() + within;
    loop {
        let runs = runs_of(h, thread).await;
        if runs.len() >= n {
            return runs;
        }
        assert!(
            Instant::now() < until,
            "{} runs within {within:?}, wanted {n}",
            runs.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn patch(h: &Harness, path: &str, body: Value) -> (u16, Value) {
    common::read(
        h.http
            .patch(h.url(path))
            .json(&body)
            .send()
            .await
            .expect("a response"),
    )
    .await
}

async fn delete(h: &Harness, path: &str) -> u16 {
    h.http
        .delete(h.url(path))
        .send()
        .await
        .expect("a response")
        .status()
        .as_u16()
}

/// A thread cron every second fires one run per tick, each naming its cron and
/// tick; paused it fires nothing; deleted with its thread.
pub(crate) async fn check_thread_cron(h: &Harness) {
    let t = h.thread().await;
    let (status, cron) = h
        .post(
            &format!("/threads/{t}/runs/crons"),
            json!({
                "assistant_id": "job",
                "schedule": "* * * * * *",
                "input": { "delay_ms": 0 },
                "metadata": { "team": "night" },
            }),
        )
        .await;
    assert_eq!(status, 200, "{cron}");
    let id = cron["cron_id"].as_str().expect("a cron id").to_string();
    assert_eq!(cron["thread_id"], t.as_str());
    assert_eq!(cron["enabled"], true);
    assert_eq!(cron["schedule"], "* * * * * *");
    assert_eq!(cron["metadata"], json!({ "team": "night" }));
    assert!(cron["next_run_date"].is_string(), "{cron}");

    let runs = wait_for_runs(h, &t, 3, Duration::from_secs(10)).await;
    let mut ticks: Vec<&str> = Vec::new();
    for run in &runs {
        assert_eq!(run["metadata"]["cron_id"], id.as_str(), "{run}");
        assert_eq!(run["metadata"]["team"], "night", "{run}");
        ticks.push(run["metadata"]["cron_tick"].as_str().expect("a tick"));
    }
    let mut unique = ticks.clone();
    unique.dedup();
    assert_eq!(unique, ticks, "one run per tick, in order");

    // Paused: no more runs (one already claimed may still land).
    let (status, paused) =
        patch(h, &format!("/runs/crons/{id}"), json!({ "enabled": false })).await;
    assert_eq!(status, 200, "{paused}");
    assert_eq!(paused["enabled"], false);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = runs_of(h, &t).await.len();
    tokio::time::sleep(Duration::from_millis(2200)).await;
    assert_eq!(runs_of(h, &t).await.len(), before, "a paused cron fired");

    // Searched and counted by thread and metadata.
    let (_, found) = h
        .post(
            "/runs/crons/search",
            json!({ "thread_id": t, "metadata": { "team": "night" } }),
        )
        .await;
    assert_eq!(found.as_array().map(Vec::len), Some(1), "{found}");
    let (_, n) = h
        .post(
            "/runs/crons/count",
            json!({ "thread_id": t, "enabled": true }),
        )
        .await;
    assert_eq!(n, 0);

    // The thread goes, and its cron with it.
    for run in runs_of(h, &t).await {
        h.join(&t, run["run_id"].as_str().expect("an id")).await;
    }
    assert_eq!(delete(h, &format!("/threads/{t}")).await, 204);
    assert_eq!(h.get(&format!("/runs/crons/{id}")).await.0, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_cron_fires_once_per_tick_pauses_and_goes_with_its_thread() {
    let h = Harness::start().await;
    check_thread_cron(&h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_cron_on_postgres() {
    let Some(url) = pg::postgres_url("a_thread_cron_on_postgres") else {
        return;
    };
    let schema = pg::fresh_schema("sg_srv_cron");
    let h = Harness::bind(pg::server(&url, &schema)).await;
    check_thread_cron(&h).await;
    h.running.shutdown().await.expect("a clean shutdown");
    pg::drop_schema(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_cron_makes_a_thread_per_run_and_keeps_or_deletes_it() {
    let h = Harness::start().await;
    let (status, kept) = h
        .post(
            "/runs/crons",
            json!({
                "assistant_id": "job",
                "schedule": "* * * * * *",
                "input": {},
                "on_run_completed": "keep",
            }),
        )
        .await;
    assert_eq!(status, 200, "{kept}");
    assert_eq!(kept["thread_id"], Value::Null);
    assert_eq!(kept["on_run_completed"], "keep");
    let id = kept["cron_id"].as_str().expect("an id").to_string();
    // Its runs' threads are found by the cron's id.
    let until = Instant::now() + Duration::from_secs(10);
    let threads = loop {
        let (_, threads) = h
            .post("/threads/search", json!({ "metadata": { "cron_id": id } }))
            .await;
        let threads = threads.as_array().cloned().unwrap_or_default();
        if threads.len() >= 2 {
            break threads;
        }
        assert!(Instant::now() < until, "no two runs of a stateless cron");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_ne!(threads[0]["thread_id"], threads[1]["thread_id"]);
    assert_eq!(delete(&h, &format!("/runs/crons/{id}")).await, 204);
    assert_eq!(delete(&h, &format!("/runs/crons/{id}")).await, 404);

    // The default deletes each run's thread once the run ended.
    let (_, gone) = h
        .post(
            "/runs/crons",
            json!({ "assistant_id": "job", "schedule": "* * * * * *", "input": { "delay_ms": 300 } }),
        )
        .await;
    assert_eq!(gone["on_run_completed"], "delete");
    let gone_id = gone["cron_id"].as_str().expect("an id").to_string();
    // Its runs' threads are there while the runs run (each step takes 300 ms).
    let mut seen = false;
    let until = Instant::now() + Duration::from_millis(3500);
    while Instant::now() < until {
        let (_, now) = h
            .post(
                "/threads/search",
                json!({ "metadata": { "cron_id": gone_id } }),
            )
            .await;
        seen |= now.as_array().is_some_and(|a| !a.is_empty());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(seen, "the cron made no run");
    assert_eq!(delete(&h, &format!("/runs/crons/{gone_id}")).await, 204);
    // Each run's thread goes once the run ended.
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, left) = h
            .post(
                "/threads/search",
                json!({ "metadata": { "cron_id": gone_id } }),
            )
            .await;
        if left == json!([]) {
            break;
        }
        assert!(
            Instant::now() < until,
            "threads of finished runs were kept: {left}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cron_reads_its_schedule_in_its_time_zone_and_changes() {
    let h = Harness::start().await;
    let t = h.thread().await;
    let (status, cron) = h
        .post(
            &format!("/threads/{t}/runs/crons"),
            json!({
                "assistant_id": "job",
                "schedule": "0 9 * * *",
                "timezone": "America/New_York",
                "end_time": "2099-01-01T00:00:00Z",
            }),
        )
        .await;
    assert_eq!(status, 200, "{cron}");
    // 9:00 in New York is 13:00 or 14:00 UTC, depending on daylight saving.
    let next = cron["next_run_date"]
        .as_str()
        .expect("a next run")
        .to_string();
    assert!(
        next.ends_with("T13:00:00.000Z") || next.ends_with("T14:00:00.000Z"),
        "{next}"
    );
    assert!(
        cron["end_time"]
            .as_str()
            .is_some_and(|e| e.starts_with("2099-01-01"))
    );
    let id = cron["cron_id"].as_str().expect("an id");
    let (status, changed) = patch(
        &h,
        &format!("/runs/crons/{id}"),
        json!({ "schedule": "30 6 * * *", "timezone": "UTC", "end_time": null, "input": { "ask": false } }),
    )
    .await;
    assert_eq!(status, 200, "{changed}");
    assert!(
        changed["next_run_date"]
            .as_str()
            .is_some_and(|n| n.ends_with("T06:30:00.000Z")),
        "{changed}"
    );
    assert_eq!(changed["end_time"], Value::Null);
    assert_eq!(changed["payload"]["input"], json!({ "ask": false }));
    let (_, got) = h.get(&format!("/runs/crons/{id}")).await;
    assert_eq!(got["schedule"], "30 6 * * *");
    let (_, picked) = h
        .post(
            "/runs/crons/search",
            json!({ "assistant_id": "job", "select": ["cron_id", "schedule"] }),
        )
        .await;
    assert_eq!(picked, json!([{ "cron_id": id, "schedule": "30 6 * * *" }]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_was_down_fires_once_for_the_ticks_it_missed() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("server.sqlite");
    let serve = |workers: usize| {
        common::with_graphs(stategraph_server::Server::new())
            .sqlite(&file)
            .workers(workers)
    };
    // A process that runs nothing (and so schedules nothing) makes the cron.
    let front = Harness::bind(serve(0)).await;
    let t = front.thread().await;
    let (status, cron) = front
        .post(
            &format!("/threads/{t}/runs/crons"),
            json!({ "assistant_id": "job", "schedule": "* * * * * *", "input": {} }),
        )
        .await;
    assert_eq!(status, 200, "{cron}");
    front.running.shutdown().await.expect("a clean shutdown");
    tokio::time::sleep(Duration::from_millis(3200)).await;

    let back = Harness::bind(serve(1)).await;
    let runs = wait_for_runs(&back, &t, 1, Duration::from_secs(5)).await;
    let missed = runs[0]["metadata"]["cron_missed"].as_u64().unwrap_or(0);
    assert!(
        missed >= 2,
        "the first run stands for the missed ticks: {}",
        runs[0]
    );
    // Then one run per tick again, not a burst.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after = runs_of(&back, &t).await;
    assert!(
        after.len() <= 3,
        "{} runs: the missed ticks were replayed",
        after.len()
    );
    back.running.shutdown().await.expect("a clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_crons_and_delays_are_422s_naming_the_field() {
    let h = Harness::start().await;
    let t = h.thread().await;
    let base = json!({ "assistant_id": "job", "schedule": "* * * * *" });
    let with = |k: &str, v: Value| {
        let mut b = base.clone();
        b[k] = v;
        b
    };
    for (body, field) in [
        (with("schedule", json!("every day")), "$.schedule"),
        (with("schedule", json!("61 * * * *")), "$.schedule"),
        (with("schedule", json!("")), "$.schedule"),
        (with("timezone", json!("Mars/Olympus")), "$.timezone"),
        (
            with("end_time", json!("2001-01-01T00:00:00Z")),
            "$.end_time",
        ),
        (with("end_time", json!("tomorrow")), "$.end_time"),
        (
            with("webhook", json!("ftp://example.com/hook")),
            "$.webhook",
        ),
        (
            with("interrupt_before", json!(["nowhere"])),
            "$.interrupt_before",
        ),
        (with("unknown_field", json!(1)), "$.unknown_field"),
    ] {
        for path in [
            "/runs/crons".to_string(),
            format!("/threads/{t}/runs/crons"),
        ] {
            let (status, err) = h.post(&path, body.clone()).await;
            assert_eq!(status, 422, "{body} → {err}");
            assert_eq!(err["errors"][0]["path"], field, "{body} → {err}");
        }
    }
    let (status, _) = h
        .post("/runs/crons", with("assistant_id", json!("nobody")))
        .await;
    assert_eq!(status, 404);
    let (status, _) = h
        .post("/threads/no-such-thread/runs/crons", base.clone())
        .await;
    assert_eq!(status, 404);
    assert_eq!(h.get("/runs/crons/no-such-cron").await.0, 404);
    let (status, _) = patch(&h, "/runs/crons/no-such-cron", json!({ "enabled": false })).await;
    assert_eq!(status, 404);

    for (after, field) in [
        (json!(-1), "$.after_seconds"),
        (json!("soon"), "$.after_seconds"),
        (json!(1e300), "$.after_seconds"),
        (json!(9.0e15), "$.after_seconds"),
    ] {
        let (status, err) = h
            .post(
                &format!("/threads/{t}/runs"),
                json!({ "assistant_id": "job", "input": {}, "after_seconds": after }),
            )
            .await;
        assert_eq!(status, 422, "{err}");
        assert_eq!(err["errors"][0]["path"], field, "{err}");
    }
    // Nothing was made.
    let (_, n) = h.post("/runs/crons/count", json!({})).await;
    assert_eq!(n, 0);
    assert!(runs_of(&h, &t).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_run_waits_and_can_be_cancelled_before_it_starts() {
    let h = Harness::start().await;
    let t = h.thread().await;
    let asked = Instant::now();
    let run = h
        .background(
            &t,
            json!({ "assistant_id": "job", "input": {}, "after_seconds": 1.5 }),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(h.run(&t, &run).await.1["status"], "pending");
    let out = h.join(&t, &run).await;
    assert!(asked.elapsed() >= Duration::from_millis(1500));
    assert_eq!(out["log"], json!(["first", "second"]));

    let t2 = h.thread().await;
    let later = h
        .background(
            &t2,
            json!({ "assistant_id": "job", "input": {}, "after_seconds": 2 }),
        )
        .await;
    let (status, _) = h
        .post(&format!("/threads/{t2}/runs/{later}/cancel"), json!({}))
        .await;
    assert!(status == 200 || status == 202 || status == 204, "{status}");
    tokio::time::sleep(Duration::from_millis(2600)).await;
    assert_eq!(h.run(&t2, &later).await.1["status"], "interrupted");
    let (_, state) = h.get(&format!("/threads/{t2}/state")).await;
    assert_eq!(
        state["values"].get("log"),
        None,
        "a cancelled delayed run ran: {state}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_run_survives_a_restart() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("server.sqlite");
    let serve = || common::with_graphs(stategraph_server::Server::new()).sqlite(&file);
    let first = Harness::bind(serve()).await;
    let t = first.thread().await;
    let run = first
        .background(
            &t,
            json!({ "assistant_id": "job", "input": {}, "after_seconds": 1 }),
        )
        .await;
    first.running.shutdown().await.expect("a clean shutdown");
    let second = Harness::bind(serve()).await;
    let out = second.join(&t, &run).await;
    assert_eq!(out["log"], json!(["first", "second"]));
    second.running.shutdown().await.expect("a clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_opening_one_file_at_once_and_an_older_file_all_start() {
    // Four processes' worth of servers opening a new file together: the tables and
    // columns are made once.
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("server.sqlite");
    let starts = (0..4).map(|_| {
        let file = file.clone();
        tokio::spawn(async move {
            common::with_graphs(stategraph_server::Server::new())
                .sqlite(file)
                .workers(0)
                .bind("127.0.0.1:0")
                .await
        })
    });
    for started in futures::future::join_all(starts).await {
        let running = started.expect("a task").expect("the server starts");
        running.shutdown().await.expect("a clean shutdown");
    }

    // A file an earlier version made (its runs table without `run_after`, its
    // threads without times to live) gains the columns, and runs run.
    let old = dir.path().join("old.sqlite");
    let db = rusqlite::Connection::open(&old).expect("a file");
    db.execute_batch(
        "CREATE TABLE sg_threads (thread_id TEXT PRIMARY KEY, created_at INTEGER NOT NULL,
             updated_at INTEGER NOT NULL, metadata TEXT NOT NULL, status TEXT NOT NULL,
             state_values TEXT NOT NULL, interrupts TEXT NOT NULL);
         CREATE TABLE sg_runs (seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL UNIQUE,
             thread_id TEXT NOT NULL, assistant_id TEXT NOT NULL, created_at INTEGER NOT NULL,
             updated_at INTEGER NOT NULL, status TEXT NOT NULL, metadata TEXT NOT NULL,
             multitask_strategy TEXT NOT NULL, kwargs TEXT NOT NULL, attempt INTEGER NOT NULL DEFAULT 0,
             cancel TEXT, output TEXT, worker TEXT, lease_until INTEGER, ended_at INTEGER);
         INSERT INTO sg_threads VALUES ('kept', 1, 1, '{}', 'idle', '{}', '[]');",
    )
    .expect("the old tables");
    drop(db);
    let h = Harness::bind(common::with_graphs(stategraph_server::Server::new()).sqlite(&old)).await;
    assert_eq!(h.get("/threads/kept").await.0, 200);
    let t = h.thread().await;
    let run = h
        .background(
            &t,
            json!({ "assistant_id": "job", "input": {}, "after_seconds": 0.2 }),
        )
        .await;
    assert_eq!(h.join(&t, &run).await["log"], json!(["first", "second"]));
    h.running.shutdown().await.expect("a clean shutdown");
}
