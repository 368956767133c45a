//! The real provider: libibverbs through rdma-sys. SKELETON: lands with the real-provider work.

use super::*;

pub struct VerbsDevice {
    _private: (),
}

impl VerbsDevice {
    /// The first active port of the first device, or why there is none.
    pub fn open_first() -> Result<VerbsDevice, String> {
        Err("the libibverbs provider is not built yet".into())
    }
}

impl Device for VerbsDevice {
    fn name(&self) -> String {
        unimplemented!()
    }
    fn max_msg(&self) -> usize {
        unimplemented!()
    }
    fn reg_mr(&mut self, _addr: usize, _len: usize, _access: Access) -> Result<Mr, RegError> {
        unimplemented!()
    }
    fn dereg_mr(&mut self, _mr: Mr) -> Result<(), VerbsError> {
        unimplemented!()
    }
    fn pinned(&self) -> (usize, Option<usize>) {
        unimplemented!()
    }
    fn address(&self) -> Vec<u8> {
        unimplemented!()
    }
    fn create_qp(&mut self, _max_send_wr: u32, _max_recv_wr: u32) -> Result<Qpn, VerbsError> {
        unimplemented!()
    }
    fn connect(
        &mut self,
        _qpn: Qpn,
        _remote_address: &[u8],
        _remote_qpn: Qpn,
    ) -> Result<(), VerbsError> {
        unimplemented!()
    }
    fn post_recv(&mut self, _qpn: Qpn, _wr_id: u64, _sge: Sge) -> Result<(), VerbsError> {
        unimplemented!()
    }
    fn post_send(&mut self, _qpn: Qpn, _wr: SendWr) -> Result<(), VerbsError> {
        unimplemented!()
    }
    fn poll_cq(&mut self, _out: &mut Vec<Wc>, _max: usize) -> usize {
        unimplemented!()
    }
    fn destroy_qp(&mut self, _qpn: Qpn) -> Result<(), VerbsError> {
        unimplemented!()
    }
}
