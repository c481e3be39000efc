//! `agentstream serve`, `view` and `token` as a user runs them: the real binary, the fake
//! harness as the agent, signals to the process.

// Printing is this file's report: clippy.toml's rule against prints is for the commands.
#![allow(clippy::disallowed_macros)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_agentstream");
const FAKE: &str = env!("CARGO_BIN_EXE_fake-harness");

fn golden(agent: &str, case: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden").join(agent).join(case).to_string_lossy().into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("agentstream-serve-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Harness processes carrying `mark` in their environment.
fn processes_with_mark(mark: &str) -> usize {
    pids_with_mark(mark).len()
}

/// The pids of the live processes carrying `mark` in their environment.
fn pids_with_mark(mark: &str) -> Vec<u32> {
    let needle = format!("AGENTSTREAM_TEST_MARK={mark}");
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_string_lossy().parse::<u32>().ok()?, e)))
        .filter(|(_, e)| {
            let alive = std::fs::read_to_string(e.path().join("stat"))
                .map(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
                .unwrap_or(false);
            alive
                && std::fs::read(e.path().join("environ"))
                    .map(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
                    .unwrap_or(false)
        })
        .map(|(pid, _)| pid)
        .collect()
}

struct Serve {
    child: Child,
    addr: String,
    token: String,
    stdout: Vec<String>,
}

/// Start `agentstream serve --config <file> --listen 127.0.0.1:0` and read its announcement.
fn serve(config: &Path) -> Serve {
    serve_from(Command::new(BIN), config)
}

/// [`serve`] from a prepared command.
fn serve_from(mut command: Command, config: &Path) -> Serve {
    let mut child = command
        .args(["serve", "--config"])
        .arg(config)
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stdout = Vec::new();
    let (mut addr, mut token) = (None, None);
    // The announcement ends with a curl example when serve made the tenant.
    while !stdout.last().is_some_and(|l: &String| l.contains(" try: curl")) {
        let line = lines.next().expect("serve announces itself").unwrap();
        if let Some(rest) = line.strip_prefix("agentstream serve: listening on http://") {
            addr = Some(rest.to_string());
        }
        if let Some((_, t)) = line.split_once("(shown once, not stored): ") {
            token = Some(t.to_string());
        }
        stdout.push(line);
    }
    Serve { child, addr: addr.unwrap(), token: token.unwrap(), stdout }
}

/// A raw HTTP/1.1 request (the std library only: this is the CLI's test).
fn http(addr: &str, method: &str, path: &str, token: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    s.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (status, body)
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, sig) };
}

fn wait_exit(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "serve did not exit in time");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn config_with_hanging_agent(dir: &Path, mark: &str) -> PathBuf {
    let path = dir.join("serve.toml");
    std::fs::write(
        &path,
        format!(
            "[agents.claude]\nbin = {FAKE:?}\nenv = {{ AGENTSTREAM_FAKE_TRACE = {:?}, AGENTSTREAM_FAKE_HANG = \"1\", \
             AGENTSTREAM_TEST_MARK = {mark:?} }}\n[shutdown]\nkill_grace_secs = 2\n",
            golden("claude", "s2-bash")
        ),
    )
    .unwrap();
    path
}

#[test]
fn sigterm_and_sigint_end_every_run_deliver_the_terminal_and_leave_no_harness() {
    for (sig, name) in [(libc::SIGTERM, "term"), (libc::SIGINT, "int")] {
        let dir = scratch(name);
        let mark = format!("serve-{name}-{}", std::process::id());
        let mut server = serve(&config_with_hanging_agent(&dir, &mark));
        // The live view's link signs in once, and holds no token (a browser's history keeps it).
        let link = server.stdout.iter().find_map(|l| l.split_once("/#code=")).map(|(_, code)| code.trim().to_string());
        let code = link.unwrap_or_else(|| panic!("the live view's link: {:?}", server.stdout));
        assert!(code.starts_with("asl_") && !server.stdout.iter().any(|l| l.contains("#token=")));
        let redeem = format!("{{\"code\":\"{code}\"}}");
        let (status, body) = http(&server.addr, "POST", "/v1/session", "", &redeem);
        assert_eq!(status, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!((v["tenant"].as_str(), v["token"].as_str()), (Some("local"), Some(server.token.as_str())));
        assert_eq!(http(&server.addr, "POST", "/v1/session", "", &redeem).0, 401, "once");
        let (status, body) = http(&server.addr, "GET", "/v1/whoami", &server.token, "");
        assert_eq!((status, body.contains("\"tenant\":\"local\"")), (200, true), "{body}");
        let mut ids = Vec::new();
        for _ in 0..2 {
            let (status, body) =
                http(&server.addr, "POST", "/v1/runs", &server.token, r#"{"agent":"claude","prompt":"hi"}"#);
            assert_eq!(status, 201, "{body}");
            let v: serde_json::Value = serde_json::from_str(&body).unwrap();
            ids.push(v["id"].as_str().unwrap().to_string());
        }
        // A subscriber on each run, reading in the background.
        let readers: Vec<_> = ids
            .iter()
            .map(|id| {
                let (addr, token, path) = (server.addr.clone(), server.token.clone(), format!("/v1/runs/{id}/events"));
                std::thread::spawn(move || http(&addr, "GET", &path, &token, "").1)
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(10);
        while processes_with_mark(&mark) < 2 {
            assert!(Instant::now() < deadline, "both harnesses started");
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(200));
        signal(&server.child, sig);
        let status = wait_exit(&mut server.child, Duration::from_secs(20));
        assert!(status.success(), "{name}: {status:?}");
        for r in readers {
            let body = r.join().unwrap();
            let last = body.lines().rfind(|l| l.starts_with("data: ")).expect("envelopes");
            assert!(last.contains("\"reason\":\"run_interrupted\""), "{name}: the terminal was delivered: {last}");
        }
        assert_eq!(processes_with_mark(&mark), 0, "{name}: no harness process left behind");
        assert!(TcpStream::connect(&server.addr).is_err(), "{name}: no longer listening");
        let mut stderr = String::new();
        server.child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        assert!(stderr.contains("every run ended"), "{stderr}");
        assert!(!stderr.contains(&server.token), "the token is never logged");
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The soft and hard "Max open files" of a process, as `/proc/<pid>/limits` shows them.
fn open_files_of(pid: u32) -> (String, String) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits.lines().find(|l| l.starts_with("Max open files")).unwrap();
    let mut fields = line["Max open files".len()..].split_whitespace();
    (fields.next().unwrap().to_string(), fields.next().unwrap().to_string())
}

#[test]
fn serve_takes_its_hard_open_file_limit_and_its_harnesses_keep_the_one_it_was_given() {
    use std::os::unix::process::CommandExt;
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit into the struct it is given.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) }, 0);
    if limit.rlim_max <= 256 {
        eprintln!("the hard limit is {}: nothing to raise", limit.rlim_max);
        return;
    }
    let dir = scratch("open-files");
    let mark = format!("serve-open-files-{}", std::process::id());
    let mut command = Command::new(BIN);
    let hard = limit.rlim_max;
    // SAFETY: the closure makes one async-signal-safe call in the child before its exec.
    unsafe {
        command.pre_exec(move || {
            let lowered = libc::rlimit { rlim_cur: 256, rlim_max: hard };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lowered) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    let mut server = serve_from(command, &config_with_hanging_agent(&dir, &mark));
    let hard_text = if hard == libc::RLIM_INFINITY { "unlimited".to_string() } else { hard.to_string() };
    let (soft, _) = open_files_of(server.child.id());
    assert_ne!(soft, "256", "serve raised its limit");
    if hard != libc::RLIM_INFINITY {
        assert_eq!(soft, hard_text);
    }
    let (status, body) = http(&server.addr, "POST", "/v1/runs", &server.token, r#"{"agent":"claude","prompt":"hi"}"#);
    assert_eq!(status, 201, "{body}");
    let deadline = Instant::now() + Duration::from_secs(10);
    let harness = loop {
        if let Some(&pid) = pids_with_mark(&mark).first() {
            break pid;
        }
        assert!(Instant::now() < deadline, "the harness started");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(open_files_of(harness), ("256".to_string(), hard_text), "the harness has the limit serve was given");
    signal(&server.child, libc::SIGTERM);
    assert!(wait_exit(&mut server.child, Duration::from_secs(20)).success());
    assert_eq!(processes_with_mark(&mark), 0);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn serve_refuses_a_bad_config_naming_the_key() {
    let dir = scratch("bad-config");
    let path = dir.join("serve.toml");
    std::fs::write(&path, "[limits]\nrun_per_tenant = 3\n").unwrap();
    let out = Command::new(BIN).args(["serve", "--config"]).arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("run_per_tenant") && stderr.contains("serve.toml"), "{stderr}");
    let out = Command::new(BIN).args(["serve", "--listen", "not-an-address"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--listen"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_cluster_commands_say_what_is_missing() {
    // A worker needs NATS.
    let out = Command::new(BIN).args(["worker"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--nats"), "{stderr}");
    // Nothing listens there: both fail at once, naming the server (without its credentials).
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("nats://user:secret@127.0.0.1:{port}");
    for args in [vec!["worker", "--nats", &url], vec!["serve", "--listen", "127.0.0.1:0", "--nats", &url]] {
        let out = Command::new(BIN).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("cannot connect to NATS") && stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
        assert!(!stderr.contains("secret"), "no credentials in messages: {stderr}");
    }
    let out = Command::new(BIN).args(["worker", "--nats", "nats://h:1", "--max-runs", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-runs"));
}

#[test]
fn view_writes_one_self_contained_page() {
    let dir = scratch("view");
    let out_path = dir.join("run.html");
    let out = Command::new(BIN)
        .args(["view", "--agent", "claude"])
        .arg(golden("claude", "s3-read-edit.input.jsonl"))
        .arg("-o")
        .arg(&out_path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("run completed"));
    let html = std::fs::read_to_string(&out_path).unwrap();
    assert!(html.starts_with("<!doctype html>"));
    assert!(html.contains("AgentstreamTimeline") && html.contains("agentstream-data"));
    assert!(
        !html.contains("src=\"") && !html.contains("href=\"") && !html.contains("https://"),
        "no external reference"
    );
    assert!(html.contains("toolu_a5268f7d9f764381ba47"), "the run's tool calls are in it");
    // To standard output without -o; an unknown agent is an error listing the valid ones.
    let out =
        Command::new(BIN).args(["view", "-a", "codex"]).arg(golden("codex", "s2-bash.input.jsonl")).output().unwrap();
    assert!(out.status.success() && out.stdout.starts_with(b"<!doctype html>"));
    let out = Command::new(BIN).args(["view", "-a", "gpt", "x.jsonl"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("claude"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn token_prints_a_tenant_entry_whose_hash_matches() {
    let out = Command::new(BIN).args(["token", "--tenant", "acme"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let token = text.lines().find(|l| l.starts_with("ast_")).unwrap().to_string();
    assert!(text.contains("name = \"acme\""));
    let mut hash = Command::new(BIN)
        .args(["token", "--hash", "--tenant", "acme"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    hash.stdin.take().unwrap().write_all(format!("{token}\n").as_bytes()).unwrap();
    let hashed = String::from_utf8(hash.wait_with_output().unwrap().stdout).unwrap();
    assert!(!hashed.contains(&token), "only the hash");
    let line = hashed.lines().find(|l| l.starts_with("token_sha256")).unwrap();
    assert!(text.contains(line), "the same digest both ways");
    // And serve accepts that token for that tenant.
    let dir = scratch("token");
    let config = dir.join("serve.toml");
    std::fs::write(&config, &hashed).unwrap();
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().unwrap().unwrap();
        assert!(!line.contains("token of tenant"), "no generated tenant when one is configured");
        if let Some(rest) = line.strip_prefix("agentstream serve: listening on http://") {
            break rest.to_string();
        }
    };
    assert_eq!(http(&addr, "GET", "/v1/runs", &token, "").0, 200);
    assert_eq!(http(&addr, "GET", "/v1/runs", "ast_wrong", "").0, 401);
    signal(&child, libc::SIGTERM);
    assert!(wait_exit(&mut child, Duration::from_secs(20)).success());
    let _ = std::fs::remove_dir_all(dir);
}
