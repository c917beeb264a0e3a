//! `Send` payload codecs: how `#[node]` picks a serde codec for a payload type when
//! it has one (moved out of `node.rs` unchanged).

use std::any::Any;
use std::sync::Arc;

type SendPayload = Arc<dyn Any + std::marker::Send + Sync>;

/// Encodes and decodes one node's `Send` payloads for checkpoints.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct PayloadCodec {
    pub(crate) encode: fn(
        &(dyn Any + std::marker::Send + Sync),
    ) -> Option<Result<serde_json::Value, serde_json::Error>>,
    pub(crate) decode: fn(serde_json::Value) -> Result<SendPayload, serde_json::Error>,
}

fn encode_payload<T: serde::Serialize + Any>(
    payload: &(dyn Any + std::marker::Send + Sync),
) -> Option<Result<serde_json::Value, serde_json::Error>> {
    payload.downcast_ref::<T>().map(serde_json::to_value)
}

fn decode_payload<T: serde::de::DeserializeOwned + Any + std::marker::Send + Sync>(
    value: serde_json::Value,
) -> Result<SendPayload, serde_json::Error> {
    Ok(Arc::new(serde_json::from_value::<T>(value)?))
}

/// Picks a payload codec when the payload type is serde-capable. `#[node]` calls
/// `(&&PayloadProbe::<I>::new()).payload_codec()`: method resolution prefers the
/// `&PayloadProbe` impl, which exists only for serde types.
#[doc(hidden)]
pub struct PayloadProbe<T>(std::marker::PhantomData<T>);

impl<T> PayloadProbe<T> {
    #[doc(hidden)]
    pub const fn new() -> Self {
        Self(std::marker::PhantomData)
    }
}

impl<T> Default for PayloadProbe<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[doc(hidden)]
pub trait SerdePayload {
    fn payload_codec(&self) -> Option<PayloadCodec>;
}

impl<T> SerdePayload for &PayloadProbe<T>
where
    T: serde::Serialize + serde::de::DeserializeOwned + Any + std::marker::Send + Sync,
{
    fn payload_codec(&self) -> Option<PayloadCodec> {
        Some(PayloadCodec {
            encode: encode_payload::<T>,
            decode: decode_payload::<T>,
        })
    }
}

#[doc(hidden)]
pub trait OpaquePayload {
    fn payload_codec(&self) -> Option<PayloadCodec>;
}

impl<T> OpaquePayload for PayloadProbe<T> {
    fn payload_codec(&self) -> Option<PayloadCodec> {
        None
    }
}
