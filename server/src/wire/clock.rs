//! Times as the API writes them.

/// RFC 3339 time of milliseconds since the Unix epoch.
pub(crate) fn time(ms: i64) -> String {
    let t = std::time::UNIX_EPOCH
        + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or_default());
    humantime::format_rfc3339_millis(t).to_string()
}
