//! E2E tests.
