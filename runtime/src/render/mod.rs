//! Rendering: runs the plan in the sandbox and checks, orders and writes the output.
