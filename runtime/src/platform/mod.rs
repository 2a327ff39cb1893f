//! A whole platform at once (`docs/platforms.md`): every release of a releases file
//! (`opm_core::platform`) rendered in one process ([`build`]), and what a change does to every
//! environment, compared between two git revisions ([`diff`]).

pub mod build;
pub mod diff;
