//! The HTTPS listener: rustls (ring) in front of hyper's HTTP/1.1, answering AdmissionReviews
//! posted to the webhook paths. The serving certificate can be swapped while serving
//! ([`CertResolver::set`]), so a rotation needs no restart.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rustls::ServerConfig;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::{Error, MAX_BODY_BYTES, Webhooks};

/// The certificate served, replaceable at any time.
#[derive(Debug)]
pub struct CertResolver(RwLock<Arc<CertifiedKey>>);

impl CertResolver {
    pub fn new(key: Arc<CertifiedKey>) -> Arc<CertResolver> {
        Arc::new(CertResolver(RwLock::new(key)))
    }

    pub fn set(&self, key: Arc<CertifiedKey>) {
        if let Ok(mut k) = self.0.write() {
            *k = key;
        }
    }
}

impl ResolvesServerCert for CertResolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.0.read().ok().map(|k| k.clone())
    }
}

/// TLS 1.2/1.3 with ring, HTTP/1.1 only.
pub fn tls_config(resolver: Arc<CertResolver>) -> Result<Arc<ServerConfig>, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Certificate(format!("TLS configuration: {e}")))?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Binds the webhook address; the error names it and the flag that changes it.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, Error> {
    TcpListener::bind(addr)
        .await
        .map_err(|error| Error::Listen { addr, error })
}

fn reply(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    resp
}

async fn handle(webhooks: &Webhooks, req: Request<Incoming>) -> Response<Full<Bytes>> {
    const TEXT: &str = "text/plain; charset=utf-8";
    if req.method() != Method::POST {
        return reply(
            StatusCode::METHOD_NOT_ALLOWED,
            TEXT,
            b"POST an AdmissionReview".to_vec(),
        );
    }
    let path = req.uri().path().to_string();
    let body = match Limited::new(req.into_body(), MAX_BODY_BYTES)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return reply(
                StatusCode::PAYLOAD_TOO_LARGE,
                TEXT,
                e.to_string().into_bytes(),
            );
        }
    };
    match webhooks.review(&path, &body) {
        Ok(review) => match serde_json::to_vec(&review) {
            Ok(bytes) => reply(StatusCode::OK, "application/json", bytes),
            Err(e) => reply(
                StatusCode::INTERNAL_SERVER_ERROR,
                TEXT,
                e.to_string().into_bytes(),
            ),
        },
        Err((code, message)) => reply(
            StatusCode::from_u16(code).unwrap_or(StatusCode::BAD_REQUEST),
            TEXT,
            message.into_bytes(),
        ),
    }
}

/// Serves the webhooks on `listener` until the process ends.
pub async fn serve(listener: TcpListener, tls: Arc<ServerConfig>, webhooks: Arc<Webhooks>) {
    let acceptor = TlsAcceptor::from(tls);
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "serving admission webhooks over HTTPS");
    }
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "webhook accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let webhooks = webhooks.clone();
        tokio::spawn(async move {
            let stream = match acceptor.accept(stream).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
            };
            let service = service_fn(move |req: Request<Incoming>| {
                let webhooks = webhooks.clone();
                async move { Ok::<_, Infallible>(handle(&webhooks, req).await) }
            });
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(error = %e, "webhook connection ended");
            }
        });
    }
}
