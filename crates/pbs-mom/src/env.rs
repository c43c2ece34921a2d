//! The environment a job gets (OpenPBS's `start_exec.c`): the submitter's `Variable_List`
//! plus what the mom sets, and nothing from the mom's own environment.

use std::path::Path;

use pbs_proto::mom::JobLaunch;

/// PATH when the submitter's is unknown.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Facts about this host and this run that the environment names.
#[derive(Clone, Debug)]
pub struct JobContext<'a> {
    /// The user's name.
    pub user: &'a str,
    /// The user's home directory.
    pub home: &'a Path,
    /// The shell that runs the job.
    pub shell: &'a str,
    /// `PBS_MOMPORT`.
    pub mom_port: u16,
    /// `PBS_NODEFILE`.
    pub nodefile: &'a Path,
    /// `TMPDIR`, if the per-job directory could be made.
    pub tmpdir: Option<&'a Path>,
    /// `PBS_JOBCOOKIE`.
    pub cookie: &'a str,
}

/// An environment under construction: a later value of a name replaces the earlier one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Env {
    vars: Vec<(String, String)>,
}

impl Env {
    /// Sets `name` to `value`, replacing an earlier value.
    pub fn set(&mut self, name: &str, value: &str) {
        match self.vars.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value.to_string(),
            None => self.vars.push((name.to_string(), value.to_string())),
        }
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// All variables, in the order first set.
    pub fn vars(&self) -> &[(String, String)] {
        &self.vars
    }
}

/// The job's environment.
pub fn job_env(launch: &JobLaunch, ctx: &JobContext<'_>) -> Env {
    let mut env = Env::default();
    for (name, value) in &launch.variables {
        // A name with `=` would split differently in the child's environ.
        if !name.is_empty() && !name.contains('=') {
            env.set(name, value);
        }
    }
    let home = ctx.home.to_string_lossy();
    env.set("HOME", &home);
    env.set("LOGNAME", ctx.user);
    env.set("USER", ctx.user);
    env.set("SHELL", ctx.shell);
    let path = launch
        .variables
        .iter()
        .find(|(n, _)| n == "PBS_O_PATH")
        .or_else(|| launch.variables.iter().find(|(n, _)| n == "PATH"))
        .map(|(_, v)| v.clone())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_PATH.to_string());
    env.set("PATH", &path);
    env.set("PBS_JOBNAME", &launch.job_name);
    env.set("PBS_JOBID", &launch.job_id);
    env.set("PBS_QUEUE", &launch.queue);
    env.set("PBS_JOBCOOKIE", ctx.cookie);
    env.set("PBS_NODENUM", "0");
    env.set("PBS_TASKNUM", "1");
    env.set("PBS_MOMPORT", &ctx.mom_port.to_string());
    env.set("PBS_NODEFILE", &ctx.nodefile.to_string_lossy());
    // OpenPBS sets NCPUS to the thread count too; the launch carries both, and the two only
    // differ when the chunk asked for ompthreads explicitly.
    let ncpus = launch.ncpus.max(1);
    let omp = if launch.ompthreads > 0 { launch.ompthreads } else { ncpus };
    env.set("OMP_NUM_THREADS", &omp.to_string());
    env.set("NCPUS", &ncpus.to_string());
    if let Some(account) = &launch.account {
        env.set("PBS_ACCOUNT", account);
    }
    if let Some(index) = &launch.array_index {
        env.set("PBS_ARRAY_INDEX", index);
    }
    if let Some(id) = &launch.array_id {
        env.set("PBS_ARRAY_ID", id);
    }
    if let Some(tmpdir) = ctx.tmpdir {
        env.set("TMPDIR", &tmpdir.to_string_lossy());
    }
    env.set("PBS_JOBDIR", &home);
    env.set("PBS_ENVIRONMENT", "PBS_BATCH");
    env.set("ENVIRONMENT", "BATCH");
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch() -> JobLaunch {
        JobLaunch {
            job_id: "7[2].srv".into(),
            job_name: "STDIN".into(),
            queue: "workq".into(),
            ncpus: 4,
            ompthreads: 0,
            variables: vec![
                ("PBS_O_PATH".into(), "/opt/bin:/usr/bin".into()),
                ("PBS_O_WORKDIR".into(), "/home/u".into()),
                ("HOME".into(), "/not/used".into()),
                ("BAD=NAME".into(), "x".into()),
            ],
            array_index: Some("2".into()),
            array_id: Some("7[].srv".into()),
            ..JobLaunch::default()
        }
    }

    #[test]
    fn mom_values_override_the_submitters_and_pbs_variables_are_set() {
        let ctx = JobContext {
            user: "u",
            home: Path::new("/home/u"),
            shell: "/bin/bash",
            mom_port: 15003,
            nodefile: Path::new("/var/spool/pbs/aux/7[2].srv"),
            tmpdir: Some(Path::new("/var/tmp/pbs.7[2].srv")),
            cookie: "abcd",
        };
        let env = job_env(&launch(), &ctx);
        assert_eq!(env.get("HOME"), Some("/home/u"));
        assert_eq!(env.get("PATH"), Some("/opt/bin:/usr/bin"));
        assert_eq!(env.get("PBS_O_WORKDIR"), Some("/home/u"));
        assert_eq!(env.get("NCPUS"), Some("4"));
        assert_eq!(env.get("OMP_NUM_THREADS"), Some("4"));
        assert_eq!(env.get("PBS_ARRAY_INDEX"), Some("2"));
        assert_eq!(env.get("PBS_ARRAY_ID"), Some("7[].srv"));
        assert_eq!(env.get("PBS_ACCOUNT"), None);
        assert_eq!(env.get("TMPDIR"), Some("/var/tmp/pbs.7[2].srv"));
        assert_eq!(env.get("PBS_ENVIRONMENT"), Some("PBS_BATCH"));
        assert_eq!(env.get("ENVIRONMENT"), Some("BATCH"));
        assert_eq!(env.get("PBS_JOBDIR"), Some("/home/u"));
        assert_eq!(env.get("BAD=NAME"), None);
        assert_eq!(env.vars().iter().filter(|(n, _)| n == "HOME").count(), 1);
    }

    #[test]
    fn path_defaults_when_the_submitter_sent_none() {
        let mut l = launch();
        l.variables.clear();
        l.ompthreads = 2;
        let ctx = JobContext {
            user: "u",
            home: Path::new("/"),
            shell: "/bin/sh",
            mom_port: 1,
            nodefile: Path::new("/n"),
            tmpdir: None,
            cookie: "c",
        };
        let env = job_env(&l, &ctx);
        assert_eq!(env.get("PATH"), Some(DEFAULT_PATH));
        assert_eq!(env.get("NCPUS"), Some("4"));
        assert_eq!(env.get("OMP_NUM_THREADS"), Some("2"));
        assert_eq!(env.get("TMPDIR"), None);
    }
}
