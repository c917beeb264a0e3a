//! Two servers on one PostgreSQL database, as two processes would be (each with its
//! own pool and `LISTEN` connection): one that only serves HTTP (`workers(0)`) and
//! one that runs. A client of the first streams a run the second executes, and a
//! run cancelled through the first stops on the second.

use crate::common;
use crate::pg;

use std::time::{Duration, Instant};

use common::Harness;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_of_one_process_streams_a_run_another_executes() {
    let Some(url) = pg::postgres_url("a_client_of_one_process_streams_a_run_another_executes")
    else {
        return;
    };
    let schema = pg::fresh_schema("sg_srv_cross");
    let front = Harness::bind(pg::server(&url, &schema).workers(0)).await;
    let back = Harness::bind(pg::server(&url, &schema).workers(2)).await;

    let t = front.thread().await;
    let response = front
        .http
        .post(front.url(&format!("/threads/{t}/runs/stream")))
        .json(&json!({
            "assistant_id": "job",
            "input": { "delay_ms": 200 },
            "stream_mode": ["values", "updates"],
        }))
        .send()
        .await
        .expect("a response");
    assert_eq!(response.status().as_u16(), 200);
    let events = common::parse_sse(response).await;
    let names: Vec<&str> = events.iter().map(|(e, _, _)| e.as_str()).collect();
    assert_eq!(names.first(), Some(&"metadata"), "{names:?}");
    assert_eq!(names.last(), Some(&"end"), "{names:?}");
    let updates: Vec<&serde_json::Value> = events
        .iter()
        .filter(|(e, _, _)| e == "updates")
        .map(|(_, d, _)| d)
        .collect();
    let steps: Vec<&str> = updates
        .iter()
        .flat_map(|u| u.as_object().into_iter().flat_map(|o| o.keys()))
        .map(String::as_str)
        .collect();
    assert_eq!(steps, ["first", "second", "question"], "{events:?}");
    let last = events
        .iter()
        .rev()
        .find(|(e, _, _)| e == "values")
        .map(|(_, d, _)| d.clone())
        .expect("values");
    assert_eq!(last["log"], json!(["first", "second"]));

    // The process that runs nothing did not run it: the run record (read through
    // either) is a success, and the same thread state is seen from both.
    let (_, runs) = back.get(&format!("/threads/{t}/runs")).await;
    assert_eq!(runs[0]["status"], "success", "{runs}");
    let (_, a) = front.get(&format!("/threads/{t}/state")).await;
    let (_, b) = back.get(&format!("/threads/{t}/state")).await;
    assert_eq!(a["values"], b["values"]);

    // A thread stream through the process that runs nothing follows runs and
    // state updates made through the other.
    crate::thread_stream::check_thread_stream(&front, &back).await;

    // With no process running anything, a queued run stays pending.
    back.running.shutdown().await.expect("a clean shutdown");
    let idle = front
        .background(&t, json!({ "assistant_id": "job", "input": {} }))
        .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(front.run(&t, &idle).await.1["status"], "pending");

    front.running.shutdown().await.expect("a clean shutdown");
    pg::drop_schema(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cancelled_through_one_process_stops_on_the_other_at_once() {
    let Some(url) =
        pg::postgres_url("a_run_cancelled_through_one_process_stops_on_the_other_at_once")
    else {
        return;
    };
    let schema = pg::fresh_schema("sg_srv_cancel");
    // A long lease: the worker renews (and so reads the cancel flag) every 20 s, so a
    // stop within seconds comes from the NOTIFY the front process sends.
    let lease = Duration::from_secs(60);
    let front = Harness::bind(pg::server(&url, &schema).lease(lease).workers(0)).await;
    let back = Harness::bind(pg::server(&url, &schema).lease(lease).workers(1)).await;

    let t = front.thread().await;
    let run = front
        .background(
            &t,
            json!({ "assistant_id": "job", "input": { "delay_ms": 10_000 } }),
        )
        .await;
    let started = Instant::now();
    loop {
        let (_, r) = front.run(&t, &run).await;
        if r["status"] == "running" {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the back process never claimed the run: {r}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let cancelled = Instant::now();
    let (status, body) = front
        .post(&format!("/threads/{t}/runs/{run}/cancel"), json!({}))
        .await;
    assert!(
        status == 200 || status == 202 || status == 204,
        "{status} {body}"
    );
    front.join(&t, &run).await;
    let took = cancelled.elapsed();
    assert!(
        took < Duration::from_secs(5),
        "the run stopped {took:?} after the cancel: the notice did not reach its process"
    );
    let (_, r) = back.run(&t, &run).await;
    assert_eq!(r["status"], "interrupted", "{r}");
    let (_, thread) = back.get(&format!("/threads/{t}")).await;
    assert_ne!(thread["status"], "busy", "{thread}");

    back.running.shutdown().await.expect("a clean shutdown");
    front.running.shutdown().await.expect("a clean shutdown");
    pg::drop_schema(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_listen_connection_is_connected_again() {
    let Some(url) = pg::postgres_url("a_lost_listen_connection_is_connected_again") else {
        return;
    };
    let schema = pg::fresh_schema("sg_srv_relisten");
    let lease = Duration::from_secs(60);
    let front = Harness::bind(pg::server(&url, &schema).lease(lease).workers(0)).await;
    // The back process's sessions carry a name of their own, to find its LISTEN.
    let sep = if url.contains('?') { '&' } else { '?' };
    let named = format!("{url}{sep}application_name={schema}");
    let back = Harness::bind(pg::server(&named, &schema).lease(lease).workers(1)).await;

    let (admin, connection) = tokio_postgres::connect(pg::plain(&url), tokio_postgres::NoTls)
        .await
        .expect("an admin connection");
    tokio::spawn(connection);
    let listening: i32 = admin
        .query_one(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN%'",
            &[&schema],
        )
        .await
        .expect("the back process has one LISTEN session")
        .get(0);
    let killed: bool = admin
        .query_one("SELECT pg_terminate_backend($1)", &[&listening])
        .await
        .expect("terminate the LISTEN session")
        .get(0);
    assert!(killed, "the LISTEN session was terminated");
    // Reconnecting takes a backoff of 100 ms and a handshake.
    let again = Instant::now();
    loop {
        let n: i64 = admin
            .query_one(
                // A new session: the killed one may still be listed while it ends.
                "SELECT count(*) FROM pg_stat_activity
                 WHERE application_name = $1 AND query LIKE 'LISTEN%' AND pid <> $2",
                &[&schema, &listening],
            )
            .await
            .expect("the sessions")
            .get(0);
        if n == 1 {
            break;
        }
        assert!(
            again.elapsed() < Duration::from_secs(10),
            "the LISTEN session did not come back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Notices reach the back process again: a cancel stops its run at once.
    let t = front.thread().await;
    let run = front
        .background(
            &t,
            json!({ "assistant_id": "job", "input": { "delay_ms": 10_000 } }),
        )
        .await;
    let started = Instant::now();
    while front.run(&t, &run).await.1["status"] != "running" {
        assert!(started.elapsed() < Duration::from_secs(10), "never claimed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let cancelled = Instant::now();
    front
        .post(&format!("/threads/{t}/runs/{run}/cancel"), json!({}))
        .await;
    front.join(&t, &run).await;
    assert!(
        cancelled.elapsed() < Duration::from_secs(5),
        "the cancel took {:?}: notices no longer reach the back process",
        cancelled.elapsed()
    );

    back.running.shutdown().await.expect("a clean shutdown");
    front.running.shutdown().await.expect("a clean shutdown");
    pg::drop_schema(&url, &schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejecting_runs_sent_at_once_to_two_processes_admit_exactly_one() {
    let Some(url) =
        pg::postgres_url("rejecting_runs_sent_at_once_to_two_processes_admit_exactly_one")
    else {
        return;
    };
    let schema = pg::fresh_schema("sg_srv_reject");
    let a = Harness::bind(pg::server(&url, &schema).workers(0)).await;
    let b = Harness::bind(pg::server(&url, &schema).workers(0)).await;
    for round in 0..5 {
        let t = a.thread().await;
        let body = json!({ "assistant_id": "job", "input": {}, "multitask_strategy": "reject" });
        let path = format!("/threads/{t}/runs");
        let sends = (0..16).map(|i| {
            let h = if i % 2 == 0 { &a } else { &b };
            h.post(&path, body.clone())
        });
        let answers = futures::future::join_all(sends).await;
        let admitted = answers.iter().filter(|(s, _)| *s == 200).count();
        let refused = answers.iter().filter(|(s, _)| *s == 409).count();
        assert_eq!((admitted, refused), (1, 15), "round {round}: {answers:?}");
        let (_, runs) = b.get(&format!("/threads/{t}/runs")).await;
        assert_eq!(runs.as_array().map(Vec::len), Some(1), "round {round}");
    }
    a.running.shutdown().await.expect("a clean shutdown");
    b.running.shutdown().await.expect("a clean shutdown");
    pg::drop_schema(&url, &schema).await;
}
