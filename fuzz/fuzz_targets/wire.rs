//! Any bytes decoded as every wire message (the coordinator decodes untrusted request bodies,
//! the worker untrusted responses): an error or a value, never a panic, and a decoded value
//! survives an encode/decode round trip.
#![no_main]

use c960_common::codec;
use c960_common::wire::*;
use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::de::DeserializeOwned;

fn check<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(data: &[u8]) {
    if let Ok(v) = codec::decode::<T>(data) {
        let again: T = codec::decode(&codec::encode(&v).unwrap()).unwrap();
        assert_eq!(again, v);
    }
}

fuzz_target!(|data: &[u8]| {
    let _ = codec::peek_protocol(data);
    check::<RegisterRequest>(data);
    check::<RegisterResponse>(data);
    check::<FetchRequest>(data);
    check::<FetchResponse>(data);
    check::<SubmitRequest>(data);
    check::<SubmitResponse>(data);
    check::<AbandonRequest>(data);
    check::<AbandonResponse>(data);
    check::<Assignment>(data);
});
