//! `GET /threads/{id}/stream`: a thread's runs one after another and its state
//! updates, as one stream that stays open and resumes from any event id.

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{Harness, SseEvent, SseReader};

const WITHIN: Duration = Duration::from_secs(20);

async fn open(h: &Harness, thread: &str, query: &str, last_event_id: Option<&str>) -> SseReader {
    let mut req = h
        .http
        .get(h.url(&format!("/threads/{thread}/stream{query}")));
    if let Some(id) = last_event_id {
        req = req.header("Last-Event-ID", id);
    }
    let r = req.send().await.expect("a response");
    assert_eq!(r.status(), 200);
    SseReader::new(r)
}

fn is_done(e: &SseEvent, run: &str) -> bool {
    e.0 == "metadata" && e.1 == json!({ "status": "run_done", "run_id": run })
}

/// Reads until `run`'s end.
async fn through_run(stream: &mut SseReader, run: &str) -> Vec<SseEvent> {
    let mut out = Vec::new();
    loop {
        let e = stream.take(1, WITHIN).await.remove(0);
        let done = is_done(&e, run);
        out.push(e);
        if done {
            return out;
        }
    }
}

fn names(events: &[SseEvent]) -> Vec<&str> {
    events.iter().map(|e| e.0.as_str()).collect()
}

#[tokio::test]
async fn a_thread_stream_carries_each_run_then_each_state_update_and_resumes_anywhere() {
    let h = Harness::start().await;
    check_thread_stream(&h, &h).await;
}

/// Streams a thread through `streams` while `writes` runs it twice and updates its
/// state (two servers on one database: the events cross processes); then resumes
/// from every kind of event id.
pub(crate) async fn check_thread_stream(streams: &Harness, writes: &Harness) {
    let h = writes;
    let t = h.thread().await;
    let mut live = open(
        streams,
        &t,
        "?stream_mode=run_modes&stream_mode=state_update",
        None,
    )
    .await;
    let job = json!({ "assistant_id": "job", "input": { "delay_ms": 30 }, "stream_mode": ["values", "updates"] });
    let first = h.background(&t, job.clone()).await;
    let second = h.background(&t, job).await;
    let mut all = through_run(&mut live, &first).await;
    assert_eq!(all[0].0, "metadata");
    assert_eq!(all[0].1["run_id"], first.as_str());
    assert!(names(&all).contains(&"updates"), "{all:?}");
    let values = all.iter().rev().find(|e| e.0 == "values").expect("values");
    assert_eq!(values.1["log"], json!(["first", "second"]));
    all.extend(through_run(&mut live, &second).await);
    h.join(&t, &second).await;
    let (status, out) = h
        .post(
            &format!("/threads/{t}/state"),
            json!({ "values": { "answer": "by hand" } }),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    let update = live.take(1, WITHIN).await.remove(0);
    assert_eq!(update.0, "state_update");
    assert_eq!(update.1["thread_id"], t.as_str());
    assert_eq!(update.1["state"]["values"]["answer"], "by hand");
    assert_eq!(update.1["state"]["values"]["count"], 4);
    all.push(update);

    // Every event has a distinct id, and any of them resumes right after it.
    let ids: Vec<&str> = all.iter().map(|e| e.2.as_deref().expect("an id")).collect();
    let mut unique = ids.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    let modes = "?stream_mode=run_modes,state_update";
    for at in [0, 3, all.len() / 2, all.len() - 2] {
        let mut again = open(streams, &t, modes, Some(ids[at])).await;
        let rest = again.take(all.len() - at - 1, WITHIN).await;
        assert_eq!(rest, all[at + 1..], "resumed after event {at}");
    }
    let mut replay = open(streams, &t, modes, Some("-1")).await;
    assert_eq!(replay.take(all.len(), WITHIN).await, all, "-1 replays all");
    // Nothing more arrives on a resumed stream: no event twice.
    let mut tail = open(streams, &t, modes, Some(ids[ids.len() - 1])).await;
    assert!(
        tokio::time::timeout(Duration::from_millis(1500), tail.next())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn lifecycle_mode_carries_starts_and_ends_and_a_late_joiner_sees_only_what_comes() {
    let h = Harness::start().await;
    let t = h.thread().await;
    let done = h.finished_job(&t).await;
    let slow = h
        .background(
            &t,
            json!({ "assistant_id": "job", "input": { "delay_ms": 400 } }),
        )
        .await;
    // Joined once `slow` has started: neither `done` nor `slow`'s start.
    let r = h
        .http
        .get(h.url(&format!("/threads/{t}/runs/{slow}/stream")))
        .send()
        .await
        .expect("a response");
    let start = SseReader::new(r).take(1, WITHIN).await;
    assert_eq!(start[0].1["run_id"], slow.as_str());
    let mut runs = open(&h, &t, "", None).await;
    let rest = through_run(&mut runs, &slow).await;
    assert!(rest.iter().all(|e| !is_done(e, &done)), "{rest:?}");
    assert!(
        rest.iter().all(|e| e.1.get("attempt").is_none()),
        "the start came before the join: {rest:?}"
    );
    let mut lifecycle = open(&h, &t, "?stream_mode=lifecycle", Some("-1")).await;
    let events = lifecycle.take(4, WITHIN).await;
    let shape: Vec<(String, Value)> = events
        .into_iter()
        .map(|(e, mut d, _)| {
            if let Some(m) = d.as_object_mut() {
                m.remove("attempt");
            }
            (e, d)
        })
        .collect();
    let meta = |v: Value| ("metadata".to_string(), v);
    assert_eq!(
        shape,
        [
            meta(json!({ "run_id": done })),
            meta(json!({ "status": "run_done", "run_id": done })),
            meta(json!({ "run_id": slow })),
            meta(json!({ "status": "run_done", "run_id": slow })),
        ]
    );
    // A deleted thread ends its streams.
    let (status, _) = read_delete(&h, &t).await;
    assert_eq!(status, 204);
    let ended =
        tokio::time::timeout(WITHIN, async { while lifecycle.next().await.is_some() {} }).await;
    assert!(ended.is_ok(), "the stream of a deleted thread ends");
}

async fn read_delete(h: &Harness, t: &str) -> (u16, Value) {
    crate::common::read(
        h.http
            .delete(h.url(&format!("/threads/{t}")))
            .send()
            .await
            .expect("a response"),
    )
    .await
}

#[tokio::test]
async fn a_thread_stream_refuses_what_it_cannot_serve_by_name() {
    let h = Harness::start().await;
    let t = h.thread().await;
    let (status, body) = h
        .get(&format!("/threads/{t}/stream?stream_mode=values"))
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(body.to_string().contains("stream_mode"), "{body}");
    let other = h.thread().await;
    let elsewhere = h.finished_job(&other).await;
    let not_here = format!("{elsewhere}.1.0.0");
    for bad in ["7", "x.1.2.3", "run.1.2", "run.-4.0.0", &not_here] {
        let r = h
            .http
            .get(h.url(&format!("/threads/{t}/stream")))
            .header("Last-Event-ID", bad)
            .send()
            .await
            .expect("a response");
        let (status, body) = crate::common::read(r).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(
            body["detail"]
                .as_str()
                .unwrap_or("")
                .contains("Last-Event-ID"),
            "{body}"
        );
    }
    let (status, body) = h.get("/threads/no-such-thread/stream").await;
    assert_eq!(status, 404, "{body}");
}
