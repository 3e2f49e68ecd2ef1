//! Each rule of the guard, with the request a hostile page or process would send: no token, a
//! foreign `Host`, a POST without the CSRF token (to a page and to a path no page has), a
//! cross-origin form post, a POST under `--read-only`. Each is refused before any handler runs
//! (the client here points at a closed port, so a handler that ran would fail differently).

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use tower::ServiceExt;

use crate::{routes, Console, Shared, COOKIE};

const PORT: u16 = 47_001;

fn console(read_only: bool) -> Shared {
    let config = aws_sdk_lambda::Config::builder()
        .behavior_version(aws_sdk_lambda::config::BehaviorVersion::latest())
        .region(aws_sdk_lambda::config::Region::new("us-east-1"))
        .endpoint_url("http://127.0.0.1:9")
        .build();
    Arc::new(Console {
        client: sqs_waiter_client::Client::new(aws_sdk_lambda::Client::from_conf(config), "f"),
        token: "the-token".into(),
        csrf: "the-csrf".into(),
        read_only,
        rights: crate::Offered::All,
        port: PORT,
        region: None,
    })
}

fn request(method: &str, path: &str) -> axum::http::request::Builder {
    Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, format!("127.0.0.1:{PORT}"))
        .header(header::COOKIE, format!("{COOKIE}=the-token"))
}

fn form(body: &str) -> Body {
    Body::from(body.to_owned())
}

async fn status(c: &Shared, r: Request<Body>) -> StatusCode {
    routes(c.clone()).oneshot(r).await.expect("response").status()
}

#[tokio::test]
async fn the_token_comes_once_in_the_address_then_in_a_cookie_and_nothing_answers_without_it() {
    let c = console(false);
    let bare = Request::builder()
        .uri("/assets/console.css")
        .header(header::HOST, format!("127.0.0.1:{PORT}"))
        .body(Body::empty())
        .unwrap();
    assert_eq!(status(&c, bare).await, StatusCode::FORBIDDEN, "no token");
    let wrong = Request::builder()
        .uri("/assets/console.css")
        .header(header::HOST, format!("127.0.0.1:{PORT}"))
        .header(header::COOKIE, format!("{COOKIE}=guess"))
        .body(Body::empty())
        .unwrap();
    assert_eq!(status(&c, wrong).await, StatusCode::FORBIDDEN, "a wrong cookie");
    let first = Request::builder()
        .uri("/?token=the-token")
        .header(header::HOST, format!("localhost:{PORT}"))
        .body(Body::empty())
        .unwrap();
    let r = routes(c.clone()).oneshot(first).await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()[header::LOCATION], "/");
    let cookie = r.headers()[header::SET_COOKIE].to_str().unwrap();
    assert!(
        cookie.starts_with(&format!("{COOKIE}=the-token;"))
            && cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let guessed = Request::builder()
        .uri("/?token=guess")
        .header(header::HOST, format!("127.0.0.1:{PORT}"))
        .body(Body::empty())
        .unwrap();
    assert_eq!(status(&c, guessed).await, StatusCode::FORBIDDEN, "a wrong token");
    let ok = request("GET", "/assets/console.css").body(Body::empty()).unwrap();
    assert_eq!(status(&c, ok).await, StatusCode::OK);
}

#[tokio::test]
async fn a_foreign_host_is_refused_even_with_the_cookie() {
    let c = console(false);
    for host in ["evil.example", "evil.example:47001", "127.0.0.1:8080", "[::1]:47001"] {
        let mut r = request("GET", "/assets/console.css").body(Body::empty()).unwrap();
        r.headers_mut().insert(header::HOST, host.parse().unwrap());
        assert_eq!(status(&c, r).await, StatusCode::FORBIDDEN, "{host}");
    }
}

#[tokio::test]
async fn a_post_without_the_csrf_token_is_refused_whatever_its_path() {
    let c = console(false);
    for path in ["/queues/orders/pause", "/queues/orders/jobs/a/cancel", "/no/such/page"] {
        let r = request("POST", path)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(form("x=1"))
            .unwrap();
        assert_eq!(status(&c, r).await, StatusCode::FORBIDDEN, "{path}");
        let wrong = request("POST", path).body(form("csrf=guess")).unwrap();
        assert_eq!(status(&c, wrong).await, StatusCode::FORBIDDEN, "{path}");
    }
    // With it, the guard lets the request through to routing (here: no such page).
    let through = request("POST", "/no/such/page").body(form("csrf=the-csrf")).unwrap();
    assert_eq!(status(&c, through).await, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_cross_origin_form_post_is_refused_even_with_the_token_and_cookie() {
    let c = console(false);
    let evil = request("POST", "/no/such/page")
        .header(header::ORIGIN, "http://evil.example")
        .body(form("csrf=the-csrf"))
        .unwrap();
    assert_eq!(status(&c, evil).await, StatusCode::FORBIDDEN);
    let other_port = request("POST", "/no/such/page")
        .header(header::ORIGIN, "http://127.0.0.1:8080")
        .body(form("csrf=the-csrf"))
        .unwrap();
    assert_eq!(status(&c, other_port).await, StatusCode::FORBIDDEN);
    let cross_site = request("POST", "/no/such/page")
        .header("sec-fetch-site", "cross-site")
        .body(form("csrf=the-csrf"))
        .unwrap();
    assert_eq!(status(&c, cross_site).await, StatusCode::FORBIDDEN);
    let own = request("POST", "/no/such/page")
        .header(header::ORIGIN, format!("http://localhost:{PORT}"))
        .header("sec-fetch-site", "same-origin")
        .body(form("csrf=the-csrf"))
        .unwrap();
    assert_eq!(status(&c, own).await, StatusCode::NOT_FOUND, "its own pages pass");
}

#[tokio::test]
async fn read_only_refuses_every_post() {
    let c = console(true);
    for path in ["/queues/orders/pause", "/no/such/page"] {
        let r = request("POST", path).body(form("csrf=the-csrf")).unwrap();
        assert_eq!(status(&c, r).await, StatusCode::FORBIDDEN, "{path}");
    }
    let read = request("GET", "/assets/console.js").body(Body::empty()).unwrap();
    assert_eq!(status(&c, read).await, StatusCode::OK, "reads still work");
}

#[test]
fn what_a_page_shows_is_escaped() {
    let c = console(false);
    let html = crate::layout::shell(&c, "<b>title</b>", Some("<script>alert(1)</script>"), maud::html! {}).0;
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{html}");
    assert!(html.contains("&lt;b&gt;title&lt;/b&gt;"));
    assert!(!html.contains("<script>alert"));
}

/// Issue 73: through a class alias the console offers only what the class allows (the function
/// refuses the rest anyway), read from `--function NAME:ALIAS` or an ARN ending in the alias.
#[test]
fn through_an_alias_the_console_offers_only_its_class_actions() {
    use crate::Offered;
    use sqs_waiter_client::rights::Class;
    assert_eq!(crate::class_of("sqs-waiter-enqueue"), Offered::All);
    assert_eq!(
        crate::class_of("sqs-waiter-enqueue:view"),
        Offered::Class(Class::View, None)
    );
    assert_eq!(
        crate::class_of("sqs-waiter-enqueue:orders--send"),
        Offered::Class(Class::Send, Some("orders".into()))
    );
    assert_eq!(
        crate::class_of("arn:aws:lambda:eu-west-1:123456789012:function:sqs-waiter-enqueue:operate"),
        Offered::Class(Class::Operate, None)
    );
    assert_eq!(
        crate::class_of("123456789012:function:sqs-waiter-enqueue:view"),
        Offered::Class(Class::View, None)
    );
    assert_eq!(
        crate::class_of("sqs-waiter-enqueue:live"),
        Offered::Nothing,
        "the function refuses it all"
    );
    let with = |rights: Offered| {
        let mut c = Arc::try_unwrap(console(false)).ok().expect("one owner");
        c.rights = rights;
        c
    };
    let offered = |c: &Console| {
        ["trigger", "pause", "cancel", "reschedule", "redrive", "cancel_many"]
            .into_iter()
            .filter(|a| {
                !crate::layout::button(c, a, "orders", "/x", "x", None)
                    .into_string()
                    .is_empty()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(offered(&with(Offered::All)).len(), 6, "unqualified: everything");
    assert_eq!(
        offered(&with(Offered::Class(Class::Send, None))),
        ["cancel", "reschedule"]
    );
    assert!(
        offered(&with(Offered::Class(Class::View, None))).is_empty(),
        "a viewer changes nothing"
    );
    assert_eq!(offered(&with(Offered::Class(Class::Operate, None))).len(), 6);
    assert!(offered(&with(Offered::Nothing)).is_empty(), "an alias without rights");
}

async fn page(c: &Shared, path: &str) -> (StatusCode, String) {
    let response = routes(c.clone())
        .oneshot(request("GET", path).body(Body::empty()).unwrap())
        .await
        .expect("response");
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.expect("body");
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

/// Issue 82, defect 15: through a producer's alias (`send`, `{queue}--send`), which may not
/// call `queues`, `list` or `list_parked`, the home, jobs and parked pages are a form that opens
/// a job by queue and id, without a call the function would refuse (the client here points at
/// a closed port: a page that called it would be an error page); the badge names the alias's
/// queue, and its changes are offered on that queue alone.
#[tokio::test]
async fn a_producers_alias_opens_jobs_by_id_and_changes_them_on_its_own_queue_only() {
    use crate::Offered;
    use sqs_waiter_client::rights::Class;
    let mut c = Arc::try_unwrap(console(false)).ok().expect("one owner");
    c.rights = Offered::Class(Class::Send, Some("orders".into()));
    let c: Shared = Arc::new(c);
    for path in ["/", "/queues/orders/jobs", "/queues/orders/parked"] {
        let (status, html) = page(&c, path).await;
        assert_eq!(status, StatusCode::OK, "{path}: {html}");
        assert!(
            html.contains(r#"form class="filters" id="open" method="get" action="/open""#),
            "{path}: {html}"
        );
        assert!(
            html.contains(r#"name="queue" value="orders""#),
            "{path}: the alias's queue is filled in"
        );
        assert!(
            html.contains("send alias of queue orders"),
            "{path}: the badge names the queue"
        );
    }
    for path in [
        "/queues/billing/jobs",
        "/queues/billing/jobs/j1",
        "/queues/billing/cancel?prefix=a",
    ] {
        let (status, elsewhere) = page(&c, path).await;
        assert_eq!(status, StatusCode::OK, "{path}: no call the function would refuse");
        assert!(elsewhere.contains("it reaches no other queue"), "{path}: {elsewhere}");
        assert!(
            elsewhere.contains(r#"name="queue" value="orders""#),
            "{path}: the alias's own queue"
        );
    }
    let to = routes(c.clone())
        .oneshot(
            request("GET", "/open?queue=orders&job_id=a%2Fb")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .expect("response");
    assert_eq!(to.status(), StatusCode::SEE_OTHER);
    assert_eq!(to.headers()[header::LOCATION], "/queues/orders/jobs/a%2Fb");
    let (status, html) = page(&c, "/open?queue=orders&job_id=+").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        html.contains("job_id: give the job&#39;s id") || html.contains("job_id: give the job's id"),
        "{html}"
    );
    let (status, html) = page(&c, "/open?job_id=j1").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(html.contains("queue: give the job"), "{html}");
    let offered = |queue: &str| {
        ["cancel", "reschedule", "pause", "cancel_many"]
            .into_iter()
            .filter(|a| {
                !crate::layout::button(&c, a, queue, "/x", "x", None)
                    .into_string()
                    .is_empty()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(offered("orders"), ["cancel", "reschedule"]);
    assert!(
        offered("billing").is_empty(),
        "a queue's alias changes nothing of another queue"
    );
    // A FIFO queue's alias writes `.fifo` as `-fifo`: the form starts with the queue's name.
    let mut fifo = Arc::try_unwrap(console(false)).ok().expect("one owner");
    fifo.rights = Offered::Class(Class::Send, Some("billing-fifo".into()));
    let fifo: Shared = Arc::new(fifo);
    let (status, html) = page(&fifo, "/").await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert!(html.contains(r#"name="queue" value="billing.fifo""#), "{html}");
    assert!(fifo.may("cancel", "billing.fifo") && !fifo.may("cancel", "orders"));
    // The stack-wide producer's alias names no queue: every queue's jobs, by id.
    let mut any = Arc::try_unwrap(console(false)).ok().expect("one owner");
    any.rights = Offered::Class(Class::Send, None);
    let any: Shared = Arc::new(any);
    let (status, html) = page(&any, "/").await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert!(html.contains(r#"name="queue" value="""#), "{html}");
    assert!(html.contains("send alias<"), "{html}");
}
