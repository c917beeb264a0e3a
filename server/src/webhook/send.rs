//! One call: the guarded HTTP client, the signature, and the body a run's end makes.

use std::sync::Arc;

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use super::config::Webhooks;
use super::guard::{Guarded, redirects};
use crate::db::{DeliveryRow, NewDelivery, RunRow, RunStatus, now_ms};

/// The configured client every call goes through.
pub(crate) struct Sender {
    client: reqwest::Client,
    pub(crate) config: Webhooks,
}

impl Sender {
    /// A client that resolves and redirects through the guard, never through a
    /// proxy (which would resolve names itself).
    pub(crate) fn new(config: Webhooks) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .dns_resolver(Arc::new(Guarded {
                allow: config.allowed.clone(),
            }))
            .redirect(redirects(config.allowed.clone()))
            .no_proxy()
            .timeout(config.timeout)
            .user_agent(concat!("stategraph-server/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Self { client, config })
    }

    /// One attempt: `Ok` on a 2xx answer, else why not.
    pub(crate) async fn send(&self, d: &DeliveryRow) -> Result<(), String> {
        let mut body = d.body.clone();
        if let Value::Object(o) = &mut body {
            o.insert("webhook_sent_at".into(), crate::wire::time(now_ms()).into());
        }
        let bytes = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
        let mut req = self
            .client
            .post(&d.url)
            .header("content-type", "application/json")
            .header("idempotency-key", &d.delivery_id);
        if let Some(secret) = &self.config.secret {
            req = req.header(
                "x-stategraph-signature",
                signature(secret, now_ms() / 1000, &bytes),
            );
        }
        let answer = req
            .body(bytes)
            .send()
            .await
            .map_err(|e| crate::error::error_chain(&e))?;
        if answer.status().is_success() {
            Ok(())
        } else {
            Err(format!("the receiver answered {}", answer.status()))
        }
    }
}

/// `t=<seconds>,v1=<hex of HMAC-SHA256(secret, "<seconds>.<body>")>`.
pub(crate) fn signature(secret: &str, at: i64, body: &[u8]) -> String {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        return String::new();
    };
    mac.update(at.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("t={at},v1={hex}")
}

/// The call a run's end makes, if the run asked for one: the run as the API shows
/// it, its start and end, the thread's values, and the error of a failed run.
pub(crate) fn delivery_of(
    run: &RunRow,
    status: RunStatus,
    values: Option<&Value>,
    output: &Value,
) -> Option<NewDelivery> {
    let kwargs: crate::wire::RunKwargs = serde_json::from_value(run.kwargs.clone()).ok()?;
    let url = kwargs.webhook?;
    let now = crate::wire::time(now_ms());
    let mut ended = run.clone();
    ended.status = status;
    let Ok(Value::Object(mut body)) = serde_json::to_value(crate::wire::Run::from(&ended)) else {
        return None;
    };
    body.insert("updated_at".into(), now.clone().into());
    body.insert(
        "run_started_at".into(),
        crate::wire::time(run.updated_at).into(),
    );
    body.insert("run_ended_at".into(), now.into());
    body.insert("values".into(), values.cloned().unwrap_or(Value::Null));
    if let Some(error) = output.get("__error__") {
        body.insert("error".into(), error.clone());
    }
    Some(NewDelivery {
        url,
        body: Value::Object(body),
    })
}
