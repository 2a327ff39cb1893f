//! A hostile guest that allocates without bound: the host must stop it at its memory limit.

use opm_guest::{Component, Context, TransformError, Transformer, Value};

pub struct Hog;

impl Transformer for Hog {
    fn transform(_: &Component, _: &Context) -> Result<Vec<Value>, TransformError> {
        let mut hoard: Vec<Vec<u8>> = Vec::new();
        loop {
            hoard.push(std::hint::black_box(vec![1u8; 1 << 20]));
        }
    }
}

opm_guest::export!(Hog);
