//! A guest that panics: the host must report its panic message, not a bare trap.

use opm_guest::{Component, Context, TransformError, Transformer, Value};

pub struct Panics;

impl Transformer for Panics {
    fn transform(component: &Component, _: &Context) -> Result<Vec<Value>, TransformError> {
        panic!(
            "component {} has nothing this transformer can use",
            component.name()
        );
    }
}

opm_guest::export!(Panics);
