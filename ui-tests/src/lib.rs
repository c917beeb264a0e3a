//! Compile-fail and compile-pass tests live in `tests/ui/`.
