//! A hostile guest that never returns: the host must stop it with its fuel budget.

use opm_guest::{Component, Context, TransformError, Transformer, Value};

pub struct Spin;

impl Transformer for Spin {
    fn transform(component: &Component, _: &Context) -> Result<Vec<Value>, TransformError> {
        let mut counter: u64 = component.name().len() as u64;
        loop {
            counter =
                std::hint::black_box(counter.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

opm_guest::export!(Spin);
