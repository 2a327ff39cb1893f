//! One module per subcommand.

pub mod argocd;
pub mod blob;
pub mod cache;
pub mod completion;
pub mod mod_build;
pub mod mod_diff;
pub mod mod_init;
pub mod mod_push;
pub mod mod_schema;
pub mod mod_verify;
pub mod mod_verify_render;
pub mod mod_vet;
pub mod module_args;
pub mod provider_export;
pub mod provider_init;
pub mod provider_inspect;
pub mod provider_list;
pub mod provider_pack;
pub mod provider_pull;
pub mod provider_push;
pub mod provider_sign;
pub mod provider_verify;
pub mod transformer_build;
pub mod transformer_new;
pub mod transformer_test;
pub mod trust_args;
