//! Module files (DESIGN §4.1).
