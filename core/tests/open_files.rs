//! `raise_open_file_limit`: the process gets its hard limit, its harnesses the limit it had
//! (and `open_file_limit` reads the process's own).
//! A test binary of its own: it changes the process's limit, which no other test should see.
//! The supervisor here is forked (a test binary does not call `supervise_if_asked`); the
//! exec'd one is covered by the CLI's `serve` test.

#![cfg(unix)]

use std::time::{Duration, Instant};

use agentstream_core::Agent;
use agentstream_core::runner::open_files::{open_file_limit, raise_open_file_limit};
use agentstream_core::runner::{AgentConfig, CommandOptions, Delivery, Next, Session};
use agentstream_core::stream::StreamItem;

fn limits() -> (u64, u64) {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit into the struct it is given.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) }, 0);
    (limit.rlim_cur, limit.rlim_max)
}

fn set_soft(soft: u64) {
    let limit = libc::rlimit { rlim_cur: soft, rlim_max: limits().1 };
    // SAFETY: setrlimit reads the struct it is given.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
}

/// What `sh -c 'ulimit -Sn; ulimit -Hn'` prints when the runner starts it.
fn child_limits(session: &Session) -> String {
    let h = session
        .start_command(CommandOptions::new(vec!["sh".into(), "-c".into(), "ulimit -Sn; ulimit -Hn".into()]))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut out = String::new();
    loop {
        assert!(Instant::now() < deadline, "the command did not end");
        match h.next_blocking(Some(Duration::from_millis(200))) {
            Next::Item(Delivery::Item(e)) => {
                if let StreamItem::Stdout(line) = e.item {
                    out.push_str(&line);
                }
            }
            Next::Item(Delivery::Hook(_)) | Next::Timeout => {}
            Next::End => return out,
        }
    }
}

#[test]
fn the_process_gets_its_hard_limit_and_its_harnesses_the_one_it_had() {
    let (_, hard) = limits();
    let lowered = 256.min(hard);
    if lowered == hard {
        eprintln!("the hard limit is {hard}: nothing to raise");
        return;
    }
    set_soft(lowered);
    assert_eq!(open_file_limit(), Some(lowered));
    let session = Session::new(AgentConfig::new(Agent::Claude));
    let hard_text = if hard == libc::RLIM_INFINITY { "unlimited".to_string() } else { hard.to_string() };
    assert_eq!(child_limits(&session), format!("{lowered}\n{hard_text}\n"), "before: the same limit");

    let raised = raise_open_file_limit().unwrap();
    assert_eq!(raised.before, lowered);
    assert!(raised.now > lowered && (hard == libc::RLIM_INFINITY || raised.now == hard), "{raised:?}");
    assert_eq!(limits(), (raised.now, hard), "the process has the raised limit");
    assert_eq!(open_file_limit(), Some(raised.now));
    assert_eq!(child_limits(&session), format!("{lowered}\n{hard_text}\n"), "a harness gets the old one");

    // Raising again changes nothing, and harnesses still get the limit from before the first.
    let again = raise_open_file_limit().unwrap();
    assert_eq!((again.before, again.now), (raised.now, raised.now));
    assert_eq!(child_limits(&session), format!("{lowered}\n{hard_text}\n"));
}
