//! Completion calls over request arrays (MPI_Waitany/some, MPI_Testany/some/all), request
//! status and freeing, cancelling, and status queries (counts, elements, cancelled).
//!
//! Null requests and inactive persistent requests are "inactive": the *any/*some calls skip
//! them and report MPI_UNDEFINED when nothing is active. A completed request's handle becomes
//! MPI_REQUEST_NULL unless it is persistent (it turns inactive). Cancelling a send never
//! succeeds here (MPI_Test_cancelled then says false); an unmatched receive can be cancelled.

use std::ffi::c_int;

use super::*;

/// The active request ids of an array (None where null or inactive), every handle checked.
///
/// # Safety
/// `requests` points to `count` MPI_Requests (or is NULL with count 0).
unsafe fn active(
    rt: &Runtime,
    count: c_int,
    requests: *const Handle,
) -> Result<Vec<Option<pml::ReqId>>> {
    if count < 0 {
        return Err(Error::new(
            ErrorClass::Count,
            format!("count {count} is negative"),
        ));
    }
    if requests.is_null() && count > 0 {
        return Err(Error::new(ErrorClass::Request, "array of requests is NULL"));
    }
    let mut v = Vec::with_capacity(count as usize);
    for i in 0..count as usize {
        // SAFETY: the caller's contract: `count` requests.
        let id = request_id(unsafe { *requests.add(i) })?;
        if let Some(id) = id {
            if !rt.pml.is_valid(id) {
                return Err(Error::new(
                    ErrorClass::Request,
                    format!("request {i} is not a live request"),
                ));
            }
        }
        v.push(id.filter(|&id| rt.pml.is_active(id)));
    }
    Ok(v)
}

/// Take a completed request's status; its handle becomes MPI_REQUEST_NULL unless persistent.
pub(super) fn retire(rt: &mut Runtime, slot: &mut Handle, id: pml::ReqId) -> pml::Status {
    let persistent = rt.pml.is_persistent(id);
    let st = rt.pml.take(id).expect("a completed request exists");
    if !persistent {
        *slot = REQUEST_NULL as Handle;
    }
    super::grequest::finish(id, st)
}

/// Wait until at least one of `ids` completes (false at once when none is active).
fn wait_for_one(rt: &mut Runtime, ids: &[Option<pml::ReqId>]) -> bool {
    let live: Vec<pml::ReqId> = ids.iter().flatten().copied().collect();
    if live.is_empty() {
        return false;
    }
    rt.progress_until(|p| live.iter().any(|&r| p.is_complete(r)));
    true
}

/// Under MULTIPLE, the *any/*some calls' readiness: one of the array's requests is complete,
/// none is active, or the array is bad (the call then reports it).
///
/// # Safety
/// As for `active`.
unsafe fn one_ready(rt: &mut Runtime, count: c_int, requests: *const Handle) -> bool {
    // SAFETY: forwarded.
    match unsafe { active(rt, count, requests) } {
        Ok(ids) => {
            ids.iter().all(Option::is_none) || ids.iter().flatten().any(|&r| rt.pml.is_complete(r))
        }
        Err(_) => true,
    }
}

/// Finish the first completed request for the *any calls: (index, status) or None.
///
/// # Safety
/// `requests` holds `ids.len()` writable requests.
unsafe fn take_any(
    rt: &mut Runtime,
    ids: &[Option<pml::ReqId>],
    requests: *mut Handle,
) -> Option<(usize, pml::Status)> {
    let i = ids
        .iter()
        .position(|id| id.is_some_and(|id| rt.pml.is_complete(id)))?;
    // SAFETY: i < ids.len(), inside the caller's array.
    let slot = unsafe { &mut *requests.add(i) };
    Some((i, retire(rt, slot, ids[i].expect("active"))))
}

/// Finish every completed request for the *some calls, filling indices and statuses;
/// returns how many, and whether any failed.
///
/// # Safety
/// `requests` holds `ids.len()` writable requests; `indices` and (unless NULL) `statuses`
/// room for as many entries.
unsafe fn take_some(
    rt: &mut Runtime,
    ids: &[Option<pml::ReqId>],
    requests: *mut Handle,
    indices: *mut c_int,
    statuses: *mut MpiStatus,
) -> (c_int, bool) {
    let (mut n, mut failed) = (0usize, false);
    for (i, id) in ids.iter().enumerate() {
        let Some(id) = *id else { continue };
        if !rt.pml.is_complete(id) {
            continue;
        }
        // SAFETY: i < ids.len(); the caller's arrays have room (contract above).
        unsafe {
            let st = retire(rt, &mut *requests.add(i), id);
            failed |= st.error != 0;
            indices.add(n).write(i as c_int);
            if !statuses.is_null() {
                store_status_all(statuses.add(n), &st);
            }
        }
        n += 1;
    }
    (n as c_int, failed)
}

fn in_status() -> Error {
    Error::new(
        ErrorClass::InStatus,
        "one or more requests failed; see the statuses' MPI_ERROR",
    )
}

/// Write an *any call's outcome.
///
/// # Safety
/// `indx` is writable; `status` NULL or writable.
unsafe fn report_any(
    got: Option<(usize, pml::Status)>,
    indx: *mut c_int,
    status: *mut MpiStatus,
) -> Result<()> {
    let (i, st) = match got {
        Some((i, st)) => (i as c_int, st),
        None => (MPI_UNDEFINED, empty_status()),
    };
    // SAFETY: the caller's contract.
    unsafe {
        indx.write(i);
        store_status(status, &st);
    }
    super::status_error(&st)
}

mpi_fn! {
    fn MPI_Waitany / PMPI_Waitany(count: c_int, requests: *mut Handle, indx: *mut c_int, status: *mut MpiStatus) -> c_int {
        // SAFETY: the caller passes `count` requests.
        let ready = |rt: &mut Runtime| unsafe { one_ready(rt, count, requests) };
        call_ready("MPI_Waitany", crate::comm::WORLD, ready, |rt| {
            if indx.is_null() {
                return Err(Error::new(ErrorClass::Arg, "index pointer is NULL"));
            }
            // SAFETY: the caller passes `count` requests.
            let ids = unsafe { active(rt, count, requests)? };
            let got = if wait_for_one(rt, &ids) {
                // SAFETY: as above.
                unsafe { take_any(rt, &ids, requests) }
            } else {
                None
            };
            // SAFETY: indx checked; status IGNORE or writable.
            unsafe { report_any(got, indx, status) }
        })
    }
}

mpi_fn! {
    fn MPI_Testany / PMPI_Testany(count: c_int, requests: *mut Handle, indx: *mut c_int, flag: *mut c_int, status: *mut MpiStatus) -> c_int {
        call("MPI_Testany", crate::comm::WORLD, |rt| {
            if indx.is_null() || flag.is_null() {
                return Err(Error::new(ErrorClass::Arg, "index or flag pointer is NULL"));
            }
            // SAFETY: the caller passes `count` requests.
            let ids = unsafe { active(rt, count, requests)? };
            rt.pml.progress();
            // SAFETY: as above.
            let got = unsafe { take_any(rt, &ids, requests) };
            let none_active = ids.iter().all(Option::is_none);
            // SAFETY: flag and indx checked non-NULL; status IGNORE or writable.
            unsafe {
                flag.write((got.is_some() || none_active) as c_int);
                if got.is_none() && !none_active {
                    indx.write(MPI_UNDEFINED);
                    return Ok(());
                }
                report_any(got, indx, status)
            }
        })
    }
}

mpi_fn! {
    fn MPI_Waitsome / PMPI_Waitsome(incount: c_int, requests: *mut Handle, outcount: *mut c_int, indices: *mut c_int, statuses: *mut MpiStatus) -> c_int {
        // SAFETY: the caller passes `incount` requests.
        let ready = |rt: &mut Runtime| unsafe { one_ready(rt, incount, requests) };
        call_ready("MPI_Waitsome", crate::comm::WORLD, ready, |rt| {
            if outcount.is_null() || (indices.is_null() && incount > 0) {
                return Err(Error::new(ErrorClass::Arg, "outcount or indices pointer is NULL"));
            }
            // SAFETY: the caller passes `incount` requests.
            let ids = unsafe { active(rt, incount, requests)? };
            if !wait_for_one(rt, &ids) {
                // SAFETY: checked non-NULL.
                unsafe { outcount.write(MPI_UNDEFINED) };
                return Ok(());
            }
            // SAFETY: arrays of `incount` entries (the call's contract).
            let (n, failed) = unsafe { take_some(rt, &ids, requests, indices, statuses) };
            // SAFETY: checked non-NULL.
            unsafe { outcount.write(n) };
            if failed { Err(in_status()) } else { Ok(()) }
        })
    }
}

mpi_fn! {
    fn MPI_Testsome / PMPI_Testsome(incount: c_int, requests: *mut Handle, outcount: *mut c_int, indices: *mut c_int, statuses: *mut MpiStatus) -> c_int {
        call("MPI_Testsome", crate::comm::WORLD, |rt| {
            if outcount.is_null() || (indices.is_null() && incount > 0) {
                return Err(Error::new(ErrorClass::Arg, "outcount or indices pointer is NULL"));
            }
            // SAFETY: the caller passes `incount` requests.
            let ids = unsafe { active(rt, incount, requests)? };
            if ids.iter().all(Option::is_none) {
                // SAFETY: checked non-NULL.
                unsafe { outcount.write(MPI_UNDEFINED) };
                return Ok(());
            }
            rt.pml.progress();
            // SAFETY: arrays of `incount` entries (the call's contract).
            let (n, failed) = unsafe { take_some(rt, &ids, requests, indices, statuses) };
            // SAFETY: checked non-NULL.
            unsafe { outcount.write(n) };
            if failed { Err(in_status()) } else { Ok(()) }
        })
    }
}

mpi_fn! {
    fn MPI_Testall / PMPI_Testall(count: c_int, requests: *mut Handle, flag: *mut c_int, statuses: *mut MpiStatus) -> c_int {
        call("MPI_Testall", crate::comm::WORLD, |rt| {
            if flag.is_null() {
                return Err(Error::new(ErrorClass::Arg, "flag pointer is NULL"));
            }
            // SAFETY: the caller passes `count` requests.
            let ids = unsafe { active(rt, count, requests)? };
            rt.pml.progress();
            let all = ids.iter().flatten().all(|&id| rt.pml.is_complete(id));
            // SAFETY: checked non-NULL.
            unsafe { flag.write(all as c_int) };
            if !all {
                return Ok(());
            }
            let mut failed = false;
            for (i, id) in ids.iter().enumerate() {
                let st = match *id {
                    // SAFETY: i < count, inside the caller's array.
                    Some(id) => retire(rt, unsafe { &mut *requests.add(i) }, id),
                    None => empty_status(),
                };
                failed |= st.error != 0;
                if !statuses.is_null() {
                    // SAFETY: `count` writable statuses unless MPI_STATUSES_IGNORE.
                    unsafe { store_status_all(statuses.add(i), &st) };
                }
            }
            if failed { Err(in_status()) } else { Ok(()) }
        })
    }
}

mpi_fn! {
    fn MPI_Request_get_status / PMPI_Request_get_status(request: Handle, flag: *mut c_int, status: *mut MpiStatus) -> c_int {
        call("MPI_Request_get_status", crate::comm::WORLD, |rt| {
            if flag.is_null() {
                return Err(Error::new(ErrorClass::Arg, "flag pointer is NULL"));
            }
            let st = match request_id(request)? {
                None => Some(empty_status()),
                Some(id) => {
                    if !rt.pml.is_valid(id) {
                        return Err(Error::new(ErrorClass::Request, "invalid request"));
                    }
                    rt.pml.progress();
                    rt.pml.peek(id).map(|st| super::grequest::query(id, st))
                }
            };
            // SAFETY: flag checked non-NULL; status IGNORE or writable.
            unsafe {
                flag.write(st.is_some() as c_int);
                if let Some(st) = &st {
                    store_status(status, st);
                }
            }
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Request_free / PMPI_Request_free(request: *mut Handle) -> c_int {
        call("MPI_Request_free", crate::comm::WORLD, |rt| {
            if request.is_null() {
                return Err(Error::new(ErrorClass::Request, "request pointer is NULL"));
            }
            // SAFETY: checked non-NULL; the caller's MPI_Request.
            let Some(id) = request_id(unsafe { *request })? else {
                return Err(Error::new(ErrorClass::Request, "MPI_Request_free of MPI_REQUEST_NULL"));
            };
            if !rt.pml.is_valid(id) {
                return Err(Error::new(ErrorClass::Request, "invalid request"));
            }
            if super::grequest::free(rt, id)? {
                // SAFETY: as above.
                unsafe { *request = REQUEST_NULL as Handle };
                return Ok(());
            }
            rt.pml.free(id);
            // No progress turn here: what a transport holds of a window of sends goes now.
            rt.pml.end_bursts();
            // SAFETY: as above.
            unsafe { *request = REQUEST_NULL as Handle };
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Cancel / PMPI_Cancel(request: *mut Handle) -> c_int {
        if let Some(rc) = super::grequest::cancel(request) {
            return rc;
        }
        call("MPI_Cancel", crate::comm::WORLD, |rt| {
            if request.is_null() {
                return Err(Error::new(ErrorClass::Request, "request pointer is NULL"));
            }
            // SAFETY: checked non-NULL; the caller's MPI_Request.
            let Some(id) = request_id(unsafe { *request })? else {
                return Err(Error::new(ErrorClass::Request, "MPI_Cancel of MPI_REQUEST_NULL"));
            };
            if !rt.pml.is_valid(id) {
                return Err(Error::new(ErrorClass::Request, "invalid request"));
            }
            // Only an unmatched receive can be cancelled; otherwise the request completes
            // normally, as MPI allows.
            rt.pml.cancel(id);
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Test_cancelled / PMPI_Test_cancelled(status: *const MpiStatus, flag: *mut c_int) -> c_int {
        // Outside Init..Finalize: an error, not a result.
        if let Err(e) = running() {
            return fail("MPI_Test_cancelled", crate::comm::WORLD, e);
        }
        if status.is_null() || flag.is_null() {
            return fail("MPI_Test_cancelled", crate::comm::WORLD, Error::new(ErrorClass::Arg, "status or flag pointer is NULL"));
        }
        // SAFETY: both checked non-NULL.
        unsafe { flag.write(((*status).internal[2] != 0) as c_int) };
        MPI_SUCCESS
    }
}

/// Elements of `datatype` in a status: Ok(None) when not a whole number of them.
///
/// # Safety
/// `status` is NULL or points to a status.
unsafe fn elements(status: *const MpiStatus, datatype: Handle) -> Result<Option<i64>> {
    if status.is_null() {
        return Err(Error::new(ErrorClass::Arg, "status pointer is NULL"));
    }
    let size = type_size(datatype)?;
    // SAFETY: checked non-NULL.
    let bytes = unsafe { (*status).count() };
    Ok(if size == 0 {
        Some(0)
    } else if bytes % size != 0 {
        None
    } else {
        Some((bytes / size) as i64)
    })
}

/// Store an element count as MPI_Count.
fn store_count(name: &str, status: *const MpiStatus, datatype: Handle, count: *mut i64) -> c_int {
    if count.is_null() {
        return fail(
            name,
            crate::comm::WORLD,
            Error::new(ErrorClass::Arg, "count pointer is NULL"),
        );
    }
    // SAFETY: status is NULL (checked inside) or the caller's status.
    match unsafe { elements(status, datatype) } {
        Ok(n) => {
            // SAFETY: checked non-NULL.
            unsafe { count.write(n.unwrap_or(MPI_UNDEFINED as i64)) };
            MPI_SUCCESS
        }
        Err(e) => fail(name, crate::comm::WORLD, e),
    }
}

mpi_fn! {
    fn MPI_Get_count_c / PMPI_Get_count_c(status: *const MpiStatus, datatype: Handle, count: *mut i64) -> c_int {
        // Outside Init..Finalize: an error, not a result.
        if let Err(e) = running() {
            return fail("MPI_Get_count_c", crate::comm::WORLD, e);
        }
        store_count("MPI_Get_count_c", status, datatype, count)
    }
}

mpi_fn! {
    fn MPI_Request_get_status_any / PMPI_Request_get_status_any(count: c_int, requests: *const Handle, indx: *mut c_int, flag: *mut c_int, status: *mut MpiStatus) -> c_int {
        call("MPI_Request_get_status_any", crate::comm::WORLD, |rt| {
            if indx.is_null() || flag.is_null() {
                return Err(Error::new(ErrorClass::Arg, "index or flag pointer is NULL"));
            }
            // SAFETY: the caller passes `count` requests.
            let ids = unsafe { active(rt, count, requests)? };
            rt.pml.progress();
            let got = ids
                .iter()
                .enumerate()
                .find_map(|(i, id)| id.and_then(|id| rt.pml.peek(id)).map(|st| (i, st)));
            let none_active = ids.iter().all(Option::is_none);
            // SAFETY: flag and indx checked non-NULL; status IGNORE or writable.
            unsafe {
                flag.write((got.is_some() || none_active) as c_int);
                if got.is_none() && !none_active {
                    indx.write(MPI_UNDEFINED);
                    return Ok(());
                }
                report_any(got, indx, status)
            }
        })
    }
}

mpi_fn! {
    fn MPI_Request_get_status_all / PMPI_Request_get_status_all(count: c_int, requests: *const Handle, flag: *mut c_int, statuses: *mut MpiStatus) -> c_int {
        call("MPI_Request_get_status_all", crate::comm::WORLD, |rt| {
            if flag.is_null() {
                return Err(Error::new(ErrorClass::Arg, "flag pointer is NULL"));
            }
            // SAFETY: the caller passes `count` requests.
            let ids = unsafe { active(rt, count, requests)? };
            rt.pml.progress();
            let sts: Vec<Option<pml::Status>> = ids
                .iter()
                .map(|id| id.map_or(Some(empty_status()), |id| rt.pml.peek(id)))
                .collect();
            let all = sts.iter().all(Option::is_some);
            // SAFETY: checked non-NULL.
            unsafe { flag.write(all as c_int) };
            if !all {
                return Ok(());
            }
            let mut failed = false;
            for (i, st) in sts.iter().flatten().enumerate() {
                failed |= st.error != 0;
                if !statuses.is_null() {
                    // SAFETY: `count` writable statuses unless MPI_STATUSES_IGNORE.
                    unsafe { store_status_all(statuses.add(i), st) };
                }
            }
            if failed { Err(in_status()) } else { Ok(()) }
        })
    }
}

mpi_fn! {
    fn MPI_Request_get_status_some / PMPI_Request_get_status_some(incount: c_int, requests: *const Handle, outcount: *mut c_int, indices: *mut c_int, statuses: *mut MpiStatus) -> c_int {
        call("MPI_Request_get_status_some", crate::comm::WORLD, |rt| {
            if outcount.is_null() || (indices.is_null() && incount > 0) {
                return Err(Error::new(ErrorClass::Arg, "outcount or indices pointer is NULL"));
            }
            // SAFETY: the caller passes `incount` requests.
            let ids = unsafe { active(rt, incount, requests)? };
            if ids.iter().all(Option::is_none) {
                // SAFETY: checked non-NULL.
                unsafe { outcount.write(MPI_UNDEFINED) };
                return Ok(());
            }
            rt.pml.progress();
            let (mut n, mut failed) = (0usize, false);
            for (i, id) in ids.iter().enumerate() {
                let Some(st) = id.and_then(|id| rt.pml.peek(id)) else { continue };
                failed |= st.error != 0;
                // SAFETY: arrays of `incount` entries (the call's contract); n <= i.
                unsafe {
                    indices.add(n).write(i as c_int);
                    if !statuses.is_null() {
                        store_status_all(statuses.add(n), &st);
                    }
                }
                n += 1;
            }
            // SAFETY: checked non-NULL.
            unsafe { outcount.write(n as c_int) };
            if failed { Err(in_status()) } else { Ok(()) }
        })
    }
}

/// Run `f` on a status the caller passed, failing cleanly on NULL.
fn with_status(
    name: &str,
    status: *mut MpiStatus,
    f: impl FnOnce(&mut MpiStatus) -> Result<()>,
) -> c_int {
    if status.is_null() {
        return fail(
            name,
            crate::comm::WORLD,
            Error::new(ErrorClass::Arg, "status pointer is NULL"),
        );
    }
    // SAFETY: checked non-NULL; the caller passes a writable MPI_Status.
    match f(unsafe { &mut *status }) {
        Ok(()) => MPI_SUCCESS,
        Err(e) => fail(name, crate::comm::WORLD, e),
    }
}

/// Set a status's element count (stored as bytes) from `count` elements of `datatype`.
fn set_elements(s: &mut MpiStatus, datatype: Handle, count: i64) -> Result<()> {
    if count < 0 {
        return Err(Error::new(
            ErrorClass::Count,
            format!("count {count} is negative"),
        ));
    }
    // `count` basic elements (not elements of `datatype`), as bytes of its type map.
    let l = crate::datatype::table::layout(datatype as usize)?;
    let bytes = l.bytes_of_elements(count as usize).ok_or_else(|| {
        Error::new(
            ErrorClass::Count,
            format!("{count} basic elements of this datatype are not a whole number of bytes rmpi can count"),
        )
    })? as u64;
    s.internal[0] = bytes as u32 as c_int;
    s.internal[1] = (bytes >> 32) as u32 as c_int;
    Ok(())
}

mpi_fn! {
    fn MPI_Status_set_cancelled / PMPI_Status_set_cancelled(status: *mut MpiStatus, flag: c_int) -> c_int {
        // Outside Init..Finalize: an error, not a result.
        if let Err(e) = running() {
            return fail("MPI_Status_set_cancelled", crate::comm::WORLD, e);
        }
        with_status("MPI_Status_set_cancelled", status, |s| {
            s.internal[2] = (flag != 0) as c_int;
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Status_set_elements / PMPI_Status_set_elements(status: *mut MpiStatus, datatype: Handle, count: c_int) -> c_int {
        // Outside Init..Finalize: an error, not a result.
        if let Err(e) = running() {
            return fail("MPI_Status_set_elements", crate::comm::WORLD, e);
        }
        with_status("MPI_Status_set_elements", status, |s| set_elements(s, datatype, count as i64))
    }
}

mpi_fn! {
    fn MPI_Status_set_elements_x / PMPI_Status_set_elements_x(status: *mut MpiStatus, datatype: Handle, count: i64) -> c_int {
        // Outside Init..Finalize: an error, not a result.
        if let Err(e) = running() {
            return fail("MPI_Status_set_elements_x", crate::comm::WORLD, e);
        }
        with_status("MPI_Status_set_elements_x", status, |s| set_elements(s, datatype, count))
    }
}

mpi_fn! {
    fn MPI_Status_set_elements_c / PMPI_Status_set_elements_c(status: *mut MpiStatus, datatype: Handle, count: i64) -> c_int {
        // Outside Init..Finalize: an error, not a result.
        if let Err(e) = running() {
            return fail("MPI_Status_set_elements_c", crate::comm::WORLD, e);
        }
        with_status("MPI_Status_set_elements_c", status, |s| set_elements(s, datatype, count))
    }
}

mpi_fn! {
    fn MPI_Status_set_source / PMPI_Status_set_source(status: *mut MpiStatus, source: c_int) -> c_int {
        // Outside Init..Finalize: an error, not a result.
        if let Err(e) = running() {
            return fail("MPI_Status_set_source", crate::comm::WORLD, e);
        }
        with_status("MPI_Status_set_source", status, |s| {
            s.source = source;
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Status_set_tag / PMPI_Status_set_tag(status: *mut MpiStatus, tag: c_int) -> c_int {
        // Outside Init..Finalize: an error, not a result.
        if let Err(e) = running() {
            return fail("MPI_Status_set_tag", crate::comm::WORLD, e);
        }
        with_status("MPI_Status_set_tag", status, |s| {
            s.tag = tag;
            Ok(())
        })
    }
}

mpi_fn! {
    fn MPI_Status_set_error / PMPI_Status_set_error(status: *mut MpiStatus, error: c_int) -> c_int {
        // Outside Init..Finalize: an error, not a result.
        if let Err(e) = running() {
            return fail("MPI_Status_set_error", crate::comm::WORLD, e);
        }
        with_status("MPI_Status_set_error", status, |s| {
            s.error = error;
            Ok(())
        })
    }
}
