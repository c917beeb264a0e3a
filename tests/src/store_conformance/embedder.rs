//! [`HashEmbedder`]: a deterministic embedder for tests (hashed bag of words), so every
//! backend's semantic search is checked against the same vectors without a model.

use stategraph::BoxFuture;
use stategraph::store::{Embed, StoreError};

/// A text containing this embeds to a vector one dimension too long, so the suite can
/// check the wrong-dimension error on any backend with the standard index.
pub const WRONG_DIMS_MARKER: &str = "@@wrong-dims@@";

/// Hashed bag of words: each lowercase alphanumeric word adds 1 to bucket
/// `fnv1a(word) % dims`; the vector is L2-normalized (all zeros for a text without
/// words). The same text always gives the same vector, on every platform.
#[derive(Clone, Copy, Debug)]
pub struct HashEmbedder {
    dims: usize,
}

impl HashEmbedder {
    /// Vectors of `dims` buckets.
    pub fn new(dims: usize) -> Self {
        Self { dims }
    }

    /// The vector of one text.
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; self.dims];
        if self.dims == 0 {
            return v;
        }
        for word in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let bucket = (fnv1a(&word.to_lowercase()) % self.dims as u64) as usize;
            v[bucket] += 1.0;
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        if text.contains(WRONG_DIMS_MARKER) {
            v.push(0.0);
        }
        v
    }
}

fn fnv1a(word: &str) -> u64 {
    word.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl Embed for HashEmbedder {
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, StoreError>> {
        Box::pin(async move { Ok(texts.iter().map(|t| self.vector(t)).collect()) })
    }
}

/// Cosine similarity computed here, independently of the store's, for brute-force
/// references (f64 sums in index order, as `stategraph::store::cosine` documents).
pub fn reference_cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let na: f64 = a.iter().map(|x| f64::from(*x) * f64::from(*x)).sum();
    let nb: f64 = b.iter().map(|x| f64::from(*x) * f64::from(*x)).sum();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}
