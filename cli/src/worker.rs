//! `agentstream worker`: runs harnesses for a cluster of `serve` instances (see
//! `agentstream_server::nats::Worker` and docs/server.md).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use agentstream_server::nats::{Worker, redact_url};

use crate::serve::{load_config, runtime, shutdown_signal};

/// `agentstream worker [--config FILE] [--nats URL] [--id ID] [--max-runs N]`.
pub fn worker_command(
    config_path: Option<&Path>,
    nats: Option<&str>,
    id: Option<String>,
    max_runs: Option<usize>,
) -> ExitCode {
    let mut config = match load_config("worker", config_path, nats) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let Some(nats) = config.nats.clone() else {
        stderr_line!(
            "agentstream worker: no NATS server: pass --nats nats://host:4222 or set [nats] url in the config \
             (a worker takes its runs from the cluster)"
        );
        return ExitCode::from(2);
    };
    if let Some(id) = id {
        config.worker.id = id;
    }
    if let Some(n) = max_runs {
        if n == 0 {
            stderr_line!("agentstream worker: --max-runs must be at least 1");
            return ExitCode::from(2);
        }
        config.worker.max_runs = n;
    }
    let runtime = match runtime("worker") {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    runtime.block_on(async move {
        let worker = match Worker::connect(&config, nats.clone(), config.worker.clone()).await {
            Ok(w) => w,
            Err(e) => {
                stderr_line!("agentstream worker: {e}");
                return ExitCode::from(1);
            }
        };
        {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(
                out,
                "agentstream worker: {} connected to NATS at {} (prefix {:?}); agents: {}; up to {} run(s) at once",
                worker.id(),
                redact_url(&nats.url),
                nats.prefix,
                worker.agents().join(", "),
                config.worker.max_runs
            );
            let _ = out.flush();
        }
        match worker.run(shutdown_signal("worker")).await {
            Ok(report) => {
                stderr_line!(
                    "agentstream worker: stopped ({} run(s) were running; {})",
                    report.running_at_signal,
                    if report.all_runs_ended { "every run ended" } else { "SOME RUNS DID NOT END" }
                );
                if report.all_runs_ended { ExitCode::SUCCESS } else { ExitCode::from(1) }
            }
            Err(e) => {
                stderr_line!("agentstream worker: {e}");
                ExitCode::from(1)
            }
        }
    })
}
