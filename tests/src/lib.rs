//! Test support placeholder.
