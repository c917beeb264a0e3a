//! [`StoreError`]: what a store call fails with. Every variant names the namespace,
//! key, filter or setting at fault and says how to fix it.

/// A store call failed. Nothing of a batch is written when any of its operations
/// fails validation, embedding or the backend.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A namespace is empty, has an empty label or a label with `.`, or starts with
    /// the reserved label `langgraph`.
    #[error("invalid namespace {namespace:?}: {reason}")]
    InvalidNamespace {
        /// The namespace as given.
        namespace: Vec<String>,
        /// What is wrong with it and how to fix it.
        reason: String,
    },
    /// A key is empty.
    #[error("invalid key {key:?} in namespace {namespace:?}: {reason}")]
    InvalidKey {
        /// The item's namespace.
        namespace: Vec<String>,
        /// The key as given.
        key: String,
        /// What is wrong with it and how to fix it.
        reason: String,
    },
    /// A stored value must be a JSON object.
    #[error(
        "value of {namespace:?}/{key} is a JSON {kind}, but stored values must be JSON objects; wrap it, e.g. {{\"value\": ..}}"
    )]
    NotAnObject {
        /// The item's namespace.
        namespace: Vec<String>,
        /// The item's key.
        key: String,
        /// What the value is instead (`array`, `string`, ...).
        kind: &'static str,
    },
    /// A value's JSON text is over [`MAX_VALUE_BYTES`](super::MAX_VALUE_BYTES).
    #[error(
        "value of {namespace:?}/{key} is {bytes} bytes of JSON, over the {limit}-byte limit; split it over several keys"
    )]
    TooLarge {
        /// The item's namespace.
        namespace: Vec<String>,
        /// The item's key.
        key: String,
        /// Its serialized size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// A filter is not in the filter language (see [`Filter`](super::Filter)).
    #[error("bad filter: {reason}")]
    BadFilter {
        /// What is wrong, naming the path or operator, and what is accepted.
        reason: String,
    },
    /// A search has a `query`, but the store was built without an index.
    #[error(
        "semantic search needs an index: build the store with `with_index(IndexConfig::new(..))`, or search without `query`"
    )]
    NoIndex,
    /// The embedder returned a vector of another length than the index's `dims`.
    #[error(
        "the embedder returned a vector of {got} dimensions, but the index is configured for {expected}; make `IndexConfig::dims` match the embedder"
    )]
    Dimension {
        /// The index's `dims`.
        expected: usize,
        /// The vector's length.
        got: usize,
    },
    /// The embedder returned another number of vectors than texts it was given.
    #[error(
        "the embedder returned {got} vectors for {expected} texts; it must return one per text"
    )]
    EmbedCount {
        /// How many texts it was given.
        expected: usize,
        /// How many vectors it returned.
        got: usize,
    },
    /// The embedder failed.
    #[error("the embedder failed")]
    Embed {
        /// The embedder's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// A typed value did not serialize to JSON.
    #[error("value for {namespace:?}/{key} of type `{type_name}` does not serialize to JSON")]
    Encode {
        /// The item's namespace.
        namespace: Vec<String>,
        /// The item's key.
        key: String,
        /// The Rust type.
        type_name: &'static str,
        /// What serde reported.
        #[source]
        source: serde_json::Error,
    },
    /// A stored value does not decode as the type asked for.
    #[error(
        "value of {namespace:?}/{key} does not decode as `{type_name}`; read it with the type it was written with, or as `serde_json::Value`"
    )]
    Decode {
        /// The item's namespace.
        namespace: Vec<String>,
        /// The item's key.
        key: String,
        /// The Rust type asked for.
        type_name: &'static str,
        /// What serde reported.
        #[source]
        source: serde_json::Error,
    },
    /// A store's `batch` returned outputs that do not match its operations.
    #[error(
        "the store's batch returned the wrong output for a {op}; this is a bug in the store implementation"
    )]
    BatchOutput {
        /// The operation (`get`, `put`, `search`, `list_namespaces`).
        op: &'static str,
    },
    /// The storage backend failed.
    #[error("{backend} store: {op} failed")]
    Backend {
        /// The backend (`memory`, `sqlite`, `postgres`, ...).
        backend: &'static str,
        /// What it was doing.
        op: String,
        /// The backend's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
}
