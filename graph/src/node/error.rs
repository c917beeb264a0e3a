//! [`NodeError`], what a node fails with.
//!
//! `NodeError` works like `anyhow::Error`: `?` converts any error into it
//! (`std::io::Error`, `serde_json::Error`, a boxed error, `anyhow::Error`, a
//! message), so it does not implement `std::error::Error` itself (that would make the
//! conversion overlap with `From<T> for T`); it dereferences to
//! `dyn Error + Send + Sync` instead, and converts into `Box<dyn Error>` and, with the
//! `anyhow` feature, into `anyhow::Error`. What a `NodeContext` call fails with is
//! next to it, in `context.rs`.

use std::error::Error;
use std::fmt;
use std::ops::Deref;

/// An error returned by a node. Wraps the node's own error; get it back with
/// [`NodeError::downcast_ref`], or use it as a `&dyn Error` (it dereferences to one).
///
/// `?` converts into it from any `E: Error + Send + Sync + 'static`, from
/// `Box<dyn Error + Send + Sync>`, from `anyhow::Error`, and from a `String` or
/// `&str` message:
///
/// ```
/// use stategraph::NodeError;
///
/// fn read(path: &str) -> Result<usize, NodeError> {
///     let text = std::fs::read_to_string(path)?; // std::io::Error
///     let n: usize = serde_json::from_str(&text)?; // serde_json::Error
///     if n == 0 {
///         return Err("the count is zero".into());
///     }
///     Ok(n)
/// }
///
/// let err = read("/no/such/file").unwrap_err();
/// assert!(err.downcast_ref::<std::io::Error>().is_some());
/// ```
pub struct NodeError {
    pub(super) inner: Box<dyn Error + Send + Sync + 'static>,
}

impl NodeError {
    /// Wraps an error.
    pub fn new<E: Error + Send + Sync + 'static>(error: E) -> Self {
        Self {
            inner: Box::new(error),
        }
    }

    /// Wraps a boxed error, such as `Box<dyn Error + Send + Sync>`.
    pub fn from_boxed(boxed: Box<dyn Error + Send + Sync + 'static>) -> Self {
        Self { inner: boxed }
    }

    /// An error carrying only a message.
    pub fn msg(message: impl Into<String>) -> Self {
        Self {
            inner: message.into().into(),
        }
    }

    /// The node's error, if it has type `E`.
    pub fn downcast_ref<E: Error + 'static>(&self) -> Option<&E> {
        self.inner.downcast_ref::<E>()
    }

    /// The node's error.
    pub fn inner(&self) -> &(dyn Error + Send + Sync + 'static) {
        &*self.inner
    }

    /// The node's error, boxed.
    pub fn into_inner(self) -> Box<dyn Error + Send + Sync + 'static> {
        self.inner
    }
}

/// `?` on any error, a boxed error, `anyhow::Error` or a message.
impl<E: Into<Box<dyn Error + Send + Sync + 'static>>> From<E> for NodeError {
    fn from(error: E) -> Self {
        Self::from_boxed(error.into())
    }
}

impl Deref for NodeError {
    type Target = dyn Error + Send + Sync + 'static;

    fn deref(&self) -> &Self::Target {
        &*self.inner
    }
}

impl AsRef<dyn Error + Send + Sync + 'static> for NodeError {
    fn as_ref(&self) -> &(dyn Error + Send + Sync + 'static) {
        &*self.inner
    }
}

/// `?` on a `NodeError` in code returning `Box<dyn Error>` (a test, `main`).
impl From<NodeError> for Box<dyn Error + 'static> {
    fn from(error: NodeError) -> Self {
        error.inner
    }
}

/// With the `anyhow` feature: `?` on a `NodeError` in code returning
/// `anyhow::Result`. The error keeps its message and chain.
#[cfg(feature = "anyhow")]
impl From<NodeError> for anyhow::Error {
    fn from(error: NodeError) -> Self {
        anyhow::Error::from_boxed(error.inner)
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
