//! What browser clients and the JS SDK need of the HTTP layer, and what a hostile
//! page must not get: CORS preflights on every route (before the API key), JSON
//! bodies for 404s, 405s and bad query strings, yes/no query flags as `0`/`1`,
//! `Last-Event-ID: -1` to replay a run, no request body read as JSON unless it says
//! it is (a form or `text/plain` POST needs no preflight), and on a keyless loopback
//! server no request whose `Host` names another site (DNS rebinding).

use crate::common;

use common::{Harness, parse_sse, read};
use reqwest::Method;
use serde_json::json;
use stategraph_server::{Cors, Server, ServerError};

/// A preflight from `origin` for `method` on `path`.
async fn preflight(h: &Harness, origin: &str, method: &str, path: &str) -> reqwest::Response {
    h.http
        .request(Method::OPTIONS, h.url(path))
        .header("origin", origin)
        .header("access-control-request-method", method)
        .header(
            "access-control-request-headers",
            "content-type,x-api-key,last-event-id",
        )
        .send()
        .await
        .expect("a response")
}

fn header<'r>(r: &'r reqwest::Response, name: &str) -> Option<&'r str> {
    r.headers().get(name).and_then(|v| v.to_str().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_of_this_machine_passes_preflight_on_every_route_before_the_key() {
    let h = Harness::start_with(|s| s.api_key("k")).await;
    let routes = [
        ("POST", "/threads"),
        ("POST", "/threads/t1/runs/stream"),
        ("GET", "/threads/t1/runs/r1/stream"),
        ("PATCH", "/threads/t1"),
        ("DELETE", "/threads/t1"),
        ("PUT", "/store/items"),
        ("POST", "/assistants/search"),
        ("GET", "/info"),
    ];
    for (method, path) in routes {
        let r = preflight(&h, "http://localhost:3000", method, path).await;
        assert!(r.status().is_success(), "{method} {path}: {}", r.status());
        assert_eq!(
            header(&r, "access-control-allow-origin"),
            Some("http://localhost:3000"),
            "{method} {path}"
        );
        let allowed = header(&r, "access-control-allow-headers").unwrap_or_default();
        assert!(allowed.contains("x-api-key"), "{method} {path}: {allowed}");
        let methods = header(&r, "access-control-allow-methods").unwrap_or_default();
        assert!(methods.contains(method), "{method} {path}: {methods}");
    }
    // The answer itself carries the headers, and the page may read where to re-attach.
    let r = h
        .http
        .post(h.url("/threads"))
        .header("origin", "http://127.0.0.1:5173")
        .header("x-api-key", "k")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        header(&r, "access-control-allow-origin"),
        Some("http://127.0.0.1:5173")
    );
    let exposed = header(&r, "access-control-expose-headers").unwrap_or_default();
    assert!(exposed.contains("content-location"), "{exposed}");
    // Without the key the answer is still a 401, but one the page can read.
    let r = h
        .http
        .get(h.url("/info"))
        .header("origin", "http://localhost:3000")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert!(header(&r, "access-control-allow-origin").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_sites_get_no_cors_headers_by_default() {
    let h = Harness::start().await;
    for origin in [
        "https://evil.example",
        "http://localhost.evil.example",
        "null",
    ] {
        let r = preflight(&h, origin, "POST", "/threads").await;
        assert_eq!(header(&r, "access-control-allow-origin"), None, "{origin}");
        let r = h
            .http
            .get(h.url("/info"))
            .header("origin", origin)
            .send()
            .await
            .unwrap();
        assert_eq!(header(&r, "access-control-allow-origin"), None, "{origin}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listed_origins_with_credentials_and_cors_off() {
    let h = Harness::start_with(|s| {
        s.cors(Cors::origins(["https://chat.example.com/"]).allow_credentials(true))
    })
    .await;
    let r = preflight(&h, "https://chat.example.com", "POST", "/threads").await;
    assert_eq!(
        header(&r, "access-control-allow-origin"),
        Some("https://chat.example.com")
    );
    assert_eq!(header(&r, "access-control-allow-credentials"), Some("true"));
    let r = preflight(&h, "http://localhost:3000", "POST", "/threads").await;
    assert_eq!(header(&r, "access-control-allow-origin"), None);

    let any = Harness::start_with(|s| s.cors(Cors::any().allow_credentials(true))).await;
    let r = preflight(&any, "https://anywhere.example", "GET", "/info").await;
    // With credentials the origin is echoed: `*` and credentials do not go together.
    assert_eq!(
        header(&r, "access-control-allow-origin"),
        Some("https://anywhere.example")
    );

    let off = Harness::start_with(|s| s.cors(Cors::off())).await;
    let r = preflight(&off, "http://localhost:3000", "POST", "/threads").await;
    assert_eq!(header(&r, "access-control-allow-origin"), None);
}

#[tokio::test]
async fn an_origin_that_is_not_one_stops_the_server_from_starting() {
    for bad in [
        "chat.example.com",
        "https://chat.example.com/app",
        "ftp://x",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let err = common::with_graphs(Server::new())
            .sqlite(dir.path().join("s.sqlite"))
            .cors(Cors::origins([bad]))
            .bind("127.0.0.1:0")
            .await
            .err()
            .expect("refused");
        assert!(
            matches!(&err, ServerError::Cors { origin, .. } if origin == bad),
            "{err:?}"
        );
        assert!(err.to_string().contains("scheme://host[:port]"), "{err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_methods_and_routes_are_json_errors_naming_them() {
    let h = Harness::start().await;
    for (method, path) in [
        (Method::DELETE, "/ok"),
        (Method::PUT, "/threads"),
        (Method::PATCH, "/assistants/search"),
    ] {
        let r = h
            .http
            .request(method.clone(), h.url(path))
            .send()
            .await
            .unwrap();
        let (status, body) = read(r).await;
        assert_eq!(status, 405, "{method} {path}: {body}");
        let detail = body["detail"].as_str().unwrap_or_default();
        assert!(
            detail.contains(method.as_str()) && detail.contains(path),
            "{method} {path}: {body}"
        );
    }
    let r = h.http.get(h.url("/no/such/route")).send().await.unwrap();
    let (status, body) = read(r).await;
    assert_eq!(status, 404);
    assert!(
        body["detail"]
            .as_str()
            .is_some_and(|d| d.contains("GET /no/such/route")),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_query_strings_are_422s_naming_the_parameter_and_change_nothing() {
    let h = Harness::start().await;
    let t = h.thread().await;
    let run = h.finished_job(&t).await;
    let cases = [
        (
            format!("/threads/{t}/state?subgraphs=maybe"),
            "query.subgraphs",
        ),
        (format!("/threads/{t}/runs?limit=-1"), "query.limit"),
        (format!("/threads/{t}/runs?limit=ten"), "query.limit"),
        (
            format!("/threads/{t}/runs/{run}/stream?cancel_on_disconnect=2"),
            "query.cancel_on_disconnect",
        ),
        (format!("/threads/{t}/history?limit=1e9"), "query.limit"),
    ];
    for (path, field) in cases {
        let (status, body) = h.get(&path).await;
        assert_eq!(status, 422, "{path}: {body}");
        assert_eq!(body["errors"][0]["path"], field, "{path}: {body}");
    }
    let (status, body) = h
        .post(
            &format!("/threads/{t}/runs/{run}/cancel?wait=perhaps"),
            json!({}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["errors"][0]["path"], "query.wait");
    let (_, runs) = h.get(&format!("/threads/{t}/runs")).await;
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    assert_eq!(runs[0]["status"], "success");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_stream_takes_numeric_flags_and_minus_one_replays_every_event() {
    let h = Harness::start().await;
    let t = h.thread().await;
    let run = h.finished_job(&t).await;
    let path = format!("/threads/{t}/runs/{run}/stream");
    let all = parse_sse(h.http.get(h.url(&path)).send().await.unwrap()).await;
    assert_eq!(all.first().map(|e| e.0.as_str()), Some("metadata"));
    assert_eq!(all.last().map(|e| e.0.as_str()), Some("end"));
    for flag in ["0", "1", "true", "false", "True"] {
        let r = h
            .http
            .get(h.url(&format!("{path}?cancel_on_disconnect={flag}")))
            .header("Last-Event-ID", "-1")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "cancel_on_disconnect={flag}");
        let again = parse_sse(r).await;
        assert_eq!(again, all, "cancel_on_disconnect={flag}");
    }
    for bad in ["-2", "x"] {
        let r = h
            .http
            .get(h.url(&path))
            .header("Last-Event-ID", bad)
            .send()
            .await
            .unwrap();
        let (status, body) = read(r).await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body["detail"].as_str().is_some(), "{bad}: {body}");
    }
}

/// A POST of `body` with `content_type` (and `origin`), as a web page could send it.
async fn send_as(
    h: &Harness,
    path: &str,
    content_type: Option<&str>,
    origin: Option<&str>,
    body: &str,
) -> (u16, serde_json::Value) {
    let mut req = h.http.post(h.url(path)).body(body.to_string());
    if let Some(kind) = content_type {
        req = req.header("content-type", kind);
    }
    if let Some(origin) = origin {
        req = req.header("origin", origin);
    }
    read(req.send().await.expect("a response")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_does_not_say_json_is_refused_and_starts_nothing() {
    let h = Harness::start().await;
    let t = h.thread().await;
    let run = r#"{"assistant_id": "job", "input": {}, "metadata": {"via": "form"}}"#;
    let runs = format!("/threads/{t}/runs");
    // What any web page can send without a preflight, and a body with no type.
    for kind in [
        Some("text/plain"),
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        None,
    ] {
        for origin in [None, Some("https://evil.example")] {
            let (status, body) = send_as(&h, &runs, kind, origin, run).await;
            assert_eq!(status, 415, "{kind:?} from {origin:?}: {body}");
            assert!(
                body["detail"]
                    .as_str()
                    .is_some_and(|d| d.contains("application/json")),
                "{body}"
            );
        }
    }
    let (_, listed) = h.get(&runs).await;
    assert_eq!(listed, json!([]), "no run was created");
    // JSON in its spellings passes; so does a POST without a body.
    for kind in [
        "application/json",
        "application/json; charset=utf-8",
        "Application/JSON",
        "application/vnd.langgraph+json",
    ] {
        let (status, body) = send_as(&h, "/threads", Some(kind), None, "{}").await;
        assert_eq!(status, 200, "{kind}: {body}");
    }
    let r = h.http.post(h.url("/threads")).send().await.unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_plain_json_is_read_from_the_origins_named_for_it() {
    let studio = "https://smith.langchain.com";
    let h = Harness::start_with(|s| s.text_plain_json_from([format!("{studio}/")])).await;
    let body = r#"{"metadata": {"from": "studio"}}"#;
    let (status, thread) = send_as(&h, "/threads", Some("text/plain"), Some(studio), body).await;
    assert_eq!(status, 200, "{thread}");
    assert_eq!(thread["metadata"]["from"], "studio");
    for origin in [
        None,
        Some("https://evil.example"),
        Some("http://smith.langchain.com"),
    ] {
        let (status, err) = send_as(&h, "/threads", Some("text/plain"), origin, body).await;
        assert_eq!(status, 415, "{origin:?}: {err}");
    }
    // Named origins still send forms as forms.
    let (status, _) = send_as(
        &h,
        "/threads",
        Some("application/x-www-form-urlencoded"),
        Some(studio),
        "a=1",
    )
    .await;
    assert_eq!(status, 415);
}

/// `GET /info` with `Host: host`.
async fn info_as(h: &Harness, host: &str, key: Option<&str>) -> (u16, serde_json::Value) {
    let mut req = h.http.get(h.url("/info")).header("host", host);
    if let Some(key) = key {
        req = req.header("x-api-key", key);
    }
    read(req.send().await.expect("a response")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyless_loopback_server_answers_only_requests_naming_this_machine() {
    let h = Harness::start().await;
    for host in ["localhost:2024", "127.0.0.1", "[::1]:8123", "LOCALHOST:1"] {
        let (status, body) = info_as(&h, host, None).await;
        assert_eq!(status, 200, "{host}: {body}");
    }
    // A page of another site whose name now resolves to 127.0.0.1.
    for host in [
        "evil.example:2024",
        "localhost.evil.example",
        "127.0.0.1.nip.example",
    ] {
        let (status, body) = info_as(&h, host, None).await;
        assert_eq!(status, 403, "{host}: {body}");
        assert!(
            body["detail"]
                .as_str()
                .is_some_and(|d| d.contains("allow_hosts")),
            "{body}"
        );
        let r = h
            .http
            .post(h.url("/threads"))
            .header("host", host)
            .json(&json!({ "metadata": { "via": "rebinding" } }))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403, "{host}");
    }
    let (_, threads) = h.post("/threads/search", json!({})).await;
    assert!(
        !threads.to_string().contains("rebinding"),
        "no thread was created: {threads}"
    );

    // A reverse proxy's name is added; a server with a key checks the key instead.
    let proxied = Harness::start_with(|s| s.allow_hosts(["chat.example.com"])).await;
    assert_eq!(info_as(&proxied, "chat.example.com:443", None).await.0, 200);
    assert_eq!(info_as(&proxied, "other.example.com", None).await.0, 403);
    let keyed = Harness::start_with(|s| s.api_key("k")).await;
    assert_eq!(info_as(&keyed, "evil.example", None).await.0, 401);
    assert_eq!(info_as(&keyed, "evil.example", Some("k")).await.0, 200);
}
