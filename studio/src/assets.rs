//! The page's files (`studio/assets/`), embedded in the binary at build time: the
//! Studio works offline and without a build step.
//!
//! `/studio`, `/studio/` and every other page path under `/studio/` (a thread's
//! address, say) answer with `index.html`, which routes on `location.pathname`;
//! `/studio/assets/{file}` answers with the file, its content type and
//! `Cache-Control: no-cache` (the binary may change under the same names).

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// Every embedded file, by its path under `assets/` (`vendor/x.js`).
static FILES: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/assets.rs"));

/// The embedded file at `path` (relative to `assets/`).
pub fn file(path: &str) -> Option<&'static [u8]> {
    FILES
        .iter()
        .find(|(name, _)| *name == path)
        .map(|(_, b)| *b)
}

/// The paths of every embedded file, sorted.
pub fn names() -> impl Iterator<Item = &'static str> {
    FILES.iter().map(|(name, _)| *name)
}

/// The content type served for `path`, by its extension.
pub fn content_type(path: &str) -> &'static str {
    let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
    match ext.to_ascii_lowercase().as_str() {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "txt" | "md" | "" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// What the page may load and who may frame it: its own files and API only, no
/// inline scripts, and no other site may embed it (a framed Studio could be
/// clicked through by the page around it). Style attributes stay allowed: the
/// timeline sets its branch colours with them.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
    style-src-attr 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; \
    frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

fn serve(path: &str) -> Response {
    match file(path) {
        Some(bytes) => {
            let mut response = (
                [
                    (
                        header::CONTENT_TYPE,
                        HeaderValue::from_static(content_type(path)),
                    ),
                    (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
                    (
                        header::X_CONTENT_TYPE_OPTIONS,
                        HeaderValue::from_static("nosniff"),
                    ),
                ],
                bytes,
            )
                .into_response();
            if path.ends_with(".html") {
                let headers = response.headers_mut();
                headers.insert(
                    header::CONTENT_SECURITY_POLICY,
                    HeaderValue::from_static(CSP),
                );
                headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
                headers.insert(
                    header::REFERRER_POLICY,
                    HeaderValue::from_static("no-referrer"),
                );
            }
            response
        }
        None => (
            StatusCode::NOT_FOUND,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            )],
            format!("studio asset {path} not found"),
        )
            .into_response(),
    }
}

async fn index() -> Response {
    serve("index.html")
}

async fn asset(Path(path): Path<String>) -> Response {
    serve(&path)
}

/// The page routes: `/studio`, `/studio/`, `/studio/{*page}` (all `index.html`)
/// and `/studio/assets/{*file}`.
pub(crate) fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/studio", get(index))
        .route("/studio/", get(index))
        .route("/studio/assets/{*file}", get(asset))
        .route("/studio/{*page}", get(index))
}
