//! Which transport reaches each rank: `self` for this rank, `sm` for ranks of this node, `ib`
//! for the others when its device opens on every rank, else `tcp` (and ib or tcp for all when
//! `--mca btl ib,self` / `tcp,self` leaves sm out), with the addresses exchanged through PMI.
//! A one-node job under the default never opens ib or a socket. A rank no allowed transport
//! reaches fails init with the pair named.

use btl_ib::{BtlSelection, IbTransport};
use btl_tcp::TcpTransport;

use super::Endpoint;
use super::{ib::IbBtl, self_btl::SelfBtl, sm::SmBtl, tcp::TcpBtl, Btl};
use crate::error::{Error, ErrorClass, Result};
use crate::pmi::Pmi;

/// PMI values are at most 1024 bytes: longer ones go in numbered pieces.
const PIECE: usize = 960;

fn other(msg: impl Into<String>) -> Error {
    Error::new(ErrorClass::Other, msg)
}

pub struct Choice {
    pub btls: Vec<Box<dyn Btl>>,
    pub endpoints: Vec<Endpoint>,
}

/// `sm`: the node transport when this rank shares its node and sm is allowed.
pub fn choose(
    pmi: Option<&mut Pmi>,
    rank: i32,
    size: i32,
    local: &[i32],
    sel: BtlSelection,
    sm: Option<SmBtl>,
    verbose: bool,
) -> Result<Choice> {
    let mut btls: Vec<Box<dyn Btl>> = vec![Box::new(SelfBtl::default())];
    let sm_index = sm.map(|b| {
        btls.push(Box::new(b));
        btls.len() - 1
    });
    let unreachable = |r: i32, why: String| {
        other(format!(
            "no transport reaches rank {r} from rank {rank} (btl={}): {why}",
            sel.names()
        ))
    };
    // Far peers: every rank sm does not reach. Job-wide uniform (a job on several nodes gives
    // every rank remote peers), so all ranks take part in the PMI exchanges or none does.
    let far: Vec<i32> = (0..size)
        .filter(|&r| r != rank && (sm_index.is_none() || !local.contains(&r)))
        .collect();
    let mut far_index = None;
    if let Some(&first) = far.first() {
        if !sel.ib && !sel.tcp {
            let why = if local.contains(&first) {
                "it is on this node and sm is not selected".to_string()
            } else {
                "it is on another node and neither ib nor tcp is selected".to_string()
            };
            return Err(unreachable(first, why));
        }
        let pmi = pmi.ok_or_else(|| other("btl ib and tcp need PMI to exchange addresses"))?;
        // ib first; with tcp also allowed, ib is used only if it opened on every rank (each
        // rank reads every rank's outcome, so all decide alike) and tcp otherwise.
        let mut ib = None;
        if sel.ib {
            ib = open_ib(pmi, rank, size, &far, sel.tcp, verbose)
                .map_err(|why| unreachable(first, why))?;
        }
        let btl: Box<dyn Btl> = match ib {
            Some(t) => {
                let ib_verbose = t.verbose();
                Box::new(IbBtl::new(t, rank, ib_verbose))
            }
            None => {
                let t =
                    open_tcp(pmi, rank, &far, verbose).map_err(|why| unreachable(first, why))?;
                Box::new(TcpBtl::new(t, rank))
            }
        };
        btls.push(btl);
        far_index = Some(btls.len() - 1);
    } else if verbose && sel.ib {
        eprintln!("rmpi: rank {rank}: btl ib: not needed (every peer is reached by sm)");
        if let Err(why) = btl_ib::Params::from_env(1)
            .and_then(|p| btl_ib::verbs::open(p.device).map(|d| d.name()))
        {
            eprintln!("rmpi: rank {rank}: btl ib: disqualified: {why}");
        }
    }
    if !sel.self_ {
        return Err(unreachable(rank, "self is not selected".into()));
    }
    let endpoints = (0..size)
        .map(|r| {
            if r == rank {
                Endpoint { btl: 0, peer: 0 }
            } else if let Some(i) = far.iter().position(|&p| p == r) {
                Endpoint {
                    btl: far_index.expect("ib or tcp opened for the far peers"),
                    peer: i,
                }
            } else {
                let i = local.iter().position(|&l| l == r).expect("an sm peer");
                Endpoint {
                    btl: sm_index.expect("sm reaches the local peers"),
                    peer: i,
                }
            }
        })
        .collect();
    Ok(Choice { btls, endpoints })
}

/// Opens the device, publishes this rank's address and QP numbers, and connects to every peer.
/// With `fallback` (tcp allowed too), None when ib did not open on some rank.
fn open_ib(
    pmi: &mut Pmi,
    rank: i32,
    size: i32,
    peers: &[i32],
    fallback: bool,
    verbose: bool,
) -> std::result::Result<Option<IbTransport>, String> {
    let params = btl_ib::Params::from_env(peers.len())?;
    if params.device == btl_ib::verbs::DeviceChoice::Soft {
        // The software provider's RDMA is process_vm_readv/writev by the peer (Yama permitting).
        btl_sm::cma::allow_ptrace_from_any();
    }
    let names = peers.iter().map(|&r| r as usize).collect();
    let t = IbTransport::open(params, names).map_err(|e| e.message);
    // Publish even on failure (an empty value), so that peers see why instead of waiting.
    let value = match &t {
        Ok(t) => {
            let mut qpns = vec![String::from("-"); size as usize];
            for (i, &p) in peers.iter().enumerate() {
                qpns[p as usize] = format!("{:x}", t.qpn(i));
            }
            format!("{}.{}", hex(&t.address()), qpns.join(","))
        }
        Err(_) => String::from("unavailable"),
    };
    put_long(pmi, &format!("rmpi-ib-{rank}"), &value).map_err(|e| e.to_string())?;
    pmi.barrier().map_err(|e| e.to_string())?;
    if fallback {
        // Every rank's outcome, not only the peers': all ranks must take the same branch.
        for r in 0..size {
            let v = get_long(pmi, &format!("rmpi-ib-{r}")).map_err(|e| e.to_string())?;
            if v.as_deref() == Some("unavailable") {
                if verbose {
                    let why = t
                        .as_ref()
                        .err()
                        .map_or(String::new(), |w| format!(" (here: {w})"));
                    eprintln!("rmpi: rank {rank}: btl ib: unavailable on rank {r}{why}; using tcp");
                }
                return Ok(None);
            }
        }
    }
    let mut t = t?;
    for (i, &p) in peers.iter().enumerate() {
        let v = get_long(pmi, &format!("rmpi-ib-{p}"))
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("rank {p} published no ib address"))?;
        if v == "unavailable" {
            return Err(format!("btl ib is unavailable on rank {p}"));
        }
        let (addr, qpns) = v
            .split_once('.')
            .ok_or_else(|| format!("rank {p}'s ib address is malformed"))?;
        let addr = unhex(addr).ok_or_else(|| format!("rank {p}'s ib address is malformed"))?;
        let qpn = qpns
            .split(',')
            .nth(rank as usize)
            .and_then(|q| u32::from_str_radix(q, 16).ok())
            .ok_or_else(|| format!("rank {p} has no ib QP for rank {rank}"))?;
        t.connect(i, &addr, qpn).map_err(|e| e.message)?;
    }
    // Every QP must be ready to receive before anyone sends (RC retries only briefly).
    pmi.barrier().map_err(|e| e.to_string())?;
    if verbose || t.verbose() {
        eprintln!(
            "rmpi: rank {rank}: btl ib: device {}, {} peers, registration cache {}",
            t.device_name(),
            peers.len(),
            match t.rcache_enabled() {
                Ok(()) => "on".to_string(),
                Err(why) => format!("off ({why})"),
            }
        );
    }
    Ok(Some(t))
}

/// Listens, publishes `cookie;ip:port,...` under `rmpi-tcp-<rank>` and reads the peers'
/// addresses; connections open later, on the first send.
fn open_tcp(
    pmi: &mut Pmi,
    rank: i32,
    peers: &[i32],
    verbose: bool,
) -> std::result::Result<TcpTransport, String> {
    let names: Vec<u32> = peers.iter().map(|&r| r as u32).collect();
    let t = btl_tcp::Params::from_env().and_then(|p| TcpTransport::open(p, rank as u32, &names));
    // Publish even on failure, so that peers see why instead of waiting.
    let value = match &t {
        Ok(t) => t.address(),
        Err(_) => String::from("unavailable"),
    };
    put_long(pmi, &format!("rmpi-tcp-{rank}"), &value).map_err(|e| e.to_string())?;
    pmi.barrier().map_err(|e| e.to_string())?;
    let mut t = t?;
    for (i, &p) in peers.iter().enumerate() {
        let v = get_long(pmi, &format!("rmpi-tcp-{p}"))
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("rank {p} published no tcp address"))?;
        if v == "unavailable" {
            return Err(format!("btl tcp is unavailable on rank {p}"));
        }
        t.set_peer_address(i, &v)?;
    }
    if verbose || t.verbose() {
        eprintln!(
            "rmpi: rank {rank}: btl tcp: {} peers, listening on {}",
            peers.len(),
            t.interfaces()
        );
    }
    Ok(t)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Puts `value` under `key` in pieces: `key` holds the piece count, `key-i` the pieces.
fn put_long(pmi: &mut Pmi, key: &str, value: &str) -> Result<()> {
    let pieces: Vec<&str> = value
        .as_bytes()
        .chunks(PIECE)
        .map(|c| std::str::from_utf8(c).expect("ASCII"))
        .collect();
    pmi.put(key, &pieces.len().to_string())?;
    for (i, p) in pieces.iter().enumerate() {
        pmi.put(&format!("{key}-{i}"), p)?;
    }
    Ok(())
}

fn get_long(pmi: &mut Pmi, key: &str) -> Result<Option<String>> {
    let Some(n) = pmi.get(key)? else {
        return Ok(None);
    };
    let n: usize = n
        .trim()
        .parse()
        .map_err(|_| other(format!("PMI value {key}={n} is not a piece count")))?;
    let mut v = String::new();
    for i in 0..n {
        match pmi.get(&format!("{key}-{i}"))? {
            Some(p) => v += &p,
            None => return Ok(None),
        }
    }
    Ok(Some(v))
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_roundtrip() {
        let b = vec![0u8, 1, 0xab, 0xff];
        assert_eq!(super::unhex(&super::hex(&b)), Some(b));
        assert_eq!(super::unhex("abc"), None);
        assert_eq!(super::unhex("zz"), None);
    }
}
