//! Status writes as they cross the wire: a `kube::Client` whose every successful `PATCH …/status`
//! is recorded with the body sent and the object the server answered with — the object as
//! stored — so that a test can check that the server kept every status field wasq wrote.

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use http::{Method, Request, Response};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use kube::client::{Body, ClientBuilder};
use serde_json::Value;
use tower::Service;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One status write: the request's path, the JSON it sent, the object the server answered.
#[derive(Debug, Clone)]
pub struct StatusWrite {
    pub path: String,
    pub sent: Value,
    pub stored: Value,
}

/// The status writes a recording client made, in the order they were answered.
#[derive(Debug, Clone, Default)]
pub struct StatusWrites(Arc<Mutex<Vec<StatusWrite>>>);

impl StatusWrites {
    pub fn take(&self) -> Vec<StatusWrite> {
        std::mem::take(&mut self.0.lock().expect("not poisoned"))
    }
}

/// A client for `config` that records its status writes.
///
/// # Errors
/// A configuration kube cannot build a client from.
pub fn client(config: kube::Config) -> anyhow::Result<(kube::Client, StatusWrites)> {
    let writes = StatusWrites::default();
    let recorded = writes.clone();
    let client = ClientBuilder::try_from(config)?
        .with_layer(&tower::layer::layer_fn(move |inner| Recording {
            inner,
            writes: recorded.clone(),
        }))
        .build();
    Ok((client, writes))
}

struct Recording<S> {
    inner: S,
    writes: StatusWrites,
}

impl<S, B> Service<Request<Body>> for Recording<S>
where
    S: Service<Request<Body>, Response = Response<B>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<UnsyncBoxBody<Bytes, BoxError>>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let is_status_write =
            request.method() == Method::PATCH && request.uri().path().ends_with("/status");
        // A patch body is one buffer, so it clones without being read.
        let sent = is_status_write
            .then(|| request.body().try_clone())
            .flatten();
        let path = request.uri().path().to_string();
        let answer = self.inner.call(request);
        let writes = self.writes.clone();
        Box::pin(async move {
            let response = answer.await.map_err(Into::into)?;
            let Some(sent) = sent else {
                return Ok(response.map(|b| b.map_err(Into::into).boxed_unsync()));
            };
            let (parts, body) = response.into_parts();
            let stored = body.collect().await.map_err(Into::into)?.to_bytes();
            if parts.status.is_success() {
                let sent = sent.collect_bytes().await?;
                writes.0.lock().expect("not poisoned").push(StatusWrite {
                    path,
                    sent: serde_json::from_slice(&sent)?,
                    stored: serde_json::from_slice(&stored)?,
                });
            }
            let body = Full::new(stored)
                .map_err(|never| match never {})
                .boxed_unsync();
            Ok(Response::from_parts(parts, body))
        })
    }
}
