//! The agreement steps of the collective file calls: an allgather of a few words among the
//! processes of the file, on the file's own communicator (a private duplicate, so no tag of
//! the user's or of a collective can match these messages).

use crate::error::Result;

const TAG: i32 = 7;

/// Every process's `mine` (the same number of words everywhere), by rank. Called outside the
/// runtime, as every function here (`comm_agree::exchange_words`).
pub fn allgather(comm: usize, mine: &[u64]) -> Result<Vec<Vec<u64>>> {
    crate::comm_agree::exchange_words(comm, false, TAG, mine)
}

/// A barrier that also agrees on an error: every process learns the first nonzero class any
/// of them passes (0 when none failed).
pub fn agree_error(comm: usize, class: i32) -> Result<i32> {
    let all = allgather(comm, &[class as u64])?;
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
pub fn agree<T>(comm: usize, local: Result<T>, words: &[u64], what: &str) -> Result<T> {
    let mut mine = vec![local.as_ref().err().map_or(0, |e| e.code()) as u64];
    mine.extend_from_slice(words);
    let all = allgather(comm, &mine)?;
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
