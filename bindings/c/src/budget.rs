//! `agentstream_budget`: the core's `SharedBudget` — one byte allowance shared by at most a
//! number of concurrent runs — behind a checked handle, attached to sessions with
//! `agentstream_session_set_budget`.

use agentstream_core::stream::SharedBudget;

use crate::error::{Error, ErrorKind, agentstream_status, boundary, boundary_free, invalid};
use crate::handles::{Table, not_live_message};
use crate::util::out_arg;

/// A byte allowance shared by at most `max_runs` concurrent runs (of any sessions it is attached
/// to with `agentstream_session_set_budget`): each run takes a permit for its lifetime, and its
/// byte budget is `total_bytes / max_runs`, so the runs in flight never hold more than
/// `total_bytes` unread. Opaque; create with `agentstream_budget_new`, free with
/// `agentstream_budget_free`. Thread-safe.
#[allow(non_camel_case_types)]
pub struct agentstream_budget {
    _opaque: [u8; 0],
}

pub(crate) static BUDGETS: Table<SharedBudget> = Table::new("agentstream_budget");

/// Create a budget of `total_bytes` for up to `max_runs` concurrent runs (each run's byte budget
/// is `total_bytes / max_runs`, at least 1 byte). Errors: `INVALID_ARGUMENT` (`max_runs` 0),
/// `NULL_ARGUMENT`. `*out` is freed with `agentstream_budget_free`.
///
/// # Safety
/// `out` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_budget_new(
    total_bytes: usize,
    max_runs: usize,
    out: *mut *mut agentstream_budget,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out, "out") }?;
        *out = std::ptr::null_mut();
        let budget = SharedBudget::new(total_bytes, max_runs)
            .map_err(|e| invalid(format!("max_runs must be at least 1: {e}")))?;
        *out = BUDGETS.insert(budget);
        Ok(())
    })
}

/// How many runs hold a permit of the budget now, in `*out_active`.
///
/// # Safety
/// `out_active` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_budget_active(
    budget: *const agentstream_budget,
    out_active: *mut usize,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out_active, "out_active") }?;
        *out = BUDGETS.get(budget, "budget")?.active();
        Ok(())
    })
}

/// Free a budget handle. Sessions it is attached to keep using it (and their runs keep their
/// permits). NULL is a no-op, and so is a handle that is not live.
///
/// # Safety
/// None beyond passing any value: handles are checked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_budget_free(budget: *mut agentstream_budget) {
    boundary_free(|| {
        if budget.is_null() || BUDGETS.remove(budget).is_some() {
            return Ok(());
        }
        Err(Error::new(ErrorKind::InvalidHandle, not_live_message("agentstream_budget", budget as usize)))
    });
}
