//! Job scripts: finding the `#PBS` directive lines (before the first command line) and
//! splitting them into words, as OpenPBS's `get_script` and `make_argv` do.

/// A script split into what qsub sends and the directives it found.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Scanned {
    /// The script as sent (continued directive lines joined).
    pub text: String,
    /// The text after the prefix of every directive line, in order.
    pub directives: Vec<String>,
}

/// `pbs_isexecutable`: a line that is not blank, not a comment, and not `:` or `#!`.
fn is_command(line: &str) -> bool {
    if line.starts_with(':') || line.starts_with("#!") {
        return false;
    }
    match line.trim_start().chars().next() {
        Some(c) => c != '#',
        None => false,
    }
}

/// `pbs_ispbsdir`: the rest of a line that starts (after blanks) with the prefix.
fn directive<'a>(line: &'a str, prefix: &str) -> Option<&'a str> {
    if prefix.is_empty() {
        return None;
    }
    line.trim_start().strip_prefix(prefix)
}

/// Scans a script: directives are read until the first command line; a directive line
/// ending in a backslash continues on the next line.
pub(crate) fn scan(script: &str, prefix: &str) -> Scanned {
    let mut out = Scanned::default();
    let mut lines = script.split_inclusive('\n');
    let mut commands_started = false;
    while let Some(line) = lines.next() {
        if !commands_started {
            if directive(line, prefix).is_some() {
                let body = line.strip_suffix('\n').unwrap_or(line);
                let joined = match body.strip_suffix('\\') {
                    Some(head) => {
                        let mut joined = head.to_string();
                        if let Some(next) = lines.next() {
                            joined.push_str(next);
                        }
                        joined
                    }
                    None => line.to_string(),
                };
                if let Some(rest) = directive(&joined, prefix) {
                    out.directives.push(rest.to_string());
                }
                out.text.push_str(&joined);
                continue;
            }
            if is_command(line) {
                commands_started = true;
            }
        }
        out.text.push_str(line);
    }
    out
}

/// `make_argv`: splits a directive into words at blanks; `"` and `'` quote, a backslash
/// takes the next character literally. `Err` on an unterminated quote.
pub(crate) fn split_words(line: &str) -> Result<Vec<String>, ()> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut chars = line.trim_start().chars();
    while let Some(c) = chars.next() {
        match c {
            '"' | '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some(q) if q == c => break,
                        Some(other) => current.push(other),
                        None => return Err(()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                current.push(c);
            }
        }
    }
    if in_word {
        words.push(current);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(script: &str, directives: &[&str], text: &str) {
        let scanned = scan(script, "#PBS");
        assert_eq!(scanned.directives, directives, "{script:?}");
        assert_eq!(scanned.text, text, "{script:?}");
    }

    #[test]
    fn directives_stop_at_the_first_command() {
        let script = "#!/bin/sh\n# comment\n  #PBS -N a\n\n#PBS -l walltime=1:00\necho hi\n#PBS -N late\n";
        check(script, &[" -N a\n", " -l walltime=1:00\n"], script);
        check(":\n#PBS -N b\n", &[" -N b\n"], ":\n#PBS -N b\n");
        check("#PBS -N a \\\n -l x=1\ntrue\n", &[" -N a  -l x=1\n"], "#PBS -N a  -l x=1\ntrue\n");
        check("#PBS -N nonl", &[" -N nonl"], "#PBS -N nonl");
        assert_eq!(scan("#PBS -N a\n", "").directives, Vec::<String>::new());
        assert_eq!(scan("#XX -N a\n#PBS -N b\n", "#XX").directives, vec![" -N a\n"]);
    }

    #[test]
    fn words() {
        let words = |line: &str| split_words(line).unwrap();
        assert_eq!(words(r#" -N "a b" -l x=1 'c d'"#), vec!["-N", "a b", "-l", "x=1", "c d"]);
        assert_eq!(words("-N a\\ b\n"), vec!["-N", "a b"]);
        assert_eq!(words("-v A=\"\"\n"), vec!["-v", "A="]);
        assert_eq!(words("   \n"), Vec::<String>::new());
        assert!(split_words("-N \"open").is_err());
    }
}
