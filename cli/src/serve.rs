//! `agentstream serve`, `agentstream view` and `agentstream token`: the HTTP server, the offline
//! run page, and tenant tokens (see the `agentstream-server` crate and docs/server.md).

use std::io::{self, Read, Write};
use std::path::Path;
use std::process::ExitCode;

use agentstream_core::Agent;
use agentstream_core::replay::{ReplayOptions, replay};
use agentstream_server::auth::{TokenDigest, new_token};
use agentstream_server::config::parse_listen;
use agentstream_server::{ServeConfig, Server};

/// `agentstream serve [--config FILE] [--listen ADDR]`.
pub fn serve_command(config_path: Option<&Path>, listen: Option<&str>) -> ExitCode {
    let mut config = match config_path {
        Some(path) => match ServeConfig::load(path) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("agentstream serve: {e}");
                return ExitCode::from(2);
            }
        },
        None => ServeConfig::default(),
    };
    if let Some(listen) = listen {
        match parse_listen(listen) {
            Ok(addr) => config.listen = addr,
            Err(e) => {
                eprintln!("agentstream serve: --listen {e}");
                return ExitCode::from(2);
            }
        }
    }
    let token = config.ensure_tenant();
    let runtime =
        match tokio::runtime::Builder::new_multi_thread().enable_all().thread_name("agentstream-serve").build() {
            Ok(rt) => rt,
            Err(e) => {
                eprintln!("agentstream serve: cannot start the async runtime: {e}");
                return ExitCode::from(1);
            }
        };
    runtime.block_on(async move {
        let server = match Server::bind(&config).await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("agentstream serve: cannot listen on {}: {e}", config.listen);
                return ExitCode::from(1);
            }
        };
        let addr = server.local_addr();
        announce(&config, addr, token.as_deref());
        let report = match server.run(shutdown_signal()).await {
            Ok(r) => r,
            Err(e) => {
                eprintln!("agentstream serve: {e}");
                return ExitCode::from(1);
            }
        };
        eprintln!(
            "agentstream serve: stopped ({} run(s) were running; {}; {})",
            report.running_at_signal,
            if report.all_runs_ended { "every run ended" } else { "SOME RUNS DID NOT END" },
            if report.connections_closed {
                "every stream delivered its end"
            } else {
                "some connections were still open"
            },
        );
        if report.all_runs_ended { ExitCode::SUCCESS } else { ExitCode::from(1) }
    })
}

/// What a person (and a test) needs to start: the address and, for the generated tenant, the
/// token — printed here once and never again (only its SHA-256 is kept).
fn announce(config: &ServeConfig, addr: std::net::SocketAddr, token: Option<&str>) {
    let mut out = io::stdout().lock();
    let base = format!("http://{addr}");
    let _ = writeln!(out, "agentstream serve: listening on {base}");
    let agents: Vec<&str> = config.agents.keys().map(String::as_str).collect();
    let _ = writeln!(out, "agentstream serve: agents: {}", agents.join(", "));
    match token {
        Some(token) => {
            let _ = writeln!(out, "agentstream serve: token of tenant \"local\" (shown once, not stored): {token}");
            let _ = writeln!(out, "agentstream serve: live view: {base}/#token={token}");
            let example = agents.first().copied().unwrap_or("claude");
            let _ = writeln!(
                out,
                "agentstream serve: try: curl -s -H 'Authorization: Bearer {token}' -d '{{\"agent\":\"{example}\",\"prompt\":\"hello\"}}' {base}/v1/runs"
            );
        }
        None => {
            let names: Vec<&str> = config.tenants.iter().map(|t| t.name.as_str()).collect();
            let _ = writeln!(out, "agentstream serve: tenants: {}", names.join(", "));
        }
    }
    let _ = out.flush();
}

/// SIGTERM or SIGINT (Ctrl-C). A second signal while shutting down only says so: the runs'
/// harness processes are being stopped, and leaving now would leave them behind.
#[cfg(unix)]
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("a SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("a SIGINT handler");
    let name = tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    };
    eprintln!("agentstream serve: {name}: shutting down (no new connections or runs; ending the runs in flight)");
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            eprintln!("agentstream serve: already shutting down; waiting for the harness processes to end");
        }
    });
}

/// Ctrl-C where there are no Unix signals (the server runs no harness there: runs are
/// `unsupported`, see agentstream_core::runner::process).
#[cfg(not(unix))]
async fn shutdown_signal() {
    let _ = tokio::signal::ctrl_c().await;
    eprintln!("agentstream serve: Ctrl-C: shutting down");
}

/// `agentstream view --agent NAME FILE [-o OUT]`.
pub fn view_command(agent: &str, file: &str, output: Option<&Path>) -> ExitCode {
    let agent: Agent = match agent.parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("agentstream view: {e}");
            return ExitCode::from(2);
        }
    };
    let mut input = Vec::new();
    let read = if file == "-" {
        io::stdin().lock().read_to_end(&mut input).map(|_| ())
    } else {
        std::fs::read(file).map(|bytes| input = bytes)
    };
    if let Err(e) = read {
        eprintln!("agentstream view: cannot read {file}: {e}");
        return ExitCode::from(1);
    }
    let title = if file == "-" {
        "standard input".to_string()
    } else {
        Path::new(file).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| file.to_string())
    };
    let options = ReplayOptions { run_id: title.clone(), ..ReplayOptions::default() };
    let run = replay(agent, &input, &options);
    let html = agentstream_server::view::offline_page(&title, agent.name(), &run);
    let written = match output {
        Some(path) if path != Path::new("-") => std::fs::write(path, &html),
        _ => io::stdout().lock().write_all(html.as_bytes()),
    };
    if let Err(e) = written {
        eprintln!("agentstream view: cannot write: {e}");
        return ExitCode::from(1);
    }
    let state = serde_json::to_value(&run.outcome).ok().and_then(|v| v["state"].as_str().map(str::to_string));
    eprintln!(
        "agentstream view ({agent}): {} envelopes, {} content events, run {}{}",
        run.items.len(),
        run.stats.events,
        state.as_deref().unwrap_or("ended"),
        output.filter(|p| *p != Path::new("-")).map(|p| format!(" → {}", p.display())).unwrap_or_default(),
    );
    ExitCode::SUCCESS
}

/// `agentstream token [--tenant NAME] [--hash]`.
pub fn token_command(tenant: &str, hash_stdin: bool) -> ExitCode {
    let token = if hash_stdin {
        let mut text = String::new();
        if let Err(e) = io::stdin().read_to_string(&mut text) {
            eprintln!("agentstream token: cannot read the token from standard input: {e}");
            return ExitCode::from(1);
        }
        let token = text.trim().to_string();
        if token.is_empty() {
            eprintln!("agentstream token: --hash reads a token from standard input, and it was empty");
            return ExitCode::from(2);
        }
        token
    } else {
        new_token()
    };
    let digest = TokenDigest::of(&token).to_hex();
    if !hash_stdin {
        println!("# the bearer token: give it to the client; it is stored nowhere");
        println!("{token}");
        println!("# add to serve.toml:");
    }
    println!("[[tenant]]\nname = {tenant:?}\ntoken_sha256 = \"{digest}\"");
    ExitCode::SUCCESS
}
