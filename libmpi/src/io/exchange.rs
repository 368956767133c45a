//! The agreement steps of the collective file calls: an allgather of a few words among the
//! processes of the file, on the file's own communicator (a private duplicate, so no tag of
//! the user's or of a collective can match these messages).

use crate::error::Result;
use crate::runtime::Runtime;

const TAG: i32 = 7;

/// Every process's `mine` (the same number of words everywhere), by rank.
pub fn allgather(rt: &mut Runtime, comm: usize, mine: &[u64]) -> Result<Vec<Vec<u64>>> {
    let c = rt.comm(comm)?;
    let (n, me, ctx) = (c.size() as usize, c.rank, c.ctx);
    let worlds: Vec<usize> = (0..n as i32)
        .map(|r| c.world_of(r))
        .collect::<Result<_>>()?;
    let bytes: Vec<u8> = mine.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut out = vec![vec![0u8; bytes.len()]; n];
    let mut reqs = Vec::new();
    for (r, buf) in out.iter_mut().enumerate() {
        if r as i32 == me {
            buf.copy_from_slice(&bytes);
            continue;
        }
        // SAFETY: `out` outlives the receives: we wait for all of them below.
        reqs.push(unsafe {
            rt.pml
                .irecv(buf.as_mut_ptr(), buf.len(), ctx, r as i32, TAG)
        });
    }
    for (r, &w) in worlds.iter().enumerate() {
        if r as i32 != me {
            // SAFETY: `bytes` outlives the sends: we wait for all of them below.
            reqs.push(unsafe { rt.pml.isend(bytes.as_ptr(), bytes.len(), w, ctx, me, TAG) });
        }
    }
    for s in reqs {
        rt.finish(s)?;
    }
    Ok(out
        .into_iter()
        .map(|b| {
            b.chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect()
        })
        .collect())
}

/// A barrier that also agrees on an error: every process learns the first nonzero class any
/// of them passes (0 when none failed).
pub fn agree_error(rt: &mut Runtime, comm: usize, class: i32) -> Result<i32> {
    let all = allgather(rt, comm, &[class as u64])?;
    Ok(all
        .iter()
        .map(|w| w[0] as i32)
        .find(|&c| c != 0)
        .unwrap_or(0))
}
