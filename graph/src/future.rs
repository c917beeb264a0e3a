//! Small shared types used across layers.

use std::future::Future;
use std::pin::Pin;

/// A boxed, sendable future (what async nodes and saver methods return once erased).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
