//! Why a job ended early: the one line mpirun prints and the exit code it returns.

use std::io::Write;

use crate::foreign::running::Found;
use crate::signals::signal_name;

/// Prints one diagnostic line to stderr. Unlike eprintln!, never panics when stderr is gone
/// (`mpirun ... 2>&1 | head`): the teardown must still happen. One write, newline included:
/// `writeln!` on the unbuffered stderr writes the text and the newline apart, and the daemons
/// of a multi-host job share mpirun's stderr, so another host's line could land in between
/// (`--report-bindings` lines ran together that way).
pub fn say(line: &str) {
    let mut s = String::with_capacity(line.len() + 1);
    s.push_str(line);
    s.push('\n');
    let _ = std::io::stderr().write_all(s.as_bytes());
}

/// Exit code when the job timed out (as timeout(1)).
pub const EXIT_TIMEOUT: i32 = 124;
/// Exit code when a rank runs a program of another MPI: as for bad arguments, the program given
/// is the wrong one (the same status as when it is refused before starting).
pub const EXIT_FOREIGN: i32 = 2;

/// The first failure of a job.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    Abort {
        rank: usize,
        pid: i32,
        code: i32,
    },
    ExitCode {
        rank: usize,
        pid: i32,
        code: i32,
        before_finalize: bool,
    },
    NoFinalize {
        rank: usize,
        pid: i32,
    },
    Killed {
        rank: usize,
        pid: i32,
        sig: i32,
    },
    /// A rank closed its PMI connection between MPI_Init and MPI_Finalize and went on running.
    LeftPmi {
        rank: usize,
        pid: i32,
    },
    /// mpirun itself received a termination signal; `ranks` were still running.
    Signal {
        sig: i32,
        ranks: usize,
    },
    Timeout {
        secs: f64,
        ranks: usize,
    },
    /// A node daemon could not start a rank.
    LaunchFailed {
        rank: usize,
        host: String,
        why: String,
    },
    /// A node daemon's connection went away with ranks still running there.
    LostNode {
        host: String,
        ranks: usize,
    },
    /// A rank's process (the rank or one it started) has another MPI's library loaded.
    Foreign {
        rank: usize,
        pid: i32,
        found: Found,
    },
}

impl Failure {
    pub fn message(&self) -> String {
        match *self {
            Failure::Abort { rank, pid, code } => format!(
                "mpirun: rank {rank} (pid {pid}) called MPI_Abort with error code {code}; killing the job"
            ),
            Failure::ExitCode { rank, pid, code, before_finalize } => format!(
                "mpirun: rank {rank} (pid {pid}) exited with code {code}{}; killing the job",
                if before_finalize { " before MPI_Finalize" } else { "" }
            ),
            Failure::NoFinalize { rank, pid } => format!(
                "mpirun: rank {rank} (pid {pid}) exited without calling MPI_Finalize; killing the job"
            ),
            Failure::LeftPmi { rank, pid } => format!(
                "mpirun: rank {rank} (pid {pid}) closed its PMI connection before MPI_Finalize \
                 and is still running; killing the job"
            ),
            Failure::Killed { rank, pid, sig } => format!(
                "mpirun: rank {rank} (pid {pid}) was killed by signal {sig}{}; killing the job",
                signal_name(sig).map(|n| format!(" ({n})")).unwrap_or_default()
            ),
            Failure::Signal { sig, ranks } => format!(
                "mpirun: received {}; forwarding to {ranks} rank(s)",
                signal_name(sig).unwrap_or_else(|| format!("signal {sig}"))
            ),
            Failure::Timeout { secs, ranks } => format!(
                "mpirun: job timed out after {secs} s; killing {ranks} remaining rank(s)"
            ),
            Failure::LaunchFailed { rank, ref host, ref why } => format!(
                "mpirun: cannot start rank {rank} on host {host}: {why}; killing the job"
            ),
            Failure::LostNode { ref host, ranks } => format!(
                "mpirun: lost the connection to the daemon on host {host} ({ranks} rank(s) running there); killing the job"
            ),
            Failure::Foreign {
                rank,
                pid,
                ref found,
            } => format!(
                "mpirun: rank {rank} (pid {pid}) runs {}{}, which uses {} (it loaded {}): run it with {}, or rebuild it with rmpi's mpicc; killing the job",
                found.exe,
                if found.pid == pid { String::new() } else { format!(" (pid {})", found.pid) },
                found.mpi.name(),
                found.path,
                found.mpi.launcher()
            ),
        }
    }

    /// The rank the failure is about, and its pid, if it is about one.
    pub fn rank(&self) -> Option<(usize, i32)> {
        match *self {
            Failure::Abort { rank, pid, .. }
            | Failure::ExitCode { rank, pid, .. }
            | Failure::NoFinalize { rank, pid }
            | Failure::Killed { rank, pid, .. }
            | Failure::LeftPmi { rank, pid }
            | Failure::Foreign { rank, pid, .. } => Some((rank, pid)),
            _ => None,
        }
    }

    /// `message`, with the host named after the pid when the rank ran on `host` (a multi-host
    /// job: the pid alone would not say where to look).
    pub fn message_on(&self, host: Option<&str>) -> String {
        let m = self.message();
        match (self.rank(), host) {
            (Some((_, pid)), Some(h)) => {
                m.replacen(&format!("(pid {pid})"), &format!("(pid {pid} on {h})"), 1)
            }
            _ => m,
        }
    }

    pub fn exit_code(&self) -> i32 {
        match *self {
            // An exit status is one byte, and 0 would read as success.
            Failure::Abort { code, .. } if (1..=255).contains(&code) => code,
            Failure::Abort { .. } => 1,
            Failure::ExitCode { code, .. } => code,
            Failure::NoFinalize { .. } | Failure::LeftPmi { .. } => 1,
            Failure::LaunchFailed { .. } | Failure::LostNode { .. } => 1,
            Failure::Killed { sig, .. } | Failure::Signal { sig, .. } => 128 + sig,
            Failure::Timeout { .. } => EXIT_TIMEOUT,
            Failure::Foreign { .. } => EXIT_FOREIGN,
        }
    }
}

/// How a rank ended, as seen by `wait`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Code(i32),
    Signal(i32),
}

/// Judges a rank's end: `None` when it is not a failure.
pub fn judge(
    rank: usize,
    pid: i32,
    ended: Ended,
    initialized: bool,
    finalized: bool,
) -> Option<Failure> {
    let unfinished = initialized && !finalized;
    match ended {
        Ended::Code(0) if unfinished => Some(Failure::NoFinalize { rank, pid }),
        Ended::Code(0) => None,
        Ended::Code(code) => Some(Failure::ExitCode {
            rank,
            pid,
            code,
            before_finalize: unfinished,
        }),
        Ended::Signal(sig) => Some(Failure::Killed { rank, pid, sig }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_exits_are_not_failures() {
        assert_eq!(judge(0, 10, Ended::Code(0), false, false), None);
        assert_eq!(judge(0, 10, Ended::Code(0), true, true), None);
    }

    #[test]
    fn exit_without_finalize() {
        let f = judge(1, 11, Ended::Code(0), true, false).unwrap();
        assert_eq!(
            f.message(),
            "mpirun: rank 1 (pid 11) exited without calling MPI_Finalize; killing the job"
        );
        assert_eq!(f.exit_code(), 1);
    }

    #[test]
    fn nonzero_exit() {
        let f = judge(2, 12, Ended::Code(3), false, false).unwrap();
        assert_eq!(
            f.message(),
            "mpirun: rank 2 (pid 12) exited with code 3; killing the job"
        );
        assert_eq!(f.exit_code(), 3);
        let f = judge(2, 12, Ended::Code(3), true, false).unwrap();
        assert_eq!(
            f.message(),
            "mpirun: rank 2 (pid 12) exited with code 3 before MPI_Finalize; killing the job"
        );
        let f = judge(2, 12, Ended::Code(3), true, true).unwrap();
        assert!(!f.message().contains("before"));
    }

    #[test]
    fn killed_by_signal() {
        let f = judge(0, 13, Ended::Signal(11), true, false).unwrap();
        assert_eq!(
            f.message(),
            "mpirun: rank 0 (pid 13) was killed by signal 11 (SIGSEGV); killing the job"
        );
        assert_eq!(f.exit_code(), 139);
    }

    #[test]
    fn abort_codes() {
        let msg = |code| Failure::Abort {
            rank: 1,
            pid: 5,
            code,
        };
        assert_eq!(
            msg(7).message(),
            "mpirun: rank 1 (pid 5) called MPI_Abort with error code 7; killing the job"
        );
        assert_eq!(msg(7).exit_code(), 7);
        assert_eq!(msg(255).exit_code(), 255);
        assert_eq!(msg(0).exit_code(), 1);
        assert_eq!(msg(256).exit_code(), 1);
        assert_eq!(msg(-3).exit_code(), 1);
    }

    #[test]
    fn signal_and_timeout() {
        let f = Failure::Signal { sig: 2, ranks: 4 };
        assert_eq!(
            f.message(),
            "mpirun: received SIGINT; forwarding to 4 rank(s)"
        );
        assert_eq!(f.exit_code(), 130);
        let f = Failure::Timeout {
            secs: 1.5,
            ranks: 2,
        };
        assert_eq!(
            f.message(),
            "mpirun: job timed out after 1.5 s; killing 2 remaining rank(s)"
        );
        assert_eq!(f.exit_code(), 124);
        assert!(Failure::Timeout {
            secs: 1.0,
            ranks: 1
        }
        .message()
        .contains("after 1 s"));
    }

    #[test]
    fn foreign() {
        let found = |pid| Found {
            pid,
            exe: "/t/hello".into(),
            mpi: crate::foreign::Mpi::OpenMpi,
            path: "/usr/lib/libmpi.so.40.30.4".into(),
        };
        let f = Failure::Foreign {
            rank: 1,
            pid: 20,
            found: found(20),
        };
        assert_eq!(
            f.message(),
            "mpirun: rank 1 (pid 20) runs /t/hello, which uses Open MPI (it loaded /usr/lib/libmpi.so.40.30.4): run it with Open MPI's mpirun, or rebuild it with rmpi's mpicc; killing the job"
        );
        assert_eq!(f.exit_code(), 2);
        let f = Failure::Foreign {
            rank: 0,
            pid: 20,
            found: found(21),
        };
        assert!(f
            .message()
            .contains("runs /t/hello (pid 21), which uses Open MPI"));
    }
}
