//! [`StoreExt`]: typed puts and gets over any [`Store`], so a node reads back the
//! type it wrote.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::error::StoreError;
use super::traits::{Store, owned};
use super::types::PutOptions;
use crate::future::BoxFuture;

/// Typed access to a [`Store`] through serde. Implemented for every store, also
/// `dyn Store` (so it works through an `Arc<dyn Store>`).
pub trait StoreExt: Store {
    /// Stores `value` serialized as JSON; it must serialize to a JSON object (a struct
    /// or a map).
    ///
    /// # Errors
    /// [`StoreError::Encode`] when it does not serialize,
    /// [`StoreError::NotAnObject`] when it is not an object, or the errors of
    /// [`Store::put`].
    fn put_typed<'a, T: Serialize + ?Sized>(
        &'a self,
        namespace: &'a [&'a str],
        key: &'a str,
        value: &T,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.put_typed_with(namespace, key, value, PutOptions::default())
    }

    /// As [`put_typed`](Self::put_typed), with options.
    ///
    /// # Errors
    /// As [`put_typed`](Self::put_typed).
    fn put_typed_with<'a, T: Serialize + ?Sized>(
        &'a self,
        namespace: &'a [&'a str],
        key: &'a str,
        value: &T,
        options: PutOptions,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let encoded = serde_json::to_value(value).map_err(|source| StoreError::Encode {
            namespace: owned(namespace),
            key: key.to_owned(),
            type_name: std::any::type_name::<T>(),
            source,
        });
        Box::pin(async move { self.put_with(namespace, key, encoded?, options).await })
    }

    /// The value at `namespace`/`key` decoded as `T`, if present and not expired.
    ///
    /// # Errors
    /// [`StoreError::Decode`] when the stored value is not a `T`, or the errors of
    /// [`Store::get`].
    fn get_typed<'a, T: DeserializeOwned + Send + 'a>(
        &'a self,
        namespace: &'a [&'a str],
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<T>, StoreError>> {
        Box::pin(async move {
            let Some(item) = self.get(namespace, key).await? else {
                return Ok(None);
            };
            serde_json::from_value(item.value)
                .map(Some)
                .map_err(|source| StoreError::Decode {
                    namespace: item.namespace,
                    key: item.key,
                    type_name: std::any::type_name::<T>(),
                    source,
                })
        })
    }
}

impl<S: Store + ?Sized> StoreExt for S {}
