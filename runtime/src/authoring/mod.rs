//! The author's loop, in any language that compiles to a component: [`templates`] scaffolds a
//! project (`opm transformer new`, a transformer or with `--renderer` a provider's renderer),
//! [`project`] builds it and checks the component (`opm transformer build`), [`sources`] says
//! whether the component is older than what it is built from, and [`cases`] (a
//! transformer's) or [`renderer_cases`] (a renderer's) runs its test cases in the sandbox and
//! judges each against its expectation (`opm transformer test`, whose loop is [`suite`]'s), as
//! [`goldens`] judges a whole render against what the author recorded; [`case_from`] makes a
//! case of what a call of a real module's render receives (`opm transformer case --from`).

pub mod case_from;
pub mod cases;
pub mod goldens;
pub mod project;
pub mod renderer_cases;
pub mod sources;
pub mod suite;
pub mod templates;
