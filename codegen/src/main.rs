//! `agentstream-codegen`: writes the Python, TypeScript and Go declarations of agentstream's
//! wire types from the JSON Schema the core generates (`core/schema/events.schema.json`).
//!
//! ```text
//! cargo run -p agentstream-codegen              # (re)write every generated file
//! cargo run -p agentstream-codegen -- --check   # fail when a checked-in file differs
//! cargo run -p agentstream-codegen -- --lang go # one language only
//! ```
//!
//! `make generate` regenerates the schema and then runs this; `make check-generated` (part of
//! `make test`) runs both checks.

mod emit;
mod model;
mod text;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use emit::{LANGUAGES, REGENERATE, SCHEMA_PATH};
use model::Model;

struct Args {
    check: bool,
    root: PathBuf,
    langs: Vec<String>,
}

const USAGE: &str = "usage: agentstream-codegen [--check] [--root DIR] [--lang NAME]...";

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        check: false,
        root: Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap_or(Path::new(".")).to_path_buf(),
        langs: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--check" => args.check = true,
            "--root" => args.root = it.next().ok_or("--root needs a directory")?.into(),
            "--lang" => {
                let name = it.next().ok_or("--lang needs a name")?;
                if !LANGUAGES.iter().any(|l| l.name == name) {
                    let known: Vec<&str> = LANGUAGES.iter().map(|l| l.name).collect();
                    return Err(format!("unknown language {name:?}: expected one of {}", known.join(", ")));
                }
                args.langs.push(name);
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(args)
}

fn run(args: &Args) -> Result<bool, String> {
    let schema_path = args.root.join(SCHEMA_PATH);
    let text =
        std::fs::read_to_string(&schema_path).map_err(|e| format!("cannot read {}: {e}", schema_path.display()))?;
    let doc = serde_json::from_str(&text).map_err(|e| format!("{SCHEMA_PATH} is not JSON: {e}"))?;
    let model = Model::from_schema(&doc).map_err(|e| format!("{SCHEMA_PATH}: {e}"))?;
    let mut stale = Vec::new();
    for lang in LANGUAGES.iter().filter(|l| args.langs.is_empty() || args.langs.iter().any(|n| n == l.name)) {
        let files = (lang.emit)(&model);
        for dir in lang.owns {
            for entry in std::fs::read_dir(args.root.join(dir)).into_iter().flatten().flatten() {
                let rel = format!("{dir}/{}", entry.file_name().to_string_lossy());
                if files.iter().any(|f| f.path == rel) {
                    continue;
                }
                if args.check {
                    stale.push(rel);
                } else {
                    std::fs::remove_file(entry.path()).map_err(|e| format!("cannot delete {rel}: {e}"))?;
                    println!("deleted {rel} (no longer generated)");
                }
            }
        }
        for file in files {
            let path = args.root.join(&file.path);
            let current = std::fs::read_to_string(&path).ok();
            if current.as_deref() == Some(file.text.as_str()) {
                continue;
            }
            if args.check {
                stale.push(file.path);
            } else {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                }
                std::fs::write(&path, &file.text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                println!("wrote {}", file.path);
            }
        }
    }
    if !stale.is_empty() {
        eprintln!("these generated files differ from what {SCHEMA_PATH} generates:");
        for p in &stale {
            eprintln!("  {p}");
        }
        eprintln!("run `{REGENERATE}` and commit the result (never edit generated files by hand)");
        return Ok(false);
    }
    Ok(true)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("agentstream-codegen: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("agentstream-codegen: {e}");
            ExitCode::from(2)
        }
    }
}
