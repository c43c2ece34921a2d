//! A job's `Variable_List`: `NAME=value,NAME2=value2`, a backslash escaping the character
//! after it (qsub writes a comma in a value as `\,` and a backslash as `\\`). The one
//! reader of the list on the server: its submission (`PBS_O_WORKDIR`, whether `PBS_O_QUEUE`
//! and `PBS_O_HOST` are there) and the environment a job starts with read it alike.
//! (qstat's JSON output shows the list as OpenPBS's qstat does, a display rule of its own.)

/// The variables of `list`, in order; items without `=` or with an empty name are skipped.
pub fn decode(list: &str) -> Vec<(String, String)> {
    let mut items = Vec::new();
    let mut current = String::new();
    let mut chars = list.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            ',' => items.push(std::mem::take(&mut current)),
            other => current.push(other),
        }
    }
    if !current.is_empty() {
        items.push(current);
    }
    items
        .into_iter()
        .filter_map(|item| item.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_decode_escaped_commas() {
        let vars = decode(r"PBS_O_HOME=/root,A=x\,y,B=,PBS_O_WORKDIR=/tmp");
        assert_eq!(
            vars,
            vec![
                ("PBS_O_HOME".to_string(), "/root".to_string()),
                ("A".to_string(), "x,y".to_string()),
                ("B".to_string(), String::new()),
                ("PBS_O_WORKDIR".to_string(), "/tmp".to_string()),
            ]
        );
    }
}
