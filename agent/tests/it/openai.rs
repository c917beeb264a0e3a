//! `OpenAiModel` against a real HTTP server on 127.0.0.1 that speaks the chat
//! completions wire format from a script of replies and records every request.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures::StreamExt;
use serde_json::{Value, json};
use stategraph::{Message, MessageBuilder, MessageChunk, Role, ToolCall};
use stategraph_agent::{ChatModel, ChatRequest, ModelError, OpenAiModel, ToolSpec};

/// One scripted answer.
enum Reply {
    /// A status and a JSON body.
    Json(u16, Value),
    /// A status, extra headers and a body of any type.
    Raw(u16, Vec<(&'static str, &'static str)>, String),
    /// An SSE body sent in these pieces, in order.
    Sse(Vec<String>),
    /// An SSE body sent in these raw pieces, in order.
    Bytes(Vec<Vec<u8>>),
    /// An SSE body that breaks off (the connection is dropped) after these pieces.
    Cut(Vec<String>),
    /// An SSE body that sends these pieces and then nothing, without ending.
    Stall(Vec<String>),
    /// Answers after a delay.
    Late(Duration, Box<Reply>),
}

/// A request the server received.
struct Seen {
    headers: HeaderMap,
    body: Value,
}

#[derive(Clone)]
struct Script {
    replies: Arc<Mutex<VecDeque<Reply>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

struct Server {
    base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    fn requests(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    fn body(&self, n: usize) -> Value {
        self.seen.lock().unwrap()[n].body.clone()
    }

    fn authorization(&self, n: usize) -> Option<String> {
        self.seen.lock().unwrap()[n]
            .headers
            .get(header::AUTHORIZATION)
            .map(|v| v.to_str().unwrap().to_owned())
    }

    /// A model for this server that retries fast.
    fn model(&self) -> OpenAiModel {
        OpenAiModel::new("test-model")
            .base_url(&self.base)
            .retry_backoff(Duration::from_millis(1))
    }
}

async fn serve(replies: Vec<Reply>) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let script = Script {
        replies: Arc::new(Mutex::new(replies.into())),
        seen: seen.clone(),
    };
    let app = Router::new()
        .route("/v1/chat/completions", post(completions))
        .with_state(script);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Server {
        base: format!("http://{addr}/v1"),
        seen,
    }
}

async fn completions(State(script): State<Script>, headers: HeaderMap, body: Bytes) -> Response {
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    script.seen.lock().unwrap().push(Seen { headers, body });
    let reply = script.replies.lock().unwrap().pop_front();
    match reply {
        Some(reply) => answer(reply).await,
        None => (StatusCode::IM_A_TEAPOT, "the script has no reply left").into_response(),
    }
}

async fn answer(mut reply: Reply) -> Response {
    while let Reply::Late(wait, inner) = reply {
        tokio::time::sleep(wait).await;
        reply = *inner;
    }
    let sse = |body: Body| {
        Response::builder()
            .header(header::CONTENT_TYPE, "text/event-stream")
            .body(body)
            .unwrap()
    };
    let bytes = |pieces: Vec<Vec<u8>>| {
        futures::stream::iter(pieces).then(|p| async move {
            // Separate writes, so the client reads the body in pieces.
            tokio::time::sleep(Duration::from_millis(2)).await;
            Ok::<_, std::io::Error>(p)
        })
    };
    let pieces = |pieces: Vec<String>| bytes(pieces.into_iter().map(String::into_bytes).collect());
    match reply {
        Reply::Json(status, body) => (status_code(status), axum::Json(body)).into_response(),
        Reply::Raw(status, headers, body) => {
            let mut response = Response::builder().status(status_code(status));
            for (name, value) in headers {
                response = response.header(name, value);
            }
            response.body(Body::from(body)).unwrap()
        }
        Reply::Sse(p) => sse(Body::from_stream(pieces(p))),
        Reply::Bytes(p) => sse(Body::from_stream(bytes(p))),
        Reply::Cut(p) => sse(Body::from_stream(pieces(p).chain(futures::stream::once(
            async {
                // Let the pieces before reach the client before the connection drops.
                tokio::time::sleep(Duration::from_millis(50)).await;
                Err(std::io::Error::other("connection dropped"))
            },
        )))),
        Reply::Stall(p) => sse(Body::from_stream(
            pieces(p).chain(futures::stream::pending()),
        )),
        Reply::Late(..) => unreachable!("unwrapped above"),
    }
}

fn status_code(status: u16) -> StatusCode {
    StatusCode::from_u16(status).unwrap()
}

fn completion(id: &str, message: Value) -> Value {
    json!({
        "id": id,
        "object": "chat.completion",
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    })
}

/// The SSE event of one streamed chunk with `delta`.
fn event(id: &str, delta: Value) -> String {
    let chunk = json!({
        "id": id,
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": null}],
    });
    format!("data: {chunk}\n\n")
}

fn finish(id: &str) -> String {
    let chunk = json!({"id": id, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    format!("data: {chunk}\n\n")
}

const DONE: &str = "data: [DONE]\n\n";

fn hello() -> ChatRequest {
    ChatRequest::new(vec![Message::user("Hi")])
}

async fn collect(
    model: &OpenAiModel,
    request: &ChatRequest,
) -> Vec<Result<MessageChunk, ModelError>> {
    model.stream(request).collect().await
}

fn join(chunks: &[MessageChunk]) -> Message {
    let mut builder = MessageBuilder::new();
    for c in chunks {
        builder.push(c).unwrap();
    }
    builder.finish().unwrap()
}

#[tokio::test]
async fn invoke_returns_the_reply_with_its_id() {
    let server = serve(vec![Reply::Json(
        200,
        completion(
            "chatcmpl-1",
            json!({"role": "assistant", "content": "Hello there!"}),
        ),
    )])
    .await;
    let reply = server.model().invoke(&hello()).await.unwrap();
    assert_eq!(reply.id.as_deref(), Some("chatcmpl-1"));
    assert_eq!(reply.role, Role::Assistant);
    assert_eq!(reply.content, "Hello there!");
    assert!(reply.tool_calls.is_empty());
    assert_eq!(server.requests(), 1);
}

#[tokio::test]
async fn invoke_reads_tool_calls_and_parses_their_arguments() {
    let message = json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [
            {"id": "call_a", "type": "function",
             "function": {"name": "weather", "arguments": "{\"city\": \"Oslo\"}"}},
            {"id": "call_b", "type": "function",
             "function": {"name": "time", "arguments": ""}},
        ],
    });
    let mut without_id = completion("", message.clone());
    without_id.as_object_mut().unwrap().remove("id");
    let server = serve(vec![
        Reply::Json(200, completion("chatcmpl-2", message)),
        Reply::Json(200, without_id),
    ])
    .await;
    let model = server.model();
    let reply = model.invoke(&hello()).await.unwrap();
    assert_eq!(reply.content, "");
    assert_eq!(
        reply.tool_calls,
        [
            ToolCall {
                id: "call_a".into(),
                name: "weather".into(),
                arguments: json!({"city": "Oslo"}),
            },
            ToolCall {
                id: "call_b".into(),
                name: "time".into(),
                arguments: json!({}),
            },
        ]
    );
    // No id in the reply: a fresh one.
    let reply = model.invoke(&hello()).await.unwrap();
    let id = reply.id.unwrap();
    assert!(id.starts_with("msg-"), "{id}");
}

#[tokio::test]
async fn tool_call_arguments_that_are_not_json_are_a_malformed_reply_naming_the_call() {
    let server = serve(vec![Reply::Json(
        200,
        completion(
            "chatcmpl-3",
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_x", "type": "function",
                 "function": {"name": "weather", "arguments": "{city: Oslo"}},
            ]}),
        ),
    )])
    .await;
    let err = server.model().invoke(&hello()).await.unwrap_err();
    assert!(matches!(err, ModelError::Malformed { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("call_x") && text.contains("weather"),
        "{text}"
    );
    assert!(text.contains("{city: Oslo"), "{text}");
}

#[tokio::test]
async fn streamed_text_arrives_in_order_and_joins_into_the_whole_reply() {
    let id = "chatcmpl-s1";
    let words = ["Once", " upon", " a", " time", ", the", " end."];
    let mut body = vec![event(id, json!({"role": "assistant", "content": ""}))];
    body.extend(words.iter().map(|w| event(id, json!({"content": w}))));
    body.push(finish(id));
    body.push(DONE.into());
    let server = serve(vec![Reply::Sse(body)]).await;

    let chunks: Vec<MessageChunk> = collect(&server.model(), &hello())
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    // The role-only and the finishing deltas carry nothing: no chunk.
    let texts: Vec<&str> = chunks.iter().map(|c| c.content.as_str()).collect();
    assert_eq!(texts, words);
    assert!(
        chunks
            .iter()
            .all(|c| c.id == id && c.role == Role::Assistant)
    );
    let message = join(&chunks);
    assert_eq!(message.content, words.concat());
    assert_eq!(message.id.as_deref(), Some(id));
    assert_eq!(server.body(0)["stream"], json!(true));
}

#[tokio::test]
async fn an_event_split_across_network_reads_is_still_one_chunk() {
    let whole = format!(
        "{}{}{}",
        event("c", json!({"content": "h\u{e9}llo"})),
        finish("c"),
        DONE
    );
    // Cut inside `data:`, inside the JSON, and between the two bytes of `é`.
    let bytes = whole.as_bytes();
    let mid = whole.find('\u{e9}').unwrap() + 1;
    let pieces = [&bytes[..3], &bytes[3..mid], &bytes[mid..]];
    let server = serve(vec![Reply::Bytes(
        pieces.iter().map(|p| p.to_vec()).collect(),
    )])
    .await;
    let chunks: Vec<MessageChunk> = collect(&server.model(), &hello())
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].content, "h\u{e9}llo");
}

#[tokio::test]
async fn streamed_tool_call_deltas_of_two_interleaved_calls_join_by_index() {
    let id = "chatcmpl-t";
    let call = |index: usize, head: Option<(&str, &str)>, args: &str| {
        let mut piece = json!({"index": index, "function": {"arguments": args}});
        if let Some((call_id, name)) = head {
            piece["id"] = json!(call_id);
            piece["type"] = json!("function");
            piece["function"]["name"] = json!(name);
        }
        event(id, json!({"tool_calls": [piece]}))
    };
    let mut body = vec![
        event(id, json!({"role": "assistant", "content": null})),
        event(id, json!({"content": "Checking."})),
        call(0, Some(("call_w", "weather")), ""),
        call(1, Some(("call_t", "time")), "{\"zo"),
    ];
    for (i, piece) in ["{\"ci", "ty\":", " \"Os", "lo\"}"].iter().enumerate() {
        body.push(call(0, None, piece));
        if i == 1 {
            body.push(call(1, None, "ne\": \"CET\"}"));
        }
    }
    body.push(finish(id));
    body.push(DONE.into());
    let server = serve(vec![Reply::Sse(body)]).await;

    let chunks: Vec<MessageChunk> = collect(&server.model(), &hello())
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(chunks.len(), 8, "{chunks:#?}");
    assert_eq!(chunks[0].content, "Checking.");
    assert_eq!(chunks[1].tool_calls[0].name.as_deref(), Some("weather"));
    assert_eq!(chunks[2].tool_calls[0].index, 1);
    assert_eq!(chunks[5].tool_calls[0].index, 1);
    assert_eq!(chunks[5].tool_calls[0].arguments, "ne\": \"CET\"}");
    let message = join(&chunks);
    assert_eq!(message.content, "Checking.");
    assert_eq!(
        message.tool_calls,
        [
            ToolCall {
                id: "call_w".into(),
                name: "weather".into(),
                arguments: json!({"city": "Oslo"}),
            },
            ToolCall {
                id: "call_t".into(),
                name: "time".into(),
                arguments: json!({"zone": "CET"}),
            },
        ]
    );
}

#[tokio::test]
async fn a_stream_without_ids_gets_one_generated_id_for_the_whole_reply() {
    let body = vec![
        "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n".to_owned(),
        "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n".to_owned(),
        DONE.to_owned(),
    ];
    let server = serve(vec![Reply::Sse(body)]).await;
    let chunks: Vec<MessageChunk> = collect(&server.model(), &hello())
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(chunks.len(), 2);
    assert!(chunks[0].id.starts_with("msg-"), "{}", chunks[0].id);
    assert_eq!(chunks[0].id, chunks[1].id);
}

#[tokio::test]
async fn http_429_is_retried_after_the_wait_the_server_asks_for() {
    let server = serve(vec![
        Reply::Raw(
            429,
            vec![("retry-after", "1")],
            r#"{"error":{"message":"Rate limit reached"}}"#.into(),
        ),
        Reply::Json(200, completion("chatcmpl-r", json!({"content": "ok"}))),
    ])
    .await;
    let started = Instant::now();
    let reply = server.model().invoke(&hello()).await.unwrap();
    assert_eq!(reply.content, "ok");
    assert_eq!(server.requests(), 2);
    // The backoff is 1 ms: only the server's `Retry-After: 1` explains a 1 s wait.
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn http_500_twice_then_200_is_retried_for_whole_and_streamed_replies() {
    let error = || Reply::Raw(500, vec![], "upstream failed".into());
    let server = serve(vec![
        error(),
        error(),
        Reply::Json(200, completion("chatcmpl-5", json!({"content": "fine"}))),
        error(),
        Reply::Raw(503, vec![], "busy".into()),
        Reply::Sse(vec![event("s", json!({"content": "fine"})), DONE.into()]),
    ])
    .await;
    let model = server.model();
    assert_eq!(model.invoke(&hello()).await.unwrap().content, "fine");
    assert_eq!(server.requests(), 3);
    let chunks = collect(&model, &hello()).await;
    assert_eq!(chunks.len(), 1);
    assert_eq!(chunks[0].as_ref().unwrap().content, "fine");
    assert_eq!(server.requests(), 6);
}

#[tokio::test]
async fn http_500_beyond_max_retries_is_a_status_error() {
    let error = || Reply::Raw(500, vec![], "the model crashed".into());
    let server = serve(vec![error(), error(), error()]).await;
    let err = server
        .model()
        .max_retries(1)
        .invoke(&hello())
        .await
        .unwrap_err();
    assert_eq!(server.requests(), 2);
    assert!(
        matches!(err, ModelError::Status { status: 500, .. }),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("HTTP 500") && text.contains("the model crashed"),
        "{text}"
    );
    assert!(text.contains("gave up after 2 attempts"), "{text}");

    // The stream fails the same way, before any chunk.
    let server = serve(vec![error()]).await;
    let chunks = collect(&server.model().max_retries(0), &hello()).await;
    assert_eq!(chunks.len(), 1);
    let err = chunks[0].as_ref().unwrap_err();
    assert!(
        matches!(err, ModelError::Status { status: 500, .. }),
        "{err}"
    );
}

#[tokio::test]
async fn http_401_is_not_retried_and_says_to_check_the_api_key() {
    let server = serve(vec![
        Reply::Json(
            401,
            json!({"error": {"message": "Incorrect API key provided: sk-wrong.", "type": "invalid_request_error"}}),
        ),
        Reply::Json(200, completion("never", json!({"content": "unused"}))),
    ])
    .await;
    let err = server
        .model()
        .api_key("sk-wrong")
        .invoke(&hello())
        .await
        .unwrap_err();
    assert_eq!(server.requests(), 1);
    assert!(
        matches!(err, ModelError::Status { status: 401, .. }),
        "{err}"
    );
    let text = err.to_string();
    assert!(text.contains("Incorrect API key provided"), "{text}");
    assert!(text.contains("check the API key"), "{text}");
}

#[tokio::test]
async fn a_wrong_base_url_says_to_check_it() {
    let server = serve(vec![]).await;
    let model = OpenAiModel::new("m").base_url(server.base.trim_end_matches("/v1"));
    let err = model.invoke(&hello()).await.unwrap_err();
    assert!(
        matches!(err, ModelError::Status { status: 404, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("check the base URL"), "{err}");
    assert_eq!(server.requests(), 0);
}

#[tokio::test]
async fn a_malformed_body_is_a_clear_error() {
    let server = serve(vec![
        Reply::Raw(
            200,
            vec![("content-type", "text/plain")],
            "Service is up!".into(),
        ),
        Reply::Json(200, json!({"id": "x", "object": "list", "data": []})),
        Reply::Raw(
            200,
            vec![("content-type", "text/html")],
            "<html><body>Gateway says hi</body></html>\n".into(),
        ),
        Reply::Sse(vec![
            "data: {\"choices\": [{\"delta\": \n\n".into(),
            DONE.into(),
        ]),
    ])
    .await;
    let model = server.model();

    let err = model.invoke(&hello()).await.unwrap_err();
    assert!(matches!(err, ModelError::Malformed { .. }), "{err}");
    assert!(err.to_string().contains("Service is up!"), "{err}");

    let err = model.invoke(&hello()).await.unwrap_err();
    assert!(err.to_string().contains("no choices"), "{err}");

    let chunks = collect(&model, &hello()).await;
    assert_eq!(chunks.len(), 1);
    let err = chunks[0].as_ref().unwrap_err();
    assert!(matches!(err, ModelError::Malformed { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("not server-sent events") && text.contains("Gateway says hi"),
        "{text}"
    );

    let chunks = collect(&model, &hello()).await;
    let err = chunks.last().unwrap().as_ref().unwrap_err();
    assert!(matches!(err, ModelError::Malformed { .. }), "{err}");
    assert!(err.to_string().contains("not a completion chunk"), "{err}");
}

#[tokio::test]
async fn an_error_object_in_the_stream_ends_it_with_that_error() {
    let server = serve(vec![Reply::Sse(vec![
        event("e", json!({"content": "Partial"})),
        "data: {\"error\": {\"message\": \"context length exceeded\", \"code\": 400}}\n\n".into(),
        DONE.into(),
    ])])
    .await;
    let chunks = collect(&server.model(), &hello()).await;
    assert_eq!(chunks.len(), 2);
    assert_eq!(chunks[0].as_ref().unwrap().content, "Partial");
    let err = chunks[1].as_ref().unwrap_err();
    assert!(
        matches!(err, ModelError::Status { status: 400, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("context length exceeded"), "{err}");
}

#[tokio::test]
async fn a_stream_cut_mid_way_yields_the_chunks_so_far_then_an_error() {
    let server = serve(vec![
        Reply::Cut(vec![
            event("c", json!({"content": "The first"})),
            event("c", json!({"content": " half"})),
        ]),
        // Ended cleanly but unfinished: no finish_reason, no [DONE].
        Reply::Sse(vec![event("d", json!({"content": "The first"}))]),
    ])
    .await;
    let model = server.model();
    let chunks = collect(&model, &hello()).await;
    assert_eq!(chunks.len(), 3, "{chunks:?}");
    assert_eq!(chunks[0].as_ref().unwrap().content, "The first");
    assert_eq!(chunks[1].as_ref().unwrap().content, " half");
    let err = chunks[2].as_ref().unwrap_err();
    assert!(matches!(err, ModelError::Transport { .. }), "{err}");
    assert!(err.to_string().contains("broke off"), "{err}");
    // Not retried once the reply has started.
    assert_eq!(server.requests(), 1);

    let chunks = collect(&model, &hello()).await;
    assert_eq!(chunks.len(), 2, "{chunks:?}");
    let err = chunks[1].as_ref().unwrap_err();
    assert!(matches!(err, ModelError::Malformed { .. }), "{err}");
    assert!(err.to_string().contains("[DONE]"), "{err}");
}

#[tokio::test]
async fn a_server_that_stops_answering_times_out() {
    let server = serve(vec![
        Reply::Late(
            Duration::from_secs(5),
            Box::new(Reply::Json(
                200,
                completion("late", json!({"content": "late"})),
            )),
        ),
        Reply::Stall(vec![event("s", json!({"content": "and then"}))]),
    ])
    .await;
    let model = server.model().timeout(Duration::from_millis(300));
    let started = Instant::now();
    let err = model.invoke(&hello()).await.unwrap_err();
    assert!(matches!(err, ModelError::Transport { .. }), "{err}");
    assert!(err.to_string().contains("no answer within"), "{err}");

    let chunks = collect(&model, &hello()).await;
    assert_eq!(chunks.len(), 2, "{chunks:?}");
    assert_eq!(chunks[0].as_ref().unwrap().content, "and then");
    assert!(
        chunks[1]
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("no answer within")
    );
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_refused_connection_is_retried_until_the_server_is_up() {
    // A port nothing listens on yet; the server starts there after the first try.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let model = OpenAiModel::new("m")
        .base_url(format!("http://127.0.0.1:{port}/v1"))
        .retry_backoff(Duration::from_millis(300))
        .max_retries(3);

    let err = model
        .clone()
        .max_retries(0)
        .invoke(&hello())
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::Transport { .. }), "{err}");

    let seen = Arc::new(Mutex::new(Vec::new()));
    let script = Script {
        replies: Arc::new(Mutex::new(
            vec![Reply::Json(200, completion("up", json!({"content": "up"})))].into(),
        )),
        seen: seen.clone(),
    };
    let serving = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
        let app = Router::new()
            .route("/v1/chat/completions", post(completions))
            .with_state(script);
        axum::serve(listener, app).await.unwrap();
    });
    let reply = model.invoke(&hello()).await.unwrap();
    assert_eq!(reply.content, "up");
    assert_eq!(seen.lock().unwrap().len(), 1);
    serving.abort();
}

#[tokio::test]
async fn a_server_that_ignores_stream_true_is_read_as_one_chunk() {
    let server = serve(vec![Reply::Json(
        200,
        completion(
            "chatcmpl-w",
            json!({"role": "assistant", "content": "all at once"}),
        ),
    )])
    .await;
    let chunks = collect(&server.model(), &hello()).await;
    assert_eq!(chunks.len(), 1);
    let chunk = chunks[0].as_ref().unwrap();
    assert_eq!(chunk.id, "chatcmpl-w");
    assert_eq!(chunk.content, "all at once");
}

#[tokio::test]
async fn the_request_has_the_chat_completions_wire_shape() {
    let reply = || Reply::Json(200, completion("c", json!({"content": "ok"})));
    let server = serve(vec![reply(), reply(), Reply::Sse(vec![DONE.into()])]).await;
    let weather = ToolSpec {
        name: "weather".into(),
        description: "The weather in a city.".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    };
    let request = ChatRequest::new(vec![
        Message::system("Be brief."),
        Message::user("Weather in Oslo?").with_id("m1"),
        Message::assistant("").with_tool_calls([ToolCall {
            id: "call_1".into(),
            name: "weather".into(),
            arguments: json!({"city": "Oslo"}),
        }]),
        Message::tool("call_1", "Sunny, 21 °C"),
        Message::assistant("It is sunny."),
    ])
    .with_tools(vec![weather]);

    let keyed = server
        .model()
        .api_key("sk-test")
        .temperature(0.5)
        .max_tokens(64);
    keyed.invoke(&request).await.unwrap();
    assert_eq!(
        server.body(0),
        json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Weather in Oslo?"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}},
                ]},
                {"role": "tool", "content": "Sunny, 21 °C", "tool_call_id": "call_1"},
                {"role": "assistant", "content": "It is sunny."},
            ],
            "tools": [{"type": "function", "function": {
                "name": "weather",
                "description": "The weather in a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            }}],
            "temperature": 0.5,
            "max_tokens": 64,
        })
    );
    // The arguments are JSON text that parses back to the call's arguments.
    let args = server.body(0)["messages"][2]["tool_calls"][0]["function"]["arguments"].clone();
    let parsed: Value = serde_json::from_str(args.as_str().unwrap()).unwrap();
    assert_eq!(parsed, json!({"city": "Oslo"}));
    assert_eq!(server.authorization(0).as_deref(), Some("Bearer sk-test"));

    // Without a key, no Authorization header; without tools, no `tools`.
    let unkeyed = server.model();
    unkeyed.invoke(&hello()).await.unwrap();
    assert_eq!(server.authorization(1), None);
    assert_eq!(
        server.body(1),
        json!({"model": "test-model", "messages": [{"role": "user", "content": "Hi"}]})
    );

    // Streamed: the same body with `stream: true`.
    assert!(collect(&unkeyed, &hello()).await.is_empty());
    assert_eq!(
        server.body(2),
        json!({"model": "test-model", "messages": [{"role": "user", "content": "Hi"}], "stream": true})
    );
}

#[tokio::test]
async fn https_urls_are_spoken_with_tls() {
    // A plain-HTTP server at an https URL: the TLS handshake fails, which shows the
    // client speaks TLS at all (a build without it rejects the URL's scheme).
    let server = serve(vec![]).await;
    let model = server
        .model()
        .max_retries(0)
        .base_url(server.base.replace("http://", "https://"));
    let err = model.invoke(&hello()).await.unwrap_err();
    assert!(matches!(err, ModelError::Transport { .. }), "{err}");
    let text = err.to_string();
    assert!(!text.contains("scheme"), "{text}");
    assert!(
        text.to_lowercase().contains("tls") || text.contains("corrupt"),
        "{text}"
    );
    assert_eq!(server.requests(), 0);
}

/// A tool adding two numbers, recording what it was called with.
#[derive(Clone, Default)]
struct Adder(Arc<Mutex<Vec<Value>>>);

impl stategraph_agent::Tool for Adder {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "add".into(),
            description: "Add two numbers.".into(),
            parameters: json!({"type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"]}),
        }
    }
    fn call(
        &self,
        arguments: Value,
    ) -> stategraph::BoxFuture<'_, Result<String, stategraph_agent::ToolError>> {
        Box::pin(async move {
            self.0.lock().unwrap().push(arguments.clone());
            let sum =
                arguments["a"].as_f64().unwrap_or(0.0) + arguments["b"].as_f64().unwrap_or(0.0);
            Ok(sum.to_string())
        })
    }
}

#[tokio::test]
async fn a_react_agent_on_the_http_model_streams_tokens_runs_the_tool_and_answers() {
    use stategraph::prelude::*;
    use stategraph_agent::{MessagesState, Tools, react_agent};

    let asking = "chatcmpl-1";
    let call = |head: bool, args: &str| {
        let mut piece = json!({"index": 0, "function": {"arguments": args}});
        if head {
            piece["id"] = json!("call_1");
            piece["type"] = json!("function");
            piece["function"]["name"] = json!("add");
        }
        event(asking, json!({"tool_calls": [piece]}))
    };
    let first = vec![
        event(asking, json!({"role": "assistant", "content": null})),
        call(true, ""),
        call(false, "{\"a\": 2"),
        call(false, ", \"b\": 40}"),
        finish(asking),
        DONE.into(),
    ];
    let answering = "chatcmpl-2";
    let mut second: Vec<String> = ["The ", "sum ", "is ", "42."]
        .iter()
        .map(|t| event(answering, json!({"content": t})))
        .collect();
    second.push(finish(answering));
    second.push(DONE.into());
    let server = serve(vec![Reply::Sse(first), Reply::Sse(second)]).await;

    let adder = Adder::default();
    let graph = react_agent(server.model(), Tools::new().with(adder.clone()))
        .build()
        .unwrap()
        .compile()
        .unwrap();
    let events: Vec<_> = graph
        .stream(
            MessagesState::update().messages([Message::user("2 + 40?")]),
            &RunConfig::new(),
            StreamMode::MESSAGES | StreamMode::VALUES,
        )
        .map(Result::unwrap)
        .collect()
        .await;
    assert_eq!(*adder.0.lock().unwrap(), [json!({"a": 2, "b": 40})]);
    let tokens: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Message { node, chunk, .. }
                if node == "agent" && chunk.id == answering =>
            {
                Some(chunk.content.as_str())
            }
            _ => None,
        })
        .collect();
    assert_eq!(tokens, ["The ", "sum ", "is ", "42."]);
    let StreamEvent::Values { values, .. } = events.last().unwrap() else {
        panic!("values last");
    };
    let m = &values.messages;
    assert_eq!(m.len(), 4);
    assert_eq!(m[1].id.as_deref(), Some(asking));
    assert_eq!(m[1].tool_calls[0].arguments, json!({"a": 2, "b": 40}));
    assert_eq!(m[2].content, "42");
    assert_eq!(m[3].content, "The sum is 42.");
    // The second request carried the tool's answer back, in the wire's form.
    let sent = server.body(1);
    assert_eq!(sent["messages"][2]["role"], "tool");
    assert_eq!(sent["messages"][2]["tool_call_id"], "call_1");
    assert_eq!(sent["tools"][0]["function"]["name"], "add");
}
