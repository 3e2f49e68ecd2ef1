//! Headless Chromium driven through ChromeDriver's W3C WebDriver protocol (JSON over HTTP on
//! loopback), for the console's browser tests: Debian's `chromium` and `chromium-driver`, which
//! `make test` installs. A few calls are all the tests need, so they are made here with the
//! reqwest the suite already has (a WebDriver crate would bring a second TLS stack).

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};

/// Where Debian puts them.
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// The key W3C WebDriver names an element by.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// One browser: its driver process (killed on drop) and its session.
pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    http: reqwest::Client,
    profile: PathBuf,
}

impl Browser {
    /// Starts ChromeDriver on a free port and a headless Chromium session with a new profile.
    /// Confirmation dialogs are accepted (the console's `data-confirm`), as an operator would.
    pub async fn start() -> Browser {
        assert!(
            Path::new(CHROMEDRIVER).exists() && Path::new(CHROMIUM).exists(),
            "{CHROMIUM} and {CHROMEDRIVER} are missing: `make test` installs Debian's chromium and chromium-driver"
        );
        let port = crate::free_port();
        // Its own process group, so that stopping it stops the Chromium it starts too.
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start chromedriver");
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let ready = http.get(format!("{base}/status")).send().await;
            if let Ok(r) = ready {
                if let Ok(v) = r.json::<Value>().await {
                    if v["value"]["ready"] == true {
                        break;
                    }
                }
            }
            assert!(Instant::now() < until, "chromedriver did not come up on {base}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let profile = std::env::temp_dir().join(format!("sqs-waiter-chromium-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&profile).expect("profile dir");
        // Without the background-networking flags Chromium calls out at start, and this
        // machine's closed network refuses it (the `env` notes).
        let args = [
            "--headless=new".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-quic".to_owned(),
            "--no-first-run".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-sync".to_owned(),
            "--window-size=1280,1000".to_owned(),
            format!("--user-data-dir={}", profile.display()),
        ];
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "unhandledPromptBehavior": "accept",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args}
        }}});
        let mut browser = Browser {
            driver,
            base,
            session: String::new(),
            http,
            profile,
        };
        let v = browser.call("POST", "/session", caps).await;
        browser.session = v["sessionId"].as_str().expect("sessionId").to_owned();
        browser
    }

    async fn call(&self, method: &str, path: &str, body: Value) -> Value {
        let url = format!("{}{path}", self.base);
        let request = match method {
            "GET" => self.http.get(url),
            "DELETE" => self.http.delete(url),
            _ => self.http.post(url).json(&body),
        };
        let v: Value = request
            .send()
            .await
            .expect("webdriver call")
            .json()
            .await
            .expect("webdriver reply");
        if let Some(e) = v["value"]["error"].as_str() {
            panic!("webdriver {method} {path}: {e}: {}", v["value"]["message"]);
        }
        v["value"].clone()
    }

    fn at(&self, path: &str) -> String {
        format!("/session/{}{path}", self.session)
    }

    pub async fn goto(&self, url: &str) {
        self.call("POST", &self.at("/url"), json!({"url": url})).await;
    }

    pub async fn current_url(&self) -> String {
        self.call("GET", &self.at("/url"), json!({}))
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// The element `css` selects; panics naming it when there is none.
    pub async fn find(&self, css: &str) -> String {
        let v = self
            .call(
                "POST",
                &self.at("/element"),
                json!({"using": "css selector", "value": css}),
            )
            .await;
        v[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {v}"))
            .to_owned()
    }

    pub async fn find_all(&self, css: &str) -> Vec<String> {
        let v = self
            .call(
                "POST",
                &self.at("/elements"),
                json!({"using": "css selector", "value": css}),
            )
            .await;
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|e| e[ELEMENT].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub async fn text(&self, css: &str) -> String {
        let id = self.find(css).await;
        self.call("GET", &self.at(&format!("/element/{id}/text")), json!({}))
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Clicks what `css` selects and waits for the page it leads to: a WebDriver click may
    /// answer before a form's navigation is done, and the old page would be read.
    pub async fn click(&self, css: &str) {
        self.eval("window.__sqs_waiter_old_page = true; return null").await;
        self.tick(css).await;
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let loaded = self
                .eval("return window.__sqs_waiter_old_page === undefined && document.readyState === 'complete'")
                .await;
            if loaded == true {
                return;
            }
            assert!(Instant::now() < until, "clicking {css} led to no new page within 30 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Clicks what `css` selects, on this page (a checkbox).
    pub async fn tick(&self, css: &str) {
        let id = self.find(css).await;
        self.call("POST", &self.at(&format!("/element/{id}/click")), json!({}))
            .await;
    }

    /// Clears the field `css` selects and types `text` into it.
    pub async fn fill(&self, css: &str, text: &str) {
        let id = self.find(css).await;
        self.call("POST", &self.at(&format!("/element/{id}/clear")), json!({}))
            .await;
        self.call("POST", &self.at(&format!("/element/{id}/value")), json!({"text": text}))
            .await;
    }

    /// Runs `script` in the page and returns what it returns.
    pub async fn eval(&self, script: &str) -> Value {
        self.call("POST", &self.at("/execute/sync"), json!({"script": script, "args": []}))
            .await
    }

    /// The page's visible text.
    pub async fn page_text(&self) -> String {
        self.text("body").await
    }

    /// A PNG of the viewport, written to `path`.
    pub async fn screenshot(&self, path: &Path) {
        let v = self.call("GET", &self.at("/screenshot"), json!({})).await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().expect("screenshot"))
            .expect("base64 PNG");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("screenshot dir");
        }
        std::fs::write(path, png).expect("write screenshot");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The driver's whole group: ChromeDriver and the Chromium processes it started.
        if let Ok(pid) = i32::try_from(self.driver.id()) {
            // SAFETY: kill(2) on the process group this test started; no memory is touched.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
        let _ = self.driver.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}
