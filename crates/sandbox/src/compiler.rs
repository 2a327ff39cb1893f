//! Which compiler turns components into native code, and the engine configuration each
//! gives.

/// The sandbox engine's configuration, but for the stack size (which the limits set): fuel and
/// epoch interruption on, the component model on, and WebAssembly's default features (no
/// threads: shared memory is refused when a bundle is loaded, see
/// [`opm_core::contract::wasm_features`]).
pub fn engine_config() -> wasmtime::Config {
    engine_config_for(Compiler::Optimizing)
}

/// Which compiler turns components into native code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compiler {
    /// Cranelift, optimizing: what `opm provider init` and `pull` compile into the cache in the
    /// background after their quick compile (or before they return, with `--optimized`), and
    /// what `opm mod build --optimized` compiles with.
    #[default]
    Optimizing,
    /// Winch, wasmtime's single-pass baseline compiler: compiles a JavaScript or Python
    /// component several times faster, into slower code. What `opm transformer test` uses, for
    /// the author's edit loop (`benches/RESULTS.md`). Fuel, time and memory limits hold alike.
    Baseline,
    /// What renders use: Cranelift's code where there is some already (built into opm, or in the
    /// compile cache), and Winch for a component that must be compiled now (a `-p` bundle or
    /// directory, an installed provider whose code is not cached), whose code is cached too. A
    /// first render then waits seconds rather than tens of seconds, and keeps Cranelift's
    /// faster code for what `init` compiled (`benches/RESULTS.md`, "Cranelift against Winch").
    /// `opm provider init` and `pull` compile with it too, then with
    /// [`Optimizing`](Self::Optimizing) in the background.
    Tiered,
}

/// [`engine_config`] for `compiler` ([`opm_codegen::config`]).
/// The engine's compatibility hash covers the compiler, so the compile cache never hands code
/// of one to the other.
pub fn engine_config_for(compiler: Compiler) -> wasmtime::Config {
    opm_codegen::config(compiler == Compiler::Baseline)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pinned_features_are_the_engines() {
        let engine = wasmtime::Engine::new(&engine_config()).expect("engine");
        let features = engine.get_wasm_features();
        assert_eq!(
            opm_core::contract::wasm_features(),
            features,
            "the engine's features are now {features:?}"
        );
    }
}
