//! Linux: the harness runs under a small supervisor process, so that whatever ends the host —
//! a normal end, a crash, `SIGKILL`, an interpreter exiting under a running thread — the
//! harness's whole process tree ends too.
//!
//! ```text
//! host (any thread) ──exec'd program or fork──▶ supervisor ──vfork+exec──▶ harness (own process group)
//!    ▲  status pipe ◀──────────────────────────  │                          └─▶ its children, grandchildren, …
//!    └─ lifeline (socket) ──────────────────────▶ │  (child subreaper: every orphaned descendant becomes its child)
//! ```
//!
//! * The supervisor is a program of its own ([`super::self_exec`]: the library holding this code
//!   run as one, the program holding it started again, or `agentstream-supervisor`), or, where
//!   none can be, a forked copy of the host that never returns to the host's code:
//!   it runs only async-signal-safe system calls (no allocation, no locks), so forking a
//!   multithreaded host (Python, Node, Go) is safe; it is forked without the host's
//!   `pthread_atfork` handlers (host code, which may touch descriptors that are the
//!   supervisor's by then). Either way it ignores terminal signals and sits in its own process
//!   group, so a Ctrl-C meant for the host does not kill it.
//! * It is a child subreaper (`PR_SET_CHILD_SUBREAPER`): descendants that leave the harness's
//!   process group (`setsid`, double forks) are re-parented to it when their parent dies, so
//!   they can still be found.
//! * The harness leader gets `PR_SET_PDEATHSIG(SIGKILL)`: it dies with its supervisor.
//! * The host holds one end of the lifeline (a socket pair). The supervisor kills the whole tree —
//!   the harness's group and every descendant it can find, round after round until it has no
//!   child left — and exits when the host writes [`KILL_TREE`] (the run is over: leftover
//!   descendants go) or when the lifeline closes because the host died, however it died.
//! * Status messages go back on the status pipe: the harness started (its pid), could not be
//!   started (stage and errno), or exited (its wait status).

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

use super::host_lifeline::HostLifeline;
use crate::error::{Error, ErrorKind};

/// What the host writes on the lifeline to end the tree.
pub(crate) const KILL_TREE: u8 = b'K';

const MSG_STARTED: i32 = 1;
const MSG_FAILED: i32 = 2;
const MSG_EXITED: i32 = 3;

const STAGE_FORK: i32 = 1;
const STAGE_CHDIR: i32 = 2;
pub(super) const STAGE_EXEC: i32 = 3;

/// One status message: `[kind, a, b, 0]` as native-endian `i32`s.
pub(crate) const MSG_LEN: usize = 16;

/// A status message from the supervisor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// The harness leader exited with this raw wait status.
    Exited(i32),
    /// Anything else (not expected after the start).
    Other,
}

/// Decode one status message.
pub(crate) fn parse_status(msg: &[u8; MSG_LEN]) -> Status {
    let word = |i: usize| i32::from_ne_bytes([msg[i], msg[i + 1], msg[i + 2], msg[i + 3]]);
    if word(0) == MSG_EXITED { Status::Exited(word(4)) } else { Status::Other }
}

/// A harness started under its supervisor.
pub(crate) struct Supervised {
    /// The harness leader (its process group id too).
    pub pid: i32,
    /// The supervisor's pid (the host's child: reap it).
    pub supervisor: i32,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
    /// The status pipe's read end (messages after `started`).
    pub status: OwnedFd,
    /// The lifeline's host end.
    pub lifeline: HostLifeline,
}

/// Everything the supervisor and the harness child need, prepared before they start (a forked
/// supervisor must not allocate); an exec'd supervisor decodes it from the run's spec.
pub(super) struct Prepared {
    pub(super) path: CString,
    pub(super) argv: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    pub(super) envp: Vec<CString>,
    envp_ptrs: Vec<*const libc::c_char>,
    pub(super) cwd: Option<CString>,
}

impl Prepared {
    /// The harness's program path, argument vector (program name first), environment
    /// (`NAME=value`) and working directory, with the NULL-terminated pointer arrays `execve`
    /// takes.
    pub(super) fn new(path: CString, argv: Vec<CString>, envp: Vec<CString>, cwd: Option<CString>) -> Prepared {
        let nul_terminated = |strings: &[CString]| -> Vec<*const libc::c_char> {
            strings.iter().map(|c| c.as_ptr()).chain(std::iter::once(std::ptr::null())).collect()
        };
        let (argv_ptrs, envp_ptrs) = (nul_terminated(&argv), nul_terminated(&envp));
        Prepared { path, argv, argv_ptrs, envp, envp_ptrs, cwd }
    }
}

fn cstring(bytes: &[u8], what: &str) -> Result<CString, Error> {
    CString::new(bytes).map_err(|_| Error::new(ErrorKind::InvalidArgument, format!("{what} contains a NUL byte")))
}

/// The executable `program` names: a path as given (relative to the host's directory), or the
/// first executable file of that name on the `PATH` the process will have.
pub(crate) fn resolve_program(program: &OsStr, path_var: Option<&OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let is_executable =
        |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if program.as_bytes().contains(&b'/') {
        let p = PathBuf::from(program);
        let p = if p.is_relative() { std::env::current_dir().ok()?.join(p) } else { p };
        return p.exists().then_some(p);
    }
    let path_var = path_var.map(OsStr::to_os_string).or_else(|| std::env::var_os("PATH"))?;
    std::env::split_paths(&path_var).map(|dir| dir.join(program)).find(|p| is_executable(p))
}

fn prepare(program: &OsStr, args: &[String], cwd: Option<&Path>, env: &[(String, String)]) -> Result<Prepared, Error> {
    if program.is_empty() {
        return Err(Error::new(ErrorKind::InvalidArgument, "the program to start is empty: name a program"));
    }
    let name = program.to_string_lossy().into_owned();
    let path_override = env.iter().rev().find(|(k, _)| k == "PATH").map(|(_, v)| OsStr::new(v.as_str()));
    let resolved = resolve_program(program, path_override)
        .ok_or_else(|| Error::new(ErrorKind::HarnessNotFound, format!("{name} not found")))?;
    let path = cstring(resolved.as_os_str().as_bytes(), "the program path")?;
    let mut argv = vec![cstring(program.as_bytes(), "the program name")?];
    for a in args {
        argv.push(cstring(a.as_bytes(), "an argument")?);
    }
    // The host's environment with the run's variables added or replacing.
    let mut vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    for (k, v) in env {
        vars.retain(|(name, _)| name.as_bytes() != k.as_bytes());
        vars.push((k.into(), v.into()));
    }
    let mut envp = Vec::with_capacity(vars.len());
    for (k, v) in vars {
        let mut kv = k.into_vec();
        kv.push(b'=');
        kv.extend(v.into_vec());
        envp.push(cstring(&kv, "an environment variable")?);
    }
    let cwd = cwd.map(|c| cstring(c.as_os_str().as_bytes(), "the working directory")).transpose()?;
    Ok(Prepared::new(path, argv, envp, cwd))
}

/// The error for a program that exists but whose start failed with "not found": a script whose
/// `#!` interpreter is missing (saying "not found" of the script would send one looking for
/// the wrong file). `None` when the program is not such a script.
fn missing_interpreter(path: &CString, name: &str) -> Option<Error> {
    let mut head = [0u8; 256];
    let n = File::open(OsStr::from_bytes(path.as_bytes())).and_then(|mut f| f.read(&mut head)).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = &line[..line.iter().position(|&b| b == b'\n').unwrap_or(line.len())];
    let interpreter = String::from_utf8_lossy(line).trim().to_string();
    if line.ends_with(b"\r") {
        // The system looks for "/bin/sh\r": the file has Windows line endings.
        return Some(Error::new(
            ErrorKind::SpawnFailed,
            format!(
                "cannot start {name}: its `#!` line ends in a carriage return (CRLF line endings), so the system \
                 looks for an interpreter named {interpreter:?} with a \\r: convert the file to LF line endings"
            ),
        ));
    }
    Some(Error::new(
        ErrorKind::SpawnFailed,
        format!("cannot start {name}: the interpreter its `#!` line names was not found ({interpreter})"),
    ))
}

/// Linux's limit on one argument or environment string (`MAX_ARG_STRLEN`, 32 pages), beside the
/// limit on all of them together (`ARG_MAX`, a quarter of the stack limit).
const MAX_ARG_STRLEN: usize = 32 * 4096;

/// The error for a start refused with E2BIG: which limit the arguments went past.
fn too_long(prepared: &Prepared, name: &str) -> Error {
    let longest = prepared.argv.iter().chain(&prepared.envp).map(|s| s.as_bytes().len() + 1).max().unwrap_or(0);
    let all: usize = prepared.argv.iter().chain(&prepared.envp).map(|s| s.as_bytes().len() + 1).sum();
    let what = if longest > MAX_ARG_STRLEN {
        format!(
            "one of its arguments is {longest} bytes, and the system takes at most {MAX_ARG_STRLEN} in one (a prompt \
             this long must be made shorter)"
        )
    } else {
        format!("its arguments and environment are {all} bytes together, more than the system takes (E2BIG)")
    };
    Error::new(ErrorKind::SpawnFailed, format!("cannot start {name}: {what}"))
}

fn os_error(what: &str) -> Error {
    Error::new(ErrorKind::SpawnFailed, format!("cannot start the harness: {what}: {}", std::io::Error::last_os_error()))
}

/// A pipe whose both ends close on exec: `(read, write)`.
fn pipe() -> Result<(OwnedFd, OwnedFd), Error> {
    let mut fds = [0; 2];
    // SAFETY: `fds` is valid for two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(os_error("pipe"));
    }
    // SAFETY: pipe2 returned two new descriptors we now own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Start `program` under a supervisor (see the module docs). Errors: `HarnessNotFound` (not on
/// `PATH`, no such file), `SpawnFailed` (not executable, the working directory unusable, no
/// resources), `InvalidArgument` (a NUL byte in an argument).
pub(crate) fn spawn(
    program: &OsStr,
    args: &[String],
    cwd: Option<&Path>,
    env: &[(String, String)],
) -> Result<Supervised, Error> {
    let name = program.to_string_lossy().into_owned();
    let prepared = prepare(program, args, cwd, env)?;
    let (out_r, out_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    let (status_r, status_w) = pipe()?;
    let (life_r, life_w) = HostLifeline::pair()
        .map_err(|e| Error::new(ErrorKind::SpawnFailed, format!("cannot start the harness: socketpair: {e}")))?;
    // SAFETY: a NUL-terminated path literal.
    let devnull = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if devnull < 0 {
        return Err(os_error("/dev/null"));
    }
    // SAFETY: open returned a new descriptor we own.
    let devnull = unsafe { OwnedFd::from_raw_fd(devnull) };
    let fds = [life_r.as_raw_fd(), status_w.as_raw_fd(), out_w.as_raw_fd(), err_w.as_raw_fd(), devnull.as_raw_fd()];

    // An exec'd supervisor when this process can start one (see `self_exec`), else a fork.
    let exec_launch = super::self_exec::Launch::prepare(&prepared);
    // No signal may run a host handler in the new process before it resets them all (a forked
    // supervisor) or execs (a vfork child sharing the host's memory).
    // SAFETY: plain signal-mask calls on sets we own; the launches below run only system calls
    // in their child.
    let (supervisor, exec_launched) = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        let launched = match exec_launch.as_ref().and_then(|launch| launch.start(fds)) {
            Some(pid) => (pid, true),
            None => (fork_supervisor(&prepared, fds), false),
        };
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        launched
    };
    if supervisor < 0 {
        return Err(os_error("fork"));
    }
    drop((out_w, err_w, status_w, life_r, devnull));

    // The first message says whether the harness was started.
    let mut status_file = File::from(status_r);
    let mut msg = [0u8; MSG_LEN];
    let started = status_file.read_exact(&mut msg);
    let word = |i: usize| i32::from_ne_bytes([msg[i], msg[i + 1], msg[i + 2], msg[i + 3]]);
    let failure = match started {
        Err(_) if exec_launched => {
            // The exec'd supervisor ended without a word (a loader refused the library or the
            // program). Every later run forks its supervisor; this one too.
            super::self_exec::disable();
            drop(life_w);
            reap(supervisor, Some(status_file.as_fd()), std::time::Duration::from_secs(5));
            return spawn(program, args, cwd, env);
        }
        Err(e) => Some(Error::new(ErrorKind::SpawnFailed, format!("cannot start {name}: the supervisor failed ({e})"))),
        Ok(()) if word(0) == MSG_STARTED => None,
        Ok(()) => {
            let (stage, errno) = (word(4), word(8));
            let cause = std::io::Error::from_raw_os_error(errno);
            Some(match (stage, errno) {
                (STAGE_EXEC, libc::ENOENT) => missing_interpreter(&prepared.path, &name)
                    .unwrap_or_else(|| Error::new(ErrorKind::HarnessNotFound, format!("{name} not found"))),
                (STAGE_EXEC, libc::E2BIG) => too_long(&prepared, &name),
                (STAGE_EXEC, libc::EACCES | libc::ENOEXEC | libc::EISDIR) => {
                    Error::new(ErrorKind::SpawnFailed, format!("{name} is not executable: {cause}"))
                }
                (STAGE_CHDIR, _) => Error::new(
                    ErrorKind::SpawnFailed,
                    format!(
                        "cannot use the working directory {}: {cause}",
                        cwd.map(|c| c.display().to_string()).unwrap_or_default()
                    ),
                ),
                (STAGE_FORK, _) => Error::new(ErrorKind::SpawnFailed, format!("cannot start {name}: fork: {cause}")),
                _ => Error::new(ErrorKind::SpawnFailed, format!("cannot start {name}: {cause}")),
            })
        }
    };
    if let Some(e) = failure {
        drop(life_w);
        reap(supervisor, Some(status_file.as_fd()), std::time::Duration::from_secs(5));
        return Err(e);
    }
    Ok(Supervised {
        pid: word(4),
        supervisor,
        stdout: out_r,
        stderr: err_r,
        status: OwnedFd::from(status_file),
        lifeline: life_w,
    })
}

/// Ask the supervisor to end the tree now (idempotent; the lifeline stays open).
pub(crate) fn kill_tree(lifeline: &HostLifeline) {
    let byte = [KILL_TREE];
    // SAFETY: sending one byte from a valid buffer on a socket we own; MSG_NOSIGNAL: a
    // supervisor already gone is an EPIPE error, never a SIGPIPE in the host.
    unsafe { libc::send(lifeline.as_raw_fd(), byte.as_ptr().cast(), 1, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) };
}

/// Wait for the supervisor to exit (it does once told to end the tree, or once the harness
/// could not be started), up to `patience`; then kill it and wait. `status`, the status pipe's
/// read end, reads end-of-file once the supervisor is gone (nothing else holds its write end):
/// waiting for that wakes at the supervisor's exit instead of on a timer; what is still unread
/// in it is dropped.
pub(crate) fn reap(supervisor: i32, status: Option<BorrowedFd<'_>>, patience: std::time::Duration) {
    let deadline = std::time::Instant::now() + patience;
    if let Some(status) = status {
        wait_for_end_of_file(status, deadline);
    }
    // Closing its descriptors is part of its exit; becoming waitable follows within
    // microseconds, so the pause between looks starts short.
    let mut pause = std::time::Duration::from_micros(20);
    loop {
        let mut st = 0;
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(supervisor, &mut st, libc::WNOHANG) };
        if r != 0 {
            return; // reaped, or not ours to reap (ECHILD: SIGCHLD ignored by the host)
        }
        if std::time::Instant::now() >= deadline {
            // SAFETY: signalling and waiting for our own child.
            unsafe {
                libc::kill(supervisor, libc::SIGKILL);
                libc::waitpid(supervisor, &mut st, 0);
            }
            return;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(std::time::Duration::from_millis(2));
    }
}

/// Read and drop what `fd` holds until it reads end-of-file, fails, or `deadline` passes (it
/// polls before each read, so a blocking descriptor waits no longer than that either).
fn wait_for_end_of_file(fd: BorrowedFd<'_>, deadline: std::time::Instant) {
    let mut sink = [0u8; 256];
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let mut poll = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let millis = i32::try_from(left.as_millis()).unwrap_or(i32::MAX);
        // SAFETY: polling one descriptor the caller keeps open.
        let ready = unsafe { libc::poll(&mut poll, 1, millis) };
        if ready == 0 || (ready < 0 && errno() != libc::EINTR) {
            return;
        }
        if ready < 0 {
            continue;
        }
        // SAFETY: reading into a local buffer from a descriptor the caller keeps open.
        let n = unsafe { libc::read(fd.as_raw_fd(), sink.as_mut_ptr().cast(), sink.len()) };
        if n == 0 || (n < 0 && !matches!(errno(), libc::EAGAIN | libc::EINTR)) {
            return;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The forked processes. Only async-signal-safe system calls from here on: no allocation, no
// locks, no panics (nothing that could unwind).

/// Where the supervisor keeps what it needs (everything else is closed).
pub(super) const FD_LIFELINE: RawFd = 3;
pub(super) const FD_STATUS: RawFd = 4;
pub(super) const FD_OUT: RawFd = 5;
pub(super) const FD_ERR: RawFd = 6;
pub(super) const FD_NULL: RawFd = 7;

/// Fork the supervisor: the copy of the host runs [`supervisor_main`] and never returns.
/// Returns its pid, or -1 with `errno` set. The caller blocks every signal around it.
unsafe fn fork_supervisor(p: &Prepared, fds: [RawFd; 5]) -> libc::pid_t {
    // SAFETY: the child runs only async-signal-safe system calls (see `supervisor_main`).
    unsafe {
        let pid = raw_fork();
        if pid == 0 {
            supervisor_main(p, fds);
        }
        pid
    }
}

/// `fork()` without the host's `pthread_atfork` handlers: those are the host's code (libuv's
/// re-creates its signal pipe on descriptors that are ours by then) and need not be
/// async-signal-safe. A bare `clone(SIGCHLD)` is what fork does without them.
unsafe fn raw_fork() -> libc::pid_t {
    // SAFETY: clone with only SIGCHLD and no new stack is fork: the child continues on a copy
    // of this stack; it only makes system calls until it execs or exits.
    unsafe {
        libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_ulong, 0usize, 0usize, 0usize, 0usize) as libc::pid_t
    }
}

pub(super) fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

unsafe fn report(kind: i32, a: i32, b: i32) {
    let mut msg = [0u8; MSG_LEN];
    msg[0..4].copy_from_slice(&kind.to_ne_bytes());
    msg[4..8].copy_from_slice(&a.to_ne_bytes());
    msg[8..12].copy_from_slice(&b.to_ne_bytes());
    // SAFETY: a valid buffer; an error (the host is gone) is ignored (SIGPIPE is ignored).
    unsafe { libc::write(FD_STATUS, msg.as_ptr().cast(), MSG_LEN) };
}

/// The signals the supervisor ignores (every other one has its default action there).
const SUPERVISOR_IGNORES: [i32; 7] =
    [libc::SIGINT, libc::SIGQUIT, libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU, libc::SIGHUP, libc::SIGPIPE];

/// Every signal back to its default action, the mask empty but for `blocked`.
unsafe fn reset_signals(blocked: Option<i32>) {
    // SAFETY: sigaction/sigprocmask on zeroed, then filled, local structures.
    unsafe {
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        for sig in 1..libc::SIGRTMAX() {
            if sig != libc::SIGKILL && sig != libc::SIGSTOP {
                libc::sigaction(sig, &dfl, std::ptr::null_mut());
            }
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        if let Some(sig) = blocked {
            libc::sigaddset(&mut set, sig);
        }
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
}

/// Move `fds` (at most eight) to 3, 4, 5, … (close-on-exec) and close every other descriptor
/// from 3 on.
pub(super) unsafe fn arrange_fds(fds: &[RawFd]) {
    // SAFETY: fcntl/dup3/close on descriptors of this process.
    unsafe {
        let first_free = 3 + fds.len() as RawFd;
        let base = fds.iter().copied().max().unwrap_or(0).max(first_free) + 1;
        let mut temps = [0; 8];
        for (t, &fd) in temps.iter_mut().zip(fds) {
            *t = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, base);
        }
        for (i, t) in temps.iter().take(fds.len()).enumerate() {
            libc::dup3(*t, 3 + i as RawFd, libc::O_CLOEXEC);
        }
        if libc::syscall(libc::SYS_close_range, first_free as libc::c_uint, libc::c_uint::MAX, 0) != 0 {
            let mut limit: libc::rlimit = std::mem::zeroed();
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit);
            let top = (limit.rlim_cur as RawFd).clamp(first_free, 65536);
            for fd in first_free..top {
                libc::close(fd);
            }
        }
    }
}

/// The supervisor: runs in a forked copy of the host (async-signal-safe calls only) or in an
/// exec'd program (`self_exec`), with its descriptors in `fds`.
pub(super) unsafe fn supervisor_main(p: &Prepared, fds: [RawFd; 5]) -> ! {
    // SAFETY: the whole function runs in the forked child, with async-signal-safe calls only.
    unsafe {
        reset_signals(Some(libc::SIGCHLD));
        // A forked supervisor has the host's limits (an exec'd one got them back before its exec).
        super::open_files::restore_in_child();
        for sig in SUPERVISOR_IGNORES {
            libc::signal(sig, libc::SIG_IGN);
        }
        libc::setpgid(0, 0);
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        arrange_fds(&fds);
        // `ps` shows what it is (a forked one would show the host's name).
        libc::prctl(libc::PR_SET_NAME, c"agentstream-sup".as_ptr(), 0, 0, 0);
        let me = libc::getpid();

        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut chld);
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        let sfd = libc::signalfd(-1, &chld, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);

        let outcome = ExecOutcome::default();
        let harness = spawn_harness(p, me, &outcome);
        if harness < 0 {
            report(MSG_FAILED, STAGE_FORK, errno());
            libc::_exit(0);
        }
        libc::close(FD_OUT);
        libc::close(FD_ERR);
        libc::close(FD_NULL);
        // The harness child has exec'd or exited by now (CLONE_VFORK); a failed stage is set.
        let stage = outcome.stage.load(Ordering::Acquire);
        if stage != 0 {
            report(MSG_FAILED, stage, outcome.errno.load(Ordering::Acquire));
            let mut st = 0;
            libc::waitpid(harness, &mut st, 0);
            libc::_exit(0);
        }
        report(MSG_STARTED, harness, 0);

        let mut leader_alive = true;
        loop {
            let mut polls = [
                libc::pollfd { fd: FD_LIFELINE, events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: sfd, events: libc::POLLIN, revents: 0 },
            ];
            // Without a signalfd, look for exited children every 50 ms.
            let (n, timeout) = if sfd >= 0 { (2, -1) } else { (1, 50) };
            let r = libc::poll(polls.as_mut_ptr(), n, timeout);
            if r < 0 && errno() != libc::EINTR {
                break;
            }
            if sfd >= 0 && polls[1].revents != 0 {
                let mut info = [0u8; 128];
                while libc::read(sfd, info.as_mut_ptr().cast(), info.len()) > 0 {}
            }
            reap_children(harness, &mut leader_alive);
            if polls[0].revents != 0 {
                // A request to end the tree, or the host is gone (the lifeline closed).
                break;
            }
        }
        kill_tree_now(harness, me, &mut leader_alive);
        libc::_exit(0);
    }
}

/// Reap every exited child; report the leader's exit once.
unsafe fn reap_children(leader: i32, leader_alive: &mut bool) {
    loop {
        let mut status = 0;
        // SAFETY: waiting for our own children.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return;
        }
        if pid == leader && *leader_alive {
            *leader_alive = false;
            // SAFETY: writing a status message.
            unsafe { report(MSG_EXITED, status, 0) };
        }
    }
}

/// SIGKILL the harness's group and every descendant, round after round (a killed process's
/// children become ours), until no child is left (at most ~2 s: a process in uninterruptible
/// sleep cannot be helped). With no child left the tree is empty — every descendant whose
/// parent died was re-parented to this subreaper — so `/proc` is only searched when one is.
unsafe fn kill_tree_now(leader: i32, me: i32, leader_alive: &mut bool) {
    for _ in 0..2000 {
        // SAFETY: signalling processes of our own tree; scanning /proc.
        unsafe {
            libc::kill(-leader, libc::SIGKILL);
            reap_children(leader, leader_alive);
            if !has_children() {
                return;
            }
            for_each_child(me, |pid| {
                libc::kill(pid, libc::SIGKILL);
            });
            reap_children(leader, leader_alive);
            if !has_children() {
                return;
            }
            let pause = libc::timespec { tv_sec: 0, tv_nsec: 1_000_000 };
            libc::nanosleep(&pause, std::ptr::null_mut());
        }
    }
}

/// Whether this process has a child, running or exited (left waitable: `WNOWAIT`).
unsafe fn has_children() -> bool {
    // SAFETY: waitid on a zeroed local siginfo.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let r = libc::waitid(libc::P_ALL, 0, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT);
        !(r < 0 && errno() == libc::ECHILD)
    }
}

/// Call `f` with the pid of every process whose parent is `me` (from `/proc/<pid>/stat`).
unsafe fn for_each_child(me: i32, mut f: impl FnMut(i32)) {
    // SAFETY: open/getdents64/read/close with stack buffers.
    unsafe {
        let dir = libc::open(c"/proc".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC);
        if dir < 0 {
            return;
        }
        let mut buf = [0u8; 8192];
        loop {
            let n = libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len());
            if n <= 0 {
                break;
            }
            let mut off = 0usize;
            while off + 19 < n as usize {
                let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
                if reclen == 0 {
                    break;
                }
                let name = &buf[off + 19..(off + reclen).min(n as usize)];
                let name = &name[..name.iter().position(|&c| c == 0).unwrap_or(name.len())];
                if let Some(pid) = parse_pid(name) {
                    if pid != me && parent_of(pid) == Some(me) {
                        f(pid);
                    }
                }
                off += reclen;
            }
        }
        libc::close(dir);
    }
}

fn parse_pid(name: &[u8]) -> Option<i32> {
    if name.is_empty() || name.len() > 9 || !name.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(name.iter().fold(0i32, |n, d| n * 10 + i32::from(d - b'0')))
}

/// The parent pid of `pid`, from `/proc/<pid>/stat` (`pid (comm) state ppid …`; the comm may
/// hold parentheses, so the last `)` ends it).
unsafe fn parent_of(pid: i32) -> Option<i32> {
    let mut path = [0u8; 32];
    let prefix = b"/proc/";
    path[..prefix.len()].copy_from_slice(prefix);
    let mut digits = [0u8; 10];
    let mut n = pid;
    let mut len = 0;
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let mut at = prefix.len();
    for i in (0..len).rev() {
        path[at] = digits[i];
        at += 1;
    }
    path[at..at + 5].copy_from_slice(b"/stat");
    // SAFETY: `path` is NUL-terminated (zeroed tail); a stack buffer to read into.
    unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let mut stat = [0u8; 512];
        let got = libc::read(fd, stat.as_mut_ptr().cast(), stat.len());
        libc::close(fd);
        if got <= 0 {
            return None;
        }
        let stat = &stat[..got as usize];
        let close = stat.iter().rposition(|&c| c == b')')?;
        // ") S ppid "
        let rest = stat.get(close + 4..)?;
        let end = rest.iter().position(|&c| c == b' ')?;
        parse_pid(&rest[..end])
    }
}

/// Why a vfork child could not exec (`stage` 0: it did). The child writes it in its parent's
/// memory, which it shares until it execs or exits.
#[derive(Default)]
pub(super) struct ExecOutcome {
    pub(super) stage: AtomicI32,
    pub(super) errno: AtomicI32,
}

/// What the harness child starts with (it runs on its own stack, in the supervisor's memory).
struct HarnessStart<'a> {
    prepared: &'a Prepared,
    supervisor: i32,
    outcome: &'a ExecOutcome,
}

/// The stack of a vfork child (the harness child, the exec'd supervisor's launcher): it only
/// resets signals, moves descriptors and execs.
const VFORK_STACK: usize = 64 * 1024;

/// An inaccessible page below that stack: an overflow faults instead of writing into the
/// parent's memory, which the child shares.
const GUARD: usize = 4096;

/// Start a child the way `posix_spawn` does: `clone(CLONE_VM | CLONE_VFORK)` running `entry(arg)`
/// on a stack of its own, so the caller's page tables (however big) are not copied; the caller
/// is suspended until the child has exec'd or exited. Returns the child's pid, or -1 with
/// `errno` set.
///
/// # Safety
/// `entry` runs in the caller's memory on another stack: system calls only (no allocation, no
/// locks, no unwinding), ending in `execve` or `_exit`; `arg` must stay valid until this returns.
pub(super) unsafe fn clone_vfork(
    entry: extern "C" fn(*mut libc::c_void) -> libc::c_int,
    arg: *mut libc::c_void,
) -> libc::pid_t {
    // SAFETY: a fresh private mapping used only as the child's stack (its lowest page made
    // inaccessible), unmapped once the child no longer runs on it (CLONE_VFORK returns after
    // its exec or exit).
    unsafe {
        let stack = libc::mmap(
            std::ptr::null_mut(),
            GUARD + VFORK_STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        );
        if stack == libc::MAP_FAILED {
            return -1;
        }
        if libc::mprotect(stack, GUARD, libc::PROT_NONE) != 0 {
            let e = errno();
            libc::munmap(stack, GUARD + VFORK_STACK);
            *libc::__errno_location() = e;
            return -1;
        }
        let top = stack.cast::<u8>().add(GUARD + VFORK_STACK).cast::<libc::c_void>();
        let pid = libc::clone(entry, top, libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD, arg);
        let clone_errno = errno();
        libc::munmap(stack, GUARD + VFORK_STACK);
        if pid < 0 {
            *libc::__errno_location() = clone_errno;
        }
        pid
    }
}

/// Start the harness child (see [`clone_vfork`]): the supervisor's page tables (a copy of the
/// host's, when it was forked) are not copied a second time. Returns the child's pid, or -1
/// with `errno` set.
unsafe fn spawn_harness(p: &Prepared, supervisor: i32, outcome: &ExecOutcome) -> libc::pid_t {
    let start = HarnessStart { prepared: p, supervisor, outcome };
    // SAFETY: `harness_entry` only makes system calls and execs or exits; `start` outlives the
    // child's use of it (CLONE_VFORK returns after its exec or exit).
    unsafe { clone_vfork(harness_entry, std::ptr::from_ref(&start).cast_mut().cast()) }
}

extern "C" fn harness_entry(start: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `start` is the `HarnessStart` of `spawn_harness`, alive while the supervisor is
    // suspended in `clone`.
    unsafe {
        let start = &*start.cast::<HarnessStart<'_>>();
        harness_main(start.prepared, start.supervisor, start.outcome)
    }
}

unsafe fn harness_main(p: &Prepared, supervisor: i32, outcome: &ExecOutcome) -> ! {
    // SAFETY: the harness child, sharing the supervisor's memory until exec: system calls
    // only (no allocation, no locks), then exec.
    unsafe {
        let fail = |stage: i32| -> ! {
            outcome.errno.store(errno(), Ordering::Release);
            outcome.stage.store(stage, Ordering::Release);
            libc::_exit(127);
        };
        libc::setpgid(0, 0);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        if libc::getppid() != supervisor {
            libc::_exit(127); // the supervisor is already gone
        }
        // The supervisor's signal state but for what it changed (exec keeps ignored signals
        // ignored and the mask; it resets handlers, and the supervisor has none).
        for sig in SUPERVISOR_IGNORES {
            libc::signal(sig, libc::SIG_DFL);
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        if libc::dup2(FD_NULL, 0) < 0 || libc::dup2(FD_OUT, 1) < 0 || libc::dup2(FD_ERR, 2) < 0 {
            fail(STAGE_FORK);
        }
        if let Some(cwd) = &p.cwd {
            if libc::chdir(cwd.as_ptr()) != 0 {
                fail(STAGE_CHDIR);
            }
        }
        libc::execve(p.path.as_ptr(), p.argv_ptrs.as_ptr(), p.envp_ptrs.as_ptr());
        fail(STAGE_EXEC);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pids_and_parents_are_read_from_proc() {
        assert_eq!(parse_pid(b"1234"), Some(1234));
        assert_eq!(parse_pid(b"self"), None);
        assert_eq!(parse_pid(b""), None);
        // SAFETY: reading /proc.
        let parent = unsafe { parent_of(std::process::id() as i32) };
        // SAFETY: getppid has no preconditions.
        assert_eq!(parent, Some(unsafe { libc::getppid() }));
    }

    /// The next status message, within `patience`.
    fn next_status(status: &OwnedFd, patience: std::time::Duration) -> Status {
        let mut poll = libc::pollfd { fd: status.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: polling one descriptor we own.
        let ready = unsafe { libc::poll(&mut poll, 1, patience.as_millis() as i32) };
        assert_eq!(ready, 1, "no status message within {patience:?}");
        let mut msg = [0u8; MSG_LEN];
        // SAFETY: reading into a buffer of MSG_LEN bytes.
        let got = unsafe { libc::read(status.as_raw_fd(), msg.as_mut_ptr().cast(), MSG_LEN) };
        assert_eq!(got, MSG_LEN as isize);
        parse_status(&msg)
    }

    #[test]
    fn a_started_harness_reports_its_pid_output_and_exit_status() {
        let args = vec!["-c".to_string(), "echo \"$GREETING from $PWD\"; exit 3".to_string()];
        let dir = std::env::temp_dir();
        let env = [("GREETING".to_string(), "hello".to_string())];
        let s = spawn(OsStr::new("sh"), &args, Some(&dir), &env).expect("sh starts");
        assert!(s.pid > 0 && s.pid != s.supervisor);
        let mut out = String::new();
        File::from(s.stdout).read_to_string(&mut out).unwrap();
        let dir = dir.canonicalize().unwrap();
        assert_eq!(out, format!("hello from {}\n", dir.display()));
        match next_status(&s.status, std::time::Duration::from_secs(10)) {
            Status::Exited(raw) => assert!(libc::WIFEXITED(raw) && libc::WEXITSTATUS(raw) == 3, "raw status {raw}"),
            other => panic!("expected the exit, got {other:?}"),
        }
        kill_tree(&s.lifeline);
        reap(s.supervisor, Some(s.status.as_fd()), std::time::Duration::from_secs(5));
    }

    #[test]
    fn the_harness_starts_with_no_signal_ignored_or_blocked() {
        // The test process ignores SIGPIPE (Rust's runtime does), the supervisor ignores seven
        // signals and blocks SIGCHLD: none of that reaches the harness.
        let s = spawn(OsStr::new("cat"), &["/proc/self/status".to_string()], None, &[]).expect("cat starts");
        let mut status = String::new();
        File::from(s.stdout).read_to_string(&mut status).unwrap();
        for field in ["SigIgn:", "SigBlk:"] {
            let line = status.lines().find(|l| l.starts_with(field)).expect(field);
            let mask = u64::from_str_radix(line[field.len()..].trim(), 16).unwrap();
            // Signals 32 and 33 are glibc's own (thread cancellation, set*id): its `sigaction`
            // refuses them, and what the host had for them is the harness's glibc's concern.
            let glibc_internal = 0b11 << 31;
            assert_eq!(mask & !glibc_internal, 0, "{line}");
        }
        kill_tree(&s.lifeline);
        reap(s.supervisor, Some(s.status.as_fd()), std::time::Duration::from_secs(5));
    }

    #[test]
    fn exec_and_working_directory_failures_come_back_from_the_harness_child() {
        // Not executable: the file exists (so it resolves) but exec refuses it.
        let file = std::env::temp_dir().join(format!("agentstream-not-executable-{}", std::process::id()));
        std::fs::write(&file, "#!/bin/sh\n").unwrap();
        let err = spawn(file.as_os_str(), &[], None, &[]).err().expect("exec fails");
        std::fs::remove_file(&file).unwrap();
        assert_eq!(err.kind, ErrorKind::SpawnFailed);
        assert!(err.message.contains("is not executable"), "{}", err.message);

        let missing = Path::new("/definitely/not/a/directory");
        let err = spawn(OsStr::new("true"), &[], Some(missing), &[]).err().expect("chdir fails");
        assert_eq!(err.kind, ErrorKind::SpawnFailed);
        assert!(
            err.message.contains("cannot use the working directory /definitely/not/a/directory"),
            "{}",
            err.message
        );
    }

    #[test]
    fn programs_resolve_on_the_path_of_the_process() {
        assert!(resolve_program(OsStr::new("sh"), None).is_some());
        assert_eq!(resolve_program(OsStr::new("sh"), Some(OsStr::new("/definitely/not"))), None);
        assert!(resolve_program(OsStr::new("/bin/sh"), None).is_some());
        assert_eq!(resolve_program(OsStr::new("no-such-harness-anywhere"), None), None);
    }
}
