//! Hooks on the server: the hook objects root manages with qmgr and their imported bodies
//! (`admin`), the events they run at, as data in and changes out (`event`), and the set of
//! execution hooks the moms hold (`mom`). Running a hook is the dispatch's wait point's,
//! outside the state lock, or the moms'; nothing here waits.

pub mod admin;
pub mod event;
pub mod mom;
pub mod periodic;
