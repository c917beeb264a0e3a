//! The webhook outbox: a call to make is written in the transaction that ends its
//! run, then claimed, made and marked by whichever process's deliverer gets to it.
//! A claim holds a delivery for a while (its `next_attempt_at` pushed past the call's
//! timeout): a process that dies mid-call leaves it due again, so every delivery is
//! made at least once, each attempt under the same delivery id.

use stategraph::BoxFuture;

use super::rows::DbResult;

/// A delivery claimed for an attempt.
#[derive(Clone, Debug)]
pub(crate) struct DeliveryRow {
    /// Its id: the `Idempotency-Key` of every attempt.
    pub(crate) delivery_id: String,
    /// The run it reports.
    pub(crate) run_id: String,
    /// Where it goes.
    pub(crate) url: String,
    /// What it says.
    pub(crate) body: serde_json::Value,
    /// This attempt's number, from 1.
    pub(crate) attempt: i32,
}

/// Webhook deliveries: due ones claimed, each attempt's outcome stored.
pub(crate) trait Outbox: Send + Sync + 'static {
    /// Claims up to `limit` deliveries due at `now`, each held until `until` (then
    /// due again unless marked).
    fn claim_deliveries(
        &self,
        now: i64,
        until: i64,
        limit: usize,
    ) -> BoxFuture<'_, DbResult<Vec<DeliveryRow>>>;
    /// Marks a delivery made.
    fn delivered(&self, delivery_id: String) -> BoxFuture<'_, DbResult<()>>;
    /// Records a failed attempt: due again at `retry_at`, or given up (`None`).
    fn attempt_failed(
        &self,
        delivery_id: String,
        attempt: i32,
        retry_at: Option<i64>,
        error: String,
    ) -> BoxFuture<'_, DbResult<()>>;
    /// The earliest time a pending delivery is due.
    fn next_delivery(&self) -> BoxFuture<'_, DbResult<Option<i64>>>;
}
