//! The webhook's certificates, as Kueue's internal certificate management makes them: a CA and a
//! serving certificate it signs for the Service's DNS names, ten years valid. A serving
//! certificate with less than [`LOOKAHEAD_SECS`] left or other names is signed again by the same
//! CA (so the `caBundle` the API server trusts does not change and replicas still serving the
//! old one stay trusted); an expiring or unreadable CA means a new CA. Pure: no IO, the time is
//! an argument.

use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use x509_parser::extensions::GeneralName;

use super::Error;

/// How long a generated certificate is valid (cert-controller's ten years).
pub const VALIDITY_SECS: i64 = 10 * 365 * 24 * 3600;
/// A certificate expiring within this is replaced (cert-controller's 90 days).
pub const LOOKAHEAD_SECS: i64 = 90 * 24 * 3600;
/// Subject of the CA (Kueue's is `kueue-ca`, organisation `kueue`).
const CA_NAME: &str = "wasq-ca";
const ORGANIZATION: &str = "wasq";

/// A CA and the serving certificate and key it signed, PEM encoded — the `ca.crt`, `ca.key`,
/// `tls.crt` and `tls.key` of a `kubernetes.io/tls` Secret (as cert-controller keeps them).
#[derive(Clone, PartialEq, Eq)]
pub struct Certs {
    pub ca_pem: String,
    /// Empty for mounted certificates (`--webhook-cert-dir`): nothing is signed then.
    pub ca_key_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for Certs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Certs")
            .field("ca_pem", &self.ca_pem.len())
            .field("cert_pem", &self.cert_pem.len())
            .field("ca_key_pem", &"<redacted>")
            .field("key_pem", &"<redacted>")
            .finish()
    }
}

/// The names a Service is reached by from the API server.
pub fn dns_names(service: &str, namespace: &str) -> Vec<String> {
    vec![
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.cluster.local"),
    ]
}

fn generation(e: rcgen::Error) -> Error {
    Error::Certificate(format!("cannot generate: {e}"))
}

fn time_at(unix_secs: i64) -> Result<time::OffsetDateTime, Error> {
    time::OffsetDateTime::from_unix_timestamp(unix_secs)
        .map_err(|e| Error::Certificate(format!("time {unix_secs} out of range: {e}")))
}

/// A new CA and a serving certificate for `names`, valid from `not_before` to `not_after`
/// (Unix seconds).
pub fn generate(names: &[String], not_before: i64, not_after: i64) -> Result<Certs, Error> {
    let ca_key = KeyPair::generate().map_err(generation)?;
    let mut ca = CertificateParams::default();
    ca.distinguished_name = rcgen::DistinguishedName::new();
    ca.distinguished_name.push(DnType::CommonName, CA_NAME);
    ca.distinguished_name
        .push(DnType::OrganizationName, ORGANIZATION);
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    ca.not_before = time_at(not_before)?;
    ca.not_after = time_at(not_after)?;
    let ca_cert = ca.self_signed(&ca_key).map_err(generation)?;
    let ca_key_pem = ca_key.serialize_pem();
    let (cert_pem, key_pem) = leaf(&Issuer::new(ca, ca_key), names, not_before, not_after)?;
    Ok(Certs {
        ca_pem: ca_cert.pem(),
        ca_key_pem,
        cert_pem,
        key_pem,
    })
}

/// A serving certificate for `names` signed by `issuer`: PEM certificate and key.
fn leaf(
    issuer: &Issuer<'_, KeyPair>,
    names: &[String],
    not_before: i64,
    not_after: i64,
) -> Result<(String, String), Error> {
    let key = KeyPair::generate().map_err(generation)?;
    let mut params = CertificateParams::new(names.to_vec()).map_err(generation)?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    if let Some(first) = names.first() {
        params
            .distinguished_name
            .push(DnType::CommonName, first.as_str());
    }
    params
        .distinguished_name
        .push(DnType::OrganizationName, ORGANIZATION);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.use_authority_key_identifier_extension = true;
    params.not_before = time_at(not_before)?;
    params.not_after = time_at(not_after)?;
    let cert = params.signed_by(&key, issuer).map_err(generation)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Whether kept certificates may still be served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fitness {
    Fit,
    /// Expired, or expiring within the lookahead (`not_after`, Unix seconds).
    Expiring {
        not_after: i64,
    },
    /// The serving certificate does not name these.
    NamesMissing(Vec<String>),
    /// Not a certificate and key wasq can read.
    Unreadable(String),
}

struct Parsed {
    not_after: i64,
    dns_names: Vec<String>,
}

fn parse(pem: &str, what: &str) -> Result<Parsed, String> {
    let (_, block) = x509_parser::pem::parse_x509_pem(pem.as_bytes())
        .map_err(|e| format!("{what} is not PEM: {e}"))?;
    let cert = block
        .parse_x509()
        .map_err(|e| format!("{what} is not an X.509 certificate: {e}"))?;
    let dns_names = cert
        .subject_alternative_name()
        .ok()
        .flatten()
        .map(|san| {
            san.value
                .general_names
                .iter()
                .filter_map(|n| match n {
                    GeneralName::DNSName(d) => Some(d.to_string()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Parsed {
        not_after: cert.validity().not_after.timestamp(),
        dns_names,
    })
}

impl Certs {
    /// Whether the CA may go on signing: readable with its key, and not expiring within
    /// `lookahead` seconds of `now`.
    pub fn ca_is_fit(&self, now: i64, lookahead: i64) -> bool {
        self.issuer().is_ok()
            && parse(&self.ca_pem, "ca.crt")
                .is_ok_and(|ca| ca.not_after > now.saturating_add(lookahead))
    }

    fn issuer(&self) -> Result<Issuer<'static, KeyPair>, Error> {
        let key = KeyPair::from_pem(&self.ca_key_pem)
            .map_err(|e| Error::Certificate(format!("ca.key: {e}")))?;
        Issuer::from_ca_cert_pem(&self.ca_pem, key)
            .map_err(|e| Error::Certificate(format!("ca.crt: {e}")))
    }

    /// A new serving certificate for `names` signed by this CA, which is kept.
    pub fn resigned(
        &self,
        names: &[String],
        not_before: i64,
        not_after: i64,
    ) -> Result<Certs, Error> {
        let (cert_pem, key_pem) = leaf(&self.issuer()?, names, not_before, not_after)?;
        Ok(Certs {
            cert_pem,
            key_pem,
            ..self.clone()
        })
    }

    /// Whether these may be served for `names` at `now` (Unix seconds), with `lookahead`
    /// seconds to spare.
    pub fn fitness(&self, names: &[String], now: i64, lookahead: i64) -> Fitness {
        let (ca, leaf) = match (
            parse(&self.ca_pem, "ca.crt"),
            parse(&self.cert_pem, "tls.crt"),
        ) {
            (Ok(ca), Ok(leaf)) => (ca, leaf),
            (Err(e), _) | (_, Err(e)) => return Fitness::Unreadable(e),
        };
        if let Err(e) = self.certified_key() {
            return Fitness::Unreadable(e.to_string());
        }
        let not_after = ca.not_after.min(leaf.not_after);
        if not_after <= now.saturating_add(lookahead) {
            return Fitness::Expiring { not_after };
        }
        let missing: Vec<String> = names
            .iter()
            .filter(|n| !leaf.dns_names.contains(n))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Fitness::NamesMissing(missing);
        }
        Fitness::Fit
    }

    /// The serving certificate and key, for rustls.
    pub fn certified_key(&self) -> Result<Arc<CertifiedKey>, Error> {
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(self.cert_pem.as_bytes())
                .collect::<Result<_, _>>()
                .map_err(|e| Error::Certificate(format!("tls.crt: {e}")))?;
        if chain.is_empty() {
            return Err(Error::Certificate("tls.crt holds no certificate".into()));
        }
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes())
            .map_err(|e| Error::Certificate(format!("tls.key: {e}")))?;
        let signing = rustls::crypto::ring::sign::any_supported_type(&key)
            .map_err(|e| Error::Certificate(format!("tls.key: {e}")))?;
        Ok(Arc::new(CertifiedKey::new(chain, signing)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_767_225_600; // 2026-01-01

    fn names() -> Vec<String> {
        dns_names("wasq-webhook-service", "wasq-system")
    }

    #[test]
    fn a_generated_certificate_names_the_service_and_is_fit_for_ten_years() {
        let c = generate(&names(), NOW - 60, NOW + VALIDITY_SECS).unwrap();
        assert!(c.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(c.key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        let leaf = parse(&c.cert_pem, "tls.crt").unwrap();
        assert_eq!(
            leaf.dns_names,
            [
                "wasq-webhook-service.wasq-system.svc",
                "wasq-webhook-service.wasq-system.svc.cluster.local"
            ]
        );
        assert_eq!(leaf.not_after, NOW + VALIDITY_SECS);
        assert_eq!(c.fitness(&names(), NOW, LOOKAHEAD_SECS), Fitness::Fit);
        assert!(c.certified_key().is_ok());
    }

    #[test]
    fn a_certificate_expiring_within_the_lookahead_or_for_other_names_is_unfit() {
        let soon = generate(&names(), NOW - 60, NOW + 3600).unwrap();
        assert_eq!(
            soon.fitness(&names(), NOW, LOOKAHEAD_SECS),
            Fitness::Expiring {
                not_after: NOW + 3600
            }
        );
        let other = dns_names("other", "wasq-system");
        let c = generate(&other, NOW - 60, NOW + VALIDITY_SECS).unwrap();
        assert_eq!(
            c.fitness(&names(), NOW, LOOKAHEAD_SECS),
            Fitness::NamesMissing(names())
        );
    }

    #[test]
    fn a_fit_ca_signs_a_new_serving_certificate_and_stays() {
        use rustls::client::danger::ServerCertVerifier;
        let c = generate(&names(), NOW - 60, NOW + 3600).unwrap();
        let long = generate(&names(), NOW - 60, NOW + VALIDITY_SECS).unwrap();
        assert!(!c.ca_is_fit(NOW, LOOKAHEAD_SECS));
        assert!(long.ca_is_fit(NOW, LOOKAHEAD_SECS));
        let again = long
            .resigned(&names(), NOW - 60, NOW + VALIDITY_SECS)
            .unwrap();
        assert_eq!(again.ca_pem, long.ca_pem);
        assert_eq!(again.ca_key_pem, long.ca_key_pem);
        assert_ne!(again.cert_pem, long.cert_pem);
        assert_eq!(again.fitness(&names(), NOW, LOOKAHEAD_SECS), Fitness::Fit);
        // The new certificate chains to the kept CA: a TLS client trusting it accepts it.
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(long.ca_pem.as_bytes()).unwrap())
            .unwrap();
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .unwrap();
        let leaf = CertificateDer::from_pem_slice(again.cert_pem.as_bytes()).unwrap();
        let name = rustls::pki_types::ServerName::try_from(names()[0].clone()).unwrap();
        let at = rustls::pki_types::UnixTime::since_unix_epoch(std::time::Duration::from_secs(
            NOW as u64,
        ));
        verifier
            .verify_server_cert(&leaf, &[], &name, &[], at)
            .expect("signed by the kept CA");
        let mut no_key = long.clone();
        no_key.ca_key_pem.clear();
        assert!(!no_key.ca_is_fit(NOW, LOOKAHEAD_SECS));
    }

    #[test]
    fn garbage_is_unreadable_not_a_panic() {
        let mut c = generate(&names(), NOW - 60, NOW + VALIDITY_SECS).unwrap();
        c.key_pem = "not a key".into();
        assert!(matches!(
            c.fitness(&names(), NOW, LOOKAHEAD_SECS),
            Fitness::Unreadable(m) if m.contains("tls.key")
        ));
        c.cert_pem = String::new();
        assert!(matches!(
            c.fitness(&names(), NOW, LOOKAHEAD_SECS),
            Fitness::Unreadable(m) if m.contains("tls.crt")
        ));
    }
}
