//! Multi-process plumbing: the test binary re-executes itself as a peer (env SOFT_ROLE), and
//! parent and child talk in lines prefixed with "@@" over the child's stdin/stdout. Every wait
//! is bounded; children are killed when their handle drops.

use btl_ib::verbs::soft::SoftDevice;
use btl_ib::verbs::{Device, Qpn, Wc};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

pub const T: Duration = Duration::from_secs(60);

fn line_reader<R: std::io::Read + Send + 'static>(r: R) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines() {
            let Ok(line) = line else { break };
            // libtest may print "test peer_entry ... " on the same line first.
            if let Some(at) = line.find("@@") {
                if tx.send(line[at + 2..].to_string()).is_err() {
                    break;
                }
            }
        }
    });
    rx
}

/// Waits for a line, polling `dev` meanwhile (accepts and transfers happen in poll_cq); the
/// completions seen are appended to `wcs`.
fn wait_line(
    rx: &Receiver<String>,
    mut dev: Option<(&mut SoftDevice, &mut Vec<Wc>)>,
    t: Duration,
    who: &str,
) -> String {
    let end = Instant::now() + t;
    loop {
        match rx.try_recv() {
            Ok(l) => return l,
            Err(std::sync::mpsc::TryRecvError::Disconnected) => {
                panic!("{who}: gone (see its output above)")
            }
            Err(_) => {}
        }
        match dev.as_mut() {
            Some((d, wcs)) => {
                d.poll_cq(wcs, 64);
            }
            None => std::thread::sleep(Duration::from_millis(2)),
        }
        if Instant::now() > end {
            panic!("{who}: no line within {t:?}");
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

pub struct Peer {
    child: Child,
    stdin: ChildStdin,
    rx: Receiver<String>,
    pub name: String,
}

impl Peer {
    pub fn spawn(role: &str, args: &[String]) -> Peer {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "peer_entry", "--nocapture", "--test-threads=1"])
            .env("SOFT_ROLE", role)
            .env("SOFT_ARGS", args.join(" "))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn peer");
        let stdin = child.stdin.take().unwrap();
        let rx = line_reader(child.stdout.take().unwrap());
        Peer {
            child,
            stdin,
            rx,
            name: format!("{role} {}", args.join(" ")),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn send(&mut self, l: &str) {
        writeln!(self.stdin, "{l}").expect("write to peer");
        self.stdin.flush().unwrap();
    }

    pub fn expect(&mut self, t: Duration) -> String {
        wait_line(&self.rx, None, t, &self.name)
    }

    pub fn expect_polling(
        &mut self,
        dev: &mut SoftDevice,
        wcs: &mut Vec<Wc>,
        t: Duration,
    ) -> String {
        wait_line(&self.rx, Some((dev, wcs)), t, &self.name)
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for a successful exit.
    pub fn finish(&mut self, t: Duration) {
        let end = Instant::now() + t;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                assert!(st.success(), "{}: exited with {st}", self.name);
                return;
            }
            if Instant::now() > end {
                panic!("{}: did not exit within {t:?}", self.name);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The child's side: lines from the parent, and a watchdog so a lost parent never leaves it.
pub struct Ctl {
    rx: Receiver<String>,
}

impl Ctl {
    pub fn new() -> Ctl {
        std::thread::spawn(|| {
            std::thread::sleep(Duration::from_secs(120));
            eprintln!("soft test peer: watchdog fired");
            std::process::exit(3);
        });
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ctl { rx }
    }

    pub fn say(&self, l: &str) {
        let mut o = std::io::stdout().lock();
        writeln!(o, "@@{l}").unwrap();
        o.flush().unwrap();
    }

    pub fn hear(&self, dev: &mut SoftDevice, wcs: &mut Vec<Wc>) -> String {
        wait_line(&self.rx, Some((dev, wcs)), T, "parent")
    }
}

pub fn args() -> Vec<String> {
    std::env::var("SOFT_ARGS")
        .unwrap_or_default()
        .split_whitespace()
        .map(String::from)
        .collect()
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Polls until `n` completions arrived (those in `wcs` count), or panics after `t`.
pub fn poll_n(dev: &mut SoftDevice, wcs: &mut Vec<Wc>, n: usize, t: Duration) {
    let end = Instant::now() + t;
    while wcs.len() < n {
        dev.poll_cq(wcs, 64);
        if Instant::now() > end {
            panic!(
                "only {} of {n} completions within {t:?}: {wcs:?}",
                wcs.len()
            );
        }
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// Page-aligned anonymous memory, unmapped on drop.
pub struct Buf {
    pub ptr: *mut u8,
    pub len: usize,
}

impl Buf {
    pub fn new(len: usize) -> Buf {
        // SAFETY: a fresh anonymous private mapping; checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len.max(1),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        Buf {
            ptr: p as *mut u8,
            len,
        }
    }

    pub fn addr(&self) -> usize {
        self.ptr as usize
    }

    pub fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: the mapping is ours, live and len bytes long.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        // SAFETY: the mapping was made in new() and nothing refers to it after drop.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len.max(1)) };
    }
}

/// Replaces the pages under `[addr, +len)` with new ones (munmap + mmap MAP_FIXED), after
/// making the freed pages be reused elsewhere so the new ones surely get other frames.
pub fn remap(addr: usize, len: usize, fill: u8) {
    // SAFETY: the range is a mapping the caller owns; it is replaced in place, same size.
    unsafe {
        assert_eq!(libc::munmap(addr as *mut libc::c_void, len), 0);
        let scratch = Buf::new(1 << 20);
        std::ptr::write_bytes(scratch.ptr, 1, scratch.len);
        let p = libc::mmap(
            addr as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
            -1,
            0,
        );
        assert_eq!(p as usize, addr);
        std::ptr::write_bytes(addr as *mut u8, fill, len);
        std::mem::forget(scratch); // keep the freed frames busy until the test ends
    }
}

/// One line describing a device and its QPs: "<hex address> <q1,q2,...> [extra...]".
fn describe(dev: &SoftDevice, qpns: &[Qpn], extra: &str) -> String {
    let q: Vec<String> = qpns.iter().map(|x| x.to_string()).collect();
    format!("{} {} {extra}", hex(&dev.address()), q.join(","))
        .trim_end()
        .to_string()
}

/// Connects qpns[i] to the i-th QP of the device `line` describes; returns the extra words.
fn connect_all(dev: &mut SoftDevice, qpns: &[Qpn], line: &str) -> Vec<String> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let addr = unhex(f[0]);
    let theirs: Vec<Qpn> = f[1].split(',').map(|x| x.parse().unwrap()).collect();
    for (q, t) in qpns.iter().zip(theirs) {
        dev.connect(*q, &addr, t).unwrap();
    }
    f[2..].iter().map(|s| s.to_string()).collect()
}

/// Parent side of a pair: exchanges descriptions with `peer` and connects.
pub fn pair_parent(peer: &mut Peer, dev: &mut SoftDevice, qpns: &[Qpn]) -> Vec<String> {
    let mut wcs = Vec::new();
    let line = peer.expect_polling(dev, &mut wcs, T);
    peer.send(&describe(dev, qpns, ""));
    connect_all(dev, qpns, &line)
}

/// Child side of a pair; `extra` travels to the parent.
pub fn pair_child(ctl: &Ctl, dev: &mut SoftDevice, qpns: &[Qpn], extra: &str) {
    ctl.say(&describe(dev, qpns, extra));
    let mut wcs = Vec::new();
    let line = ctl.hear(dev, &mut wcs);
    connect_all(dev, qpns, &line);
}

/// Waits for "bye" (polling), then says "ok".
pub fn child_end(ctl: &Ctl, dev: &mut SoftDevice) {
    let mut wcs = Vec::new();
    assert_eq!(ctl.hear(dev, &mut wcs), "bye");
    ctl.say("ok");
}

/// Ends a pair from the parent.
pub fn parent_end(peer: &mut Peer) {
    peer.send("bye");
    assert_eq!(peer.expect(T), "ok");
    peer.finish(T);
}

pub fn pattern(seed: usize, j: usize) -> u8 {
    (j * 13 + seed * 7 + (j >> 9)) as u8
}
