//! The double over real TCP: [`ApiServer::listen`] serves it with hyper's HTTP/1.1 on an
//! address such as `127.0.0.1:0`, so that several doubles run at once (a MultiKueue manager
//! and its workers) and a kube client built from a kubeconfig (`server: http://127.0.0.1:PORT`,
//! a bearer `token`) reaches each through the ordinary connector, pool and auth layers.
//! Requests go through the same routing as [`ApiServer::client`]'s ([`super::routes::serve`]);
//! watches stream as chunked JSON lines.
//!
//! What a test controls, on the [`HttpDouble`]:
//! - [`HttpDouble::set_down`]: every open connection is dropped at once (a watch stream ends
//!   without its last chunk, a request in flight gets no answer) and, while down, every new
//!   connection is accepted and closed before a byte is read ([`HttpDouble::refused`] counts
//!   them): to a client, a network failure, not an API error.
//! - [`HttpDouble::require_token`]: a request without `Authorization: Bearer <token>` is
//!   answered `401` with the API server's `Status` (`reason: Unauthorized`, `message:
//!   Unauthorized`), before the double sees it (neither logged nor counted by
//!   [`ApiServer::requests`] and [`ApiServer::counts`]; [`HttpDouble::unauthorized`] counts it).
//! - Dropping the [`HttpDouble`] (or [`HttpDouble::shutdown`]) shuts down gracefully: the
//!   listener closes (new connections are refused by the kernel), requests in flight are
//!   answered, open watch streams end cleanly (their last chunk sent), then every connection
//!   closes; whatever is still open after [`GRACE`] is dropped.
//!
//! [`kubeconfig`] writes the YAML a MultiKueue Secret's `kubeconfig` key holds for a double.

use std::convert::Infallible;
use std::future::Future;
use std::net::{SocketAddr, ToSocketAddrs};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response};
use hyper::body::{Body as _, Bytes, Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use super::routes::{self, Body};
use super::status::ApiError;
use super::{ApiServer, Inner};

/// How long a shutdown waits for connections to finish before dropping them.
pub const GRACE: Duration = Duration::from_secs(2);

/// The state the listener and the [`HttpDouble`] share.
struct Shared {
    down: AtomicBool,
    /// Bumped by every `set_down(true)`: connections open then are dropped.
    cuts: watch::Sender<u64>,
    /// Set once, on shutdown.
    stop: watch::Sender<bool>,
    token: Mutex<Option<String>>,
    refused: AtomicUsize,
    unauthorized: AtomicUsize,
    accepted: AtomicUsize,
    open: AtomicUsize,
}

impl Shared {
    fn token(&self) -> Option<String> {
        self.token.lock().expect("token").clone()
    }
}

/// The double served on a TCP address; dropping it shuts the listener down (see the module).
pub struct HttpDouble {
    addr: SocketAddr,
    api: ApiServer,
    shared: Arc<Shared>,
    task: Option<JoinHandle<()>>,
}

impl ApiServer {
    /// Serves this double over HTTP/1.1 on `addr` (port 0: one the system picks; see
    /// [`HttpDouble::addr`]) until the returned handle is dropped. Needs a tokio runtime.
    pub fn listen(&self, addr: impl ToSocketAddrs) -> std::io::Result<HttpDouble> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let listener = TcpListener::from_std(listener)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            down: AtomicBool::new(false),
            cuts: watch::channel(0).0,
            stop: watch::channel(false).0,
            token: Mutex::new(None),
            refused: AtomicUsize::new(0),
            unauthorized: AtomicUsize::new(0),
            accepted: AtomicUsize::new(0),
            open: AtomicUsize::new(0),
        });
        let task = tokio::spawn(accept(listener, self.inner.clone(), shared.clone()));
        Ok(HttpDouble {
            addr,
            api: self.clone(),
            shared,
            task: Some(task),
        })
    }
}

impl HttpDouble {
    /// The address bound.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`, a kubeconfig's `server`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The double served.
    pub fn api(&self) -> &ApiServer {
        &self.api
    }

    /// The kubeconfig reaching this double as `cluster` (cluster, user and context names),
    /// with a bearer `token` if given: see [`kubeconfig`].
    pub fn kubeconfig(&self, cluster: &str, token: Option<&str>) -> String {
        kubeconfig(cluster, &self.url(), token)
    }

    /// Down: open connections (watch streams among them) are dropped at once, and new ones are
    /// closed as soon as accepted, until `set_down(false)`.
    pub fn set_down(&self, down: bool) {
        self.shared.down.store(down, Ordering::SeqCst);
        if down {
            self.shared.cuts.send_modify(|n| *n += 1);
        }
    }

    pub fn is_down(&self) -> bool {
        self.shared.down.load(Ordering::SeqCst)
    }

    /// Connections closed unanswered because the double was down, since the start.
    pub fn refused(&self) -> usize {
        self.shared.refused.load(Ordering::SeqCst)
    }

    /// Every request must carry `Authorization: Bearer <token>` (`None`: no check, the
    /// default); others get `401 Unauthorized`. Open connections and watches are kept, as a
    /// real API server keeps a stream it already authenticated.
    pub fn require_token(&self, token: Option<String>) {
        *self.shared.token.lock().expect("token") = token;
    }

    /// Requests answered `401`, since the start.
    pub fn unauthorized(&self) -> usize {
        self.shared.unauthorized.load(Ordering::SeqCst)
    }

    /// Connections served (not refused), since the start.
    pub fn connections(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Connections open now.
    pub fn open_connections(&self) -> usize {
        self.shared.open.load(Ordering::SeqCst)
    }

    /// Shuts down gracefully (as dropping does) and waits until every connection is closed.
    pub async fn shutdown(mut self) {
        self.shared.stop.send_replace(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for HttpDouble {
    fn drop(&mut self) {
        self.shared.stop.send_replace(true);
    }
}

/// A kubeconfig (YAML) whose current context reaches `server` as cluster, user and context
/// `name`, authenticating with a bearer `token` if given: what a MultiKueue Secret's
/// `kubeconfig` key holds.
pub fn kubeconfig(name: &str, server: &str, token: Option<&str>) -> String {
    // JSON strings are YAML's double-quoted scalars.
    let q = |s: &str| serde_json::Value::from(s).to_string();
    let user = match token {
        Some(t) => format!("\n    token: {}", q(t)),
        None => " {}".to_string(),
    };
    let (name, server) = (q(name), q(server));
    format!(
        "apiVersion: v1\nkind: Config\n\
         clusters:\n- name: {name}\n  cluster:\n    server: {server}\n\
         contexts:\n- name: {name}\n  context:\n    cluster: {name}\n    user: {name}\n\
         current-context: {name}\n\
         users:\n- name: {name}\n  user:{user}\n"
    )
}

/// Resolves once shutdown has started.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// Accepts connections until shutdown, then waits for them ([`GRACE`] at most).
async fn accept(listener: TcpListener, inner: Arc<Inner>, shared: Arc<Shared>) {
    let mut stop = shared.stop.subscribe();
    let mut conns = JoinSet::new();
    loop {
        tokio::select! {
            _ = stopped(&mut stop) => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // Out of descriptors, say: try again shortly.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                // Subscribed before `down` is read: a `set_down(true)` after the read is seen
                // as a cut by the connection, even if `set_down(false)` follows at once.
                let cuts = shared.cuts.subscribe();
                if shared.down.load(Ordering::SeqCst) {
                    shared.refused.fetch_add(1, Ordering::SeqCst);
                    drop(stream);
                    continue;
                }
                shared.accepted.fetch_add(1, Ordering::SeqCst);
                let open = Open::new(shared.clone());
                conns.spawn(connection(stream, inner.clone(), open, cuts));
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    drop(listener);
    let all_closed = async { while conns.join_next().await.is_some() {} };
    if tokio::time::timeout(GRACE, all_closed).await.is_err() {
        conns.abort_all();
        while conns.join_next().await.is_some() {}
    }
}

/// Counts an open connection for as long as it lives.
struct Open(Arc<Shared>);

impl Open {
    fn new(shared: Arc<Shared>) -> Open {
        shared.open.fetch_add(1, Ordering::SeqCst);
        Open(shared)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Serves one connection until the client closes it, a cut drops it, or shutdown closes it
/// gracefully.
async fn connection(
    stream: TcpStream,
    inner: Arc<Inner>,
    open: Open,
    mut cuts: watch::Receiver<u64>,
) {
    let shared = open.0.clone();
    let mut stop = shared.stop.subscribe();
    let service = {
        let shared = shared.clone();
        let stop = stop.clone();
        service_fn(move |req| handle(inner.clone(), shared.clone(), stop.clone(), req))
    };
    let conn = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        // Dropped unanswered: the client sees the connection fail.
        _ = cuts.changed() => return,
        _ = stopped(&mut stop) => {}
    }
    conn.as_mut().graceful_shutdown();
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = cuts.changed() => {}
    }
}

/// One request: the token checked, then the double's routing; a streamed answer ends at
/// shutdown.
async fn handle(
    inner: Arc<Inner>,
    shared: Arc<Shared>,
    stop: watch::Receiver<bool>,
    req: Request<Incoming>,
) -> Result<Response<Cut>, Infallible> {
    if let Some(token) = shared.token() {
        let presented = req
            .headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if presented != Some(token.as_str()) {
            shared.unauthorized.fetch_add(1, Ordering::SeqCst);
            let refused = routes::failure(&ApiError::new(401, "Unauthorized", "Unauthorized"));
            return Ok(refused.map(|b| Cut::new(b, None)));
        }
    }
    let response = routes::serve(inner, req).await;
    Ok(response.map(|b| Cut::new(b, Some(stop))))
}

/// A response body that ends (cleanly, its last chunk sent) once shutdown starts, if its
/// length is not known: a watch stream.
pub(crate) struct Cut {
    body: Body,
    stop: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl Cut {
    fn new(body: Body, stop: Option<watch::Receiver<bool>>) -> Cut {
        let stop = stop.filter(|_| body.size_hint().exact().is_none()).map(
            |mut rx| -> Pin<Box<dyn Future<Output = ()> + Send>> {
                Box::pin(async move { stopped(&mut rx).await })
            },
        );
        Cut { body, stop }
    }
}

impl hyper::body::Body for Cut {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(stop) = self.stop.as_mut()
            && stop.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(None);
        }
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::StreamExt;
    use http_body_util::BodyExt;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
    use kube::config::{KubeConfigOptions, Kubeconfig};
    use serde_json::{Value, json};

    use super::super::{ApiServer, Config};
    use super::*;

    const CMS: &str = "/api/v1/namespaces/ns/configmaps";

    /// The body of a whole answer (not a stream), as bytes.
    async fn bytes_of(body: Incoming) -> Bytes {
        body.collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default()
    }

    fn cm(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": "ns"}, "data": {"k": "v"}})
    }

    fn served() -> (ApiServer, HttpDouble) {
        let api = ApiServer::new(Config {
            bookmark_interval: Duration::from_millis(50),
            ..Config::default()
        });
        let http = api.listen("127.0.0.1:0").expect("bound");
        (api, http)
    }

    /// A kube client from the double's kubeconfig, through kube's own loading.
    async fn client(http: &HttpDouble, token: Option<&str>) -> kube::Client {
        let kc = Kubeconfig::from_yaml(&http.kubeconfig("w1", token)).expect("a kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .expect("a config");
        kube::Client::try_from(config).expect("a client")
    }

    fn names(list: &kube::core::ObjectList<ConfigMap>) -> Vec<String> {
        list.items
            .iter()
            .filter_map(|c| c.metadata.name.clone())
            .collect()
    }

    async fn next(
        stream: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin),
    ) -> Option<kube::Result<WatchEvent<ConfigMap>>> {
        tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("an answer in time")
    }

    /// Polls until `f` holds (5 s at most).
    async fn eventually(what: &str, f: impl Fn() -> bool) {
        for _ in 0..500 {
            if f() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{what}: not within 5 s");
    }

    #[test]
    fn the_kubeconfig_names_the_server_and_the_token() {
        let yaml = kubeconfig("w1", "http://127.0.0.1:8080", Some("w1-t1"));
        let kc = Kubeconfig::from_yaml(&yaml).unwrap();
        assert_eq!(kc.current_context.as_deref(), Some("w1"));
        let cluster = kc.clusters[0].cluster.as_ref().unwrap();
        assert_eq!(cluster.server.as_deref(), Some("http://127.0.0.1:8080"));
        assert_eq!(kc.auth_infos[0].name, "w1");
        assert!(kc.auth_infos[0].auth_info.as_ref().unwrap().token.is_some());
        assert!(yaml.contains("\n    token: \"w1-t1\"\n"), "{yaml}");
        let anonymous = Kubeconfig::from_yaml(&kubeconfig("a b", "http://h:1", None)).unwrap();
        assert_eq!(anonymous.clusters[0].name, "a b");
        assert!(
            anonymous.auth_infos[0]
                .auth_info
                .as_ref()
                .unwrap()
                .token
                .is_none()
        );
    }

    #[tokio::test]
    async fn lists_and_watches_over_tcp_through_a_kubeconfig() {
        let (api, http) = served();
        api.put(&format!("{CMS}/a"), cm("a"));
        let cms: Api<ConfigMap> = Api::namespaced(client(&http, None).await, "ns");
        let list = cms.list(&ListParams::default()).await.unwrap();
        assert_eq!(names(&list), ["a"]);
        let rv = list.metadata.resource_version.clone().unwrap();
        let mut stream = cms
            .watch(&WatchParams::default().disable_bookmarks(), &rv)
            .await
            .unwrap()
            .boxed();
        cms.create(
            &PostParams::default(),
            &serde_json::from_value(cm("b")).unwrap(),
        )
        .await
        .unwrap();
        match next(&mut stream).await {
            Some(Ok(WatchEvent::Added(o))) => assert_eq!(o.metadata.name.as_deref(), Some("b")),
            other => panic!("{other:?}"),
        }
        api.put(&format!("{CMS}/c"), cm("c"));
        match next(&mut stream).await {
            Some(Ok(WatchEvent::Added(o))) => assert_eq!(o.metadata.name.as_deref(), Some("c")),
            other => panic!("{other:?}"),
        }
        assert_eq!(api.open_watches(), 1);
        // The double logs and counts the requests as its in-memory client's.
        assert!(api.counts()[&("watch".to_string(), "configmaps".to_string())] >= 1);
        assert!(http.connections() >= 1);
        assert_eq!(http.refused(), 0);
    }

    #[tokio::test]
    async fn down_drops_open_watches_and_fails_connections_until_up() {
        let (api, http) = served();
        api.put(&format!("{CMS}/a"), cm("a"));
        let cms: Api<ConfigMap> = Api::namespaced(client(&http, None).await, "ns");
        let mut stream = cms
            .watch(&WatchParams::default(), "0")
            .await
            .unwrap()
            .boxed();
        assert!(matches!(
            next(&mut stream).await,
            Some(Ok(WatchEvent::Added(_)))
        ));

        http.set_down(true);
        // The stream fails (its last chunk never came) and then ends.
        loop {
            match next(&mut stream).await {
                None | Some(Err(_)) => break,
                Some(Ok(WatchEvent::Bookmark(_))) => {}
                Some(Ok(other)) => panic!("an event while down: {other:?}"),
            }
        }
        eventually("the watch closed", || api.open_watches() == 0).await;
        eventually("the connections closed", || http.open_connections() == 0).await;
        match cms.list(&ListParams::default()).await {
            Err(kube::Error::Api(s)) => panic!("an API answer while down: {s:?}"),
            Err(_) => {}
            Ok(l) => panic!("listed while down: {:?}", names(&l)),
        }
        assert!(http.refused() >= 1);
        let served = http.connections();

        http.set_down(false);
        let list = cms.list(&ListParams::default()).await.unwrap();
        assert_eq!(names(&list), ["a"]);
        assert!(http.connections() > served);
        let mut stream = cms
            .watch(&WatchParams::default(), "0")
            .await
            .unwrap()
            .boxed();
        assert!(matches!(
            next(&mut stream).await,
            Some(Ok(WatchEvent::Added(_)))
        ));
    }

    #[tokio::test]
    async fn a_required_token_refuses_others_with_401() {
        let (api, http) = served();
        http.require_token(Some("t2".into()));
        for token in [None, Some("t1")] {
            let cms: Api<ConfigMap> = Api::namespaced(client(&http, token).await, "ns");
            match cms.list(&ListParams::default()).await {
                Err(kube::Error::Api(s)) => {
                    assert_eq!((s.code, s.reason.as_str()), (401, "Unauthorized"));
                    assert_eq!(s.message, "Unauthorized");
                }
                other => panic!("{token:?}: {other:?}"),
            }
        }
        assert_eq!(http.unauthorized(), 2);
        assert_eq!(api.request_total(), 0, "refused before the double");

        let cms: Api<ConfigMap> = Api::namespaced(client(&http, Some("t2")).await, "ns");
        assert!(cms.list(&ListParams::default()).await.is_ok());
        http.require_token(None);
        let anonymous: Api<ConfigMap> = Api::namespaced(client(&http, None).await, "ns");
        assert!(anonymous.list(&ListParams::default()).await.is_ok());
        assert_eq!(http.unauthorized(), 2);
    }

    #[tokio::test]
    async fn the_401_is_the_api_servers_status() {
        let (_api, http) = served();
        http.require_token(Some("t".into()));
        let stream = TcpStream::connect(http.addr()).await.unwrap();
        let (mut send, conn) = hyper::client::conn::http1::handshake::<
            _,
            http_body_util::Empty<Bytes>,
        >(TokioIo::new(stream))
        .await
        .unwrap();
        tokio::spawn(conn);
        let req = Request::get(format!("{CMS}?limit=1"))
            .header("host", "w1")
            .header("authorization", "Bearer wrong")
            .body(http_body_util::Empty::new())
            .unwrap();
        let resp = send.send_request(req).await.unwrap();
        assert_eq!(resp.status(), 401);
        let body: Value = serde_json::from_slice(&bytes_of(resp.into_body()).await).unwrap();
        assert_eq!(
            body,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
        );
    }

    #[tokio::test]
    async fn shutdown_ends_watches_cleanly_and_closes_the_port() {
        let (api, http) = served();
        let addr = http.addr();
        let cms: Api<ConfigMap> = Api::namespaced(client(&http, None).await, "ns");
        let mut stream = cms
            .watch(&WatchParams::default().disable_bookmarks(), "0")
            .await
            .unwrap()
            .boxed();
        eventually("the watch open", || api.open_watches() == 1).await;
        let shut = tokio::spawn(http.shutdown());
        // The stream ends without an error: its last chunk was sent.
        assert!(next(&mut stream).await.is_none());
        tokio::time::timeout(GRACE + Duration::from_secs(1), shut)
            .await
            .expect("shut down in time")
            .unwrap();
        eventually("the watch closed", || api.open_watches() == 0).await;
        assert!(
            TcpStream::connect(addr).await.is_err(),
            "the port is closed"
        );
        // The double itself lives on.
        assert!(api.client().apiserver_version().await.is_ok());
        assert!(cms.list(&ListParams::default()).await.is_err());
    }
}
