//! The one bincode codec of the wire protocol: bincode 2 with its serde API, the standard
//! configuration (little-endian, variable-length integers) and a decode size limit, so that a
//! hostile length prefix cannot make the decoder allocate more than [`MAX_BODY_BYTES`].

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::wire::MAX_BODY_BYTES;

/// Why a body could not be encoded or decoded. The bincode errors are in the messages, not
/// marked as sources, so that a chain printer (`{:#}`) does not say them twice.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// The value could not be encoded (should not happen for wire types).
    #[error("cannot encode: {0}")]
    Encode(bincode::error::EncodeError),
    /// The bytes are not a valid encoding of the expected type (garbage, truncated, too large).
    #[error("cannot decode: {0}")]
    Decode(bincode::error::DecodeError),
    /// The bytes decode, but more bytes follow the value.
    #[error("{0} trailing bytes after the message")]
    Trailing(usize),
}

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<MAX_BODY_BYTES>()
}

/// Encodes a wire value.
pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, CodecError> {
    bincode::serde::encode_to_vec(value, config()).map_err(CodecError::Encode)
}

/// Decodes a wire value; the whole input must be consumed.
///
/// # Examples
///
/// ```
/// use c960_common::codec::{decode, encode};
/// use c960_common::wire::{PositionSpec, WorkUnitKind};
///
/// let kind = WorkUnitKind::Perft { position: PositionSpec::StartPosition(518), depth: 7 };
/// let bytes = encode(&kind)?;
/// assert_eq!(decode::<WorkUnitKind>(&bytes)?, kind);
/// // Trailing bytes are an error, not ignored.
/// let mut longer = bytes.clone();
/// longer.push(0);
/// assert!(decode::<WorkUnitKind>(&longer).is_err());
/// # Ok::<(), c960_common::codec::CodecError>(())
/// ```
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, CodecError> {
    let (value, used) =
        bincode::serde::decode_from_slice(bytes, config()).map_err(CodecError::Decode)?;
    if used != bytes.len() {
        return Err(CodecError::Trailing(bytes.len() - used));
    }
    Ok(value)
}

/// Reads only the protocol version, the first field of every request, from the start of a body.
/// This works whatever follows, so a request from another protocol version is recognised as such.
pub fn peek_protocol(bytes: &[u8]) -> Result<u32, CodecError> {
    let (version, _) =
        bincode::serde::decode_from_slice::<u32, _>(bytes, config()).map_err(CodecError::Decode)?;
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::*;

    fn sample() -> SubmitRequest {
        SubmitRequest {
            protocol: PROTOCOL_VERSION,
            lease_id: 3,
            workunit_id: 9,
            result: WorkResult::Perft(PerftResult {
                nodes: 400,
                divide: vec![("a2a3".into(), 20)],
            }),
            elapsed_ms: 5,
            engine: EngineInfo {
                name: "e".into(),
                version: "1".into(),
            },
            digest: [1; 32],
        }
    }

    #[test]
    fn round_trip() {
        let bytes = encode(&sample()).unwrap();
        assert_eq!(peek_protocol(&bytes).unwrap(), PROTOCOL_VERSION);
        assert_eq!(decode::<SubmitRequest>(&bytes).unwrap(), sample());
    }

    #[test]
    fn truncated_and_trailing_are_refused() {
        let bytes = encode(&sample()).unwrap();
        for cut in 0..bytes.len() {
            assert!(
                decode::<SubmitRequest>(&bytes[..cut]).is_err(),
                "cut at {cut}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(matches!(
            decode::<SubmitRequest>(&longer),
            Err(CodecError::Trailing(1))
        ));
    }

    #[test]
    fn huge_length_prefix_is_refused_without_allocating() {
        // A string length of ~2^60 must hit the limit, not the allocator.
        let mut bytes = encode(&PROTOCOL_VERSION).unwrap();
        bytes.push(255); // u64 varint marker: the name length
        bytes.extend_from_slice(&(1u64 << 60).to_le_bytes());
        assert!(decode::<RegisterRequest>(&bytes).is_err());
    }
}
