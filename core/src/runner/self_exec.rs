//! The supervisor as a program of its own: the shared library holding this code, run through
//! the host's dynamic loader (`<loader> <library> --agentstream-supervisor-1`) and started the way
//! `posix_spawn` starts a program (`clone(CLONE_VM | CLONE_VFORK)`, then `execve`).
//!
//! Why: a forked supervisor is a copy of the host. Copying a big host's page tables costs every
//! run's start (a JVM: ~30 ms, more with a big touched heap), every page the host writes while
//! the run lives is copied once more (copy-on-write), and with `vm.overcommit_memory=2` the copy
//! may be refused outright. An exec'd supervisor shares nothing with the host but the
//! descriptors it is handed.
//!
//! How: a shared library is an ELF object like a program. Linked with an entry point (the C and
//! uniffi bindings' build scripts pass `-Wl,-e,agentstream_supervisor_start`), the dynamic loader
//! runs it as a program when given its path. Python's and Node's modules are not linked so: they
//! use their interpreter's symbols (`PyExc_TypeError`, `napi_*`), which the loader cannot
//! resolve outside it, and would only ever fail. The entry reads the run's spec (the harness's
//! path, arguments, environment and working directory) from a memfd the host wrote, then runs
//! the very `supervisor_main` a forked supervisor runs. Only libc's initialisation runs before
//! it (the loader leaves a main program's own constructors to `__libc_start_main`, which is never
//! called here), so none of the binding's start-up code (a Python module's, a Node addon's) runs
//! in the supervisor. The environment is not passed on the command line: `/proc/<pid>/cmdline`
//! is readable by every user, a process's environment only by its owner.
//!
//! A program that starts runs (the `agentstream` command, and so its server) can be its own
//! runs' supervisor the same way: it calls [`supervise_if_asked`] first thing in `main`, and a
//! run execs `/proc/self/exe` with the marker. A library that cannot run itself uses the
//! `agentstream-supervisor` program (the `supervisor/` crate: that call and nothing else) when
//! its package ships one beside it: the Python wheel and the npm platform package do.
//!
//! When: on x86-64 glibc, in a host with a dynamic loader (`PT_INTERP`), from a library whose
//! ELF entry is this module's start symbol (which proves the build script passed the flag); on
//! any Linux, in a program that called [`supervise_if_asked`] or from a library with an
//! executable `agentstream-supervisor` in its directory. Otherwise — Python or Node built
//! without that program (the sdist, `pip install .`), a statically linked host (Go with
//! `agentstream-static`), a Rust program that did not call it, another architecture for the C
//! library, `AGENTSTREAM_SUPERVISOR=fork` in the host's environment, or an exec'd supervisor that
//! ended without a word (the loader refused the library) — the supervisor is forked, for the rest
//! of the process's life once it came to that.

use std::ffi::{CStr, CString};
use std::io::{Read, Seek, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use super::supervisor::{ExecOutcome, Prepared};

/// The argument that tells the library it runs as the supervisor (the number is the spec's
/// version: a library file replaced by an incompatible one refuses the spec and the host forks).
const MARKER: &CStr = c"--agentstream-supervisor-1";

/// The first field of a spec.
const SPEC_HEADER: &[u8] = b"agentstream-run-spec-1";

/// Where the exec'd supervisor finds the spec: right after the five descriptors every
/// supervisor gets (3..=7).
const FD_SPEC: RawFd = 8;

/// The environment variable that forces forked supervisors (`fork`).
const MODE_VARIABLE: &str = "AGENTSTREAM_SUPERVISOR";

/// Set once an exec'd supervisor could not be started: every later run forks.
static DISABLED: AtomicBool = AtomicBool::new(false);

/// Fork every later run's supervisor (this process's exec'd one failed).
pub(super) fn disable() {
    DISABLED.store(true, Ordering::Relaxed);
}

/// What runs as the supervisor when this process's code is in a shared library.
enum Image {
    /// The library itself, through the loader: `loader library MARKER`.
    Library { loader: CString, library: CString },
    /// The `agentstream-supervisor` program beside the library: `program MARKER`.
    Program(CString),
}

/// The name of the supervisor program a package ships beside a library that cannot run itself.
const SHIPPED_PROGRAM: &str = "agentstream-supervisor";

/// This process's library image, found once (`None`: no library, or nothing it can run).
fn image() -> Option<&'static Image> {
    static IMAGE: OnceLock<Option<Image>> = OnceLock::new();
    IMAGE.get_or_init(find_image).as_ref()
}

/// Set by [`supervise_if_asked`]: this program is its runs' supervisor when started with the
/// marker, so a run can exec it (`/proc/self/exe MARKER`).
static PROGRAM_ANSWERS: AtomicBool = AtomicBool::new(false);

/// The name the program is shown under in `ps` when exec'd as a supervisor.
fn program_name() -> &'static CStr {
    static NAME: OnceLock<CString> = OnceLock::new();
    NAME.get_or_init(|| {
        std::env::current_exe()
            .ok()
            .and_then(|p| CString::new(p.into_os_string().into_vec()).ok())
            .unwrap_or_else(|| c"agentstream".to_owned())
    })
}

/// Make this program its own runs' supervisor: call it first thing in `main`, before any
/// thread is started. In a process started as a supervisor it supervises and never returns;
/// otherwise it returns at once, and from then on this process's runs exec the program's own
/// file (`/proc/self/exe`, which stays valid if the file is replaced or deleted) as their
/// supervisor instead of forking a copy of the process. The `agentstream` command (and so
/// `agentstream serve`) does; a Rust program using the core that does not keeps forked
/// supervisors. Does nothing but return off Linux.
pub fn supervise_if_asked() {
    if std::env::args_os().nth(1).is_some_and(|arg| arg.as_encoded_bytes() == MARKER.to_bytes()) {
        // SAFETY: started by `Launch::start` with the marker: the descriptors are in place.
        unsafe { supervise_from_spec() }
    }
    PROGRAM_ANSWERS.store(true, Ordering::Relaxed);
}

/// Read the spec and supervise (the exec'd supervisor's `main`, either kind).
///
/// # Safety
/// Only in a process started by `Launch::start`: descriptors 3..=8 are the supervisor's and
/// the spec.
unsafe fn supervise_from_spec() -> ! {
    use super::supervisor::{FD_ERR, FD_LIFELINE, FD_NULL, FD_OUT, FD_STATUS, supervisor_main};
    match read_spec(FD_SPEC).as_deref().and_then(decode) {
        // SAFETY: the descriptors are this process's, arranged by `launch_entry`.
        Some(prepared) => unsafe { supervisor_main(&prepared, [FD_LIFELINE, FD_STATUS, FD_OUT, FD_ERR, FD_NULL]) },
        None => {
            // The host sees the status pipe close without a word and forks instead.
            say(b"agentstream supervisor: the run's spec is missing or unreadable\n");
            // SAFETY: ending the process.
            unsafe { libc::_exit(2) }
        }
    }
}

/// Write `message` to standard error (an error is of no consequence).
fn say(message: &[u8]) {
    // SAFETY: writing a valid buffer to descriptor 2.
    unsafe { libc::write(2, message.as_ptr().cast(), message.len()) };
}

#[cfg(all(target_arch = "x86_64", target_env = "gnu"))]
mod entry {
    use std::ffi::CStr;

    // The ELF entry point. The loader jumps here with the stack as the kernel laid it out for
    // a program (`argc`, `argv…`, NULL, `envp…`), `rsp` 16-byte aligned and no return address:
    // pass that stack to Rust with the frame pointer cleared (the end of the frame chain) and
    // the alignment the C calling convention expects at a call.
    std::arch::global_asm!(
        ".globl agentstream_supervisor_start",
        ".hidden agentstream_supervisor_start",
        ".type agentstream_supervisor_start,@function",
        "agentstream_supervisor_start:",
        "xor ebp, ebp",
        "mov rdi, rsp",
        "and rsp, -16",
        "call {entry}",
        "ud2",
        entry = sym supervisor_entry,
    );

    unsafe extern "C" {
        /// The entry point above (its address is compared with the library's ELF entry).
        pub(super) fn agentstream_supervisor_start();
    }

    /// The exec'd library's `main`: check the marker, then read the spec and supervise.
    ///
    /// # Safety
    /// Called only by `agentstream_supervisor_start`, with the program's initial stack.
    unsafe extern "C" fn supervisor_entry(stack: *const usize) -> ! {
        // SAFETY: the initial stack holds argc, then argc argument pointers (the loader has
        // already dropped its own arguments); the descriptors were arranged by `launch_entry`.
        unsafe {
            let argc = *stack;
            let argv = stack.add(1).cast::<*const libc::c_char>();
            if argc < 2 || CStr::from_ptr(*argv.add(1)) != super::MARKER {
                super::say(b"this is the agentstream library: it runs as a program only to supervise a harness agentstream starts\n");
                libc::_exit(2);
            }
            super::supervise_from_spec()
        }
    }
}

/// The image, if this process can exec one: see the module docs.
fn find_image() -> Option<Image> {
    let (library, runs_itself) = shared_object_holding_this_code()?;
    if runs_itself {
        if let Some(loader) = host_loader() {
            // SAFETY: access() on two NUL-terminated paths.
            if unsafe {
                libc::access(loader.as_ptr(), libc::X_OK) == 0 && libc::access(library.as_ptr(), libc::R_OK) == 0
            } {
                return Some(Image::Library { loader, library });
            }
        }
    }
    let beside = std::path::Path::new(std::ffi::OsStr::from_bytes(library.to_bytes())).with_file_name(SHIPPED_PROGRAM);
    let beside = CString::new(beside.into_os_string().into_vec()).ok()?;
    // SAFETY: access() on a NUL-terminated path.
    (unsafe { libc::access(beside.as_ptr(), libc::X_OK) } == 0).then_some(Image::Program(beside))
}

/// The absolute path of the shared library holding this code (`None` in a program: the code
/// was linked into it), and whether its ELF entry point is `agentstream_supervisor_start`
/// (the library was linked to run itself).
fn shared_object_holding_this_code() -> Option<(CString, bool)> {
    let here = find_image as *const () as usize;
    // SAFETY: dladdr fills `info` for an address of this object; the ELF header is mapped at
    // the object's base (the first loaded segment starts with it) and read only after its
    // magic number is checked.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(here as *const libc::c_void, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        let base = info.dli_fbase as usize;
        if Some(base) == main_program_base() {
            return None;
        }
        let header = &*(base as *const libc::Elf64_Ehdr);
        if header.e_ident[..4] != *b"\x7fELF" {
            return None;
        }
        let path = CStr::from_ptr(info.dli_fname);
        // A relative name (a library opened by one) depends on a directory that may have
        // changed since.
        if !path.to_bytes().starts_with(b"/") {
            return None;
        }
        Some((path.to_owned(), entry_is_the_supervisors(base, header.e_entry as usize)))
    }
}

/// Whether an object loaded at `base` with ELF entry `entry` enters at the start symbol.
#[cfg(all(target_arch = "x86_64", target_env = "gnu"))]
fn entry_is_the_supervisors(base: usize, entry: usize) -> bool {
    base.wrapping_add(entry) == entry::agentstream_supervisor_start as *const () as usize
}

#[cfg(not(all(target_arch = "x86_64", target_env = "gnu")))]
fn entry_is_the_supervisors(_base: usize, _entry: usize) -> bool {
    false
}

/// Where the main program is loaded: its load bias plus its lowest segment's address.
fn main_program_base() -> Option<usize> {
    let (headers, bias) = main_program_headers()?;
    let lowest = headers.iter().filter(|h| h.p_type == libc::PT_LOAD).map(|h| h.p_vaddr as usize).min()?;
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    Some(bias.wrapping_add(lowest & !(page - 1)))
}

/// The main program's program headers and load bias (where the headers are minus where the
/// program says they are).
fn main_program_headers() -> Option<(&'static [libc::Elf64_Phdr], usize)> {
    // SAFETY: getauxval has no preconditions; the program headers it points at are mapped for
    // the life of the process.
    unsafe {
        let headers = libc::getauxval(libc::AT_PHDR) as *const libc::Elf64_Phdr;
        let count = libc::getauxval(libc::AT_PHNUM) as usize;
        if headers.is_null() || count == 0 {
            return None;
        }
        let headers = std::slice::from_raw_parts(headers, count);
        let own = headers.iter().find(|h| h.p_type == libc::PT_PHDR)?;
        Some((headers, (headers.as_ptr() as usize).wrapping_sub(own.p_vaddr as usize)))
    }
}

/// The dynamic loader the host was started with: its program's `PT_INTERP` (none in a
/// statically linked program).
fn host_loader() -> Option<CString> {
    let (headers, bias) = main_program_headers()?;
    let interp = headers.iter().find(|h| h.p_type == libc::PT_INTERP)?;
    // SAFETY: PT_INTERP's NUL-terminated string lies in the program's first segment, mapped for
    // the life of the process.
    let path = unsafe { CStr::from_ptr(bias.wrapping_add(interp.p_vaddr as usize) as *const libc::c_char) };
    path.to_bytes().starts_with(b"/").then(|| path.to_owned())
}

/// A run's spec: NUL-terminated fields — the header, the counts of arguments and of
/// environment entries, `+` and the working directory or `-`, the program path, the arguments
/// (the program's name first), the environment entries.
fn encode(p: &Prepared) -> Vec<u8> {
    let mut out = Vec::new();
    let mut field = |bytes: &[u8]| {
        out.extend_from_slice(bytes);
        out.push(0);
    };
    field(SPEC_HEADER);
    field(p.argv.len().to_string().as_bytes());
    field(p.envp.len().to_string().as_bytes());
    match &p.cwd {
        Some(cwd) => {
            field(b"+");
            field(cwd.as_bytes());
        }
        None => field(b"-"),
    }
    field(p.path.as_bytes());
    for s in p.argv.iter().chain(&p.envp) {
        field(s.as_bytes());
    }
    out
}

/// The [`Prepared`] a spec describes, if it is one (every field, nothing more).
fn decode(spec: &[u8]) -> Option<Prepared> {
    let mut fields = spec.strip_suffix(&[0])?.split(|&b| b == 0);
    let mut next = || fields.next();
    if next()? != SPEC_HEADER {
        return None;
    }
    let count = |f: &[u8]| std::str::from_utf8(f).ok()?.parse::<usize>().ok();
    let (argc, envc) = (count(next()?)?, count(next()?)?);
    let cstring = |f: &[u8]| CString::new(f).ok();
    let cwd = match next()? {
        b"+" => Some(cstring(next()?)?),
        b"-" => None,
        _ => return None,
    };
    let path = cstring(next()?)?;
    let argv = (0..argc).map(|_| cstring(next()?)).collect::<Option<Vec<_>>>()?;
    let envp = (0..envc).map(|_| cstring(next()?)).collect::<Option<Vec<_>>>()?;
    if next().is_some() || argv.is_empty() {
        return None;
    }
    Some(Prepared::new(path, argv, envp, cwd))
}

/// Read the whole spec from `fd` (the host left its offset at the start).
fn read_spec(fd: RawFd) -> Option<Vec<u8>> {
    // SAFETY: `fd` is open for the caller's whole use; ManuallyDrop leaves it open.
    let mut file = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
    let mut spec = Vec::new();
    file.read_to_end(&mut spec).ok()?;
    Some(spec)
}

/// An exec'd supervisor ready to start: its command line, environment and spec.
pub(super) struct Launch {
    program: &'static CStr,
    argv: [*const libc::c_char; 4],
    /// Kept alive for `envp`.
    _ld_library_path: Option<CString>,
    envp: [*const libc::c_char; 2],
    spec: OwnedFd,
}

impl Launch {
    /// Everything for an exec'd supervisor of `p`, or `None` when supervisors are forked here.
    pub(super) fn prepare(p: &Prepared) -> Option<Launch> {
        static FORK_ASKED: OnceLock<bool> = OnceLock::new();
        let fork_asked = *FORK_ASKED.get_or_init(|| std::env::var_os(MODE_VARIABLE).is_some_and(|mode| mode == "fork"));
        if fork_asked || DISABLED.load(Ordering::Relaxed) {
            return None;
        }
        // A program runs as `shown MARKER`, whatever file is exec'd.
        let as_program = |file: &'static CStr, shown: &'static CStr| {
            (file, [shown.as_ptr(), MARKER.as_ptr(), std::ptr::null(), std::ptr::null()])
        };
        let (program, argv) = match image() {
            Some(Image::Library { loader, library }) => {
                (loader.as_c_str(), [loader.as_ptr(), library.as_ptr(), MARKER.as_ptr(), std::ptr::null()])
            }
            _ if PROGRAM_ANSWERS.load(Ordering::Relaxed) => as_program(c"/proc/self/exe", program_name()),
            Some(Image::Program(shipped)) => as_program(shipped, shipped),
            None => return None,
        };
        let spec = memfd_holding(&encode(p))?;
        // The loader may need the host's library path to find the supervisor's dependencies;
        // nothing else of the host's environment is passed (the harness's is in the spec).
        let ld_library_path = std::env::var_os("LD_LIBRARY_PATH").and_then(|v| {
            let mut kv = b"LD_LIBRARY_PATH=".to_vec();
            kv.extend(v.into_vec());
            CString::new(kv).ok()
        });
        let envp = [ld_library_path.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()), std::ptr::null()];
        Some(Launch { program, argv, _ld_library_path: ld_library_path, envp, spec })
    }

    /// Start the supervisor with its five descriptors `fds` (lifeline, status, stdout, stderr,
    /// /dev/null). Returns its pid, or `None` (and forks from now on) when it could not be
    /// exec'd.
    ///
    /// # Safety
    /// The caller blocks every signal around it (the child shares the host's memory until it
    /// execs).
    pub(super) unsafe fn start(&self, fds: [RawFd; 5]) -> Option<libc::pid_t> {
        let outcome = ExecOutcome::default();
        let [a, b, c, d, e] = fds;
        let start = LaunchStart { launch: self, fds: [a, b, c, d, e, self.spec.as_raw_fd()], outcome: &outcome };
        // SAFETY: `launch_entry` only makes system calls and execs or exits; `start` outlives
        // the child's use of it (CLONE_VFORK returns after its exec or exit).
        let pid = unsafe { super::supervisor::clone_vfork(launch_entry, std::ptr::from_ref(&start).cast_mut().cast()) };
        if pid < 0 {
            disable();
            return None;
        }
        if outcome.stage.load(Ordering::Acquire) != 0 {
            let mut status = 0;
            // SAFETY: reaping the child that could not exec.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            disable();
            return None;
        }
        Some(pid)
    }
}

/// A memfd (close-on-exec) holding `bytes`, its offset back at the start.
fn memfd_holding(bytes: &[u8]) -> Option<OwnedFd> {
    // SAFETY: a NUL-terminated name; memfd_create returns a new descriptor we own.
    let fd = unsafe { libc::memfd_create(c"agentstream-run-spec".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    // SAFETY: a new descriptor nothing else owns.
    let mut file = std::fs::File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    file.write_all(bytes).ok()?;
    file.rewind().ok()?;
    Some(OwnedFd::from(file))
}

/// What the launching child starts with (it runs on its own stack, in the host's memory).
struct LaunchStart<'a> {
    launch: &'a Launch,
    /// The supervisor's five descriptors and the spec, in their order at 3..=8.
    fds: [RawFd; 6],
    outcome: &'a ExecOutcome,
}

extern "C" fn launch_entry(start: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `start` is the `LaunchStart` of `Launch::start`, alive while the host thread is
    // suspended in `clone`; only system calls follow, then exec or exit.
    unsafe {
        let start = &*start.cast::<LaunchStart<'_>>();
        super::supervisor::arrange_fds(&start.fds);
        for fd in 3..3 + start.fds.len() as RawFd {
            libc::fcntl(fd, libc::F_SETFD, 0);
        }
        // Nothing the supervisor or its loader could print belongs in the host's output; a
        // supervisor that cannot start says so by ending without a status message.
        for std_fd in 0..3 {
            libc::dup2(super::supervisor::FD_NULL, std_fd);
        }
        super::open_files::restore_in_child();
        let launch = start.launch;
        libc::execve(launch.program.as_ptr(), launch.argv.as_ptr(), launch.envp.as_ptr());
        start.outcome.errno.store(super::supervisor::errno(), Ordering::Release);
        start.outcome.stage.store(super::supervisor::STAGE_EXEC, Ordering::Release);
        libc::_exit(127);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepared(cwd: Option<&str>) -> Prepared {
        let c = |s: &str| CString::new(s).unwrap();
        Prepared::new(
            c("/bin/sh"),
            vec![c("sh"), c("-c"), c("echo \"$A\" ''; exit 3"), c("")],
            vec![c("A=1"), c("EMPTY="), c("WITH=equals=inside")],
            cwd.map(c),
        )
    }

    #[test]
    fn a_spec_decodes_to_what_was_encoded() {
        for cwd in [None, Some("/tmp/a dir")] {
            let p = prepared(cwd);
            let back = decode(&encode(&p)).expect("decodes");
            assert_eq!(back.path, p.path);
            assert_eq!(back.argv, p.argv);
            assert_eq!(back.envp, p.envp);
            assert_eq!(back.cwd, p.cwd);
        }
    }

    #[test]
    fn a_damaged_spec_is_refused() {
        let spec = encode(&prepared(Some("/tmp")));
        assert!(decode(&spec[..spec.len() - 1]).is_none(), "the last NUL cut");
        assert!(decode(&spec[..spec.len() / 2]).is_none(), "cut in half");
        let mut longer = spec.clone();
        longer.extend_from_slice(b"extra\0");
        assert!(decode(&longer).is_none(), "a field too many");
        let mut other_version = spec.clone();
        other_version[SPEC_HEADER.len() - 1] = b'9';
        assert!(decode(&other_version).is_none(), "another spec version");
        assert!(decode(b"").is_none());
    }

    #[test]
    fn a_spec_is_read_back_from_its_memfd() {
        let spec = encode(&prepared(None));
        let fd = memfd_holding(&spec).expect("memfd");
        assert_eq!(read_spec(fd.as_raw_fd()).as_deref(), Some(&spec[..]));
    }

    #[test]
    fn the_host_loader_is_the_test_programs_interpreter() {
        // The test binary is a dynamically linked program: its loader exists and runs.
        let loader = host_loader().expect("a PT_INTERP");
        // SAFETY: access() on a NUL-terminated path.
        assert_eq!(unsafe { libc::access(loader.as_ptr(), libc::X_OK) }, 0, "{loader:?}");
    }

    #[test]
    fn code_linked_into_a_program_is_not_taken_for_a_library() {
        // The code lives in the test executable: there is no library to run or to look beside,
        // and supervisors are forked here (the bindings' tests check the exec'd ones).
        assert_eq!(shared_object_holding_this_code(), None);
        assert!(find_image().is_none());
        // SAFETY: getauxval has no preconditions.
        let phdr = unsafe { libc::getauxval(libc::AT_PHDR) } as usize;
        let base = main_program_base().expect("the program's base");
        assert!(base <= phdr && phdr - base < 1 << 20, "{base:#x} {phdr:#x}");
    }
}
