//! The fuzz targets' checks on stable Rust, without libFuzzer: each target's check over its
//! seed corpus (every golden input, the secret traces) and deterministic mutations of it —
//! byte flips, insertions, deletions, duplications, truncations, splices of two seeds. A quick
//! regression run of every target for CI (`make test-fuzz`); the coverage-guided runs are
//! `fuzz/run.sh` (cargo-fuzz, nightly).

use std::path::{Path, PathBuf};

use agentstream_core::Agent;
use agentstream_fuzz::{
    CORPUS, check_decoder, check_framing, check_pre_scan, check_redaction, check_repair_scan, check_replay,
};

/// Mutations per seed (`AGENTSTREAM_FUZZ_SMOKE_MUTATIONS` overrides).
fn mutations() -> usize {
    std::env::var("AGENTSTREAM_FUZZ_SMOKE_MUTATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(20)
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every seed file: the golden inputs of `agent` (all agents when `None`) and the secret traces.
fn seeds(agent: Option<Agent>) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let golden = repo().join("tests/golden");
    for dir in std::fs::read_dir(&golden).unwrap().flatten() {
        if agent.is_some_and(|a| dir.file_name() != a.name()) || !dir.path().is_dir() {
            continue;
        }
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.path()).collect();
        files.sort();
        for f in files.iter().filter(|f| f.to_string_lossy().ends_with(".input.jsonl")) {
            out.push(std::fs::read(f).unwrap());
        }
    }
    let secret =
        |a: Agent| std::fs::read(repo().join("tests/secrets/traces").join(format!("{}.input.jsonl", a.name())));
    match agent {
        // The secret traces are large: a slice of each is seed enough.
        Some(a) => out.push(secret(a).unwrap()[..16 * 1024].to_vec()),
        None => out.extend(Agent::ALL.iter().map(|a| secret(*a).unwrap()[..4096].to_vec())),
    }
    assert!(!out.is_empty());
    out
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const INTERESTING: &[&[u8]] = &[
    b"\n",
    b"\r\n",
    b"\"",
    b"\\",
    b"\\ud800",
    b"1e999",
    b"[[[[[[[[",
    b"{\"",
    b"}",
    b"\xff",
    b"\xe2\x80",
    b"18446744073709551615",
    b"null",
];

fn mutate(seed: &[u8], other: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(6) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 => {
                let piece = INTERESTING[rng.below(INTERESTING.len())];
                v.splice(at..at, piece.iter().copied());
            }
            2 if !v.is_empty() => {
                let end = (at + rng.below(64)).min(v.len());
                v.drain(at.min(end)..end);
            }
            3 if !v.is_empty() => {
                let end = (at + rng.below(256)).min(v.len());
                let copy = v[at.min(end)..end].to_vec();
                v.splice(at..at, copy);
            }
            4 => v.truncate(at),
            _ => {
                let from = rng.below(other.len() + 1);
                let end = (from + rng.below(512)).min(other.len());
                v.splice(at..at, other[from..end].iter().copied());
            }
        }
    }
    v
}

fn over_mutations(seeds: &[Vec<u8>], mut check: impl FnMut(&[u8])) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for (i, seed) in seeds.iter().enumerate() {
        check(seed);
        let other = &seeds[(i + 1) % seeds.len()];
        for _ in 0..mutations() {
            check(&mutate(seed, other, &mut rng));
        }
    }
}

#[test]
fn framing() {
    over_mutations(&seeds(None), check_framing);
}

#[test]
fn every_decoder() {
    for agent in Agent::ALL {
        over_mutations(&seeds(Some(agent)), |data| check_decoder(agent, data));
    }
}

#[test]
fn replay() {
    for (i, agent) in Agent::ALL.iter().enumerate() {
        let seeds: Vec<Vec<u8>> =
            seeds(Some(*agent)).into_iter().map(|s| [&[i as u8][..], &s[..s.len().min(8192)]].concat()).collect();
        over_mutations(&seeds, check_replay);
    }
}

#[test]
fn pre_scan() {
    let mut inputs: Vec<Vec<u8>> = CORPUS.iter().map(|e| e.text.as_bytes().to_vec()).collect();
    inputs.extend(seeds(None).into_iter().take(200));
    over_mutations(&inputs, check_pre_scan);
}

#[test]
fn repair_scan() {
    over_mutations(&seeds(None), check_repair_scan);
}

#[test]
fn redaction() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let noise_pieces: &[&str] = &[
        "ls -la", "echo ", "&&", "'", "\"", "\\", "\u{e9}", "--", "-p", "=", "://", "@", " ", "\t", "sk-", "Bearer",
        "\n",
    ];
    for a in 0..Agent::ALL.len() {
        for e in 0..CORPUS.len() {
            for _ in 0..mutations().min(12) {
                let mut data = vec![a as u8, e as u8];
                for _ in 0..rng.below(12) {
                    data.extend_from_slice(noise_pieces[rng.below(noise_pieces.len())].as_bytes());
                }
                check_redaction(&data);
            }
        }
    }
}
