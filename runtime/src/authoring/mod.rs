//! The author's loop, in any language that compiles to a component: [`templates`] scaffolds a
//! project (`opm transformer new`), [`project`] builds it and checks the component (`opm
//! transformer build`), and [`cases`] runs its test cases in the sandbox (`opm transformer
//! test`).

pub mod cases;
pub mod project;
pub mod templates;
