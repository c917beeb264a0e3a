//! Runs over HTTP on the embedded SQLite queue: streaming, interrupts and resume,
//! double-texting, cancellation, re-attaching, shutdown.

use crate::common;

use std::time::Duration;

use common::{Harness, parse_sse};
use serde_json::{Value, json};

fn events<'a>(all: &'a [(String, Value, Option<String>)], name: &str) -> Vec<&'a Value> {
    all.iter()
        .filter(|(e, _, _)| e == name)
        .map(|(_, d, _)| d)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_run_sends_metadata_then_each_mode_then_end() {
    let h = Harness::start().await;
    let t = h.thread().await;
    let r = h
        .http
        .post(h.url(&format!("/threads/{t}/runs/stream")))
        .json(&json!({ "assistant_id": "job", "input": { "delay_ms": 1 },
                        "stream_mode": ["values", "updates", "custom"] }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let location = r.headers()["content-location"]
        .to_str()
        .unwrap()
        .to_string();
    let stream_at = r.headers()["location"].to_str().unwrap().to_string();
    let all = h.sse(r).await;
    assert_eq!(all[0].0, "metadata");
    let run_id = all[0].1["run_id"].as_str().unwrap();
    assert_eq!(location, format!("/threads/{t}/runs/{run_id}"));
    assert_eq!(stream_at, format!("/threads/{t}/runs/{run_id}/stream"));
    // Joining there again replays the same events.
    let again = h
        .sse(h.http.get(h.url(&stream_at)).send().await.unwrap())
        .await;
    assert_eq!(again, all);
    assert_eq!(all.last().unwrap().0, "end");
    let ids: Vec<i64> = all
        .iter()
        .map(|(_, _, id)| id.as_ref().unwrap().parse().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids ascend: {ids:?}");
    let updates = events(&all, "updates");
    let nodes: Vec<&str> = updates
        .iter()
        .flat_map(|u| u.as_object().unwrap().keys())
        .map(String::as_str)
        .collect();
    assert_eq!(nodes, ["first", "second", "question"]);
    assert_eq!(updates[0]["first"], json!({ "log": ["first"], "count": 1 }));
    assert_eq!(events(&all, "custom"), [&json!({ "progress": "halfway" })]);
    let last = events(&all, "values").last().copied().unwrap().clone();
    assert_eq!(last["log"], json!(["first", "second"]));
    assert_eq!(last["count"], 2);
    // The thread remembers the graph and the values.
    let (_, thread) = h.get(&format!("/threads/{t}")).await;
    assert_eq!(thread["status"], "idle");
    assert_eq!(thread["metadata"]["graph_id"], "job");
    assert_eq!(thread["values"]["count"], 2);
    let (_, run) = h.run(&t, run_id).await;
    assert_eq!(run["status"], "success");
}

/// As LangGraph 1.x streams a pause: `updates` carries the interrupt alone, the last
/// `values` event the state with `__interrupt__` beside it (what `useStream` and
/// `RemoteGraph` read); subgraph events only for the modes asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_pause_ends_with_the_values_and_their_interrupt() {
    let h = Harness::start().await;
    for (graph, modes) in [
        ("job", json!(["values", "updates"])),
        ("job", json!("values")),
        ("nested", json!(["values"])),
    ] {
        let t = h.thread().await;
        let r = h
            .http
            .post(h.url(&format!("/threads/{t}/runs/stream")))
            .json(&json!({ "assistant_id": graph, "input": { "ask": true },
                            "stream_mode": modes, "stream_subgraphs": true }))
            .send()
            .await
            .unwrap();
        let all: Vec<(String, Value)> =
            h.sse(r).await.into_iter().map(|(e, d, _)| (e, d)).collect();
        let values: Vec<&Value> = all
            .iter()
            .filter(|(e, _)| e == "values")
            .map(|(_, d)| d)
            .collect();
        let last = values.last().expect("values events");
        assert_eq!(
            last["__interrupt__"][0]["value"],
            json!({ "question": "go on?" }),
            "{all:?}"
        );
        // The state beside it is the graph's last values (a subgraph's steps count
        // in the parent once it finishes).
        let mut state = (*last).clone();
        state.as_object_mut().unwrap().remove("__interrupt__");
        assert_eq!(&&state, &values[values.len() - 2], "{all:?}");
        let log = if graph == "job" {
            json!(["first", "second"])
        } else {
            json!([])
        };
        assert_eq!(state["log"], log, "{all:?}");
        assert_eq!(
            values
                .iter()
                .filter(|v| v.get("__interrupt__").is_some())
                .count(),
            1
        );
        let wants_updates = modes
            .as_array()
            .is_some_and(|m| m.contains(&json!("updates")));
        let updates: Vec<&(String, Value)> = all
            .iter()
            .filter(|(e, _)| e.starts_with("updates"))
            .collect();
        assert_eq!(!updates.is_empty(), wants_updates, "{all:?}");
        if wants_updates {
            assert!(
                updates
                    .iter()
                    .any(|(_, d)| d.get("__interrupt__").is_some()),
                "{all:?}"
            );
        }
        // Nothing of a mode not asked for, from the graph or its subgraphs.
        for (event, _) in &all {
            let mode = event.split('|').next().unwrap_or_default();
            assert!(
                ["metadata", "values", "updates", "end"].contains(&mode),
                "{event} in {all:?}"
            );
        }
        // The stored state has no `__interrupt__` key: that is the wire's.
        let (_, state) = h.get(&format!("/threads/{t}/state")).await;
        assert!(state["values"].get("__interrupt__").is_none(), "{state}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_pauses_the_thread_and_a_command_resumes_it() {
    let h = Harness::start().await;
    let t = h.thread().await;
    let (status, out) = h
        .post(
            &format!("/threads/{t}/runs/wait"),
            json!({ "assistant_id": "job", "input": { "ask": true } }),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(
        out["__interrupt__"][0]["value"],
        json!({ "question": "go on?" })
    );
    let (_, state) = h.get(&format!("/threads/{t}/state")).await;
    assert_eq!(state["next"], json!(["question"]));
    assert_eq!(
        state["tasks"][0]["interrupts"][0]["value"]["question"],
        "go on?"
    );
    let (_, thread) = h.get(&format!("/threads/{t}")).await;
    assert_eq!(thread["status"], "interrupted");
    assert!(thread["interrupts"]["question"].is_array(), "{thread}");

    let (status, out) = h
        .post(
            &format!("/threads/{t}/runs/wait"),
            json!({ "assistant_id": "job", "command": { "resume": "yes" } }),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["answer"], "yes");
    assert_eq!(out["log"], json!(["first", "second", "answered"]));
    let (_, thread) = h.get(&format!("/threads/{t}")).await;
    assert_eq!(thread["status"], "idle");

    // Nothing waits any more: a second resume is refused, and no run is queued.
    let (status, err) = h
        .post(
            &format!("/threads/{t}/runs"),
            json!({ "assistant_id": "job", "command": { "resume": "again" } }),
        )
        .await;
    assert_eq!(status, 409, "{err}");
    assert!(
        err["detail"]
            .as_str()
            .unwrap()
            .contains("not waiting on an interrupt"),
        "{err}"
    );
    let (_, runs) = h.get(&format!("/threads/{t}/runs")).await;
    assert_eq!(runs.as_array().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn double_texting_follows_the_multitask_strategy() {
    let h = Harness::start().await;
    common::check_double_texting(&h).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_run_stops_and_frees_its_thread() {
    let h = Harness::start().await;
    let t = h.thread().await;
    let run = h
        .background(
            &t,
            json!({ "assistant_id": "job", "input": { "delay_ms": 2000 } }),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = h
        .http
        .post(h.url(&format!(
            "/threads/{t}/runs/{run}/cancel?wait=1&action=interrupt"
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let (_, record) = h.run(&t, &run).await;
    assert_eq!(record["status"], "interrupted");
    let (_, thread) = h.get(&format!("/threads/{t}")).await;
    assert_eq!(thread["status"], "idle");
    // The thread takes a new run at once.
    let (status, _) = h
        .post(
            &format!("/threads/{t}/runs/wait"),
            json!({ "assistant_id": "job", "input": { "delay_ms": 1 } }),
        )
        .await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_rolled_back_leaves_its_question_pending() {
    common::check_rollback_of_a_resume(&Harness::start().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cancelled_the_moment_it_is_claimed_stops_at_once() {
    // A long lease: only the cancel notice, not a heartbeat, can stop the run soon.
    let h = Harness::start_with(|s| s.lease(Duration::from_secs(60))).await;
    for round in 0..8 {
        let t = h.thread().await;
        let run = h
            .background(
                &t,
                json!({ "assistant_id": "job", "input": { "delay_ms": 20_000 } }),
            )
            .await;
        while h.run(&t, &run).await.1["status"] == "pending" {
            tokio::task::yield_now().await;
        }
        let sent = std::time::Instant::now();
        let (status, _) = h
            .post(&format!("/threads/{t}/runs/{run}/cancel"), json!({}))
            .await;
        assert_eq!(status, 202, "round {round}");
        h.join(&t, &run).await;
        assert!(
            sent.elapsed() < Duration::from_secs(5),
            "round {round}: the run stopped {:?} after its cancel",
            sent.elapsed()
        );
        assert_eq!(h.run(&t, &run).await.1["status"], "interrupted");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_leaves_the_run_going_and_can_re_attach() {
    let h = Harness::start().await;
    let t = h.thread().await;
    let r = h
        .http
        .post(h.url(&format!("/threads/{t}/runs/stream")))
        .json(&json!({ "assistant_id": "job", "input": { "delay_ms": 300 }, "stream_mode": ["updates"] }))
        .send()
        .await
        .unwrap();
    let mut body = futures::StreamExt::boxed(r.bytes_stream());
    let first = futures::StreamExt::next(&mut body).await.unwrap().unwrap();
    let text = String::from_utf8_lossy(&first).to_string();
    let run_id = text
        .split("\"run_id\":\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    drop(body); // the client disconnects
    let out = h.join(&t, &run_id).await;
    assert_eq!(out["log"], json!(["first", "second"]));
    // Re-attaching replays every stored event; with Last-Event-ID only the later ones.
    let all = parse_sse(
        h.http
            .get(h.url(&format!("/threads/{t}/runs/{run_id}/stream")))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(all.first().unwrap().0, "metadata");
    assert_eq!(all.last().unwrap().0, "end");
    let after = all[1].2.clone().unwrap();
    let rest = parse_sse(
        h.http
            .get(h.url(&format!("/threads/{t}/runs/{run_id}/stream")))
            .header("Last-Event-ID", &after)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(rest.len(), all.len() - 2);
    assert_eq!(rest[0].2, all[2].2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_hands_a_run_back_and_the_next_start_finishes_it_without_redoing_steps() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("server.sqlite");
    let start = || {
        stategraph_server::Server::new()
            .graph("job", common::job_graph())
            .sqlite(&path)
            .lease(Duration::from_secs(1))
            .bind("127.0.0.1:0")
    };
    let running = start().await.unwrap();
    let base = format!("http://{}", running.local_addr());
    let http = reqwest::Client::new();
    let t: Value = http
        .post(format!("{base}/threads"))
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let t = t["thread_id"].as_str().unwrap().to_string();
    let run: Value = http
        .post(format!("{base}/threads/{t}/runs"))
        .json(&json!({ "assistant_id": "job", "input": { "delay_ms": 700 } }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let run = run["run_id"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(1000)).await; // `first` is done, `second` is running
    running.shutdown().await.unwrap();

    let running = start().await.unwrap();
    let base = format!("http://{}", running.local_addr());
    let out: Value = http
        .get(format!("{base}/threads/{t}/runs/{run}/join"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        out["log"],
        json!(["first", "second"]),
        "no step ran twice: {out}"
    );
    assert_eq!(out["count"], 2);
    let record: Value = http
        .get(format!("{base}/threads/{t}/runs/{run}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(record["status"], "success");
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_run_returns_its_values_and_leaves_no_thread() {
    let h = Harness::start().await;
    let (status, out) = h
        .post(
            "/runs/wait",
            json!({ "assistant_id": "job", "input": { "delay_ms": 1 } }),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["count"], 2);
    let (_, threads) = h.post("/threads/search", json!({})).await;
    assert_eq!(threads, json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateless_background_run_leaves_no_thread_unless_asked_to_keep_it() {
    let h = Harness::start().await;
    let gone = json!({ "assistant_id": "job", "input": { "delay_ms": 1 } });
    let (_, run) = h.post("/runs", gone.clone()).await;
    let (_, batch) = h.post("/runs/batch", json!([gone])).await;
    let kept = json!({ "assistant_id": "job", "input": {}, "on_completion": "keep" });
    let (_, keep) = h.post("/runs", kept).await;
    let keep_thread = keep["thread_id"].as_str().expect("a thread").to_string();
    h.join(&keep_thread, keep["run_id"].as_str().expect("a run"))
        .await;
    let until = std::time::Instant::now() + Duration::from_secs(10);
    for t in [&run["thread_id"], &batch[0]["thread_id"]] {
        let t = t.as_str().expect("a thread");
        while h.get(&format!("/threads/{t}")).await.0 != 404 {
            assert!(
                std::time::Instant::now() < until,
                "thread {t} outlived its run"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    assert_eq!(h.get(&format!("/threads/{keep_thread}")).await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_does_not_wait_for_open_streams_or_waiting_clients() {
    let h = Harness::start().await;
    let t = h.thread().await;
    let stream = h
        .http
        .post(h.url(&format!("/threads/{t}/runs/stream")))
        .json(&json!({ "assistant_id": "job", "input": { "delay_ms": 5000 } }))
        .send()
        .await
        .unwrap();
    let waiting = {
        let (http, url) = (h.http.clone(), h.url(&format!("/threads/{t}/runs/wait")));
        tokio::spawn(async move {
            http.post(url)
                .json(
                    &json!({ "assistant_id": "job", "input": {}, "multitask_strategy": "enqueue" }),
                )
                .send()
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = std::time::Instant::now();
    tokio::time::timeout(Duration::from_secs(5), h.running.shutdown())
        .await
        .expect("shutdown is not held up by an open stream")
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(4));
    let events = parse_sse(stream).await;
    assert_eq!(events[0].0, "metadata");
    assert!(
        events.iter().all(|(e, _, _)| e != "end"),
        "the run did not end: it goes back to the queue"
    );
    if let Ok(Ok(r)) = waiting.await {
        assert_eq!(r.status(), 503);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subgraphs_events_are_named_mode_bar_namespace() {
    let h = Harness::start().await;
    let t = h.thread().await;
    let r = h
        .http
        .post(h.url(&format!("/threads/{t}/runs/stream")))
        .json(
            &json!({ "assistant_id": "nested", "input": { "delay_ms": 1 },
                        "stream_mode": ["updates"], "stream_subgraphs": true }),
        )
        .send()
        .await
        .unwrap();
    let all = h.sse(r).await;
    let child: Vec<&(String, Value, Option<String>)> = all
        .iter()
        .filter(|(e, _, _)| e.starts_with("updates|inner:"))
        .collect();
    let nodes: Vec<&str> = child
        .iter()
        .flat_map(|(_, d, _)| d.as_object().unwrap().keys())
        .map(String::as_str)
        .collect();
    assert_eq!(nodes, ["first", "second", "question"], "{all:?}");
    assert_eq!(child[0].1["first"]["log"], json!(["first"]));
    let parent: Vec<&Value> = events(&all, "updates");
    assert_eq!(parent.len(), 1);
    assert_eq!(parent[0]["inner"]["log"], json!(["first", "second"]));
    // Without `stream_subgraphs` only the parent's events come.
    let r = h
        .http
        .post(h.url(&format!("/threads/{t}/runs/stream")))
        .json(&json!({ "assistant_id": "nested", "input": {}, "stream_mode": "updates" }))
        .send()
        .await
        .unwrap();
    let all = h.sse(r).await;
    assert!(all.iter().all(|(e, _, _)| !e.contains('|')), "{all:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_breakpoint_leaves_the_thread_interrupted_until_a_run_continues_it() {
    let h = Harness::start().await;
    let t = h.thread().await;
    let (s, out) = h
        .post(&format!("/threads/{t}/runs/wait"), json!({ "assistant_id": "job", "input": { "delay_ms": 1 }, "interrupt_before": ["second"] }))
        .await;
    assert_eq!(s, 200, "{out}");
    assert_eq!(out["log"], json!(["first"]));
    let (_, thread) = h.get(&format!("/threads/{t}")).await;
    assert_eq!(thread["status"], "interrupted");
    let (_, state) = h.get(&format!("/threads/{t}/state")).await;
    assert_eq!(state["next"], json!(["second"]));
    let (s, out) = h
        .post(
            &format!("/threads/{t}/runs/wait"),
            json!({ "assistant_id": "job", "input": null }),
        )
        .await;
    assert_eq!(s, 200, "{out}");
    assert_eq!(out["log"], json!(["first", "second"]));
    assert_eq!(h.get(&format!("/threads/{t}")).await.1["status"], "idle");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_are_cancelled_by_thread_and_created_in_batches() {
    let h = Harness::start().await;
    let t = h.thread().await;
    let a = h
        .background(
            &t,
            json!({ "assistant_id": "job", "input": { "delay_ms": 2000 } }),
        )
        .await;
    let b = h
        .background(
            &t,
            json!({ "assistant_id": "job", "input": {}, "multitask_strategy": "enqueue" }),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let r = h
        .http
        .post(h.url("/runs/cancel?action=interrupt"))
        .json(&json!({ "thread_id": t }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    h.join(&t, &a).await;
    assert_eq!(h.run(&t, &a).await.1["status"], "interrupted");
    assert_eq!(h.run(&t, &b).await.1["status"], "interrupted");
    let (s, runs) = h
        .post("/runs/batch", json!([{ "assistant_id": "job", "input": { "delay_ms": 1 }, "on_completion": "keep" },
                                    { "assistant_id": "job", "input": { "delay_ms": 1 }, "on_completion": "keep" }]))
        .await;
    assert_eq!(s, 200, "{runs}");
    for run in runs.as_array().unwrap() {
        let out = h
            .join(
                run["thread_id"].as_str().unwrap(),
                run["run_id"].as_str().unwrap(),
            )
            .await;
        assert_eq!(out["count"], 2);
    }
    let (s, err) = h
        .post(
            "/runs/batch",
            json!([{ "assistant_id": "job" }, { "assistant_id": "job", "input": { "delay_ms": "soon" } }]),
        )
        .await;
    assert_eq!(s, 422, "{err}");
    assert!(
        err["errors"][0]["path"]
            .as_str()
            .unwrap()
            .starts_with("$[1].input.delay_ms"),
        "{err}"
    );
}
