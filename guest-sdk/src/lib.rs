//! sdk
