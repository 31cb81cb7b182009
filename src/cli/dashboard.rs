//! `wasq simulate --serve`: the dashboard of the simulated cluster, served from a runtime of
//! its own beside the run (the simulation stays on the calling thread).

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use wasq::dashboard::{Board, Open};

/// A dashboard being served.
pub struct Served {
    pub board: Arc<Board>,
    pub address: SocketAddr,
    runtime: tokio::runtime::Runtime,
}

/// Binds `address` (port 0: any free port) and serves the dashboard; says where on standard
/// error.
pub fn start(address: SocketAddr) -> anyhow::Result<Served> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("dashboard")
        .enable_all()
        .build()
        .context("starting the dashboard's runtime")?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind(address))
        .with_context(|| format!("binding the dashboard to {address}"))?;
    let address = listener.local_addr()?;
    let board = Board::new();
    runtime.spawn(wasq::dashboard::serve(
        listener,
        board.clone(),
        Arc::new(Open),
    ));
    eprintln!("wasq: dashboard at http://{address}/");
    Ok(Served {
        board,
        address,
        runtime,
    })
}

impl Served {
    /// Serves until the process is interrupted (Ctrl-C).
    pub fn until_interrupted(self) -> anyhow::Result<()> {
        eprintln!(
            "wasq: the run is over; the dashboard at http://{}/ shows its end (Ctrl-C to stop)",
            self.address
        );
        self.runtime
            .block_on(tokio::signal::ctrl_c())
            .context("waiting for Ctrl-C")
    }
}
