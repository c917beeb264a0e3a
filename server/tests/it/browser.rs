//! A real headless Chromium driven over WebDriver (chromedriver + `fantoccini`), for
//! the tests that use pages as a person would (the Studio, a `useStream` chat page).
//! Screenshots go to `$STATEGRAPH_ARTIFACTS` (else a kept temp dir, printed).
//!
//! Chromium and chromedriver come from `$STATEGRAPH_CHROMIUM` / `$STATEGRAPH_CHROMEDRIVER`
//! or Debian's `/usr/bin/chromium` and `/usr/bin/chromedriver` (`apt-get install
//! chromium chromium-driver`). Without them the tests print `SKIPPED` and pass, except
//! under `CI=true`, where they fail.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

/// How long any one thing the page does may take.
pub(crate) const PATIENCE: Duration = Duration::from_secs(60);

/// The browser binaries, or `None` (after saying so) when they are missing outside CI.
pub(crate) fn browser_binaries() -> Option<(PathBuf, PathBuf)> {
    let find = |var: &str, default: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(default))
    };
    let chromium = find("STATEGRAPH_CHROMIUM", "/usr/bin/chromium");
    let driver = find("STATEGRAPH_CHROMEDRIVER", "/usr/bin/chromedriver");
    let missing: Vec<String> = [&chromium, &driver]
        .into_iter()
        .filter(|p| !p.is_file())
        .map(|p| p.display().to_string())
        .collect();
    if missing.is_empty() {
        return Some((chromium, driver));
    }
    let why = format!(
        "{} not found (set STATEGRAPH_CHROMIUM / STATEGRAPH_CHROMEDRIVER, or apt-get install chromium chromium-driver)",
        missing.join(" and ")
    );
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("the browser tests need a browser under CI: {why}");
    }
    eprintln!("SKIPPED: browser tests: {why}");
    None
}

/// Where screenshots go: `$STATEGRAPH_ARTIFACTS`, else a temp dir that is kept.
fn artifacts_dir() -> PathBuf {
    let dir = match std::env::var_os("STATEGRAPH_ARTIFACTS") {
        Some(d) => PathBuf::from(d),
        None => tempfile::Builder::new()
            .prefix("stategraph-studio-shots")
            .tempdir()
            .expect("a temp dir")
            .keep(),
    };
    std::fs::create_dir_all(&dir).expect("the artifacts dir can be created");
    eprintln!("Studio screenshots in {}", dir.display());
    dir
}

/// chromedriver (killed on drop), a Chromium session on it, and its profile dir.
pub(crate) struct Browser {
    pub(crate) client: Client,
    _driver: tokio::process::Child,
    _profile: tempfile::TempDir,
    shots: PathBuf,
}

impl Browser {
    pub(crate) async fn start(chromium: &Path, chromedriver: &Path) -> Browser {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
            l.local_addr().expect("its address").port()
        };
        let driver = tokio::process::Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("chromedriver starts");
        let profile = tempfile::tempdir().expect("a profile dir");
        let args = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-quic",
            "--window-size=1280,900",
        ]
        .iter()
        .map(|a| a.to_string())
        .chain([format!("--user-data-dir={}", profile.path().display())])
        .collect::<Vec<_>>();
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({ "binary": chromium, "args": args }),
        );
        let url = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(c) => break c,
                // chromedriver is still starting.
                Err(_) if started.elapsed() < PATIENCE => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("no WebDriver session on {url}: {e}"),
            }
        };
        client
            .set_window_size(1280, 900)
            .await
            .expect("the window is sized");
        Browser {
            client,
            _driver: driver,
            _profile: profile,
            shots: artifacts_dir(),
        }
    }

    /// Saves the window as `NAME.png`.
    pub(crate) async fn shot(&self, name: &str) {
        let png = self.client.screenshot().await.expect("a screenshot");
        let path = self.shots.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("the screenshot is saved");
    }

    /// Opens a Studio page, waiting until it says it is ready.
    pub(crate) async fn goto(&self, url: &str) {
        self.open(url).await;
        self.wait_css("body[data-ready]").await;
    }

    /// Opens `url`.
    pub(crate) async fn open(&self, url: &str) {
        self.client.goto(url).await.expect("the page opens");
    }

    /// The first element matching `css`, waiting for it.
    pub(crate) async fn wait_css(&self, css: &str) -> Element {
        self.client
            .wait()
            .at_most(PATIENCE)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no `{css}` on the page: {e}"))
    }

    pub(crate) async fn all(&self, css: &str) -> Vec<Element> {
        self.client
            .find_all(Locator::Css(css))
            .await
            .expect("a query")
    }

    /// Runs `js` in the page (its `return` value).
    pub(crate) async fn js(&self, js: &str) -> Value {
        self.client
            .execute(js, vec![])
            .await
            .expect("the script runs")
    }

    /// Waits until `js` (an expression) is truthy in the page.
    pub(crate) async fn wait_until(&self, what: &str, js: &str) {
        let started = Instant::now();
        loop {
            let v = self.js(&format!("return !!({js});")).await;
            if v == Value::Bool(true) {
                return;
            }
            if started.elapsed() > PATIENCE {
                let body = self.js("return document.body.innerText;").await;
                panic!("timed out waiting for {what} ({js}); the page says:\n{body}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Replaces a textarea's text with `text`.
    pub(crate) async fn fill(&self, css: &str, text: &str) {
        let el = self.wait_css(css).await;
        el.clear().await.expect("cleared");
        el.send_keys(text).await.expect("typed");
    }

    pub(crate) async fn text(&self, css: &str) -> String {
        self.wait_css(css).await.text().await.expect("its text")
    }

    /// Presses `key` on the focused element.
    pub(crate) async fn press(&self, key: Key) {
        let el = self
            .client
            .active_element()
            .await
            .expect("a focused element");
        el.send_keys(&char::from(key).to_string())
            .await
            .expect("the key is sent");
    }
}
