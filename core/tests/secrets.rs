//! The secret-shape corpus (`tests/secrets/corpus.jsonl`) through every output path of the core:
//! each harness's own recorded output with every corpus entry as a shell command, an edit's
//! new text and a written file (`tests/secrets/traces/`, made by `make_traces.py`). With
//! redaction off every secret reaches the output (so the fixtures exercise the paths); with
//! redaction on — the default of `parse`, `Decoder`, `replay` and runs — none survives in any
//! content event, run-stream envelope of a masked channel, or hook event.

use std::path::{Path, PathBuf};

use agentstream_core::redact::Redactor;
use agentstream_core::replay::{ReplayOptions, replay};
use agentstream_core::{Agent, Channel, Decoder, DecoderOptions, OutputEvent, RedactionPolicy};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/secrets")
}

/// Every secret of the corpus, as it would appear inside JSON text.
fn secrets() -> Vec<String> {
    let corpus = std::fs::read_to_string(dir().join("corpus.jsonl")).unwrap();
    let mut out = Vec::new();
    for line in corpus.lines().filter(|l| !l.trim().is_empty()) {
        let entry: serde_json::Value = serde_json::from_str(line).unwrap();
        for s in entry["secrets"].as_array().unwrap() {
            let s = s.as_str().unwrap();
            let quoted = serde_json::to_string(s).unwrap();
            out.push(quoted[1..quoted.len() - 1].to_string());
        }
    }
    assert!(out.len() >= 24, "the corpus");
    out
}

fn trace(agent: Agent) -> Vec<u8> {
    std::fs::read(dir().join("traces").join(format!("{}.input.jsonl", agent.name()))).unwrap()
}

fn decode(agent: Agent, bytes: &[u8], redaction: RedactionPolicy, chunk: usize) -> Vec<OutputEvent> {
    let mut d = Decoder::with_options(agent, DecoderOptions::default().with_redaction(redaction));
    let mut events = Vec::new();
    for c in bytes.chunks(chunk) {
        events.extend(d.feed(c));
    }
    events.extend(d.finish());
    events
}

fn survivors<'s>(text: &str, secrets: &'s [String]) -> Vec<&'s str> {
    secrets.iter().filter(|s| text.contains(s.as_str())).map(String::as_str).collect()
}

#[test]
fn every_secret_reaches_an_input_field_when_redaction_is_off() {
    let secrets = secrets();
    for agent in Agent::ALL {
        let out: String = decode(agent, &trace(agent), RedactionPolicy::disabled(), 1 << 20)
            .iter()
            .map(OutputEvent::to_json)
            .collect();
        let missing: Vec<&String> = secrets.iter().filter(|s| !out.contains(s.as_str())).collect();
        assert!(missing.is_empty(), "{agent}: the fixture never carries {missing:?} into an event");
    }
}

#[test]
fn no_secret_survives_parse_or_the_decoder_at_any_chunking() {
    let secrets = secrets();
    for agent in Agent::ALL {
        let bytes = trace(agent);
        let whole: String = agentstream_core::parse(agent, &bytes).iter().map(OutputEvent::to_json).collect();
        assert_eq!(survivors(&whole, &secrets), Vec::<&str>::new(), "{agent}: parse");
        assert!(whole.contains("[redacted]"), "{agent}");
        for chunk in [3, 4096] {
            let chunked: String =
                decode(agent, &bytes, RedactionPolicy::default(), chunk).iter().map(OutputEvent::to_json).collect();
            assert_eq!(chunked, whole, "{agent}: chunks of {chunk}");
        }
    }
}

#[test]
fn no_secret_survives_a_replayed_run_or_its_hooks() {
    let secrets = secrets();
    for agent in Agent::ALL {
        let r = replay(agent, &trace(agent), &ReplayOptions::default());
        for env in &r.items {
            // The raw channels are the process's bytes, verbatim by design (see redact's docs).
            if matches!(env.channel(), Channel::Stdout | Channel::Stderr) {
                continue;
            }
            let text = env.to_json();
            assert_eq!(survivors(&text, &secrets), Vec::<&str>::new(), "{agent}: item {}", env.sequence);
        }
        for hook in &r.hooks {
            let text = serde_json::to_string(hook).unwrap();
            assert_eq!(survivors(&text, &secrets), Vec::<&str>::new(), "{agent}: hook {}", hook.event_type);
        }
    }
}

#[test]
fn no_secret_survives_the_raw_lines_masked_for_others() {
    // The server serves raw stdout lines to its clients through Redactor::mask_raw_text: the
    // same corpus, every harness, nothing left; a masked line is still one JSON line.
    let secrets = secrets();
    for agent in Agent::ALL {
        let raw = String::from_utf8(trace(agent)).unwrap();
        assert!(survivors(&raw, &secrets).len() == secrets.len(), "{agent}: the raw lines carry every secret");
        let mut redactor = Redactor::new();
        let mut masked = String::new();
        for line in raw.split_inclusive('\n') {
            let m = redactor.mask_raw_text(line);
            assert!(m.ends_with('\n') == line.ends_with('\n'), "the newline is kept");
            if !line.trim().is_empty() {
                serde_json::from_str::<serde_json::Value>(m.trim_end()).expect("still JSON");
            }
            masked.push_str(&m);
        }
        let left = survivors(&masked, &secrets);
        assert!(left.is_empty(), "{agent}: {left:?} survive in the masked raw lines");
        // Lines merged into one item (a reader that fell behind): the same, line by line.
        let merged = Redactor::new().mask_raw_text(&raw).into_owned();
        assert_eq!(merged, masked, "{agent}: merged lines are masked as the lines one by one");
    }
    // Text that is not JSON (stderr) is masked as text.
    let mut redactor = Redactor::new();
    // A PEM key printed line by line (`cat key.pem`): its body lines are masked too, and the
    // block ends at its END line, or at the first line that cannot be part of it.
    let pem = "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7Zq3Lm9Np4Rs6Tv8Wz1Ab3Cd5Ef\n\
               q2Lm9Np4Rs6Tv8Wz1Ab3Cd5EfXy7Kq2Lm9Np4Rs6==\n-----END RSA PRIVATE KEY-----\nafter\n\
               -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nls: no END line came\n";
    let mut pem_masker = Redactor::new();
    let lines: Vec<String> = pem.split_inclusive('\n').map(|l| pem_masker.mask_raw_text(l).into_owned()).collect();
    assert_eq!(
        lines,
        [
            "before\n",
            "[redacted]\n",
            "[redacted]\n",
            "[redacted]\n",
            "[redacted]\n",
            "after\n",
            "[redacted]\n",
            "[redacted]\n",
            "ls: no END line came\n"
        ]
    );
    assert_eq!(Redactor::new().mask_raw_text(pem), lines.concat(), "merged lines: the same");
    // Indented (a key in a YAML file), with a stderr line between two body lines: the block
    // goes on on stdout; the stderr line is judged as stderr.
    use agentstream_core::redact::RawStream::{Stderr, Stdout};
    let mut masker = Redactor::new();
    let printed = [
        (Stdout, "key: |\n"),
        (Stdout, "  -----BEGIN OPENSSH PRIVATE KEY-----\n"),
        (Stdout, "  b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"),
        (Stderr, "warning: 42\n"),
        (Stdout, "  QyNTUxOQAAACBWq3Lm9Np4Rs6Tv8Wz1Ab3Cd5EfXy7Kq2Lm9Np4Rs6Tv8AAAAJgWz1Ab3\n"),
        (Stderr, "42\n"),
        (Stdout, "  -----END OPENSSH PRIVATE KEY-----\n"),
        (Stdout, "next: 1\n"),
    ];
    let shown: Vec<String> = printed.iter().map(|(s, l)| masker.mask_raw_stream_text(*s, l).into_owned()).collect();
    assert_eq!(
        shown,
        [
            "key: |\n",
            "  [redacted]\n",
            "[redacted]\n",
            "warning: 42\n",
            "[redacted]\n",
            "42\n",
            "[redacted]\n",
            "next: 1\n"
        ]
    );
    // A header named, not printed as a key's first line (grep output, a log message): its
    // line is masked as one text; the lines after it are not a key's body.
    let mut masker = Redactor::new();
    let mentioned = [
        "src/keys.py:12:    if line == \"-----BEGIN RSA PRIVATE KEY-----\":\n",
        "\n",
        "deadbeef\n",
        "log: saw -----BEGIN PRIVATE KEY----- in the upload, refused\n",
        "cafe42\n",
    ];
    let shown: Vec<String> = mentioned.iter().map(|l| masker.mask_raw_text(l).into_owned()).collect();
    assert_eq!(&shown[1..3], ["\n", "deadbeef\n"], "{shown:?}");
    assert_eq!(shown[4], "cafe42\n", "{shown:?}");
    // A key printed with escapes or colours after its header opens a body all the same: a JSON
    // string cut into pieces (stderr is handed on mid-line after a while), a shell's `echo` with
    // a literal `\n`, a terminal colour reset.
    let body = ["MIIEowIBAAKCAQEA7Zq3Lm9Np4Rs6Tv8Wz1Ab3Cd5Ef", "q2Lm9Np4Rs6Tv8Wz1Ab3Cd5EfXy7Kq2Lm9Np4Rs6"];
    for printed in [
        vec![
            format!("{{\"msg\":\"-----BEGIN RSA PRIVATE KEY-----\\n{}", &body[0][..20]),
            format!("{}\\n{}\\n", &body[0][20..], body[1]),
            "-----END RSA PRIVATE KEY-----\"}\n".to_string(),
        ],
        vec![
            format!("-----BEGIN RSA PRIVATE KEY-----\\n{}\\n\n", body[0]),
            format!("{}\n", body[1]),
            "-----END RSA PRIVATE KEY-----\n".to_string(),
        ],
        vec![
            "\u{1b}[1m-----BEGIN RSA PRIVATE KEY-----\u{1b}[0m\n".to_string(),
            format!("{}\n", body[0]),
            format!("\u{1b}[2m{}\u{1b}[0m\n", body[1]),
            "-----END RSA PRIVATE KEY-----\n".to_string(),
        ],
    ] {
        let mut masker = Redactor::new();
        let shown: String = printed.iter().map(|l| masker.mask_raw_stream_text(Stderr, l).into_owned()).collect();
        assert!(!shown.contains("Rs6Tv8Wz1Ab3") && !shown.contains("Zq3Lm9Np"), "{printed:?} → {shown:?}");
    }
    let stderr = "error: auth failed for sk-proj-Tz9vQ2mX8bL4nR7kW1cY5dF3\n";
    assert!(!redactor.mask_raw_text(stderr).contains("sk-proj-Tz9vQ2mX8bL4nR7kW1cY5dF3"));
    // Remembered: the same secret later, without its shape, is masked too.
    assert!(
        !redactor.mask_raw_text("Tz9vQ2mX8bL4nR7kW1cY5dF3 sk-proj-Tz9vQ2mX8bL4nR7kW1cY5dF3\n").contains("sk-proj-Tz9")
    );
    // Nothing secret-shaped: the same text, not a copy.
    let plain = "{\"type\":\"assistant\",\"text\":\"hello\"}\n";
    assert!(matches!(redactor.mask_raw_text(plain), std::borrow::Cow::Borrowed(_)));
}
