//! The Studio in a real headless Chromium, driven over WebDriver (chromedriver +
//! `fantoccini`): the demo pipeline is run to its `approve` interrupt through the
//! server's API, then the page is used as a person would — graph, threads, the
//! timeline by keyboard, values, a diff, answering the interrupt, a fork, bad URLs
//! and a malformed edit. A screenshot of each view goes to `$STATEGRAPH_ARTIFACTS`
//! (else a kept temp dir, printed).
//!
//! Chromium and chromedriver come from `$STATEGRAPH_CHROMIUM` / `$STATEGRAPH_CHROMEDRIVER`
//! or Debian's `/usr/bin/chromium` and `/usr/bin/chromedriver` (`apt-get install
//! chromium chromium-driver`). Without them the tests print `SKIPPED` and pass, except
//! under `CI=true`, where they fail.

use std::path::Path;

use fantoccini::key::Key;
use serde_json::{Value, json};
use stategraph_server::{Running, Server};

use crate::browser::{Browser, browser_binaries};

/// A server of the research pipeline on `db`, Studio mounted at /studio.
async fn serve(db: &Path, configure: impl FnOnce(Server) -> Server) -> (Running, String) {
    let server = Server::new()
        .graph("research", stategraph_examples::research::graph())
        .sqlite(db);
    let running = configure(server)
        .bind("127.0.0.1:0")
        .await
        .expect("the server starts");
    let base = format!("http://{}", running.local_addr());
    (running, base)
}

async fn post(http: &reqwest::Client, url: String, body: Value) -> Value {
    let r = http
        .post(&url)
        .json(&body)
        .send()
        .await
        .expect("a response");
    let status = r.status();
    let v: Value = r.json().await.expect("a JSON body");
    assert!(status.is_success(), "POST {url}: {status} {v}");
    v
}

async fn get(http: &reqwest::Client, url: String) -> Value {
    let r = http.get(&url).send().await.expect("a response");
    let status = r.status();
    let v: Value = r.json().await.expect("a JSON body");
    assert!(status.is_success(), "GET {url}: {status} {v}");
    v
}

/// The demo's database: thread `research-1` run to the `approve` interrupt.
async fn demo_thread(http: &reqwest::Client, base: &str) {
    post(
        http,
        format!("{base}/threads"),
        json!({ "thread_id": "research-1" }),
    )
    .await;
    let out = post(
        http,
        format!("{base}/threads/research-1/runs/wait"),
        json!({ "assistant_id": "research",
                "input": { "topic": stategraph_examples::research::TOPIC } }),
    )
    .await;
    assert!(
        out.get("__interrupt__").is_some(),
        "the demo stops at approve: {out}"
    );
}

/// The thread as the Studio API reports it.
async fn studio_thread(http: &reqwest::Client, base: &str, tid: &str) -> Value {
    get(http, format!("{base}/studio/api/threads/{tid}")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn studio_shows_and_drives_the_demo_in_a_browser() {
    let Some((chromium, chromedriver)) = browser_binaries() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let (running, base) = serve(&dir.path().join("demo.sqlite"), |s| s).await;
    let http = reqwest::Client::new();
    demo_thread(&http, &base).await;
    let b = Browser::start(&chromium, &chromedriver).await;

    // The overview: the graph has the demo's nodes; the thread is listed as interrupted.
    b.goto(&format!("{base}/studio")).await;
    for node in ["plan", "research", "write", "review", "approve", "publish"] {
        b.wait_css(&format!("#graph g[data-node='{node}']")).await;
    }
    let conditional = b.all("#graph g.g-edge[data-conditional='true']").await;
    assert_eq!(
        conditional.len(),
        6,
        "plan→research, review→research|approve, approve→publish|write|END"
    );
    b.shot("graph").await;
    let row = b.text("#threads a[data-thread='research-1']").await;
    assert!(row.contains("interrupted"), "{row}");
    // The search box filters by thread id, through the API's `search`.
    b.fill("#search", "no-such").await;
    b.wait_until(
        "an empty search result",
        "document.querySelectorAll('#threads a').length === 0",
    )
    .await;
    b.fill("#search", "research").await;
    b.wait_css("#threads a[data-thread='research-1']").await;
    // And by status, through the API's `status`.
    let filter = b.wait_css("#status-filter").await;
    filter.select_by_value("finished").await.expect("picked");
    b.wait_until(
        "no finished thread",
        "document.querySelectorAll('#threads a').length === 0",
    )
    .await;
    filter.select_by_value("interrupted").await.expect("picked");
    b.wait_css("#threads a[data-thread='research-1']").await;
    b.shot("threads").await;
    filter.select_by_value("").await.expect("any status");
    b.wait_css("#search").await.clear().await.expect("cleared");
    b.js("document.querySelector('#search-form').requestSubmit();")
        .await;
    b.wait_until(
        "the list without filters",
        "document.querySelector('#threads-total').textContent === '1 thread'",
    )
    .await;

    // The thread: its timeline, oldest first, the latest checkpoint selected.
    b.wait_css("#threads a[data-thread='research-1']")
        .await
        .click()
        .await
        .expect("the thread opens");
    b.wait_css("#timeline .cp[aria-current='true']").await;
    let detail = studio_thread(&http, &base, "research-1").await;
    let timeline = detail["timeline"].as_array().expect("a timeline").clone();
    let interrupted = timeline
        .iter()
        .find(|c| c["interrupts"].as_array().is_some_and(|i| !i.is_empty()))
        .expect("a checkpoint waits on approve");
    let interrupted_id = interrupted["checkpoint_id"].as_str().expect("an id");
    let step2 = timeline
        .iter()
        .find(|c| c["step"] == 2)
        .expect("a step 2")
        .clone();
    let step2_id = step2["checkpoint_id"].as_str().expect("an id").to_string();
    let buttons = b.all("#timeline .cp").await;
    assert_eq!(buttons.len(), timeline.len(), "one entry per checkpoint");

    // Keyboard: Home to the oldest, then Down to the interrupted checkpoint, Enter.
    b.wait_css("#timeline .cp[tabindex='0']").await;
    b.js("document.querySelector(\"#timeline .cp[tabindex='0']\").focus();")
        .await;
    b.press(Key::Home).await;
    let first = b
        .js("return document.activeElement.dataset.checkpoint;")
        .await;
    assert_eq!(
        first, timeline[0]["checkpoint_id"],
        "Home goes to the oldest"
    );
    let target = timeline
        .iter()
        .position(|c| c["checkpoint_id"] == interrupted_id)
        .expect("listed");
    for _ in 0..target {
        b.press(Key::Down).await;
    }
    b.press(Key::Enter).await;
    b.wait_until(
        "the interrupted checkpoint selected",
        &format!(
            "document.querySelector('#timeline .cp[aria-current=\"true\"]')?.dataset.checkpoint === '{interrupted_id}' && location.pathname.endsWith('/checkpoints/{interrupted_id}')"
        ),
    )
    .await;
    // Its `next` node is highlighted with a word, not only a colour.
    b.wait_css("#graph g[data-node='approve'][data-next='true'] .badge")
        .await;
    let badge = b
        .js("return document.querySelector(\"#graph g[data-node='approve'] .badge\").textContent;")
        .await;
    assert_eq!(badge, "next");
    b.wait_css("#values details").await;
    let values = b.text("#values").await;
    assert!(values.contains("topic"), "{values}");
    b.wait_css("#resume-form:not([hidden])").await;
    b.shot("timeline-values").await;
    // The main view, from the top: the README shows it (docs/studio.png).
    b.js("window.scrollTo(0, 0);").await;
    b.shot("main").await;

    // The diff from step 2 to the interrupt, by JSON path.
    b.wait_css("#diff-a")
        .await
        .select_by_value(&step2_id)
        .await
        .expect("A is picked");
    b.wait_css("#diff-b")
        .await
        .select_by_value(interrupted_id)
        .await
        .expect("B is picked");
    b.wait_css("#diff-form button[type='submit']")
        .await
        .click()
        .await
        .expect("compared");
    b.wait_css("#diff table tr[data-path='$.draft']").await;
    let kinds = b
        .js("return [...document.querySelectorAll('#diff tr[data-kind]')].map(r => r.dataset.kind);")
        .await;
    assert!(
        kinds.as_array().is_some_and(|k| k
            .iter()
            .all(|k| ["added", "removed", "changed"].contains(&k.as_str().unwrap_or("")))),
        "{kinds}"
    );
    b.js("document.querySelector('#diff-section').scrollIntoView();")
        .await;
    b.shot("diff").await;

    // Answer the interrupt: the run streams live and finishes; `publish` ran.
    b.fill("#resume-input", r#"{"decision": "publish"}"#).await;
    b.wait_css("#resume-form button[type='submit']")
        .await
        .click()
        .await
        .expect("answered");
    b.wait_until(
        "the run to finish",
        "document.querySelector('#stream-status').dataset.outcome === 'finished'",
    )
    .await;
    b.wait_css("#thread-title .status[data-status='finished']")
        .await;
    b.wait_css("#timeline tr[data-task='publish']").await;
    assert!(
        !b.all("#stream li[data-event='values']").await.is_empty(),
        "the run's events were shown as they came"
    );
    b.js("document.querySelector('#drive-section').scrollIntoView();")
        .await;
    b.shot("drive").await;
    let finished = studio_thread(&http, &base, "research-1").await;
    assert_eq!(finished["status"], "finished");

    // Fork from step 2 and continue: a new branch appears in the timeline.
    let before = finished["timeline"].as_array().map_or(0, Vec::len);
    b.wait_css(&format!("#timeline .cp[data-checkpoint='{step2_id}']"))
        .await
        .click()
        .await
        .expect("step 2 selected");
    b.wait_css(&format!(
        "#timeline .cp[aria-current='true'][data-checkpoint='{step2_id}']"
    ))
    .await;
    b.fill("#edit-values", "{}").await;
    b.wait_css("#fork-button")
        .await
        .click()
        .await
        .expect("forked");
    b.wait_until(
        "the forked run to stop at approve",
        "document.querySelector('#stream-status').dataset.outcome === 'interrupted'",
    )
    .await;
    b.wait_css("#timeline .cp[data-branch='1']").await;
    let forked = studio_thread(&http, &base, "research-1").await;
    let tl = forked["timeline"].as_array().expect("a timeline");
    assert!(tl.len() > before, "the fork added checkpoints");
    let children_of_step2 = tl
        .iter()
        .filter(|c| c["parent_checkpoint_id"] == step2_id.as_str())
        .count();
    assert_eq!(children_of_step2, 2, "step 2 now has two children: {tl:?}");
    let on_branch = b.all("#timeline .cp[data-branch='1']").await.len();
    assert!(on_branch > 0);
    // The old line, now branch 1, and where the new one leaves step 2.
    b.js("const old = [...document.querySelectorAll(\"#timeline .cp[data-branch='1']\")]; old[old.length - 1].scrollIntoView({ block: 'start' });")
        .await;
    b.shot("fork").await;

    // A malformed edit is refused with the server's message, and nothing is written.
    let count = tl.len();
    b.fill("#edit-values", r#"{"drafts": "many"}"#).await;
    b.wait_css("#edit-form button[type='submit']")
        .await
        .click()
        .await
        .expect("submitted");
    b.wait_until(
        "the validation message",
        "document.querySelector('#edit-form .form-error').textContent.includes('drafts')",
    )
    .await;
    let shown = b.text("#edit-form .form-error").await;
    let after = studio_thread(&http, &base, "research-1").await;
    assert_eq!(
        after["timeline"].as_array().map_or(0, Vec::len),
        count,
        "the refused edit wrote nothing (the page said: {shown})"
    );
    assert_eq!(b.all("#timeline .cp").await.len(), count);

    // So is a run input that does not fit the state: the server's 422, before any step.
    b.wait_css("#run-target")
        .await
        .select_by_value("this")
        .await
        .expect("this thread is picked");
    b.fill("#run-input", r#"{"topik": "typo"}"#).await;
    b.wait_css("#run-form button[type='submit']")
        .await
        .click()
        .await
        .expect("submitted");
    b.wait_until(
        "the input's validation message",
        "document.querySelector('#run-form .form-error').textContent.includes('topik')",
    )
    .await;
    let after = studio_thread(&http, &base, "research-1").await;
    assert_eq!(
        after["timeline"].as_array().map_or(0, Vec::len),
        count,
        "the refused run wrote nothing"
    );

    // A new thread: a refused input leaves none behind; a good one runs, streaming, to
    // the approval, and the page moves to the new thread.
    let threads = |v: Value| v.as_array().map_or(0, Vec::len);
    let before = threads(post(&http, format!("{base}/threads/search"), json!({})).await);
    b.wait_css("#run-target")
        .await
        .select_by_value("new")
        .await
        .expect("a new thread is picked");
    b.js("document.querySelector('#run-form .form-error').replaceChildren();")
        .await;
    b.wait_css("#run-form button[type='submit']")
        .await
        .click()
        .await
        .expect("submitted");
    b.wait_until(
        "the input's validation message again",
        "document.querySelector('#run-form .form-error').textContent.includes('topik')",
    )
    .await;
    let same = threads(post(&http, format!("{base}/threads/search"), json!({})).await);
    assert_eq!(same, before, "no empty thread left behind");
    b.fill("#run-input", r#"{"topic": "Rust at work"}"#).await;
    b.wait_css("#run-form button[type='submit']")
        .await
        .click()
        .await
        .expect("submitted");
    b.wait_until(
        "the new thread's run to stop at approve",
        "document.querySelector('#stream-status').dataset.outcome === 'interrupted' && !location.pathname.includes('research-1')",
    )
    .await;
    // Live: the timeline was refreshed while the run went on (the page counts it, so a
    // slow WebDriver round trip cannot miss it); the run takes over a second.
    let live = b
        .js("return Number(document.querySelector('#stream-status').dataset.live);")
        .await;
    assert!(
        live.as_u64().is_some_and(|n| n > 0),
        "no live refresh: {live}"
    );
    b.wait_css("#thread-title .status[data-status='interrupted']")
        .await;
    let more = threads(post(&http, format!("{base}/threads/search"), json!({})).await);
    assert_eq!(more, before + 1);

    // Bad URLs: the page says what is missing, from the API's 404.
    b.goto(&format!("{base}/studio/threads/no-such-thread"))
        .await;
    b.wait_until(
        "the unknown thread message",
        "document.querySelector('#message').textContent.includes('thread no-such-thread not found')",
    )
    .await;
    b.goto(&format!(
        "{base}/studio/threads/research-1/checkpoints/no-such-checkpoint"
    ))
    .await;
    b.wait_until(
        "the unknown checkpoint message",
        "document.querySelector('#message').textContent.includes('checkpoint no-such-checkpoint of thread research-1 not found')",
    )
    .await;
    b.shot("not-found").await;

    b.client.close().await.expect("the session ends");
    running.shutdown().await.expect("the server stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn studio_asks_for_the_api_key_and_sends_it() {
    let Some((chromium, chromedriver)) = browser_binaries() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let (running, base) = serve(&dir.path().join("keyed.sqlite"), |s| s.api_key("sesame")).await;
    let http = reqwest::Client::new();
    let created = http
        .post(format!("{base}/threads"))
        .header("x-api-key", "sesame")
        .json(&json!({ "thread_id": "keyed-1" }))
        .send()
        .await
        .expect("a response");
    assert!(created.status().is_success());
    let b = Browser::start(&chromium, &chromedriver).await;
    b.client
        .goto(&format!("{base}/studio"))
        .await
        .expect("the page opens");
    b.wait_css("#key-form:not([hidden])").await;
    b.fill("#key-input", "sesame").await;
    b.wait_css("#key-form button[type='submit']")
        .await
        .click()
        .await
        .expect("the key is given");
    b.wait_css("body[data-ready]").await;
    let key = b
        .js("return sessionStorage.getItem('stategraph-studio-api-key');")
        .await;
    assert_eq!(key, "sesame");
    b.wait_css("#key-form[hidden]").await;
    let source = b.text("#source").await;
    assert!(source.contains("driving enabled"), "{source}");
    b.client.close().await.expect("the session ends");
    running.shutdown().await.expect("the server stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn studio_reads_a_plain_file_without_driving() {
    let Some((chromium, chromedriver)) = browser_binaries() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let db = dir.path().join("demo.sqlite");
    let (running, base) = serve(&db, |s| s).await;
    demo_thread(&reqwest::Client::new(), &base).await;
    running.shutdown().await.expect("the server stops");

    // What `stategraph --db FILE studio` serves: the file alone, no graphs, no driving.
    let saver = stategraph_sqlite::SqliteSaver::open(&db).expect("the file opens");
    let app = stategraph_studio::pages().merge(stategraph_studio::api(
        stategraph_studio::Studio::stored(std::sync::Arc::new(saver), "demo.sqlite"),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let base = format!("http://{}", listener.local_addr().expect("its address"));
    let served = tokio::spawn(async move { axum::serve(listener, app).await });

    let b = Browser::start(&chromium, &chromedriver).await;
    b.goto(&format!("{base}/studio/threads/research-1")).await;
    // The graph comes from the shape the checkpoints recorded.
    for node in ["plan", "research", "write", "review", "approve", "publish"] {
        b.wait_css(&format!("#graph g[data-node='{node}']")).await;
    }
    b.wait_css("#graph g[data-node='approve'][data-next='true']")
        .await;
    let source = b.text("#source").await;
    assert!(
        source.contains("demo.sqlite") && source.contains("read-only"),
        "{source}"
    );
    let drive_hidden = b
        .js("return document.querySelector('#drive-section').hidden;")
        .await;
    assert_eq!(drive_hidden, true, "a stored file is not driven");
    b.shot("stored").await;
    b.client.close().await.expect("the session ends");
    served.abort();
}
