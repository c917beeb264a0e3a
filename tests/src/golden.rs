//! Golden files: compare a test's output with the file it was blessed into, or bless
//! it (`STATEGRAPH_BLESS=1` rewrites the file).

use std::path::Path;

/// Compares `actual` with the file at `path`, or writes it there when
/// `STATEGRAPH_BLESS=1`. On a difference, panics naming `what` (for example
/// ``trace `chain` ``), the first differing line, and the whole actual output.
pub fn compare_or_bless(path: &Path, what: &str, actual: &str) {
    if std::env::var("STATEGRAPH_BLESS").as_deref() == Ok("1") {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "no {what} at {}: {e}; run with STATEGRAPH_BLESS=1 to create it",
            path.display()
        )
    });
    if expected != actual {
        let at = expected
            .lines()
            .zip(actual.lines())
            .position(|(want, got)| want != got)
            .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
        panic!(
            "{what} differs from {} at line {}:\n  expected: {:?}\n  actual:   {:?}\n\
             --- actual output ---\n{actual}",
            path.display(),
            at + 1,
            expected.lines().nth(at),
            actual.lines().nth(at),
        );
    }
}
