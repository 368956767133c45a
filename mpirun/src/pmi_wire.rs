//! PMI-1 simple wire format: one message per line, `key=value` pairs separated by spaces.
//! Pure parsing and formatting; no I/O.

/// One parsed request line.
#[derive(Debug, PartialEq, Eq)]
pub struct Message<'a> {
    pairs: Vec<(&'a str, &'a str)>,
}

impl<'a> Message<'a> {
    /// Parses a line (with or without its line ending). `message=` (sent with `abort`) takes the
    /// rest of the line, spaces included; a token without `=` becomes a key with an empty value.
    pub fn parse(line: &'a str) -> Message<'a> {
        let mut rest = line.trim_end_matches(['\n', '\r']);
        let mut pairs = Vec::new();
        loop {
            rest = rest.trim_start_matches(' ');
            if rest.is_empty() {
                break;
            }
            if let Some(text) = rest.strip_prefix("message=") {
                pairs.push(("message", text));
                break;
            }
            let (token, tail) = rest.split_once(' ').unwrap_or((rest, ""));
            pairs.push(token.split_once('=').unwrap_or((token, "")));
            rest = tail;
        }
        Message { pairs }
    }

    /// The value of the first `key=`, if present.
    pub fn get(&self, key: &str) -> Option<&'a str> {
        self.pairs.iter().find(|(k, _)| *k == key).map(|&(_, v)| v)
    }

    pub fn cmd(&self) -> Option<&'a str> {
        self.get("cmd")
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }
}

/// Formats a reply line, newline included.
pub fn format(pairs: &[(&str, &str)]) -> String {
    let mut s = String::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(k);
        s.push('=');
        s.push_str(v);
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pairs() {
        let m = Message::parse("cmd=put kvsname=rmpi_1 key=k value=v=w\n");
        assert_eq!(m.cmd(), Some("put"));
        assert_eq!(m.get("kvsname"), Some("rmpi_1"));
        assert_eq!(m.get("key"), Some("k"));
        assert_eq!(m.get("value"), Some("v=w"));
        assert_eq!(m.get("nope"), None);
    }

    #[test]
    fn tolerates_extra_spaces_crlf_and_bare_tokens() {
        let m = Message::parse("  cmd=init   pmi_version=1 junk\r\n");
        assert_eq!(m.cmd(), Some("init"));
        assert_eq!(m.get("pmi_version"), Some("1"));
        assert_eq!(m.get("junk"), Some(""));
    }

    #[test]
    fn empty_value_and_empty_line() {
        assert_eq!(
            Message::parse("cmd=put key=a value=").get("value"),
            Some("")
        );
        assert!(Message::parse("\n").is_empty());
        assert_eq!(Message::parse("key=a").cmd(), None);
    }

    #[test]
    fn abort_message_takes_rest_of_line() {
        let m = Message::parse("cmd=abort exitcode=3 message=it broke: x=1 y\n");
        assert_eq!(m.cmd(), Some("abort"));
        assert_eq!(m.get("exitcode"), Some("3"));
        assert_eq!(m.get("message"), Some("it broke: x=1 y"));
    }

    #[test]
    fn formats_reply() {
        assert_eq!(
            format(&[("cmd", "put_result"), ("rc", "0"), ("msg", "success")]),
            "cmd=put_result rc=0 msg=success\n"
        );
    }
}
