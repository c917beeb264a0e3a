//! Cross-crate scenario tests live in `tests/`.
