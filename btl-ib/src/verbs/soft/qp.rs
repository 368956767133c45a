//! QP state and the wire: every message is [8-byte header] + payload on one SOCK_SEQPACKET
//! socket per connected QP pair. Also the device address encoding peers exchange.

use super::rdma::Peer;
use crate::verbs::{Qpn, SendWr, Sge, VerbsError};
use std::collections::VecDeque;
use std::os::fd::OwnedFd;

pub const HDR_LEN: usize = 8;
pub const OP_SEND: u8 = 1;
pub const OP_DISCONNECT: u8 = 2;
pub const OP_HELLO: u8 = 3;

/// [op, has_imm, 0, 0, imm (le)].
pub fn header(op: u8, imm: Option<u32>) -> [u8; HDR_LEN] {
    let i = imm.unwrap_or(0).to_le_bytes();
    [op, imm.is_some() as u8, 0, 0, i[0], i[1], i[2], i[3]]
}

pub fn parse_header(h: &[u8; HDR_LEN]) -> (u8, Option<u32>) {
    let imm = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
    (h[0], (h[1] != 0).then_some(imm))
}

/// The first message on a dialed socket: who is calling which QP.
pub fn hello(from_pid: u32, from_qpn: Qpn, to_qpn: Qpn) -> [u8; HDR_LEN + 12] {
    let mut m = [0u8; HDR_LEN + 12];
    m[..HDR_LEN].copy_from_slice(&header(OP_HELLO, None));
    m[8..12].copy_from_slice(&from_pid.to_le_bytes());
    m[12..16].copy_from_slice(&from_qpn.to_le_bytes());
    m[16..20].copy_from_slice(&to_qpn.to_le_bytes());
    m
}

/// (from pid, from qpn, to qpn) of a hello message.
pub fn parse_hello(m: &[u8]) -> Option<(u32, Qpn, Qpn)> {
    if m.len() != HDR_LEN + 12 || m[0] != OP_HELLO {
        return None;
    }
    let w = |i: usize| u32::from_le_bytes(m[i..i + 4].try_into().unwrap());
    Some((w(8), w(12), w(16)))
}

const MAGIC: &[u8; 4] = b"RMSV";
const VERSION: u8 = 2;

/// magic, version, pid, table address, capacity, atomics lock fd, name length, name.
pub fn encode_address(p: &Peer) -> Vec<u8> {
    let mut v = Vec::with_capacity(26 + p.name.len());
    v.extend_from_slice(MAGIC);
    v.push(VERSION);
    v.extend_from_slice(&p.pid.to_le_bytes());
    v.extend_from_slice(&p.table.to_le_bytes());
    v.extend_from_slice(&p.cap.to_le_bytes());
    v.extend_from_slice(&p.lock_fd.to_le_bytes());
    v.push(p.name.len() as u8);
    v.extend_from_slice(&p.name);
    v
}

pub fn decode_address(a: &[u8]) -> Result<Peer, VerbsError> {
    let bad = |why: &str| {
        Err(VerbsError(format!(
            "soft verbs address ({} bytes): {why}",
            a.len()
        )))
    };
    if a.len() < 26 || &a[..4] != MAGIC {
        return bad("not a soft-provider address (wrong magic or too short)");
    }
    if a[4] != VERSION {
        return bad(&format!(
            "version {} but this build speaks version {VERSION}",
            a[4]
        ));
    }
    let pid = u32::from_le_bytes(a[5..9].try_into().unwrap());
    let table = u64::from_le_bytes(a[9..17].try_into().unwrap());
    let cap = u32::from_le_bytes(a[17..21].try_into().unwrap());
    let lock_fd = u32::from_le_bytes(a[21..25].try_into().unwrap());
    let n = a[25] as usize;
    if a.len() != 26 + n || n == 0 || pid == 0 || table == 0 || cap == 0 {
        return bad("inconsistent fields");
    }
    Ok(Peer {
        pid,
        table,
        cap,
        lock_fd,
        name: a[26..].to_vec(),
    })
}

pub struct Qp {
    pub qpn: Qpn,
    pub max_send: usize,
    pub max_recv: usize,
    /// Set by connect(): the peer device and its QP number.
    pub remote: Option<(Peer, Qpn)>,
    /// Whether this side dials (the smaller (pid, qpn) of the pair).
    pub dial: bool,
    pub fd: Option<OwnedFd>,
    pub sq: VecDeque<SendWr>,
    pub rq: VecDeque<(u64, Sge)>,
    /// In the error state: everything is flushed.
    pub error: bool,
    /// Why, for the details of flushed completions.
    pub reason: String,
    /// The peer sent an orderly DISCONNECT.
    pub peer_closed: bool,
}

impl Qp {
    pub fn new(qpn: Qpn, max_send: u32, max_recv: u32) -> Qp {
        Qp {
            qpn,
            max_send: max_send.max(1) as usize,
            max_recv: max_recv.max(1) as usize,
            remote: None,
            dial: false,
            fd: None,
            sq: VecDeque::new(),
            rq: VecDeque::new(),
            error: false,
            reason: String::new(),
            peer_closed: false,
        }
    }

    pub fn peer_pid(&self) -> u32 {
        self.remote.as_ref().map_or(0, |r| r.0.pid)
    }
}
