//! Headless Chromium driven over the DevTools protocol, for what `--dump-dom` cannot do: click
//! a button and read what the page did (the DOM, the clipboard, its console). No crate: the
//! browser speaks the protocol over a pipe (`--remote-debugging-pipe`: commands in on fd 3,
//! answers and events out on fd 4, each a JSON text ended by a NUL byte), and `sh` hands it
//! two FIFOs as those descriptors. Everything here blocks; run it on a blocking thread.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long one command may take to be answered.
const ANSWER: Duration = Duration::from_secs(30);

/// A browser with one page attached.
pub(crate) struct Browser {
    child: Child,
    commands: File,
    messages: Receiver<Value>,
    /// Events seen so far, in order (a console message, a load).
    pub(crate) events: Vec<Value>,
    next_id: u64,
    session: String,
    stderr: std::path::PathBuf,
    _fifos: tempfile::TempDir,
}

impl Browser {
    /// Starts `exe` headless with a fresh profile, opens a blank page and attaches to it with
    /// the page, runtime and log domains on, focus emulated (the clipboard wants a focused
    /// page) and a listener that records every Content-Security-Policy violation in
    /// `window.__csp` before any of a page's own script runs.
    pub(crate) fn start(exe: &Path, profile: &Path, width: u32, height: u32) -> Browser {
        let fifos = tempfile::tempdir().unwrap();
        let (to_browser, from_browser) = (fifos.path().join("in"), fifos.path().join("out"));
        for f in [&to_browser, &from_browser] {
            let made = Command::new("mkfifo").arg(f).status().expect("mkfifo runs");
            assert!(made.success(), "mkfifo {f:?}");
        }
        let stderr = fifos.path().join("stderr");
        let child = Command::new("sh")
            .arg("-c")
            .arg(r#"exec "$0" "$@" 3<"$C960_CDP_IN" 4>"$C960_CDP_OUT""#)
            .arg(exe)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--hide-scrollbars",
                "--enable-logging=stderr",
                "--v=0",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--window-size={width},{height}"))
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .env("C960_CDP_IN", &to_browser)
            .env("C960_CDP_OUT", &from_browser)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&stderr).unwrap())
            .spawn()
            .expect("sh runs");
        // In the order the shell opens them: each open waits for the other end.
        let commands = File::options().write(true).open(&to_browser).unwrap();
        let out = File::open(&from_browser).unwrap();
        let (tx, messages) = channel();
        std::thread::spawn(move || {
            let mut out = BufReader::new(out);
            let mut buf = Vec::new();
            while out.read_until(0, &mut buf).is_ok_and(|n| n > 0) {
                buf.pop_if(|b| *b == 0);
                if let Ok(v) = serde_json::from_slice::<Value>(&buf)
                    && tx.send(v).is_err()
                {
                    return;
                }
                buf.clear();
            }
        });
        let mut b = Browser {
            child,
            commands,
            messages,
            events: Vec::new(),
            next_id: 0,
            session: String::new(),
            stderr,
            _fifos: fifos,
        };
        let target = b.browser("Target.createTarget", json!({ "url": "about:blank" }));
        let target = target["targetId"].as_str().expect("a target").to_string();
        let attached = b.browser(
            "Target.attachToTarget",
            json!({ "targetId": target, "flatten": true }),
        );
        b.session = attached["sessionId"]
            .as_str()
            .expect("a session")
            .to_string();
        for domain in ["Page.enable", "Runtime.enable", "Log.enable"] {
            b.page(domain, json!({}));
        }
        b.page(
            "Emulation.setFocusEmulationEnabled",
            json!({ "enabled": true }),
        );
        b.page(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": "window.__csp = []; document.addEventListener('securitypolicyviolation', \
                (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));" }),
        );
        b
    }

    fn send(&mut self, session: Option<String>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = session {
            msg["sessionId"] = Value::String(s);
        }
        let mut bytes = serde_json::to_vec(&msg).unwrap();
        bytes.push(0);
        self.commands.write_all(&bytes).expect("the browser reads");
        let deadline = Instant::now() + ANSWER;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.messages.recv_timeout(left) {
                Ok(m) if m["id"] == id => {
                    assert!(m.get("error").is_none(), "{method}: {}", m["error"]);
                    return m["result"].clone();
                }
                Ok(m) => self.events.push(m),
                Err(RecvTimeoutError::Timeout) => panic!("{method}: no answer in {ANSWER:?}"),
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("{method}: the browser is gone: {}", self.console())
                }
            }
        }
    }

    /// A command to the browser itself.
    pub(crate) fn browser(&mut self, method: &str, params: Value) -> Value {
        self.send(None, method, params)
    }

    /// A command to the attached page.
    pub(crate) fn page(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.send(Some(session), method, params)
    }

    /// Loads `url` and waits for its load event.
    pub(crate) fn navigate(&mut self, url: &str) {
        self.events.clear();
        let nav = self.page("Page.navigate", json!({ "url": url }));
        assert!(nav.get("errorText").is_none(), "{url}: {nav}");
        let deadline = Instant::now() + ANSWER;
        while !self
            .events
            .iter()
            .any(|e| e["method"] == "Page.loadEventFired")
        {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.messages.recv_timeout(left) {
                Ok(m) => self.events.push(m),
                Err(e) => panic!("{url}: no load event: {e}"),
            }
        }
    }

    /// The value of a JavaScript expression in the page (a promise awaited), or why it threw.
    pub(crate) fn eval(&mut self, expression: &str) -> Result<Value, String> {
        let r = self.page(
            "Runtime.evaluate",
            json!({ "expression": expression, "awaitPromise": true, "returnByValue": true, "userGesture": true }),
        );
        match r.get("exceptionDetails") {
            Some(e) => Err(e["exception"]["description"]
                .as_str()
                .map_or_else(|| e.to_string(), str::to_string)),
            None => Ok(r["result"]["value"].clone()),
        }
    }

    /// A left click at the centre of the first element `selector` names, as a person's mouse
    /// makes it (pressed, released: the page sees a trusted click).
    pub(crate) fn click(&mut self, selector: &str) {
        let rect = self
            .eval(&format!(
                "(() => {{ const e = document.querySelector({selector:?}); e.scrollIntoView(); \
                 const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()"
            ))
            .unwrap_or_else(|e| panic!("{selector}: {e}"));
        let (x, y) = (rect[0].as_f64().unwrap(), rect[1].as_f64().unwrap());
        for kind in ["mousePressed", "mouseReleased"] {
            self.page(
                "Input.dispatchMouseEvent",
                json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 }),
            );
        }
    }

    /// Evaluates `expression` until it is `true` or `within` has passed; whether it became so.
    pub(crate) fn wait_for(&mut self, expression: &str, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if self.eval(expression) == Ok(Value::Bool(true)) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// Every Content-Security-Policy violation seen: the page's own report (`window.__csp`),
    /// the protocol's log and console events, and the browser's stderr.
    pub(crate) fn csp_violations(&mut self) -> Vec<String> {
        let mut found: Vec<String> = match self.eval("window.__csp") {
            Ok(Value::Array(v)) => v.iter().map(|v| v.to_string()).collect(),
            other => vec![format!("window.__csp unreadable: {other:?}")],
        };
        while let Ok(m) = self.messages.try_recv() {
            self.events.push(m);
        }
        found.extend(
            self.events
                .iter()
                .map(Value::to_string)
                .filter(|e| e.contains("Content Security Policy")),
        );
        found.extend(
            self.console()
                .lines()
                .filter(|l| l.contains("Content Security Policy"))
                .map(str::to_string),
        );
        found
    }

    /// What the browser wrote to stderr (its console among it).
    pub(crate) fn console(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Closed the polite way first, so its renderer processes go with it.
        let _ = self
            .commands
            .write_all(b"{\"id\":0,\"method\":\"Browser.close\"}\0");
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && matches!(self.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
