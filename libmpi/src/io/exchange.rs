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

/// The agreement step of a collective call whose arguments each process checked on its own:
/// every process learns whether any failed (and fails too) and whether all passed the same
/// `words` (MPI_ERR_NOT_SAME otherwise), so a bad argument at one process never leaves the
/// others waiting. `what` names the words in the error.
pub fn agree<T>(
    rt: &mut Runtime,
    comm: usize,
    local: Result<T>,
    words: &[u64],
    what: &str,
) -> Result<T> {
    let mut mine = vec![local.as_ref().err().map_or(0, |e| e.code()) as u64];
    mine.extend_from_slice(words);
    let all = allgather(rt, comm, &mine)?;
    let v = local?;
    if let Some(w) = all.iter().find(|w| w[0] != 0) {
        return Err(crate::error::Error::new(
            crate::error::ErrorClass::from_code(w[0] as i32)
                .unwrap_or(crate::error::ErrorClass::Other),
            "the call failed at another process of the file",
        ));
    }
    if all.iter().any(|w| w[1..] != all[0][1..]) {
        return Err(crate::error::Error::new(
            crate::error::ErrorClass::NotSame,
            format!("{what} differs between the processes of the file"),
        ));
    }
    Ok(v)
}
