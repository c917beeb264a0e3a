//! The error a node returns (moved out of `node.rs` unchanged, plus the `anyhow`
//! conversion).

use std::fmt;

/// An error returned by a node. Wraps the node's own error; get it back with
/// [`NodeError::downcast_ref`] or [`std::error::Error::source`].
pub struct NodeError {
    pub(super) inner: Box<dyn std::error::Error + Send + Sync + 'static>,
}

impl NodeError {
    /// Wraps any error (a `NodeError` is not wrapped twice).
    pub fn new<E: std::error::Error + Send + Sync + 'static>(error: E) -> Self {
        Self::from_boxed(Box::new(error))
    }

    /// Wraps a boxed error, such as `Box<dyn Error + Send + Sync>` or what
    /// `anyhow::Error` converts into (a boxed `NodeError` is unwrapped).
    pub fn from_boxed(boxed: Box<dyn std::error::Error + Send + Sync + 'static>) -> Self {
        match boxed.downcast::<NodeError>() {
            Ok(node_error) => *node_error,
            Err(inner) => Self { inner },
        }
    }

    /// An error carrying only a message.
    pub fn msg(message: impl Into<String>) -> Self {
        Self {
            inner: message.into().into(),
        }
    }

    /// The node's error, if it has type `E`.
    pub fn downcast_ref<E: std::error::Error + 'static>(&self) -> Option<&E> {
        self.inner.downcast_ref::<E>()
    }

    /// The node's error.
    pub fn inner(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.inner
    }
}

impl fmt::Debug for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.inner, f)
    }
}

impl fmt::Display for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.inner, f)
    }
}

impl std::error::Error for NodeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner.source()
    }
}

/// With the `anyhow` feature: `?` on an `anyhow::Error` in code returning
/// `NodeError`. The error keeps its message and chain.
#[cfg(feature = "anyhow")]
impl From<anyhow::Error> for NodeError {
    fn from(error: anyhow::Error) -> Self {
        Self::from_boxed(error.into())
    }
}
