//! `agentstream serve`, `agentstream view` and `agentstream token`: the HTTP server, the offline
//! run page, and tenant tokens (see the `agentstream-server` crate and docs/server.md). The
//! config loading and the shutdown signal are shared with `agentstream worker`.

use std::io::{self, Read, Write};
use std::path::Path;
use std::process::ExitCode;

use agentstream_core::Agent;
use agentstream_core::redact::{RedactionPolicy, Redactor};
use agentstream_core::replay::{ReplayOptions, replay};
use agentstream_server::auth::{TokenDigest, new_token};
use agentstream_server::config::parse_listen;
use agentstream_server::{ServeConfig, Server};

/// serve.toml at `path`, or the embedded default; `--nats URL` over `[nats] url`. An error is
/// printed as `agentstream <command>: …` and is the exit code 2.
pub(crate) fn load_config(command: &str, path: Option<&Path>, nats: Option<&str>) -> Result<ServeConfig, ExitCode> {
    let mut config = match path {
        Some(path) => ServeConfig::load(path).map_err(|e| {
            stderr_line!("agentstream {command}: {e}");
            ExitCode::from(2)
        })?,
        None => ServeConfig::default(),
    };
    if let Some(url) = nats {
        config.set_nats_url(url).map_err(|e| {
            stderr_line!("agentstream {command}: {e}");
            ExitCode::from(2)
        })?;
    }
    Ok(config)
}

/// A multi-threaded runtime named after the command.
pub(crate) fn runtime(command: &str) -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name(format!("agentstream-{command}"))
        .build()
        .map_err(|e| {
            stderr_line!("agentstream {command}: cannot start the async runtime: {e}");
            ExitCode::from(1)
        })
}

/// `agentstream serve [--config FILE] [--listen ADDR] [--nats URL]`.
pub fn serve_command(config_path: Option<&Path>, listen: Option<&str>, nats: Option<&str>) -> ExitCode {
    // Each connection is a descriptor: the server takes its hard limit (before the configuration,
    // whose default `max_connections` follows the limit); its harnesses get the limit it had.
    if let Err(e) = agentstream_core::runner::open_files::raise_open_file_limit() {
        stderr_line!("agentstream serve: {e} (it stays as it was)");
    }
    let mut config = match load_config("serve", config_path, nats) {
        Ok(c) => c,
        Err(code) => return code,
    };
    if let Some(listen) = listen {
        match parse_listen(listen) {
            Ok(addr) => config.listen = addr,
            Err(e) => {
                stderr_line!("agentstream serve: --listen {e}");
                return ExitCode::from(2);
            }
        }
    }
    let token = config.ensure_tenant();
    let runtime = match runtime("serve") {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    runtime.block_on(async move {
        let server = match Server::bind(&config).await {
            Ok(s) => s,
            Err(e) if e.kind() == io::ErrorKind::Other => {
                stderr_line!("agentstream serve: {e}");
                return ExitCode::from(1);
            }
            Err(e) => {
                stderr_line!("agentstream serve: cannot listen on {}: {e}", config.listen);
                return ExitCode::from(1);
            }
        };
        let addr = server.local_addr();
        let local = token.as_deref().map(|t| (t, server.sign_in_code("local", t)));
        let generated = local.is_some();
        if let Err(e) = announce(&config, addr, local) {
            if generated {
                // The token is shown once and stored nowhere: without it nobody could use this server.
                stderr_line!("agentstream serve: cannot print the generated token to standard output ({e}): stopping");
                return ExitCode::from(1);
            }
            stderr_line!("agentstream serve: cannot write to standard output ({e}); serving on {addr} anyway");
        }
        let report = match server.run(shutdown_signal("serve")).await {
            Ok(r) => r,
            Err(e) => {
                stderr_line!("agentstream serve: {e}");
                return ExitCode::from(1);
            }
        };
        stderr_line!(
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
/// token — printed here once and never again (only its SHA-256 is kept) — with a one-time
/// sign-in link for the live view (the token itself in a link would stay in browser history).
fn announce(config: &ServeConfig, addr: std::net::SocketAddr, local: Option<(&str, String)>) -> io::Result<()> {
    let mut out = io::stdout().lock();
    let base = format!("http://{addr}");
    writeln!(out, "agentstream serve: listening on {base}")?;
    let agents: Vec<&str> = config.agents.keys().map(String::as_str).collect();
    match &config.nats {
        None => {
            writeln!(out, "agentstream serve: agents: {}", agents.join(", "))?;
        }
        Some(nats) => {
            writeln!(
                out,
                "agentstream serve: cluster: NATS at {} (prefix {:?}); runs execute on `agentstream worker`s",
                agentstream_server::nats::redact_url(&nats.url),
                nats.prefix
            )?;
        }
    }
    match local {
        Some((token, code)) => {
            writeln!(out, "agentstream serve: token of tenant \"local\" (shown once, not stored): {token}")?;
            writeln!(out, "agentstream serve: live view (the link signs in once): {base}/#code={code}")?;
            let example = agents.first().copied().unwrap_or("claude");
            writeln!(
                out,
                "agentstream serve: try: curl -s -H 'Authorization: Bearer {token}' -d '{{\"agent\":\"{example}\",\"prompt\":\"hello\"}}' {base}/v1/runs"
            )?;
        }
        None => {
            let names: Vec<&str> = config.tenants.iter().map(|t| t.name.as_str()).collect();
            writeln!(out, "agentstream serve: tenants: {}", names.join(", "))?;
        }
    }
    out.flush()
}

/// SIGTERM or SIGINT (Ctrl-C). A second signal while shutting down only says so: the runs'
/// harness processes are being stopped, and leaving now would leave them behind.
#[cfg(unix)]
pub(crate) async fn shutdown_signal(command: &'static str) {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).expect("a SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("a SIGINT handler");
    let name = tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    };
    stderr_line!("agentstream {command}: {name}: shutting down (no new runs; ending the runs in flight)");
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            stderr_line!("agentstream {command}: already shutting down; waiting for the harness processes to end");
        }
    });
}

/// Ctrl-C where there are no Unix signals (the server runs no harness there: runs are
/// `unsupported`, see agentstream_core::runner::process).
#[cfg(not(unix))]
pub(crate) async fn shutdown_signal(command: &'static str) {
    let _ = tokio::signal::ctrl_c().await;
    stderr_line!("agentstream {command}: Ctrl-C: shutting down");
}

/// `agentstream view --agent NAME FILE [-o OUT]`.
pub fn view_command(agent: &str, file: &Path, output: Option<&Path>, redact: bool) -> ExitCode {
    let agent: Agent = match agent.parse() {
        Ok(a) => a,
        Err(e) => {
            stderr_line!("agentstream view: {e}");
            return ExitCode::from(2);
        }
    };
    let from_stdin = file.as_os_str() == "-";
    let shown = file.display();
    let mut input = Vec::new();
    // One byte past the limit tells a file that is too large from one that fits.
    let read = if from_stdin {
        io::stdin().lock().take(VIEW_MAX_INPUT + 1).read_to_end(&mut input)
    } else {
        std::fs::File::open(file).and_then(|f| f.take(VIEW_MAX_INPUT + 1).read_to_end(&mut input))
    };
    if let Err(e) = read {
        stderr_line!("agentstream view: cannot read {shown}: {e}");
        return ExitCode::from(1);
    }
    if input.len() as u64 > VIEW_MAX_INPUT {
        stderr_line!(
            "agentstream view: {shown} is larger than {} MiB: the page is built in memory and a browser could not show it \
             (`agentstream parse` decodes input of any size)",
            VIEW_MAX_INPUT >> 20
        );
        return ExitCode::from(1);
    }
    let title = if from_stdin {
        "standard input".to_string()
    } else {
        file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| shown.to_string())
    };
    let options = ReplayOptions {
        run_id: title.clone(),
        redaction: RedactionPolicy { enabled: redact },
        ..ReplayOptions::default()
    };
    let mut run = replay(agent, &input, &options);
    if redact {
        // The page embeds the raw lines too, and a page is shared: masked as the server masks
        // what it serves.
        let mut redactor = Redactor::new();
        for env in &mut run.items {
            env.item.mask_raw(&mut redactor);
        }
    }
    if run.stats.events == 0 && run.stats.lines > run.stats.blank_lines {
        // Said before anything is written: a wrong --agent must not overwrite a good page.
        stderr_line!(
            "agentstream view: nothing was decoded: the input is not {agent}'s JSONL output (`agentstream parse -a {agent}` says what its lines were); nothing written"
        );
        return ExitCode::from(1);
    }
    let html = agentstream_server::view::offline_page(&title, agent.name(), &run);
    let (written, target) = match output {
        Some(path) if path != Path::new("-") => (std::fs::write(path, &html), path.display().to_string()),
        _ => {
            let mut out = io::stdout().lock();
            (out.write_all(html.as_bytes()).and_then(|()| out.flush()), "standard output".to_string())
        }
    };
    if let Err(e) = written {
        if output.is_none_or(|p| p == Path::new("-")) {
            return crate::run::output_failed("view", &e);
        }
        stderr_line!("agentstream view: cannot write {target}: {e}");
        return ExitCode::from(1);
    }
    let state = serde_json::to_value(&run.outcome).ok().and_then(|v| v["state"].as_str().map(str::to_string));
    stderr_line!(
        "agentstream view ({agent}): {} envelopes, {} content events, run {}{}",
        run.items.len(),
        run.stats.events,
        state.as_deref().unwrap_or("ended"),
        output.filter(|p| *p != Path::new("-")).map(|p| format!(" → {}", p.display())).unwrap_or_default(),
    );
    ExitCode::SUCCESS
}

/// The largest input `view` reads.
const VIEW_MAX_INPUT: u64 = 64 << 20;

/// `agentstream token [--tenant NAME] [--hash]`.
pub fn token_command(tenant: &str, hash_stdin: bool) -> ExitCode {
    // The entry printed must be one `serve` accepts.
    if let Err(e) = agentstream_server::config::check_name(tenant) {
        stderr_line!("agentstream token: --tenant {tenant:?}: {e}");
        return ExitCode::from(2);
    }
    let token = if hash_stdin {
        let mut text = String::new();
        if let Err(e) = io::stdin().read_to_string(&mut text) {
            stderr_line!("agentstream token: cannot read the token from standard input: {e}");
            return ExitCode::from(1);
        }
        let token = text.trim().to_string();
        if token.is_empty() {
            stderr_line!("agentstream token: --hash reads a token from standard input, and it was empty");
            return ExitCode::from(2);
        }
        token
    } else {
        new_token()
    };
    let digest = TokenDigest::of(&token).to_hex();
    let mut text = String::new();
    if !hash_stdin {
        text.push_str("# the bearer token: give it to the client; it is stored nowhere\n");
        text.push_str(&format!("{token}\n# add to serve.toml:\n"));
    }
    // The name holds no character TOML would need escaped (check_name).
    text.push_str(&format!("[[tenant]]\nname = \"{tenant}\"\ntoken_sha256 = \"{digest}\"\n"));
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => crate::run::output_failed("token", &e),
    }
}
