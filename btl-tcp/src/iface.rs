//! Which IPv4 interfaces the transport listens on: `btl_tcp_if_include` / `btl_tcp_if_exclude`
//! lists of names or CIDR ranges, as in Open MPI. By default loopback (127.0.0.1/8) is excluded;
//! when that leaves nothing (a machine with only loopback) loopback is used, so one-node jobs
//! forced onto tcp (`--mca btl tcp,self`) work anywhere. Only IPv4 for now.

use std::net::Ipv4Addr;

use crate::params::DEFAULT_EXCLUDE;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Iface {
    pub name: String,
    pub addr: Ipv4Addr,
    pub prefix: u8,
}

impl Iface {
    /// Whether `other` is on this interface's subnet.
    pub fn same_subnet(&self, other: Ipv4Addr) -> bool {
        in_net(other, self.addr, self.prefix)
    }
}

fn in_net(a: Ipv4Addr, net: Ipv4Addr, prefix: u8) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - prefix.min(32))
    };
    u32::from(a) & mask == u32::from(net) & mask
}

/// The IPv4 interfaces that are up.
pub fn list() -> std::io::Result<Vec<Iface>> {
    let mut v = Vec::new();
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list we free below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut p = head;
    while !p.is_null() {
        // SAFETY: `p` is a node of the list getifaddrs returned, alive until freeifaddrs; its
        // name is a C string and an AF_INET address is a sockaddr_in.
        unsafe {
            let ifa = &*p;
            let up = ifa.ifa_flags & libc::IFF_UP as u32 != 0;
            if up && !ifa.ifa_addr.is_null() && (*ifa.ifa_addr).sa_family as i32 == libc::AF_INET {
                let sin = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                let addr = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
                let prefix = if ifa.ifa_netmask.is_null() {
                    32
                } else {
                    let m = &*(ifa.ifa_netmask as *const libc::sockaddr_in);
                    u32::from_be(m.sin_addr.s_addr).count_ones() as u8
                };
                let name = std::ffi::CStr::from_ptr(ifa.ifa_name)
                    .to_string_lossy()
                    .into_owned();
                v.push(Iface { name, addr, prefix });
            }
            p = ifa.ifa_next;
        }
    }
    // SAFETY: `head` came from getifaddrs and is freed once; no reference into it remains.
    unsafe { libc::freeifaddrs(head) };
    Ok(v)
}

/// One item of an include/exclude list: a CIDR range or an interface name.
fn matches(item: &str, i: &Iface) -> Result<bool, String> {
    match item.split_once('/') {
        Some((a, p)) => {
            let a: Ipv4Addr = a
                .parse()
                .map_err(|_| format!("`{item}`: not an IPv4 CIDR"))?;
            let p: u8 = p
                .parse()
                .ok()
                .filter(|&p| p <= 32)
                .ok_or_else(|| format!("`{item}`: not an IPv4 CIDR"))?;
            Ok(in_net(i.addr, a, p))
        }
        None => Ok(item == i.name),
    }
}

fn any(list: &str, i: &Iface) -> Result<bool, String> {
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if matches(item, i)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The interfaces of `all` the parameters select (see the module comment).
pub fn select(
    all: &[Iface],
    include: Option<&str>,
    exclude: Option<&str>,
) -> Result<Vec<Iface>, String> {
    let mut out = Vec::new();
    if let Some(inc) = include {
        for i in all {
            if any(inc, i).map_err(|e| format!("btl_tcp_if_include: {e}"))? {
                out.push(i.clone());
            }
        }
        if out.is_empty() {
            return Err(format!(
                "btl_tcp_if_include={inc} selects no IPv4 interface that is up"
            ));
        }
        return Ok(out);
    }
    let ex = exclude.unwrap_or(DEFAULT_EXCLUDE);
    for i in all {
        if !any(ex, i).map_err(|e| format!("btl_tcp_if_exclude: {e}"))? {
            out.push(i.clone());
        }
    }
    if out.is_empty() && exclude.is_none() {
        // Only loopback is up: it is the one way to reach peers of this node.
        out = all
            .iter()
            .filter(|i| i.addr.is_loopback())
            .cloned()
            .collect();
    }
    if out.is_empty() {
        return Err(format!(
            "btl_tcp_if_exclude={ex} leaves no IPv4 interface that is up"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ifs() -> Vec<Iface> {
        vec![
            Iface {
                name: "lo".into(),
                addr: Ipv4Addr::new(127, 0, 0, 1),
                prefix: 8,
            },
            Iface {
                name: "eth0".into(),
                addr: Ipv4Addr::new(10, 1, 2, 3),
                prefix: 16,
            },
            Iface {
                name: "ib0".into(),
                addr: Ipv4Addr::new(192, 168, 0, 9),
                prefix: 24,
            },
        ]
    }

    fn names(v: Vec<Iface>) -> Vec<String> {
        v.into_iter().map(|i| i.name).collect()
    }

    #[test]
    fn default_excludes_loopback() {
        assert_eq!(names(select(&ifs(), None, None).unwrap()), ["eth0", "ib0"]);
        let only_lo = &ifs()[..1];
        assert_eq!(names(select(only_lo, None, None).unwrap()), ["lo"]);
    }

    #[test]
    fn include_and_exclude_by_name_or_cidr() {
        assert_eq!(names(select(&ifs(), Some("lo"), None).unwrap()), ["lo"]);
        assert_eq!(
            names(select(&ifs(), Some("10.1.0.0/16"), None).unwrap()),
            ["eth0"]
        );
        assert_eq!(
            names(select(&ifs(), None, Some("eth0,127.0.0.0/8")).unwrap()),
            ["ib0"]
        );
        assert!(select(&ifs(), Some("eth9"), None).is_err());
        assert!(select(&ifs(), Some("10.0.0.0/40"), None).is_err());
        assert!(select(&ifs(), None, Some("lo,eth0,ib0")).is_err());
    }
}
