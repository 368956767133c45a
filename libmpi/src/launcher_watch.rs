//! No orphans: a rank whose launcher is gone (mpirun or Hydra's proxy killed, even by SIGKILL)
//! ends at once instead of spinning on forever in a wait for peers that will never come.
//!
//! A thread blocked in poll(2) on the PMI socket: the launcher's end closing is the one sign
//! that holds for every launcher and every way of starting the rank (mpirun's own children also
//! get PR_SET_PDEATHSIG; one started through a shell, or by Hydra, does not). A thread costs
//! the progress engine nothing, and it sees the hang-up whatever the main thread is doing: a
//! spin in MPI_Recv, a collective, a rendezvous, or application code between MPI calls.
//! It is stopped before the PMI exchange of MPI_Finalize, after which the launcher may close
//! the socket while the process legitimately runs on.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::thread::JoinHandle;

pub struct Watch {
    /// Written to stop the thread.
    wake: OwnedFd,
    thread: Option<JoinHandle<()>>,
}

impl Watch {
    /// Watch the launcher socket `pmi_fd` (a duplicate is polled, so the caller's stays its own).
    pub fn start(pmi_fd: RawFd, rank: i32) -> io::Result<Watch> {
        // SAFETY: F_DUPFD_CLOEXEC only creates a new descriptor; `pmi_fd` is the runtime's open
        // launcher socket.
        let sock = unsafe { libc::fcntl(pmi_fd, libc::F_DUPFD_CLOEXEC, 0) };
        if sock < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `sock` was just created and is owned by nothing else.
        let sock = unsafe { OwnedFd::from_raw_fd(sock) };
        // SAFETY: eventfd has no memory-safety preconditions.
        let wake = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if wake < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: as for `sock`.
        let wake = unsafe { OwnedFd::from_raw_fd(wake) };
        let wake_fd = wake.as_raw_fd();
        let thread = std::thread::Builder::new()
            .name("rmpi-launcher-watch".into())
            .spawn(move || watch(sock, wake_fd, rank))?;
        Ok(Watch {
            wake,
            thread: Some(thread),
        })
    }
}

impl Drop for Watch {
    /// Stop watching (MPI_Finalize drops it: the launcher may close the socket from then on;
    /// so does an MPI_Init that fails after starting it): the thread never outlives its handle.
    fn drop(&mut self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our eventfd.
        unsafe { libc::write(self.wake.as_raw_fd(), (&one as *const u64).cast(), 8) };
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn watch(sock: OwnedFd, wake: RawFd, rank: i32) {
    let mut fds = [
        libc::pollfd {
            fd: sock.as_raw_fd(),
            events: libc::POLLRDHUP,
            revents: 0,
        },
        libc::pollfd {
            fd: wake,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        // SAFETY: `fds` is a live array of two pollfd; both descriptors stay open while we poll
        // (`sock` is ours; `wake` is closed only after `Drop` has joined this thread).
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            // Not expected (both descriptors are ours); say so rather than lose the watch quietly.
            eprintln!("rmpi: rank {rank}: the launcher watch stopped: poll failed: {e}");
            return;
        }
        if fds[1].revents != 0 {
            return;
        }
        if fds[0].revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0 {
            launcher_gone(rank);
        }
    }
}

fn launcher_gone(rank: i32) -> ! {
    let msg = format!(
        "rmpi: rank {rank} (pid {}): the launcher is gone (its PMI connection closed); exiting\n",
        std::process::id()
    );
    // The launcher relayed our stderr; it may be gone with it, so the write is best effort.
    // SAFETY: writes msg's bytes to fd 2; _exit ends the process without running handlers
    // that could wait on the peers.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        libc::_exit(1)
    }
}
