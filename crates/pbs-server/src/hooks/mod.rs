//! Hooks on the server: the hook objects root manages with qmgr and their imported bodies
//! (`admin`), and the events they run at, as data in and changes out (`event`). Running a
//! hook is the dispatch's wait point's, outside the state lock; nothing here waits.

pub mod admin;
pub mod event;
