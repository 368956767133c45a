//! Finding a usable port: the first ACTIVE port of the first device that has one.

use super::ffi::{c_str, device_name, rc_errno, strerror, Context, DeviceList, Zeroable};
use rdma_sys::*;

/// An opened device and the port chosen on it.
pub struct Found {
    pub ctx: Context,
    pub name: String,
    pub port: u8,
    pub port_attr: ibv_port_attr,
    pub dev_attr: ibv_device_attr,
}

/// Opens the first device with an ACTIVE port, or says for each device why not.
pub fn open_first_active() -> Result<Found, String> {
    let list = DeviceList::get()?;
    if list.devices().is_empty() {
        return Err("no RDMA device found".into());
    }
    let mut why = Vec::new();
    for &dev in list.devices() {
        let name = device_name(dev);
        match open_active(dev, &name) {
            Ok(found) => return Ok(found),
            Err(e) => why.push(format!("{name}: {e}")),
        }
    }
    // `list` drops here; a context returned above outlives it by design.
    Err(format!("no active RDMA port: {}", why.join("; ")))
}

fn open_active(dev: *mut ibv_device, name: &str) -> Result<Found, String> {
    let ctx = Context::open(dev)?;
    let mut dev_attr = ibv_device_attr::zeroed();
    // SAFETY: `ctx` is open and `dev_attr` a valid out-pointer.
    let rc = unsafe { ibv_query_device(ctx.0, &mut dev_attr) };
    if rc != 0 {
        return Err(format!(
            "ibv_query_device failed: {}",
            strerror(rc_errno(rc))
        ));
    }
    let mut states = Vec::new();
    for port in 1..=dev_attr.phys_port_cnt {
        let mut pa = ibv_port_attr::zeroed();
        // SAFETY: `ctx` is open, `port` within 1..=phys_port_cnt and `pa` a zeroed out-pointer
        // of the size the inline wrapper passes on.
        let rc = unsafe { ___ibv_query_port(ctx.0, port, &mut pa) };
        if rc != 0 {
            states.push(format!(
                "port {port}: ibv_query_port failed: {}",
                strerror(rc_errno(rc))
            ));
            continue;
        }
        if pa.state == ibv_port_state::IBV_PORT_ACTIVE {
            return Ok(Found {
                ctx,
                name: format!("{name}:{port}"),
                port,
                port_attr: pa,
                dev_attr,
            });
        }
        // SAFETY: ibv_port_state_str range-checks and returns a static string.
        let state = c_str(unsafe { ibv_port_state_str(pa.state) });
        states.push(format!("port {port}: {state}"));
    }
    if states.is_empty() {
        states.push("no ports".into());
    }
    // `ctx` drops here: the device is closed again.
    Err(format!("no ACTIVE port ({})", states.join(", ")))
}

/// GID index 0 of the port: its IB port GID, or on RoCE the GID derived from its MAC.
pub fn query_gid0(ctx: &Context, port: u8) -> Result<[u8; 16], String> {
    let mut gid = ibv_gid::zeroed();
    // SAFETY: `ctx` is open, `port` one of its ports and `gid` a valid out-pointer.
    let rc = unsafe { ibv_query_gid(ctx.0, port, 0, &mut gid) };
    if rc != 0 {
        return Err(format!(
            "ibv_query_gid(port {port}, index 0) failed: {}",
            strerror(rc_errno(rc))
        ));
    }
    // SAFETY: both views of the union are plain bytes.
    Ok(unsafe { gid.raw })
}
