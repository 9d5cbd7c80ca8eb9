//! The stable-toolchain half of the fuzzing story (`fuzz/` holds the cargo-fuzz targets, which
//! need nightly): decoding arbitrary bytes as any wire message, and parsing arbitrary text as a
//! FEN, returns an error or a value but never panics, and a decoded message survives an
//! encode/decode round trip unchanged. (Byte equality does not hold: bincode's varints accept
//! non-minimal encodings, e.g. `251, 131, 0` for 131. Harmless, since digests are computed over
//! decoded values, never over request bytes.)

use c960_common::Position;
use c960_common::codec;
use c960_common::wire::*;
use proptest::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;

fn decode_round_trips<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(bytes: &[u8]) {
    if let Ok(v) = codec::decode::<T>(bytes) {
        let again: T = codec::decode(&codec::encode(&v).unwrap()).unwrap();
        assert_eq!(again, v, "decode/encode/decode changed the value");
    }
    let _ = codec::peek_protocol(bytes);
}

fn every_message(bytes: &[u8]) {
    decode_round_trips::<RegisterRequest>(bytes);
    decode_round_trips::<RegisterResponse>(bytes);
    decode_round_trips::<FetchRequest>(bytes);
    decode_round_trips::<FetchResponse>(bytes);
    decode_round_trips::<SubmitRequest>(bytes);
    decode_round_trips::<SubmitResponse>(bytes);
    decode_round_trips::<AbandonRequest>(bytes);
    decode_round_trips::<AbandonResponse>(bytes);
    decode_round_trips::<Assignment>(bytes);
    decode_round_trips::<FailRequest>(bytes);
    decode_round_trips::<FailResponse>(bytes);
    decode_round_trips::<FetchBatchRequest>(bytes);
    decode_round_trips::<FetchBatchResponse>(bytes);
    decode_round_trips::<SubmitBatchRequest>(bytes);
    decode_round_trips::<SubmitBatchResponse>(bytes);
    let _ = serde_json::from_slice::<ErrorBody>(bytes);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        every_message(&bytes);
    }

    #[test]
    fn mutated_valid_messages_never_panic(
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8),
    ) {
        let req = SubmitRequest {
            protocol: PROTOCOL_VERSION,
            lease_id: 3,
            workunit_id: 9,
            result: WorkResult::Perft(PerftResult {
                nodes: 400,
                divide: vec![("a2a3".into(), 20), ("b1c3".into(), 380)],
            }),
            elapsed_ms: 5,
            engine: EngineInfo { name: "e".into(), version: "1".into() },
            digest: [1; 32],
        };
        let mut bytes = codec::encode(&req).unwrap();
        for (at, b) in flips {
            let n = bytes.len();
            bytes[at % n] = b;
        }
        every_message(&bytes);
    }

    #[test]
    fn arbitrary_fen_never_panics(text in "\\PC{0,100}") {
        let _ = Position::from_fen(&text);
    }

    #[test]
    fn fen_like_text_never_panics(
        text in "[rnbqkpRNBQKP1-8/]{0,70} [wb] [KQkqA-Ha-h-]{1,4} ([a-h][36]|-) [0-9]{1,3} [0-9]{1,3}",
    ) {
        if let Ok(p) = Position::from_fen(&text) {
            let _ = p.legal_moves();
        }
    }
}
