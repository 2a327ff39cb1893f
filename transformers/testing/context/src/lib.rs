//! A guest built against the newest contract that renders, for its component, a ConfigMap
//! holding every field of the context it was given: the fields 1.1.0 added (the module's name,
//! the platform, the provider's version, the transformer's FQN) among them.

use opm_guest::{Component, Context, TransformError, Transformer, Value, json};

pub struct ShowsContext;

impl Transformer for ShowsContext {
    fn transform(component: &Component, context: &Context) -> Result<Vec<Value>, TransformError> {
        Ok(vec![json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": context.object_name(component.name()),
                "namespace": context.namespace,
                "labels": context.labels,
            },
            "data": {
                "name": context.name,
                "namespace": context.namespace,
                "version": context.version,
                "provider": context.provider,
                "timestamp": context.timestamp,
                "strict": context.strict.to_string(),
                "module": context.module,
                "platform": context.platform,
                "providerVersion": context.provider_version,
                "transformer": context.transformer,
            },
        })])
    }
}

opm_guest::export!(ShowsContext);
