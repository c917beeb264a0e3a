//! A streamed reply: the response body read piece by piece, its SSE events
//! decoded into [`MessageChunk`]s as they arrive.

use std::collections::VecDeque;

use futures::StreamExt;
use stategraph::{BoxFuture, Message, MessageChunk};

use super::OpenAiModel;
use super::sse::{SseError, SseParser};
use super::wire::{Decoder, excerpt, parse_completion, request_body};
use crate::model::{ChatModel, ChatRequest, ChunkStream, ModelError, new_message_id};

/// Where a streamed reply is.
enum State {
    /// Not asked yet.
    Start,
    /// Reading the body.
    Reading(Box<Reading>),
    /// Ended (the end marker, or an error was yielded).
    Done,
}

struct Reading {
    response: reqwest::Response,
    sse: SseParser,
    decoder: Decoder,
    ready: VecDeque<MessageChunk>,
    /// The error that ends the reply, yielded after the chunks read before it.
    failed: Option<ModelError>,
}

pub(super) fn stream<'a>(model: &'a OpenAiModel, request: &'a ChatRequest) -> ChunkStream<'a> {
    futures::stream::unfold(State::Start, move |state| next(model, request, state)).boxed()
}

async fn next(
    model: &OpenAiModel,
    request: &ChatRequest,
    mut state: State,
) -> Option<(Result<MessageChunk, ModelError>, State)> {
    loop {
        state = match state {
            State::Done => return None,
            State::Start => match start(model, request).await {
                Ok(Start::Sse(reading)) => State::Reading(reading),
                Ok(Start::Whole(chunk)) => return Some((Ok(chunk), State::Done)),
                Err(e) => return Some((Err(e), State::Done)),
            },
            State::Reading(mut r) => {
                if let Some(chunk) = r.ready.pop_front() {
                    return Some((Ok(chunk), State::Reading(r)));
                }
                if let Some(e) = r.failed.take() {
                    return Some((Err(e), State::Done));
                }
                if r.decoder.done {
                    return None;
                }
                if let Err(e) = read(model, &mut r).await {
                    r.failed = Some(e);
                }
                State::Reading(r)
            }
        }
    }
}

enum Start {
    Sse(Box<Reading>),
    /// The server ignored `stream: true` and sent the whole reply as JSON.
    Whole(MessageChunk),
}

async fn start(model: &OpenAiModel, request: &ChatRequest) -> Result<Start, ModelError> {
    let body = request_body(&model.settings, request, true);
    let response = model.send(&body, true).await?;
    let json = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if json {
        let text = tokio::time::timeout(model.timeout, response.text())
            .await
            .map_err(|_| model.timed_out())?
            .map_err(|e| model.transport(&e))?;
        let message = parse_completion(&model.endpoint(), &text)?;
        return Ok(Start::Whole(MessageChunk::whole(
            &message,
            new_message_id(),
        )));
    }
    Ok(Start::Sse(Box::new(Reading {
        response,
        sse: SseParser::new(),
        decoder: Decoder::new(&model.endpoint()),
        ready: VecDeque::new(),
        failed: None,
    })))
}

/// Reads the next piece of the body into `r.ready` (or marks the end).
async fn read(model: &OpenAiModel, r: &mut Reading) -> Result<(), ModelError> {
    let piece = tokio::time::timeout(model.timeout, r.response.chunk())
        .await
        .map_err(|_| model.timed_out())?
        .map_err(|e| broken(model, &e))?;
    let events = match &piece {
        Some(bytes) => r.sse.push(bytes),
        None => r.sse.finish(),
    }
    .map_err(|e| not_sse(model, e))?;
    for data in events {
        if r.decoder.done {
            break;
        }
        if let Some(chunk) = r.decoder.event(&data)? {
            r.ready.push_back(chunk);
        }
    }
    if piece.is_none() && !r.decoder.done {
        if !r.decoder.finished {
            return Err(ModelError::Malformed {
                url: model.endpoint(),
                message: "the stream ended before the reply was finished (no `data: [DONE]`)"
                    .into(),
            });
        }
        r.decoder.done = true;
    }
    Ok(())
}

fn broken(model: &OpenAiModel, e: &reqwest::Error) -> ModelError {
    match model.transport(e) {
        ModelError::Transport { url, message } => ModelError::Transport {
            url,
            message: format!("the streamed reply broke off: {message}"),
        },
        other => other,
    }
}

fn not_sse(model: &OpenAiModel, e: SseError) -> ModelError {
    let message = match e {
        SseError::NotUtf8 => "the streamed reply is not UTF-8 text".to_owned(),
        SseError::NotSse { line } => format!(
            "the streamed reply is not server-sent events (`data: {{json}}` lines); it has: {}",
            excerpt(&line)
        ),
    };
    ModelError::Malformed {
        url: model.endpoint(),
        message,
    }
}

impl ChatModel for OpenAiModel {
    fn invoke<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<Message, ModelError>> {
        Box::pin(async move {
            let body = request_body(&self.settings, request, false);
            let response = self.send(&body, false).await?;
            let text = response.text().await.map_err(|e| self.transport(&e))?;
            parse_completion(&self.endpoint(), &text)
        })
    }

    fn stream<'a>(&'a self, request: &'a ChatRequest) -> ChunkStream<'a> {
        stream(self, request)
    }
}
