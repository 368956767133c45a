//! Persistent requests whose operation lives above the pml: persistent collectives
//! (MPI_Bcast_init, ...) and partitioned communication. The pml keeps such a request as
//! `Starter::Ext`, an opaque `Rc` holding a `Box<dyn Start>`; MPI_Start asks it for the run's
//! request, and from then on Wait/Test/Request_free treat it like a persistent send.

use std::any::Any;
use std::rc::Rc;

use crate::coll::{self, Builder, Red, Schedule};
use crate::error::{err, ErrorClass, Result};
use crate::pml::ReqId;
use crate::runtime::Runtime;

/// An operation MPI_Start can begin again and again.
pub trait Start: Any {
    /// Begin one run; its request completes when the run does.
    fn start(&self, rt: &mut Runtime, req: ReqId) -> Result<ReqId>;
    fn as_any(&self) -> &dyn Any;
}

/// A new inactive persistent request running `op` at each start.
pub fn register(rt: &mut Runtime, op: Box<dyn Start>) -> ReqId {
    rt.pml.persistent_ext(Rc::new(op))
}

/// The operation of persistent request `req` when it is one of ours: (op, running).
pub fn lookup(rt: &Runtime, req: ReqId) -> Option<(Rc<dyn Any>, bool)> {
    rt.pml.persistent_ext_op(req)
}

/// The operation as its concrete type `T` (e.g. a partitioned send for MPI_Pready).
pub fn downcast<T: 'static>(op: &Rc<dyn Any>) -> Option<&T> {
    op.downcast_ref::<Box<dyn Start>>()?
        .as_any()
        .downcast_ref::<T>()
}

/// MPI_Start of a request of ours (`Runtime::start_persistent` comes here).
pub fn start(rt: &mut Runtime, req: ReqId, op: Rc<dyn Any>, running: bool) -> Result<()> {
    if running {
        return err(
            ErrorClass::Request,
            "the persistent request is already active",
        );
    }
    let Some(s) = op.downcast_ref::<Box<dyn Start>>() else {
        return err(ErrorClass::Request, "MPI_Start needs a persistent request");
    };
    let run = s.start(rt, req)?;
    rt.pml.set_active(req, run);
    Ok(())
}

/// A persistent collective: its communicator, tag and schedule, built at init (the C
/// interface's MPI_*_init in `capi/coll_init.rs` and the Rust API's `api/persistent_coll.rs`).
struct CollInit {
    comm: usize,
    tag: i32,
    schedule: Schedule,
}

impl Start for CollInit {
    fn start(&self, rt: &mut Runtime, _req: ReqId) -> Result<ReqId> {
        rt.comm(self.comm)?; // still there
        Ok(coll::start_tagged(
            &mut rt.pml,
            self.schedule.clone(),
            self.tag,
        ))
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A persistent collective on communicator `comm`: build its schedule now (checking the
/// arguments; nothing is sent), take the communicator's next collective tag, and return an
/// inactive persistent request whose every start runs a copy of that schedule with that tag.
/// So runs match across ranks by the order of the init calls, as MPI-4 requires.
pub fn coll_init(
    rt: &mut Runtime,
    comm: usize,
    red: Option<Red>,
    build: impl FnOnce(&mut Builder) -> Result<()>,
) -> Result<ReqId> {
    let (key, schedule) = {
        let c = rt.comm(comm)?;
        let mut b = Builder::new(c, red);
        build(&mut b)?;
        (coll::seq_key(c), b.finish())
    };
    let tag = coll::reserve_tag(&mut rt.pml, key);
    Ok(register(
        rt,
        Box::new(CollInit {
            comm,
            tag,
            schedule,
        }),
    ))
}
