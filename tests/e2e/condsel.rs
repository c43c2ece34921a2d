//! Conditional chunk requests (`color!=green`, `cores>=16`) and `nfilter` on real nodes
//! with custom resources: where jobs run, like-node groups, and what the server refuses
//! from qsub and from a raw client (docs/job-sets.md, "Conditional requests and nfilter").

use std::time::{Duration, Instant};

use pbs_client::ClientError;
use pbs_e2e::{Cluster, wait_until};
use pbs_proto::{Attr, Request};

const BADATVAL: u32 = 15014;
const CONSUMABLE_OP: u32 = 15240;
const CONSUMABLE_TEXT: &str = "Consumable resource can only be requested with = operator";

fn define_resources(c: &Cluster) {
    for (name, rtype) in [("color", "string"), ("os_ver", "string"), ("ver", "string"), ("switch", "string")] {
        c.qmgr(&format!("create resource {name} type={rtype},flag=h"));
    }
    c.qmgr("create resource cores type=long,flag=h");
    c.qmgr("create resource fast type=boolean,flag=h");
}

/// The vnodes of a running job's exec_vnode, in order.
fn vnodes(c: &Cluster, id: &str) -> Vec<String> {
    let exec = c.job_attr(id, "exec_vnode").unwrap_or_default();
    exec.split('+').filter_map(|part| part.trim_start_matches('(').split(':').next().map(str::to_string)).collect()
}

#[test]
fn conditions_and_nfilter_choose_the_nodes_like_node_groups_included() {
    let c = Cluster::with_moms(4, 8);
    define_resources(&c);
    let nodes = [
        ("n1", "green", "rhel5", "8", "ver_012", "s1"),
        ("n2", "green", "rhel7", "16", "ver_12", "s1"),
        ("n3", "blue", "rhel7", "32", "ver_045", "s2"),
        ("n4", "black", "rhel6", "8", "", "s2"),
    ];
    for (node, color, os_ver, cores, ver, switch) in nodes {
        let mut set = format!(
            "set node {node} resources_available.color = {color}, resources_available.os_ver = {os_ver}, \
             resources_available.cores = {cores}, resources_available.switch = {switch}"
        );
        if !ver.is_empty() {
            set.push_str(&format!(", resources_available.ver = {ver}"));
        }
        c.qmgr(&set);
    }
    let sleep = ["--", "/bin/sleep", "300"];
    let submit = |resources: &[&str]| {
        let mut args: Vec<&str> = Vec::new();
        for r in resources {
            args.extend(["-l", r]);
        }
        args.extend(sleep);
        c.qsub(&args)
    };
    let not_green = submit(&["select=1:ncpus=1:color!=green"]);
    let many_cores = submit(&["select=1:ncpus=1:cores>=16"]);
    // Strings compare byte by byte: "ver_12" > "ver_045" (the design's warning), and n4,
    // which has no `ver`, meets no condition on it.
    let later_ver = submit(&["select=1:ncpus=1:ver>ver_045"]);
    let filtered = submit(&[
        "select=1:ncpus=1",
        "nfilter=\"resources_available['os_ver']>=rhel6 and resources_available['color']=='blue'\"",
    ]);
    // Use case 2: like nodes by `switch`; the condition rules s1 out, though s1 comes first.
    let like = submit(&["select=2:ncpus=1:color!=green", "place=scatter:group=switch"]);
    let like_filtered = submit(&[
        "select=2:ncpus=1",
        "place=scatter:group=switch",
        "nfilter=\"not resources_available['os_ver']==rhel5\"",
    ]);
    let ids = [&not_green, &many_cores, &later_ver, &filtered, &like, &like_filtered];
    for id in ids {
        c.wait_job_state(id, "R", Duration::from_secs(30));
    }
    assert_eq!(vnodes(&c, &not_green), ["n3"]);
    assert_eq!(vnodes(&c, &many_cores), ["n2"]);
    assert_eq!(vnodes(&c, &later_ver), ["n2"]);
    assert_eq!(vnodes(&c, &filtered), ["n3"]);
    assert_eq!(vnodes(&c, &like), ["n3", "n4"]);
    // rhel5 is n1 only, so the filter leaves s1 one vnode and s2 both.
    assert_eq!(vnodes(&c, &like_filtered), ["n3", "n4"]);
    assert_eq!(
        c.job_attr(&filtered, "Resource_List.nfilter").as_deref(),
        Some("resources_available['os_ver']>=rhel6 and resources_available['color']=='blue'")
    );
    let never = submit(&["select=1:ncpus=1:color!=green:os_ver<rhel5"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let expected = "Can Never Run: Insufficient amount of resource: os_ver (R: <rhel5 A: rhel5,rhel7,rhel6)";
    while c.job_attr(&never, "comment").as_deref() != Some(expected) {
        assert!(Instant::now() < deadline, "comment: {:?}", c.job_attr(&never, "comment"));
        std::thread::sleep(Duration::from_millis(50));
    }
    c.run("qdel", &["-W", "force", &not_green, &many_cores, &later_ver, &filtered, &like, &like_filtered, &never]).ok();
}

#[test]
fn operators_on_consumables_and_bad_filters_are_refused_by_any_client() {
    let c = Cluster::start();
    c.allow_root_jobs();
    define_resources(&c);
    // qsub prints the server's refusal.
    for select in [
        "select=1:ncpus=5:mem>21gb",
        "select=1:ncpus>4",
        "select=1:color=red+1:ngpus!=1",
        // The design's own example: each OR-ed alternative is checked.
        "select=1:ncpus=5:mem>21gb||2:ncpus=4:mem=100mb",
    ] {
        let out = c.run("qsub", &["-l", select, "--", "/bin/sleep", "1000"]);
        assert_eq!(out.stderr, format!("qsub: {CONSUMABLE_TEXT}\n"), "{select}");
        assert_eq!(out.code, (CONSUMABLE_OP & 0xff) as i32, "{select}");
    }
    let bad_filters = [
        "__import__('os').system('touch /tmp/condsel-pwned')".to_string(),
        "resources_available[‘os_ver’]>=rhel6".to_string(),
        "resources_available['a']=='b' and".to_string(),
        vec!["resources_available['a']=='b'"; 4000].join(" or "),
    ];
    for filter in &bad_filters[..3] {
        let out = c.run("qsub", &["-l", &format!("nfilter=\"{filter}\""), "--", "/bin/true"]);
        assert_eq!(out.stderr, "qsub: Illegal attribute or resource value Resource_List.nfilter\n", "{filter}");
        assert_eq!(out.code, (BADATVAL & 0xff) as i32);
    }
    assert!(!std::path::Path::new("/tmp/condsel-pwned").exists());
    let out = c.run("qsub", &["-l", "select=1:fast<True", "--", "/bin/true"]);
    assert_eq!(out.stderr, "qsub: Illegal attribute or resource value Resource_List.select\n");

    // A raw client gets the same codes; a 100 KB filter is refused at once.
    let refusals = [
        ("Resource_List.select", "1:ncpus=1:mem>=1gb".to_string(), CONSUMABLE_OP),
        ("Resource_List.select", "1:color!=red:mpiprocs>2".to_string(), CONSUMABLE_OP),
        ("Resource_List.select", "1:cores>=lots".to_string(), BADATVAL),
        ("Resource_List.nfilter", bad_filters[3].clone(), BADATVAL),
    ];
    for (name, value, code) in &refusals {
        let started = Instant::now();
        let answer = c.client().submit(vec![Attr::new(*name, value.as_str())], "true\n".into(), None);
        match answer {
            Err(ClientError::Server { code: got, message }) => {
                assert_eq!(got.0, *code, "{name}={value:.60}: {message}");
                if *code == CONSUMABLE_OP {
                    assert_eq!(message, CONSUMABLE_TEXT);
                } else {
                    assert!(message.ends_with(name), "{message}");
                }
            }
            other => panic!("{name}={value:.60} answered {other:?}"),
        }
        assert!(started.elapsed() < Duration::from_secs(2), "{name} took {:?}", started.elapsed());
    }
    assert_eq!(c.run("qselect", &[]).ok().stdout, "", "no job was created");

    // What is valid is kept; qalter is held to the same rules, and an ordinary user may
    // set a filter on their own job.
    let id = c.qsub(&["-h", "-l", "select=1:ncpus=1:color!=green", "--", "/bin/true"]);
    assert_eq!(c.job_attr(&id, "Resource_List.select").as_deref(), Some("1:ncpus=1:color!=green"));
    let out = c.run("qalter", &["-l", "select=1:mem<1gb", &id]);
    assert!(out.stderr.contains(CONSUMABLE_TEXT), "{out:?}");
    let request = Request::ModifyJob { ids: vec![id.clone()], attrs: vec![Attr::new("Resource_List.nfilter", "x")] };
    let errors = c.client().per_id(request).expect("a per-id answer");
    assert_eq!(errors.iter().map(|e| e.code).collect::<Vec<_>>(), [BADATVAL]);
    assert_eq!(c.job_attr(&id, "Resource_List.select").as_deref(), Some("1:ncpus=1:color!=green"));
    let dir = c.shared_dir();
    let dir = dir.to_str().unwrap();
    let mine = c
        .run_as_nobody(
            "qsub",
            &["-h", "-o", dir, "-e", dir, "-l", "nfilter=\"resources_available['color']!='green'\"", "--", "/bin/true"],
        )
        .ok()
        .line()
        .to_string();
    c.run_as_nobody("qalter", &["-l", "nfilter=\"resources_available['color']=='blue'\"", &mine]).ok();
    assert_eq!(c.job_attr(&mine, "Resource_List.nfilter").as_deref(), Some("resources_available['color']=='blue'"));
}

#[test]
fn a_string_resource_whose_values_read_as_numbers_compares_as_a_string() {
    let c = Cluster::with_moms(2, 4);
    // Defined once the scheduler has the server's state: it hears of the definition (not
    // in its snapshot) before the values.
    wait_until("the scheduler has the server's state", Duration::from_secs(30), || {
        c.sched_stderr().contains("Received the server's state")
    });
    c.qmgr("create resource build type=string,flag=h");
    c.qmgr("set node n1 resources_available.build = 85");
    c.qmgr("set node n2 resources_available.build = 120");
    let sleep = ["--", "/bin/sleep", "300"];
    let submit = |select: &str| {
        let mut args = vec!["-l", select];
        args.extend(sleep);
        c.qsub(&args)
    };
    // Byte by byte, "85" > "100" ('8' after '1') and "120" < "85": as numbers the first
    // would run on n2 and the second nowhere. `=` matches the text on every job, not an
    // amount the first one takes from n1.
    let above = submit("select=1:ncpus=1:build>100");
    let below = submit("select=1:ncpus=1:build<85");
    let same = [submit("select=1:ncpus=1:build=85"), submit("select=1:ncpus=1:build=85")];
    for id in [&above, &below, &same[0], &same[1]] {
        c.wait_job_state(id, "R", Duration::from_secs(30));
    }
    assert_eq!(vnodes(&c, &above), ["n1"]);
    assert_eq!(vnodes(&c, &below), ["n2"]);
    assert_eq!([vnodes(&c, &same[0]), vnodes(&c, &same[1])], [["n1"], ["n1"]]);
    c.run("qdel", &["-W", "force", &above, &below, &same[0], &same[1]]).ok();
}
