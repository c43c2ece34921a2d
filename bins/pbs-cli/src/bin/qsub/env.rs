//! The job's `Variable_List`, built as OpenPBS's qsub builds it: the `PBS_O_*` variables
//! of the submitting side, then `-v` variables, then (with `-V`) the whole environment,
//! with commas and quotes escaped by backslashes so the list can be split again.

/// Looks an environment variable up.
pub(crate) type GetEnv<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Prefix of the variables qsub makes itself; users cannot pass their own.
const PBS_O: &str = "PBS_O_";

/// What the basic list needs besides the environment.
pub(crate) struct Basics<'a> {
    /// The working directory.
    pub cwd: &'a str,
    /// `PBS_INTERACTIVE_AUTH_METHOD` of pbs.conf.
    pub auth_method: &'a str,
    /// `PBS_INTERACTIVE_ENCRYPT_METHOD` of pbs.conf.
    pub encrypt_method: &'a str,
}

/// `strdup_esc_commas`.
fn escape_commas(value: &str) -> String {
    value.replace(',', "\\,")
}

/// `job_env_basic`: `PBS_O_HOME` (always, `/` when unset), `PBS_O_LANG`, `PBS_O_LOGNAME`,
/// `PBS_O_PATH`, `PBS_O_MAIL`, `PBS_O_SHELL`, `PBS_O_TZ` (when set), the interactive
/// authentication settings, `PBS_O_WORKDIR` and `PBS_O_SYSTEM`. The server appends
/// `PBS_O_QUEUE` and `PBS_O_HOST`.
pub(crate) fn basic_env(getenv: GetEnv<'_>, basics: &Basics<'_>) -> String {
    let mut out = String::from("PBS_O_HOME=");
    match getenv("HOME") {
        Some(home) => out.push_str(&escape_commas(&home)),
        None => out.push('/'),
    }
    for (name, from) in [
        ("PBS_O_LANG", "LANG"),
        ("PBS_O_LOGNAME", "LOGNAME"),
        ("PBS_O_PATH", "PATH"),
        ("PBS_O_MAIL", "MAIL"),
        ("PBS_O_SHELL", "SHELL"),
        ("PBS_O_TZ", "TZ"),
    ] {
        if let Some(value) = getenv(from) {
            out.push_str(&format!(",{name}={}", escape_commas(&value)));
        }
    }
    out.push_str(&format!(",PBS_O_INTERACTIVE_AUTH_METHOD={}", basics.auth_method));
    out.push_str(&format!(",PBS_O_INTERACTIVE_ENCRYPT_METHOD={}", basics.encrypt_method));
    out.push_str(&format!(",PBS_O_WORKDIR={}", escape_commas(basics.cwd)));
    out.push_str(",PBS_O_SYSTEM=");
    out.push_str(if cfg!(target_os = "linux") { "Linux" } else { std::env::consts::OS });
    out
}

/// `copy_env_value`: appends a value to `dest`, escaping what the list syntax needs. With
/// `quote`, every quote and comma is escaped (values from the environment); without,
/// quotes group text (and are dropped) and an unquoted, unescaped comma ends the value.
/// Returns how many bytes of `value` were used (including the ending comma), `None` for
/// an unterminated quote.
fn copy_env_value(dest: &mut String, value: &str, quote: bool) -> Option<usize> {
    let bytes = value.as_bytes();
    let is_function = value.starts_with("() {");
    let mut in_quote: Option<char> = None;
    let mut chars = value.char_indices().peekable();
    let mut used = bytes.len();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' | '\'' => match in_quote {
                Some(q) if q == c => in_quote = None,
                Some(_) => {
                    dest.push('\\');
                    dest.push(c);
                }
                None if quote => {
                    dest.push('\\');
                    dest.push(c);
                }
                None => in_quote = Some(c),
            },
            '\\' => {
                dest.push('\\');
                if bytes.get(at + 1) != Some(&b',') {
                    dest.push('\\');
                }
            }
            ',' => {
                if in_quote.is_some() || quote {
                    dest.push_str("\\,");
                } else if dest.ends_with('\\') {
                    dest.push(',');
                } else {
                    used = at + 1;
                    break;
                }
            }
            ';' => {
                dest.push(';');
                if is_function && bytes.get(at + 1) == Some(&b'\n') {
                    chars.next();
                }
            }
            _ => dest.push(c),
        }
    }
    if in_quote.is_some() { None } else { Some(used) }
}

/// `comma_token`: splits at commas outside quotes; a backslash protects the next character.
fn comma_tokens(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut quote: Option<char> = None;
    let mut chars = text.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' | '\'' => {
                quote = if quote == Some(c) {
                    None
                } else if quote.is_none() {
                    Some(c)
                } else {
                    quote
                };
            }
            ',' if quote.is_none() => {
                out.push(&text[start..at]);
                start = at + 1;
            }
            '\\' => {
                chars.next();
            }
            _ => {}
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// `expand_varlist`: the `-v` list with every bare `NAME` given its value from the
/// environment. `None` (qsub: "cannot send environment with the job") if one is not set or
/// a quote is not closed.
pub(crate) fn expand_varlist(list: &str, getenv: GetEnv<'_>) -> Option<String> {
    let mut out = String::new();
    for token in comma_tokens(list) {
        match token.split_once('=') {
            None if token.starts_with(PBS_O) => {}
            None => {
                let value = getenv(token)?;
                if !out.is_empty() {
                    out.push(',');
                }
                out.push_str(token);
                out.push('=');
                copy_env_value(&mut out, &value, true)?;
            }
            Some((name, value)) => {
                if !out.is_empty() {
                    out.push(',');
                }
                out.push_str(name);
                out.push('=');
                copy_env_value(&mut out, value, false)?;
            }
        }
    }
    Some(out)
}

/// `env_array_to_varlist`: the whole environment (but `PBS_O_*`) as `,NAME=value...`.
pub(crate) fn environment_list(vars: &[(String, String)]) -> String {
    let mut out = String::new();
    for (name, value) in vars {
        if name.starts_with(PBS_O) {
            continue;
        }
        out.push(',');
        out.push_str(name);
        out.push('=');
        let _ = copy_env_value(&mut out, value, true);
    }
    out
}

/// `set_job_env`: the final `Variable_List`: the basic list, the expanded `-v` list (minus
/// `PBS_O_*`), then the environment list of `-V`. `None` if the `-v` list is malformed.
pub(crate) fn variable_list(
    basic: &str,
    expanded_v: Option<&str>,
    environment: Option<&str>,
    getenv: GetEnv<'_>,
) -> Option<String> {
    let mut out = basic.to_string();
    if let Some(list) = expanded_v {
        let mut rest = list;
        while !rest.is_empty() {
            if rest.starts_with([',', '=']) {
                return None;
            }
            let end = rest.find([',', '=']).unwrap_or(rest.len());
            let name = &rest[..end];
            if rest[end..].starts_with('=') {
                let mark = out.len();
                out.push(',');
                out.push_str(name);
                out.push('=');
                let used = copy_env_value(&mut out, &rest[end + 1..], false)?;
                if name.starts_with(PBS_O) {
                    out.truncate(mark);
                }
                rest = &rest[end + 1 + used..];
            } else {
                if !name.starts_with(PBS_O) {
                    let value = getenv(name)?;
                    out.push(',');
                    out.push_str(name);
                    out.push('=');
                    copy_env_value(&mut out, &value, true)?;
                }
                rest = rest[end..].strip_prefix(',').unwrap_or(&rest[end..]);
            }
        }
    }
    if let Some(environment) = environment {
        out.push_str(environment);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            "LANG" => Some("C.UTF-8".into()),
            "PATH" => Some("/bin,/usr/bin".into()),
            "FOO" => Some("a,b".into()),
            "QUOTED" => Some("say \"hi\"".into()),
            _ => None,
        }
    }

    fn check_v(list: &str, expected: Option<&str>) {
        let expanded = expand_varlist(list, &env);
        let full = expanded.and_then(|v| variable_list("B", Some(&v), None, &env));
        assert_eq!(full.as_deref(), expected, "{list}");
    }

    #[test]
    fn basic_list() {
        let basics = Basics { cwd: "/w,x", auth_method: "resvport", encrypt_method: "" };
        assert_eq!(
            basic_env(&env, &basics),
            "PBS_O_HOME=/home/u,PBS_O_LANG=C.UTF-8,PBS_O_PATH=/bin\\,/usr/bin,\
             PBS_O_INTERACTIVE_AUTH_METHOD=resvport,PBS_O_INTERACTIVE_ENCRYPT_METHOD=,\
             PBS_O_WORKDIR=/w\\,x,PBS_O_SYSTEM=Linux"
        );
        let none = |_: &str| None;
        assert!(basic_env(&none, &basics).starts_with("PBS_O_HOME=/,PBS_O_INTERACTIVE"));
    }

    #[test]
    fn v_lists() {
        check_v("A=1,B=two", Some("B,A=1,B=two"));
        check_v("FOO", Some("B,FOO=a\\,b"));
        check_v("X=\"a,b\",Y=2", Some("B,X=a\\,b,Y=2"));
        // Quotes escaped by the first pass open a quote in the second, as in OpenPBS.
        check_v("QUOTED", Some("B,QUOTED=say \\\\hi\\\\"));
        check_v("PBS_O_HOME=/x,K=v", Some("B,K=v"));
        check_v("PBS_O_HOME", Some("B"));
        check_v("UNSET", None);
        check_v("X=\"open", None);
    }

    #[test]
    fn whole_environment() {
        let vars = vec![
            ("A".to_string(), "1".to_string()),
            ("PBS_O_X".to_string(), "no".to_string()),
            ("C".to_string(), "x,\"y\"".to_string()),
        ];
        let list = environment_list(&vars);
        assert_eq!(list, ",A=1,C=x\\,\\\"y\\\"");
        assert_eq!(variable_list("B", None, Some(&list), &env).as_deref(), Some("B,A=1,C=x\\,\\\"y\\\""));
    }
}
