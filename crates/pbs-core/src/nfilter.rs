//! `nfilter`, a job's node filter (`resources_available['os_ver']>=rhel6 and
//! resources_available['color']=='blue'`): this project's own small grammar, parsed once
//! into terms and a tree of `and`/`or`/`not`, never evaluated as Python or shell. What a
//! term means on a vnode (numbers or strings, unset values) is the scheduler's, which
//! evaluates the tree with [`NFilter::eval`].
//!
//! ```text
//! expr    := and ("or" and)*
//! and     := unary ("and" unary)*
//! unary   := "not" unary | "(" expr ")" | term
//! term    := "resources_available" "[" name "]" op value
//! name    := 'resource' | "resource" | resource
//! op      := "==" | "!=" | "<" | "<=" | ">" | ">="
//! value   := 'text' | "text" | word          (word: letters, digits, _ . : + - / @)
//! ```
//! Only ASCII quotes quote (a pasted `‘blue’` is refused, not guessed at); keywords are
//! lower case, as Python writes them. Bounded: [`MAX_LEN`] bytes, [`MAX_TERMS`] terms and
//! [`MAX_DEPTH`] levels of `not` and parentheses, each checked before more is read, so
//! any input costs at most one pass over its first [`MAX_LEN`] bytes.

use crate::select::Cmp;

/// The longest filter text accepted, in bytes.
pub const MAX_LEN: usize = 4096;
/// The most `resources_available[...]` terms in one filter.
pub const MAX_TERMS: usize = 64;
/// The deepest nesting of `not` and parentheses.
pub const MAX_DEPTH: usize = 16;

/// Why a filter is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NFilterError {
    #[error("nfilter is longer than {MAX_LEN} bytes")]
    TooLong,
    #[error("nfilter has more than {MAX_TERMS} terms")]
    TooManyTerms,
    #[error("nfilter nests deeper than {MAX_DEPTH} levels")]
    TooDeep,
    #[error("nfilter syntax error at byte {at}: {what}")]
    Syntax { at: usize, what: &'static str },
}

/// One comparison: `resources_available['resource'] cmp value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    pub resource: String,
    pub cmp: Cmp,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Term(usize),
    Not(Box<Node>),
    And(Vec<Node>),
    Or(Vec<Node>),
}

/// A parsed filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NFilter {
    terms: Vec<Term>,
    root: Node,
}

impl NFilter {
    /// Parses a filter text.
    pub fn parse(text: &str) -> Result<NFilter, NFilterError> {
        if text.len() > MAX_LEN {
            return Err(NFilterError::TooLong);
        }
        let tokens = tokenize(text)?;
        let mut parser = Parser { tokens: &tokens, pos: 0, terms: Vec::new(), end: text.len() };
        let root = parser.expr(0)?;
        if parser.pos != tokens.len() {
            return Err(parser.syntax("expected `and`, `or` or the end"));
        }
        Ok(NFilter { terms: parser.terms, root })
    }

    /// The terms, in the order written; [`Self::eval`] names them by index.
    pub fn terms(&self) -> &[Term] {
        &self.terms
    }

    /// The filter's value, given each term's (asked for only as needed: `and` and `or`
    /// stop at the first term that decides them).
    pub fn eval(&self, mut term_holds: impl FnMut(usize) -> bool) -> bool {
        eval(&self.root, &mut term_holds)
    }
}

fn eval(node: &Node, term_holds: &mut impl FnMut(usize) -> bool) -> bool {
    match node {
        Node::Term(index) => term_holds(*index),
        Node::Not(inner) => !eval(inner, term_holds),
        Node::And(nodes) => nodes.iter().all(|n| eval(n, term_holds)),
        Node::Or(nodes) => nodes.iter().any(|n| eval(n, term_holds)),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok<'a> {
    Word(&'a str),
    Quoted(&'a str),
    Op(Cmp),
    Open,
    Close,
    LBracket,
    RBracket,
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'+' | b'-' | b'/' | b'@')
}

/// Tokens with the byte offset each starts at.
fn tokenize(text: &str) -> Result<Vec<(usize, Tok<'_>)>, NFilterError> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    let syntax = |at: usize, what: &'static str| NFilterError::Syntax { at, what };
    while i < bytes.len() {
        let start = i;
        let b = bytes[i];
        let tok = match b {
            b' ' | b'\t' => {
                i += 1;
                continue;
            }
            b'(' => Tok::Open,
            b')' => Tok::Close,
            b'[' => Tok::LBracket,
            b']' => Tok::RBracket,
            b'\'' | b'"' => {
                let close = bytes[i + 1..].iter().position(|c| *c == b).ok_or(syntax(i, "no closing quote"))?;
                let inner = &text[i + 1..i + 1 + close];
                if inner.bytes().any(|c| c.is_ascii_control()) {
                    return Err(syntax(i, "control character in a quoted value"));
                }
                i += close + 2;
                tokens.push((start, Tok::Quoted(inner)));
                continue;
            }
            b'=' | b'!' | b'<' | b'>' => {
                let next = bytes.get(i + 1).copied();
                let (cmp, len) = match (b, next) {
                    (b'=', Some(b'=')) => (Cmp::Eq, 2),
                    (b'!', Some(b'=')) => (Cmp::Ne, 2),
                    (b'<', Some(b'=')) => (Cmp::Le, 2),
                    (b'>', Some(b'=')) => (Cmp::Ge, 2),
                    (b'<', _) => (Cmp::Lt, 1),
                    (b'>', _) => (Cmp::Gt, 1),
                    _ => return Err(syntax(i, "unknown operator (use == != < <= > >=)")),
                };
                i += len;
                tokens.push((start, Tok::Op(cmp)));
                continue;
            }
            b if is_word_byte(b) => {
                let len = bytes[i..].iter().take_while(|c| is_word_byte(**c)).count();
                i += len;
                tokens.push((start, Tok::Word(&text[start..i])));
                continue;
            }
            _ => return Err(syntax(i, "character not allowed (quotes must be ASCII ' or \")")),
        };
        i += 1;
        tokens.push((start, tok));
    }
    Ok(tokens)
}

struct Parser<'t, 'a> {
    tokens: &'t [(usize, Tok<'a>)],
    pos: usize,
    terms: Vec<Term>,
    end: usize,
}

impl Parser<'_, '_> {
    fn peek(&self) -> Option<&Tok<'_>> {
        self.tokens.get(self.pos).map(|(_, t)| t)
    }

    fn syntax(&self, what: &'static str) -> NFilterError {
        let at = self.tokens.get(self.pos).map_or(self.end, |(at, _)| *at);
        NFilterError::Syntax { at, what }
    }

    fn keyword(&mut self, word: &str) -> bool {
        if self.peek() == Some(&Tok::Word(word)) {
            self.pos += 1;
            return true;
        }
        false
    }

    fn expr(&mut self, depth: usize) -> Result<Node, NFilterError> {
        let mut any = vec![self.and(depth)?];
        while self.keyword("or") {
            any.push(self.and(depth)?);
        }
        Ok(if any.len() == 1 { any.remove(0) } else { Node::Or(any) })
    }

    fn and(&mut self, depth: usize) -> Result<Node, NFilterError> {
        let mut all = vec![self.unary(depth)?];
        while self.keyword("and") {
            all.push(self.unary(depth)?);
        }
        Ok(if all.len() == 1 { all.remove(0) } else { Node::And(all) })
    }

    fn unary(&mut self, depth: usize) -> Result<Node, NFilterError> {
        if self.keyword("not") {
            return Ok(Node::Not(Box::new(self.unary(deeper(depth)?)?)));
        }
        if self.peek() == Some(&Tok::Open) {
            self.pos += 1;
            let inner = self.expr(deeper(depth)?)?;
            if self.peek() != Some(&Tok::Close) {
                return Err(self.syntax("expected `)`"));
            }
            self.pos += 1;
            return Ok(inner);
        }
        self.term()
    }

    fn term(&mut self) -> Result<Node, NFilterError> {
        if !self.keyword("resources_available") {
            return Err(self.syntax("expected resources_available['name'], `not` or `(`"));
        }
        self.expect(&Tok::LBracket, "expected `[`")?;
        let resource = match self.peek() {
            Some(Tok::Quoted(name) | Tok::Word(name)) if is_resource_name(name) => name.to_string(),
            _ => return Err(self.syntax("expected a resource name")),
        };
        self.pos += 1;
        self.expect(&Tok::RBracket, "expected `]`")?;
        let Some(&Tok::Op(cmp)) = self.peek() else {
            return Err(self.syntax("expected an operator (== != < <= > >=)"));
        };
        self.pos += 1;
        let value = match self.peek() {
            Some(Tok::Quoted(v) | Tok::Word(v)) if !v.is_empty() => v.to_string(),
            _ => return Err(self.syntax("expected a value")),
        };
        self.pos += 1;
        if self.terms.len() == MAX_TERMS {
            return Err(NFilterError::TooManyTerms);
        }
        self.terms.push(Term { resource, cmp, value });
        Ok(Node::Term(self.terms.len() - 1))
    }

    fn expect(&mut self, tok: &Tok<'_>, what: &'static str) -> Result<(), NFilterError> {
        if self.peek() != Some(tok) {
            return Err(self.syntax(what));
        }
        self.pos += 1;
        Ok(())
    }
}

fn deeper(depth: usize) -> Result<usize, NFilterError> {
    if depth >= MAX_DEPTH { Err(NFilterError::TooDeep) } else { Ok(depth + 1) }
}

fn is_resource_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The filter's value on a node given as (resource, value) pairs, terms compared as
    /// strings, unset false: enough to check the tree.
    fn on(filter: &str, node: &[(&str, &str)]) -> bool {
        let filter = NFilter::parse(filter).unwrap();
        filter.eval(|i| {
            let term = &filter.terms()[i];
            node.iter()
                .find(|(r, _)| *r == term.resource)
                .is_some_and(|(_, v)| term.cmp.holds((*v).cmp(term.value.as_str())))
        })
    }

    #[test]
    fn the_designs_filters_parse_and_decide() {
        let seed = "resources_available['os_ver']>=rhel6 and resources_available['color']=='blue'";
        let filter = NFilter::parse(seed).unwrap();
        let terms: Vec<_> = filter.terms().iter().map(|t| (t.resource.as_str(), t.cmp, t.value.as_str())).collect();
        assert_eq!(terms, [("os_ver", Cmp::Ge, "rhel6"), ("color", Cmp::Eq, "blue")]);
        assert!(on(seed, &[("os_ver", "rhel7"), ("color", "blue")]));
        assert!(!on(seed, &[("os_ver", "rhel5"), ("color", "blue")]));
        assert!(!on(seed, &[("os_ver", "rhel7")]));
        let second = "resources_available['os_ver']!=rhel7 and resources_available['color']!='black'";
        assert!(on(second, &[("os_ver", "rhel6"), ("color", "blue")]));
        assert!(!on(second, &[("os_ver", "rhel7"), ("color", "blue")]));
    }

    #[test]
    fn and_binds_tighter_than_or_and_not_and_parentheses_nest() {
        let node = [("a", "1"), ("b", "2")];
        assert!(on(
            "resources_available[a]=='1' or resources_available[b]=='9' and resources_available[a]=='9'",
            &node
        ));
        assert!(!on(
            "(resources_available[a]=='1' or resources_available[b]=='9') and resources_available[a]=='9'",
            &node
        ));
        assert!(on("not resources_available[\"c\"]==x", &node));
        assert!(on("not not resources_available[a] < 2", &node));
        assert!(on("resources_available[b]>1 and (resources_available[a]<=1)", &node));
    }

    #[test]
    fn evaluation_stops_at_the_deciding_term() {
        let filter = NFilter::parse("resources_available[a]==1 or resources_available[b]==2").unwrap();
        let mut asked = Vec::new();
        assert!(filter.eval(|i| {
            asked.push(i);
            true
        }));
        assert_eq!(asked, [0]);
    }

    #[test]
    fn what_is_not_the_grammar_is_refused() {
        let syntax = |text: &str| matches!(NFilter::parse(text), Err(NFilterError::Syntax { .. }));
        for bad in [
            "",
            "   ",
            "__import__('os').system('rm -rf /')",
            "resources_available['a'] = 'b'",
            "resources_available['a'] === 'b'",
            "resources_available['a']=='b' && resources_available['b']=='c'",
            "resources_available['a']=='b' and",
            "resources_available['a']=='b' or or resources_available['a']=='b'",
            "resources_available[‘os_ver’]>=rhel6",
            "resources_available['os_ver']>=“rhel6”",
            "resources_available['a']=='b'; rm -rf /",
            "resources_available['a']=='b' $(id)",
            "resources_available['a']==''",
            "resources_available['a'] == 'unterminated",
            "resources_available['1a']==b",
            "resources_available['a']",
            "resources_available.a == b",
            "(resources_available['a']==b",
            "resources_available['a']==b)",
            "Resources_available['a']==b",
            "resources_available['a']==b AND resources_available['a']==b",
            "resources_available['a']==\"b\ttab\"",
        ] {
            assert!(syntax(bad), "{bad:?}: {:?}", NFilter::parse(bad));
        }
        // A quoted value keeps blanks and characters that would be operators outside quotes.
        let filter = NFilter::parse("resources_available['a'] == 'x > y and z'").unwrap();
        assert_eq!(filter.terms()[0].value, "x > y and z");
        // What a shell would run is only ever a value compared with node values.
        let filter = NFilter::parse("resources_available['a']=='`id`$(id)'").unwrap();
        assert_eq!(filter.terms()[0].value, "`id`$(id)");
    }

    #[test]
    fn hostile_sizes_are_refused_at_once() {
        let term = "resources_available['a']=='b'";
        let long = vec![term; 4000].join(" or ");
        assert!(long.len() > 100_000);
        assert_eq!(NFilter::parse(&long), Err(NFilterError::TooLong));
        let many = vec![term; MAX_TERMS + 1].join(" or ");
        assert!(many.len() <= MAX_LEN);
        assert_eq!(NFilter::parse(&many), Err(NFilterError::TooManyTerms));
        assert!(NFilter::parse(&vec![term; MAX_TERMS].join(" and ")).is_ok());
        let deep = format!("{}{term}{}", "(".repeat(MAX_DEPTH + 1), ")".repeat(MAX_DEPTH + 1));
        assert_eq!(NFilter::parse(&deep), Err(NFilterError::TooDeep));
        let nots = format!("{}{term}", "not ".repeat(MAX_DEPTH + 1));
        assert_eq!(NFilter::parse(&nots), Err(NFilterError::TooDeep));
        let ok = format!("{}{term}{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert!(NFilter::parse(&ok).is_ok());
        // Unbalanced opening parentheses up to the length cap stop at the depth cap.
        assert_eq!(NFilter::parse(&"(".repeat(MAX_LEN)), Err(NFilterError::TooDeep));
    }
}
