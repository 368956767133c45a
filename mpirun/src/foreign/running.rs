//! Run-time detection, for programs started indirectly (a script, `sh -c`, python with an mpi4py
//! built against Open MPI): the files mapped by a rank's processes, read from /proc.
//!
//! A rank's descendants come from the kernel's per-task children lists; a kernel without them
//! (no CONFIG_PROC_CHILDREN, e.g. some micro-VMs) costs one read of every `/proc/<pid>/stat` per
//! look: once per rank at its PMI init and once per scan.

use std::collections::HashMap;

use super::{classify, Foreign, Mpi};

/// A rank's processes looked at, at most: the rank and its descendants.
const MAX_TREE: usize = 256;

/// A foreign MPI library loaded by one of a rank's processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The process that has it loaded: the rank itself or one of its descendants.
    pub pid: i32,
    /// Its executable, from `/proc/<pid>/exe` (`?` if unreadable).
    pub exe: String,
    pub mpi: Mpi,
    /// The mapped file.
    pub path: String,
}

/// Looks for a foreign MPI in the processes `pids`; one that has gone, or whose maps cannot be
/// read, is skipped.
pub fn inspect(pids: &[i32]) -> Option<Found> {
    pids.iter().find_map(|&pid| {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
        let (foreign, path) = foreign_in_maps(&maps)?;
        let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
            .map_or_else(|_| "?".to_string(), |p| p.display().to_string());
        Some(Found {
            pid,
            exe,
            mpi: foreign.mpi,
            path,
        })
    })
}

/// The foreign MPI among the files of a `/proc/<pid>/maps` text, and the mapped path.
pub fn foreign_in_maps(maps: &str) -> Option<(Foreign, String)> {
    // The path is the rest of the line from its first '/': no other field has one.
    let paths = || maps.lines().filter_map(|l| l.find('/').map(|i| &l[i..]));
    let base = |p: &'_ str| -> String { p.rsplit('/').next().unwrap_or(p).to_string() };
    let bases: Vec<String> = paths().map(base).collect();
    let foreign = classify(bases.iter().map(String::as_str), true)?;
    let path = paths().find(|p| base(p) == foreign.library)?.to_string();
    Some((foreign, path))
}

/// Who is whose child, to find a rank's descendants.
pub struct ProcTree {
    /// Children by parent, read from every `/proc/<pid>/stat`; `None` when the kernel lists each
    /// task's children itself (CONFIG_PROC_CHILDREN, as distribution kernels have it).
    by_parent: Option<HashMap<i32, Vec<i32>>>,
}

impl ProcTree {
    pub fn read() -> ProcTree {
        if std::path::Path::new("/proc/thread-self/children").exists() {
            return ProcTree { by_parent: None };
        }
        let mut by_parent: HashMap<i32, Vec<i32>> = HashMap::new();
        for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                continue;
            };
            if let Some(ppid) = parent_in_stat(&stat) {
                by_parent.entry(ppid).or_default().push(pid);
            }
        }
        ProcTree {
            by_parent: Some(by_parent),
        }
    }

    /// `pid` and its descendants, parents first.
    pub fn tree(&self, pid: i32) -> Vec<i32> {
        let mut out = vec![pid];
        let mut next = 0;
        while next < out.len() && out.len() < MAX_TREE {
            let kids = self.children(out[next]);
            out.extend(kids.into_iter().take(MAX_TREE - out.len()));
            next += 1;
        }
        out
    }

    fn children(&self, pid: i32) -> Vec<i32> {
        if let Some(map) = &self.by_parent {
            return map.get(&pid).cloned().unwrap_or_default();
        }
        let mut kids = Vec::new();
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task"));
        for task in tasks.into_iter().flatten().flatten() {
            if let Ok(list) = std::fs::read_to_string(task.path().join("children")) {
                kids.extend(
                    list.split_whitespace()
                        .filter_map(|p| p.parse::<i32>().ok()),
                );
            }
        }
        kids
    }
}

/// The parent pid in a `/proc/<pid>/stat` text: `pid (comm) state ppid ...`, where comm may
/// hold spaces and parentheses (hence the last ')').
fn parent_in_stat(stat: &str) -> Option<i32> {
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OMPI_MAPS: &str = "\
55d0c8a00000-55d0c8a01000 r--p 00000000 08:01 1234 /tmp/my dir/hello
7f1c2a000000-7f1c2a100000 r-xp 00000000 08:01 42 /usr/lib/x86_64-linux-gnu/openmpi/lib/libopen-pal.so.40.30.3
7f1c2b000000-7f1c2b100000 r-xp 00000000 08:01 43 /usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4
7f1c2b100000-7f1c2b200000 r--p 00100000 08:01 43 /usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4
7ffd1e000000-7ffd1e021000 rw-p 00000000 00:00 0                          [stack]
";

    #[test]
    fn open_mpi_in_maps() {
        let (f, path) = foreign_in_maps(OMPI_MAPS).unwrap();
        assert_eq!(f.mpi, Mpi::OpenMpi);
        assert_eq!(f.library, "libmpi.so.40.30.4");
        assert_eq!(path, "/usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4");
    }

    #[test]
    fn other_maps() {
        let mpich =
            "7f00-7f01 r-xp 0 08:01 9 /usr/lib/x86_64-linux-gnu/libmpich.so.12.3.0 (deleted)\n";
        let (f, path) = foreign_in_maps(mpich).unwrap();
        assert_eq!(f.mpi, Mpi::Mpich);
        assert!(path.starts_with("/usr/lib/x86_64-linux-gnu/libmpich.so.12.3.0"));
        let ours = "7f00-7f01 r-xp 0 08:01 9 /w/target/debug/libmpi_abi.so.1\n\
                    7f00-7f01 r-xp 0 08:01 9 /lib/x86_64-linux-gnu/libc.so.6\n";
        assert_eq!(foreign_in_maps(ours), None);
        assert_eq!(foreign_in_maps(""), None);
    }

    #[test]
    fn our_own_process() {
        let me = std::process::id() as i32;
        assert_eq!(inspect(&[me]), None);
        assert_eq!(ProcTree::read().tree(me)[0], me);
    }

    #[test]
    fn children_are_found() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let me = std::process::id() as i32;
        // The children files may miss a child for a moment (the kernel documents them as not
        // reliable while processes fork and exit, as other tests' do here); the scan in use is
        // repeated too, so ask a few times.
        let mut tree = Vec::new();
        for _ in 0..100 {
            tree = ProcTree::read().tree(me);
            if tree.contains(&(child.id() as i32)) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(tree.contains(&(child.id() as i32)), "{tree:?}");
    }

    #[test]
    fn stat_parent() {
        assert_eq!(parent_in_stat("12 (a) b) c) S 7 12 12 0"), Some(7));
        assert_eq!(parent_in_stat("12 (sh) R 1 12"), Some(1));
        assert_eq!(parent_in_stat("garbage"), None);
    }
}
