//! PMI-1 client, "simple" wire protocol: one `key=value ...` line per message over the socket
//! the launcher passed in `PMI_FD` (our mpirun, or MPICH's Hydra).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::net::UnixStream;

use crate::error::{err, ErrorClass, Result};

pub struct Pmi {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    pub rank: i32,
    pub size: i32,
    pub kvsname: String,
}

/// Parse one PMI line into its `key=value` pairs (a value may not contain spaces).
pub fn parse_line(line: &str) -> HashMap<&str, &str> {
    line.split_ascii_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .collect()
}

fn env_int(name: &str) -> Result<i32> {
    let v = std::env::var(name)
        .map_err(|_| crate::error::Error::new(ErrorClass::Other, format!("{name} is not set")))?;
    v.trim().parse().map_err(|_| {
        crate::error::Error::new(ErrorClass::Other, format!("{name}={v} is not a number"))
    })
}

impl Pmi {
    /// Connect through `PMI_FD` if the launcher set it; `Ok(None)` means a singleton start.
    pub fn from_env() -> Result<Option<Pmi>> {
        let Ok(fd) = std::env::var("PMI_FD") else {
            crate::foreign_launcher::check_singleton(&|k| std::env::var(k).ok())?;
            return Ok(None);
        };
        let fd: RawFd = match fd.trim().parse() {
            Ok(fd) if fd >= 0 => fd,
            _ => {
                return err(
                    ErrorClass::Other,
                    format!("PMI_FD={fd} is not a file descriptor"),
                )
            }
        };
        // The fd must be open; otherwise from_raw_fd would adopt a number we do not own.
        // SAFETY: F_GETFD only reads the descriptor table; any integer is a valid argument.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
            return err(
                ErrorClass::Other,
                format!("PMI_FD={fd} is not an open file descriptor"),
            );
        }
        // SAFETY: the launcher handed this open socket to us alone (checked open just above), and
        // nothing else in the process adopts it, so this becomes its single owner.
        let stream = unsafe { UnixStream::from_raw_fd(fd) };
        // Keep it out of processes the application may exec.
        let _ = nix::fcntl::fcntl(
            &stream,
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
        );
        let writer = stream
            .try_clone()
            .map_err(|e| crate::error::Error::new(ErrorClass::Other, format!("PMI socket: {e}")))?;
        let mut pmi = Pmi {
            reader: BufReader::new(stream),
            writer,
            rank: 0,
            size: 1,
            kvsname: String::new(),
        };
        pmi.rank = env_int("PMI_RANK")?;
        pmi.size = env_int("PMI_SIZE")?;
        pmi.handshake()?;
        Ok(Some(pmi))
    }

    pub(crate) fn send(&mut self, line: &str) -> Result<()> {
        self.writer.write_all(line.as_bytes()).map_err(|e| {
            crate::error::Error::new(ErrorClass::Other, format!("PMI write failed: {e}"))
        })
    }

    pub(crate) fn recv(&mut self) -> Result<String> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) => err(ErrorClass::Other, "PMI server closed the connection"),
            Ok(_) => Ok(line),
            Err(e) => err(ErrorClass::Other, format!("PMI read failed: {e}")),
        }
    }

    /// Send a command and wait for the reply whose `cmd` is `expect`.
    pub(crate) fn call(&mut self, line: &str, expect: &str) -> Result<String> {
        self.send(line)?;
        let reply = self.recv()?;
        let cmd = parse_line(&reply)
            .get("cmd")
            .copied()
            .unwrap_or("")
            .to_string();
        if cmd != expect {
            return err(
                ErrorClass::Other,
                format!("PMI: expected {expect}, got: {}", reply.trim_end()),
            );
        }
        Ok(reply)
    }

    pub(crate) fn check_rc(reply: &str, what: &str) -> Result<()> {
        let kv = parse_line(reply);
        match kv.get("rc") {
            None | Some(&"0") => Ok(()),
            Some(rc) => err(
                ErrorClass::Other,
                format!(
                    "PMI {what} failed (rc={rc}): {}",
                    kv.get("msg").unwrap_or(&"")
                ),
            ),
        }
    }

    fn handshake(&mut self) -> Result<()> {
        let r = self.call(
            "cmd=init pmi_version=1 pmi_subversion=1\n",
            "response_to_init",
        )?;
        Self::check_rc(&r, "init")?;
        let r = self.call("cmd=get_maxes\n", "maxes")?;
        Self::check_rc(&r, "get_maxes")?;
        let r = self.call("cmd=get_my_kvsname\n", "my_kvsname")?;
        Self::check_rc(&r, "get_my_kvsname")?;
        self.kvsname = parse_line(&r)
            .get("kvsname")
            .copied()
            .unwrap_or("")
            .to_string();
        Ok(())
    }

    pub fn put(&mut self, key: &str, value: &str) -> Result<()> {
        let line = format!("cmd=put kvsname={} key={key} value={value}\n", self.kvsname);
        let r = self.call(&line, "put_result")?;
        Self::check_rc(&r, "put")
    }

    /// The value of `key`, or None when the KVS does not have it.
    pub fn get(&mut self, key: &str) -> Result<Option<String>> {
        let line = format!("cmd=get kvsname={} key={key}\n", self.kvsname);
        let r = self.call(&line, "get_result")?;
        let kv = parse_line(&r);
        if kv.get("rc") != Some(&"0") {
            return Ok(None);
        }
        Ok(kv.get("value").map(|v| v.to_string()))
    }

    pub fn barrier(&mut self) -> Result<()> {
        self.call("cmd=barrier_in\n", "barrier_out").map(|_| ())
    }

    pub fn finalize(&mut self) -> Result<()> {
        self.call("cmd=finalize\n", "finalize_ack").map(|_| ())
    }

    /// Tell the launcher to tear the job down; does not wait for an answer.
    /// The launcher socket's descriptor.
    pub fn raw_fd(&self) -> RawFd {
        use std::os::fd::AsRawFd;
        self.writer.as_raw_fd()
    }

    pub fn abort(&mut self, code: i32, message: &str) {
        let msg: String = message
            .chars()
            .map(|c| if c.is_ascii_whitespace() { '_' } else { c })
            .collect();
        let _ = self.send(&format!("cmd=abort exitcode={code} message={msg}\n"));
    }
}

/// Ranks that share this node, from the `PMI_process_mapping` value (`(vector,(first,nodes,per_node),...)`).
/// Returns None when the value cannot be read.
pub fn local_ranks_from_mapping(mapping: &str, rank: i32, size: i32) -> Option<Vec<i32>> {
    let inner = mapping.trim().strip_prefix("(vector,")?.strip_suffix(')')?;
    let mut node_of = vec![-1i32; size as usize];
    for block in inner.split("),") {
        let nums: Vec<i32> = block
            .trim_matches(|c| c == '(' || c == ')')
            .split(',')
            .map(|s| s.trim().parse().ok())
            .collect::<Option<_>>()?;
        let [first_node, nodes, per_node] = nums[..] else {
            return None;
        };
        // Ranks are laid out block by block in order: fill the next unassigned ranks.
        let mut next = node_of.iter().position(|&n| n < 0)?;
        for node in first_node..first_node + nodes {
            for _ in 0..per_node {
                if next >= node_of.len() {
                    break;
                }
                node_of[next] = node;
                next += 1;
            }
        }
        if next >= node_of.len() {
            break;
        }
    }
    if node_of.iter().any(|&n| n < 0) {
        // Hydra repeats the pattern cyclically when blocks cover fewer ranks than size.
        return None;
    }
    let mine = node_of[rank as usize];
    Some((0..size).filter(|&r| node_of[r as usize] == mine).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pairs() {
        let kv = parse_line("cmd=get_result rc=0 msg=success value=abc\n");
        assert_eq!(kv["cmd"], "get_result");
        assert_eq!(kv["value"], "abc");
    }

    #[test]
    fn mapping_single_node() {
        assert_eq!(
            local_ranks_from_mapping("(vector,(0,1,4))", 2, 4),
            Some(vec![0, 1, 2, 3])
        );
    }

    #[test]
    fn mapping_two_nodes() {
        assert_eq!(
            local_ranks_from_mapping("(vector,(0,2,2))", 3, 4),
            Some(vec![2, 3])
        );
        assert_eq!(
            local_ranks_from_mapping("(vector,(0,1,3),(1,1,1))", 3, 4),
            Some(vec![3])
        );
    }

    #[test]
    fn mapping_garbage() {
        assert_eq!(local_ranks_from_mapping("nonsense", 0, 2), None);
    }
}
