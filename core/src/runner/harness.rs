//! The harness process as the driver sees it: its two output pipes, when its leader exits, and
//! the end of its whole process tree.
//!
//! On Linux the harness runs under a supervisor ([`supervisor`](super::supervisor)): its
//! process tree ends with the run, and with the host however the host ends. Elsewhere it is a
//! plain child in its own process group (the group is killed at the end; descendants that left
//! the group, or a host killed outright, are not covered there).

use std::ffi::OsStr;
use std::path::Path;
use std::process::ExitStatus;

use tokio::process::{ChildStderr, ChildStdout};

use crate::error::{Error, ErrorKind};

/// One harness process (or command) and its process tree.
pub(crate) struct Harness {
    /// The leader's pid, which is also its process group id.
    pub pid: i32,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
    /// The leader's exit and the end of its tree (a field of its own, so the driver can wait
    /// for it while it reads the pipes).
    pub tree: Tree,
}

/// The harness's process tree: when its leader exits, and ending it.
#[cfg(target_os = "linux")]
pub(crate) struct Tree {
    /// The supervisor's status messages after `started`.
    status: ChildStdout,
    /// Bytes of a status message read so far (a read may be cancelled between two calls).
    partial: [u8; super::supervisor::MSG_LEN],
    filled: usize,
    /// Written to end the tree; closed (by drop, or by the host's death) it ends it too.
    lifeline: super::host_lifeline::HostLifeline,
    supervisor: i32,
    /// The exit was reported, or the supervisor is gone.
    done: bool,
}

/// The harness's process tree: when its leader exits, and ending it.
#[cfg(not(target_os = "linux"))]
pub(crate) struct Tree {
    pid: i32,
    child: tokio::process::Child,
}

impl Harness {
    /// Start `program` with `args` in `cwd` with `env` added to the host's environment, its
    /// stdin `/dev/null`, in its own process group. Must run inside the tokio runtime that
    /// will drive it (the pipes register with its reactor).
    pub fn spawn(
        program: &OsStr,
        args: &[String],
        cwd: Option<&Path>,
        env: &[(String, String)],
    ) -> Result<Harness, Error> {
        Self::spawn_os(program, args, cwd, env)
    }

    #[cfg(target_os = "linux")]
    fn spawn_os(
        program: &OsStr,
        args: &[String],
        cwd: Option<&Path>,
        env: &[(String, String)],
    ) -> Result<Harness, Error> {
        let s = super::supervisor::spawn(program, args, cwd, env)?;
        let reactor =
            |e: std::io::Error| Error::new(ErrorKind::SpawnFailed, format!("cannot watch the harness's pipes: {e}"));
        // The supervisor is started: from here on, dropping the lifeline ends the tree.
        let (lifeline, supervisor) = (s.lifeline, s.supervisor);
        let pipes = (|| {
            let stdout = ChildStdout::from_std(std::process::ChildStdout::from(s.stdout))?;
            let stderr = ChildStderr::from_std(std::process::ChildStderr::from(s.stderr))?;
            let status = ChildStdout::from_std(std::process::ChildStdout::from(s.status))?;
            Ok::<_, std::io::Error>((stdout, stderr, status))
        })();
        match pipes {
            Ok((stdout, stderr, status)) => Ok(Harness {
                pid: s.pid,
                stdout,
                stderr,
                tree: Tree {
                    status,
                    partial: [0; super::supervisor::MSG_LEN],
                    filled: 0,
                    lifeline,
                    supervisor,
                    done: false,
                },
            }),
            Err(e) => {
                super::supervisor::kill_tree(&lifeline);
                drop(lifeline);
                super::supervisor::reap(supervisor, None, std::time::Duration::from_secs(5));
                Err(reactor(e))
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn spawn_os(
        program: &OsStr,
        args: &[String],
        cwd: Option<&Path>,
        env: &[(String, String)],
    ) -> Result<Harness, Error> {
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        // Its own process group, so interrupt/pause/kill reach everything the harness started.
        // (No run starts where there are no process groups: see `process::ensure_supported`.)
        #[cfg(unix)]
        {
            cmd.process_group(0);
            // SAFETY: the closure makes one async-signal-safe call (see `restore_in_child`).
            unsafe {
                cmd.pre_exec(|| {
                    super::open_files::restore_in_child();
                    Ok(())
                });
            }
        }
        if let Some(cwd) = cwd {
            cmd.current_dir(cwd);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let name = program.to_string_lossy().into_owned();
        let mut child = cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::new(ErrorKind::HarnessNotFound, format!("{name} not found")),
            std::io::ErrorKind::PermissionDenied => {
                Error::new(ErrorKind::SpawnFailed, format!("{name} is not executable: {e}"))
            }
            _ => Error::new(ErrorKind::SpawnFailed, format!("cannot start {name}: {e}")),
        })?;
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let pid = child.id().map(|p| p as i32).unwrap_or(0);
        Ok(Harness { pid, stdout, stderr, tree: Tree { pid, child } })
    }

    /// End whatever is left of the process tree now (see [`Tree::end`]).
    pub fn end_tree(&mut self) {
        self.tree.end();
    }
}

impl Tree {
    /// Wait for the leader to exit: its status, or `None` when that cannot be known (the
    /// supervisor vanished). Cancel-safe; after it returned once, it never resolves again.
    #[cfg(target_os = "linux")]
    pub async fn exited(&mut self) -> Option<ExitStatus> {
        use std::os::unix::process::ExitStatusExt;
        use tokio::io::AsyncReadExt;
        let t = self;
        if t.done {
            return std::future::pending().await;
        }
        loop {
            match t.status.read(&mut t.partial[t.filled..]).await {
                Ok(0) | Err(_) => {
                    t.done = true;
                    return None;
                }
                Ok(n) => t.filled += n,
            }
            if t.filled == t.partial.len() {
                t.filled = 0;
                if let super::supervisor::Status::Exited(status) = super::supervisor::parse_status(&t.partial) {
                    t.done = true;
                    return Some(ExitStatus::from_raw(status));
                }
            }
        }
    }

    /// Wait for the leader to exit (see the Linux variant).
    #[cfg(not(target_os = "linux"))]
    pub async fn exited(&mut self) -> Option<ExitStatus> {
        self.child.wait().await.ok()
    }

    /// End whatever is left of the process tree now: the harness's group and, on Linux, every
    /// descendant, including those that left the group. For after the leader exited (leftover
    /// children) or when the run must end at once.
    pub fn end(&mut self) {
        #[cfg(target_os = "linux")]
        super::supervisor::kill_tree(&self.lifeline);
        #[cfg(not(target_os = "linux"))]
        super::process::signal_group(self.pid, super::process::signals::KILL);
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        self.end();
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsFd;
            super::supervisor::reap(self.supervisor, Some(self.status.as_fd()), std::time::Duration::from_secs(5));
        }
    }
}
