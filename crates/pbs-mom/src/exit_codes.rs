//! The `JOB_EXEC_*` exit statuses a mom reports for a job that did not run to its own end,
//! with OpenPBS's values, which the server and the accounting log read.

/// Exec failed before the job's files were set up (`JOB_EXEC_FAIL1`).
pub const JOB_EXEC_FAIL1: i32 = -1;
/// Exec failed after the job's files were set up, no retry (`JOB_EXEC_FAIL2`): a prologue
/// that exited 1.
pub const JOB_EXEC_FAIL2: i32 = -2;
/// An execjob_begin or execjob_prologue hook rejected the job: it is requeued
/// (`JOB_EXEC_FAILHOOK_RERUN`).
pub const JOB_EXEC_FAILHOOK_RERUN: i32 = -16;
/// Such a hook raised or ran past its alarm: the job is requeued (`JOB_EXEC_HOOKERROR`).
pub const JOB_EXEC_HOOKERROR: i32 = -22;
/// The mom lost the job: its shepherd vanished without a status (`JOB_EXEC_INITABT`).
pub const JOB_EXEC_INITABT: i32 = -4;
/// Retry later: the job id is still held by a run being torn down (`JOB_EXEC_RETRY`).
pub const JOB_EXEC_RETRY: i32 = -3;
/// The owner does not exist here or privileges could not be dropped (`JOB_EXEC_FAILUID`).
pub const JOB_EXEC_FAILUID: i32 = -10;
/// Killed for exceeding mem (`JOB_EXEC_KILL_MEM`).
pub const JOB_EXEC_KILL_MEM: i32 = -27;
/// Killed for exceeding cput (`JOB_EXEC_KILL_CPUT`).
pub const JOB_EXEC_KILL_CPUT: i32 = -28;
/// Killed for exceeding walltime (`JOB_EXEC_KILL_WALLTIME`).
pub const JOB_EXEC_KILL_WALLTIME: i32 = -29;
/// The stage-in of the job's files failed before its shell started (this suite's: OpenPBS's
/// server stages in before it sends the job, here its mom does it at the start). The
/// server makes the job wait, as OpenPBS does after a failed stage-in.
pub const JOB_EXEC_STAGEIN_FAILED: i32 = -31;
