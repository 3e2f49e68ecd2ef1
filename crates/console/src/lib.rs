//! `sqs-waiter console` (DESIGN "The console"): a web console on 127.0.0.1 that talks to the
//! function through the client crate, as the CLI does, with the operator's own credentials. It
//! creates no AWS resource and cannot be reached from another machine.
//!
//! Every request passes one guard first (`guard`): the token, the `Host` check, and for a POST
//! the CSRF token, the origin and `--read-only`, before any route is chosen. Handlers parse the
//! form, call the client and render a page (`pages`); every asset is inside the binary.

mod actions;
mod assets;
mod guard;
mod layout;
mod pages;
mod svg;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use axum::routing::{get, post};
use axum::Router;
use sqs_waiter_client::rights::{alias_key, class_alias, Class};
use sqs_waiter_client::Client;

/// How the console is served.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// 0: any free port.
    pub port: u16,
    /// No change offered; every POST is refused.
    pub read_only: bool,
    /// For the link to CloudWatch's dashboards.
    pub region: Option<String>,
}

/// What every handler shares: the client, and the secrets the guard checks.
pub(crate) struct Console {
    pub client: Client,
    /// In the first URL, then in the session cookie.
    pub token: String,
    /// In every form; a POST without it is refused.
    pub csrf: String,
    pub read_only: bool,
    /// What the alias `--function NAME:ALIAS` names allows (docs/security.md).
    pub rights: Offered,
    pub port: u16,
    pub region: Option<String>,
}

impl Console {
    /// Whether the console offers the change `action` (a contract action's wire name) on
    /// `queue`: not under `--read-only`, and only what the alias allows there (the function
    /// refuses the rest).
    pub(crate) fn may(&self, action: &str, queue: &str) -> bool {
        !self.read_only && self.reaches(action, Some(queue))
    }

    /// Whether the alias lets the console call `action` on `queue` (`None`: a call that names
    /// no queue, such as `queues`, which through a queue's alias answers for that queue alone).
    pub(crate) fn reaches(&self, action: &str, queue: Option<&str>) -> bool {
        match &self.rights {
            Offered::All => true,
            Offered::Class(class, key) => {
                class.allows(action)
                    && match (key, queue) {
                        (Some(key), Some(queue)) => on_its_queue(key, queue),
                        _ => true,
                    }
            }
            Offered::Nothing => false,
        }
    }
}

/// Whether `queue` is the one a queue's alias with `key` is for.
pub(crate) fn on_its_queue(key: &str, queue: &str) -> bool {
    alias_key(queue) == key
}

/// What the function, called as the console names it, lets the console offer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Offered {
    /// The unqualified function: everything.
    All,
    /// Through a class alias: that class's actions; through a queue's own alias
    /// (`orders--send`), on that queue alone, named by its key (`rights::alias_key`).
    Class(Class, Option<String>),
    /// Through a version or an alias outside the scheme: nothing (the function refuses all).
    Nothing,
}

/// What the alias a function name carries allows: a name, `NAME:ALIAS`, a partial ARN
/// (`ACCOUNT:function:NAME[:ALIAS]`) or an ARN.
pub(crate) fn class_of(function: &str) -> Offered {
    let qualifier = match function.split(':').collect::<Vec<_>>().as_slice() {
        ["arn", _, "lambda", _, _, "function", _, qualifier] | [_, "function", _, qualifier] | [_, qualifier] => {
            *qualifier
        }
        _ => return Offered::All,
    };
    class_alias(qualifier).map_or(Offered::Nothing, |(class, key)| {
        Offered::Class(class, key.map(str::to_owned))
    })
}

pub(crate) type Shared = Arc<Console>;

/// The name of the session cookie.
pub(crate) const COOKIE: &str = "sqs_waiter_console";

fn secret() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// The console's routes behind its guard.
pub(crate) fn routes(state: Shared) -> Router {
    Router::new()
        .route("/", get(pages::queues::page))
        .route("/open", get(pages::open::open))
        .route("/assets/{name}", get(assets::asset))
        .route("/queues/{queue}/jobs", get(pages::jobs::page))
        .route("/queues/{queue}/jobs/{id}", get(pages::job::page))
        .route("/queues/{queue}/parked", get(pages::parked::page))
        .route(
            "/queues/{queue}/cancel",
            get(pages::jobs::confirm_cancel).post(actions::cancel_many),
        )
        .route("/queues/{queue}/pause", post(actions::pause_queue))
        .route("/queues/{queue}/resume", post(actions::resume_queue))
        .route("/queues/{queue}/parked/redrive", post(actions::redrive))
        .route("/queues/{queue}/jobs/{id}/{action}", post(actions::job_action))
        // Before the layer, so that the guard covers what no route takes too.
        .fallback(pages::not_found)
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard::guard))
        .with_state(state)
}

/// The first URL: it carries the token, which the console then keeps in a cookie.
fn first_url(port: u16, token: &str) -> String {
    format!("http://127.0.0.1:{port}/?token={token}")
}

/// Binds 127.0.0.1, prints `console: URL` once it is ready, and serves until the process ends.
/// `ready` gets the URL too (to open a browser).
pub async fn serve(client: Client, options: Options, ready: impl FnOnce(&str)) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, options.port))).await?;
    let port = listener.local_addr()?.port();
    let rights = class_of(client.function_name());
    let state: Shared = Arc::new(Console {
        client,
        token: secret(),
        csrf: secret(),
        read_only: options.read_only,
        rights,
        port,
        region: options.region.clone(),
    });
    let url = first_url(port, &state.token);
    let app = routes(state);
    println!("console: {url}");
    ready(&url);
    axum::serve(listener, app).await
}

#[cfg(test)]
mod guard_tests;
