//! TLS: libpq's `sslmode` and `sslrootcert` read from the connection string, and the
//! rustls connector that carries them out.
//!
//! `tokio_postgres::Config` knows only `disable`, `prefer` and `require` and refuses
//! `sslrootcert`, so both are taken out of the string here before it is parsed, and
//! the certificate checks of each mode live in the connector's verifier.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{WebPkiServerVerifier, danger::DangerousClientConfigBuilder};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::{PostgresError, describe};

/// How a connection uses TLS, as libpq's `sslmode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Result<Self, PostgresError> {
        Ok(match value {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            // libpq's `allow` tries plain first; plain-then-TLS is not on offer here.
            other => {
                return Err(PostgresError::InvalidSslMode {
                    value: other.to_string(),
                });
            }
        })
    }

    /// The mode tokio-postgres negotiates with: whether TLS is off, tried or required.
    fn negotiation(self) -> tokio_postgres::config::SslMode {
        use tokio_postgres::config::SslMode as Pg;
        match self {
            Self::Disable => Pg::Disable,
            Self::Prefer => Pg::Prefer,
            Self::Require | Self::VerifyCa | Self::VerifyFull => Pg::Require,
        }
    }
}

impl fmt::Display for SslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        })
    }
}

/// Where the CA certificates trusted for the server come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CaSource {
    File(PathBuf),
    Pem(Vec<u8>),
    /// The operating system's store (`sslrootcert=system`, or no CA given).
    System,
}

/// The TLS settings of a saver's connections.
#[derive(Clone)]
pub(crate) struct Tls {
    pub(crate) mode: SslMode,
    pub(crate) connector: MakeRustlsConnect,
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls").field("mode", &self.mode).finish()
    }
}

/// `sslmode` and `sslrootcert` taken out of a connection string.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct TlsParams {
    pub(crate) mode: Option<String>,
    pub(crate) root_cert: Option<String>,
}

/// Splits `sslmode` and `sslrootcert` off `conn`, in URL form
/// (`postgres://…?sslmode=verify-full`) or key/value form (`host=… sslmode=…`).
pub(crate) fn split_params(conn: &str) -> (String, TlsParams) {
    let mut params = TlsParams::default();
    // Whether `key` is one of the two; if so, its value is kept in `params`.
    let mut take = |key: &str, value: String| match key {
        "sslmode" => {
            params.mode = Some(value);
            true
        }
        "sslrootcert" => {
            params.root_cert = Some(value);
            true
        }
        _ => false,
    };
    let rest = if conn.starts_with("postgres://") || conn.starts_with("postgresql://") {
        match conn.split_once('?') {
            None => conn.to_string(),
            Some((base, query)) => {
                let kept: Vec<&str> = query
                    .split('&')
                    .filter(|pair| {
                        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                        !take(&percent_decode(key), percent_decode(value))
                    })
                    .collect();
                if kept.is_empty() {
                    base.to_string()
                } else {
                    format!("{base}?{}", kept.join("&"))
                }
            }
        }
    } else {
        let mut kept = Vec::new();
        for (key, value, raw) in key_values(conn) {
            if !take(key, value) {
                kept.push(raw);
            }
        }
        kept.join(" ")
    };
    (rest, params)
}

/// `%XX` escapes of a URL component decoded (malformed ones are kept as written).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(&h), Some(&l)) = (bytes.get(i + 1), bytes.get(i + 2))
            && let (Some(h), Some(l)) = (hex(h), hex(l))
        {
            // Two hex digits make at most 255.
            out.push(u8::try_from(h * 16 + l).unwrap_or(b'?'));
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The `key=value` pairs of a key/value connection string, each with its value
/// unquoted and the raw text it was written as (`key = 'a value'`).
fn key_values(conn: &str) -> Vec<(&str, String, &str)> {
    let mut pairs = Vec::new();
    let mut rest = conn.trim_start();
    while !rest.is_empty() {
        let start = rest;
        let key_end = rest
            .find(|c: char| c == '=' || c.is_whitespace())
            .unwrap_or(rest.len());
        let key = &rest[..key_end];
        rest = rest[key_end..].trim_start();
        let Some(after_eq) = rest.strip_prefix('=') else {
            // Not a pair: keep the word as written and let the parser complain.
            pairs.push(("", String::new(), &start[..key_end]));
            continue;
        };
        rest = after_eq.trim_start();
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let quoted = rest.starts_with('\'');
        if quoted {
            chars.next();
        }
        let mut end = rest.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, next)) = chars.next() {
                        value.push(next);
                    }
                }
                '\'' if quoted => {
                    end = i + 1;
                    break;
                }
                c if !quoted && c.is_whitespace() => {
                    end = i;
                    break;
                }
                c => value.push(c),
            }
        }
        let consumed = start.len() - rest.len() + end;
        pairs.push((key, value, &start[..consumed]));
        rest = start[consumed..].trim_start();
    }
    pairs
}

impl Tls {
    /// The TLS settings for `params` (from the connection string) and the CA given in
    /// the options; `sslrootcert` in the string takes precedence over it.
    pub(crate) fn new(params: &TlsParams, ca: Option<&CaSource>) -> Result<Self, PostgresError> {
        let mut mode = match &params.mode {
            Some(value) => SslMode::parse(value)?,
            None => SslMode::Prefer,
        };
        let ca = match params.root_cert.as_deref() {
            Some("system") => {
                // As libpq: the system's roots are only worth anything with the name check.
                mode = SslMode::VerifyFull;
                Some(CaSource::System)
            }
            Some(path) => Some(CaSource::File(PathBuf::from(path))),
            None => ca.cloned(),
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| PostgresError::TlsSetup {
                reason: e.to_string(),
            })?
            .dangerous();
        let verifier: Arc<dyn ServerCertVerifier> = match (mode, &ca) {
            (SslMode::Disable, _) | (SslMode::Prefer | SslMode::Require, None) => {
                Arc::new(AcceptAny(provider.signature_verification_algorithms))
            }
            // As libpq: `prefer` and `require` with a root certificate given check the
            // chain, as `verify-ca` does.
            (SslMode::Prefer | SslMode::Require | SslMode::VerifyCa, _) => Arc::new(ChainOnly(
                webpki(roots(ca.as_ref().unwrap_or(&CaSource::System))?, provider)?,
            )),
            (SslMode::VerifyFull, _) => {
                webpki(roots(ca.as_ref().unwrap_or(&CaSource::System))?, provider)?
            }
        };
        Ok(Self {
            mode,
            connector: MakeRustlsConnect::new(finish(builder, verifier)),
        })
    }

    /// Sets what `pg` negotiates: no TLS, TLS when the server offers it, or TLS only.
    pub(crate) fn apply(&self, pg: &mut tokio_postgres::Config) {
        pg.ssl_mode(self.mode.negotiation());
    }
}

fn finish(
    builder: DangerousClientConfigBuilder,
    verifier: Arc<dyn ServerCertVerifier>,
) -> ClientConfig {
    builder
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth()
}

fn webpki(
    roots: RootCertStore,
    provider: Arc<CryptoProvider>,
) -> Result<Arc<WebPkiServerVerifier>, PostgresError> {
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
        .build()
        .map_err(|e| PostgresError::TlsSetup {
            reason: e.to_string(),
        })
}

/// The CA certificates of `ca`.
fn roots(ca: &CaSource) -> Result<RootCertStore, PostgresError> {
    let mut store = RootCertStore::empty();
    match ca {
        CaSource::File(path) => {
            let bytes = std::fs::read(path).map_err(|e| PostgresError::CaFile {
                path: path.clone(),
                reason: e.to_string(),
            })?;
            add_pem(&mut store, &bytes, || path.display().to_string())?;
        }
        CaSource::Pem(bytes) => add_pem(&mut store, bytes, || "the PEM given".to_string())?,
        CaSource::System => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                let reason = found
                    .errors
                    .first()
                    .map(ToString::to_string)
                    .unwrap_or_else(|| "the store is empty".to_string());
                return Err(PostgresError::NoSystemRoots { reason });
            }
        }
    }
    Ok(store)
}

fn add_pem(
    store: &mut RootCertStore,
    bytes: &[u8],
    name: impl Fn() -> String,
) -> Result<(), PostgresError> {
    let bad = |reason: String| PostgresError::CaFile {
        path: Path::new(&name()).to_path_buf(),
        reason,
    };
    for cert in CertificateDer::pem_slice_iter(bytes) {
        let cert = cert.map_err(|e| bad(format!("it is not PEM: {e}")))?;
        store
            .add(cert)
            .map_err(|e| bad(format!("a certificate in it is not usable: {e}")))?;
    }
    if store.is_empty() {
        return Err(bad("it holds no PEM certificate".to_string()));
    }
    Ok(())
}

/// `sslmode=prefer` or `require` without a CA: encrypted, but any certificate is
/// accepted (the handshake's signatures are still checked against it).
#[derive(Debug)]
struct AcceptAny(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// `sslmode=verify-ca`: the chain must lead to a trusted CA; the host name is not
/// checked. (The WebPKI verifier checks the chain before the name, so a name error
/// means the chain passed.)
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The failure of opening a connection under `mode` to `target`: a TLS handshake or a
/// server refusing TLS named as such, anything else as a connection failure.
pub(crate) fn connect_failure(
    target: &str,
    mode: SslMode,
    e: &tokio_postgres::Error,
) -> PostgresError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if s.to_string() == "server does not support TLS" {
            return PostgresError::TlsUnsupported {
                target: target.to_string(),
                mode: mode.to_string(),
            };
        }
        let tls = s
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<rustls::Error>());
        if let Some(tls) = tls {
            return PostgresError::Tls {
                target: target.to_string(),
                mode: mode.to_string(),
                reason: tls.to_string(),
            };
        }
        source = s.source();
    }
    PostgresError::Connect {
        target: target.to_string(),
        reason: describe(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_parameters_are_taken_out() {
        let (rest, p) = split_params(
            "postgres://u:p@h:5432/db?application_name=a&sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem",
        );
        assert_eq!(rest, "postgres://u:p@h:5432/db?application_name=a");
        assert_eq!(p.mode.as_deref(), Some("verify-full"));
        assert_eq!(p.root_cert.as_deref(), Some("/tmp/ca.pem"));
        let (rest, p) = split_params("postgresql://h/db?sslmode=require");
        assert_eq!(rest, "postgresql://h/db");
        assert_eq!(p.mode.as_deref(), Some("require"));
        let (rest, p) = split_params("postgres://h/db");
        assert_eq!(rest, "postgres://h/db");
        assert_eq!(p, TlsParams::default());
    }

    #[test]
    fn key_value_parameters_are_taken_out() {
        let (rest, p) = split_params(
            "host=h  sslmode = verify-ca user=u sslrootcert='/a dir/ca.pem' password='x y'",
        );
        assert_eq!(rest, "host=h user=u password='x y'");
        assert_eq!(p.mode.as_deref(), Some("verify-ca"));
        assert_eq!(p.root_cert.as_deref(), Some("/a dir/ca.pem"));
    }

    #[test]
    fn modes_parse_and_unknown_ones_are_refused() {
        for mode in ["disable", "prefer", "require", "verify-ca", "verify-full"] {
            assert_eq!(SslMode::parse(mode).unwrap().to_string(), mode);
        }
        let e = SslMode::parse("verify_full").unwrap_err().to_string();
        assert!(
            e.contains("\"verify_full\"") && e.contains("verify-full"),
            "{e}"
        );
    }

    #[test]
    fn a_missing_ca_file_is_named() {
        let params = TlsParams {
            mode: Some("verify-full".into()),
            root_cert: Some("/nonexistent/ca.pem".into()),
        };
        let e = Tls::new(&params, None).unwrap_err().to_string();
        assert!(e.contains("/nonexistent/ca.pem"), "{e}");
        let plain = TlsParams {
            mode: Some("disable".into()),
            root_cert: None,
        };
        // `disable` does not look at the CA at all.
        assert!(Tls::new(&plain, Some(&CaSource::Pem(b"junk".to_vec()))).is_ok());
        let params = TlsParams {
            mode: Some("verify-ca".into()),
            root_cert: None,
        };
        let e = Tls::new(&params, Some(&CaSource::Pem(b"junk".to_vec())))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no PEM certificate"), "{e}");
    }
}
