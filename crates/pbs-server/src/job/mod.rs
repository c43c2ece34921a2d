//! Jobs: each kind of job request in its own module, all changes to the state that return
//! the effects to carry out after the commit.

pub mod accounts;
pub mod altrun;
pub mod array;
pub mod block;
pub mod deferred;
pub mod delete;
pub mod depend;
pub mod dependlist;
pub mod eligible;
pub mod end;
pub mod faults;
pub mod jobset;
pub mod launch;
pub mod life;
pub mod limits;
pub mod mail;
pub mod message;
pub mod modify;
pub mod moving;
pub mod nodefail;
pub mod notice;
pub mod order;
pub mod orselect;
pub mod parts;
pub mod preempt;
pub mod released;
pub mod running;
pub mod runone;
pub mod signal;
pub mod stage;
pub mod status;
pub mod submit;
