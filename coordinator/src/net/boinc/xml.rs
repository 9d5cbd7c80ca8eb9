//! BOINC's XML, read leniently and written plainly.
//!
//! The client's scheduler requests copy blocks it does not own (preferences, the app's stderr
//! in CDATA that may itself hold `]]>` or invalid UTF-8), so a request is read into a small
//! [`Element`] tree without checking that end tags match, decoding text lossily, and bounded:
//! at most [`MAX_DEPTH`] levels and [`MAX_ELEMENTS`] elements, whatever the body. Readers then
//! ask the tree by name ([`Element::child`], [`Element::text_of`]) and never care about order,
//! as BOINC's own parser does not.

use quick_xml::Reader;
use quick_xml::events::Event;

/// Deepest nesting kept (a scheduler request is four levels deep; deeper content is skipped).
pub const MAX_DEPTH: usize = 16;
/// Most elements kept from one document (a request with 1,000 reported results has about
/// 20,000); past it the document is refused.
pub const MAX_ELEMENTS: usize = 100_000;

/// One element: its name, its text (concatenated, trimmed) and its children in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Element {
    /// Tag name (without attributes).
    pub name: String,
    /// Text and CDATA inside it, not inside its children.
    pub text: String,
    /// Child elements.
    pub children: Vec<Element>,
}

/// Why a document could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum XmlError {
    /// Not XML at all, or broken past what the lenient reader forgives.
    #[error("malformed XML: {0}")]
    Malformed(String),
    /// More than [`MAX_ELEMENTS`] elements.
    #[error("the document has more than {MAX_ELEMENTS} elements")]
    TooLarge,
    /// No element named as expected at the top.
    #[error("no <{0}> element")]
    Missing(&'static str),
}

impl Element {
    /// The first child named `name`.
    pub fn child(&self, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.name == name)
    }

    /// Every child named `name`.
    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Element> {
        self.children.iter().filter(move |c| c.name == name)
    }

    /// The trimmed text of the first child named `name` (`""` when there is none).
    pub fn text_of(&self, name: &str) -> &str {
        self.child(name).map(|c| c.text.trim()).unwrap_or("")
    }

    /// The first child named `name` read as a number (`None` when absent or not a number).
    pub fn number<T: std::str::FromStr>(&self, name: &str) -> Option<T> {
        self.text_of(name).parse().ok()
    }

    /// Whether a child named `name` is present (`<tag/>` flags).
    pub fn has(&self, name: &str) -> bool {
        self.child(name).is_some()
    }
}

/// Reads `bytes` into a tree and returns the first element named `root`, wherever it is
/// (BOINC skips anything before its root tag too).
pub fn parse(bytes: &[u8], root: &'static str) -> Result<Element, XmlError> {
    let doc = parse_tree(bytes)?;
    find(&doc, root).cloned().ok_or(XmlError::Missing(root))
}

fn find<'a>(e: &'a Element, name: &str) -> Option<&'a Element> {
    if e.name == name {
        return Some(e);
    }
    e.children.iter().find_map(|c| find(c, name))
}

/// The whole document under a nameless root.
fn parse_tree(bytes: &[u8]) -> Result<Element, XmlError> {
    let mut reader = Reader::from_reader(bytes);
    let config = reader.config_mut();
    config.check_end_names = false;
    config.allow_unmatched_ends = true;
    config.trim_text(false);
    let mut stack: Vec<Element> = vec![Element::default()];
    // Elements opened past MAX_DEPTH: their content is skipped, their ends counted off.
    let mut skipped = 0usize;
    let mut elements = 0usize;
    let mut buf = Vec::new();
    loop {
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|e| XmlError::Malformed(e.to_string()))?;
        match event {
            Event::Start(e) => {
                elements += 1;
                if elements > MAX_ELEMENTS {
                    return Err(XmlError::TooLarge);
                }
                if skipped > 0 || stack.len() > MAX_DEPTH {
                    skipped += 1;
                } else {
                    stack.push(Element {
                        name: String::from_utf8_lossy(e.name().as_ref()).into_owned(),
                        ..Element::default()
                    });
                }
            }
            Event::Empty(e) => {
                elements += 1;
                if elements > MAX_ELEMENTS {
                    return Err(XmlError::TooLarge);
                }
                if skipped == 0
                    && stack.len() <= MAX_DEPTH
                    && let Some(top) = stack.last_mut()
                {
                    top.children.push(Element {
                        name: String::from_utf8_lossy(e.name().as_ref()).into_owned(),
                        ..Element::default()
                    });
                }
            }
            Event::End(e) => {
                if skipped > 0 {
                    skipped -= 1;
                } else {
                    // Closes the innermost open element of that name and any left open inside
                    // it; an end tag that closes nothing open is ignored.
                    let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                    if let Some(at) = stack.iter().skip(1).rposition(|o| o.name == name) {
                        while stack.len() > at + 1 {
                            let done = stack.pop().expect("more than one on the stack");
                            stack
                                .last_mut()
                                .expect("the root stays")
                                .children
                                .push(done);
                        }
                    }
                }
            }
            Event::Text(t) if skipped == 0 => {
                let raw = String::from_utf8_lossy(t.as_ref()).into_owned();
                let text = quick_xml::escape::unescape(&raw)
                    .map(|c| c.into_owned())
                    .unwrap_or(raw);
                stack
                    .last_mut()
                    .expect("the root stays")
                    .text
                    .push_str(&text);
            }
            Event::CData(t) if skipped == 0 => {
                stack
                    .last_mut()
                    .expect("the root stays")
                    .text
                    .push_str(&String::from_utf8_lossy(t.as_ref()));
            }
            Event::GeneralRef(r) if skipped == 0 => {
                let name = String::from_utf8_lossy(r.as_ref()).into_owned();
                stack
                    .last_mut()
                    .expect("the root stays")
                    .text
                    .push_str(&entity(&name));
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    // Unclosed elements are closed at the end (the client's stderr may leave one open).
    while stack.len() > 1 {
        let done = stack.pop().expect("more than one on the stack");
        stack
            .last_mut()
            .expect("the root stays")
            .children
            .push(done);
    }
    Ok(stack.pop().expect("the root stays"))
}

/// The text an entity reference (`&name;`) stands for: XML's five and character references;
/// an unknown one is kept as written.
fn entity(name: &str) -> String {
    let char_ref = |digits: &str, radix| {
        u32::from_str_radix(digits, radix)
            .ok()
            .and_then(char::from_u32)
    };
    let c = match name {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        _ => match name.strip_prefix("#x").or_else(|| name.strip_prefix("#X")) {
            Some(hex) => char_ref(hex, 16),
            None => name.strip_prefix('#').and_then(|d| char_ref(d, 10)),
        },
    };
    c.map(String::from).unwrap_or_else(|| format!("&{name};"))
}

/// `text` with `&`, `<` and `>` escaped, for element content.
pub fn escape(text: &str) -> String {
    quick_xml::escape::escape(text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_by_name_in_any_order_and_forgives_what_boinc_forgives() {
        let doc = b"junk before\n<scheduler_request>\n <hostid>42</hostid>\n <authenticator>1.abc</authenticator>\n <result><name>r1</name><stderr_out><![CDATA[bad ]]> <x> \xff]]></stderr_out></result>\n <result><name>r2</name></stderr_out></result>\n <dont_send_work/>\n <host_info><domain_name>box &amp; co&#33;&#x3F;&nbsp;</domain_name></host_info>\n";
        let r = parse(doc, "scheduler_request").unwrap();
        assert_eq!(r.number::<u64>("hostid"), Some(42));
        assert_eq!(r.text_of("authenticator"), "1.abc");
        assert!(r.has("dont_send_work"));
        assert_eq!(
            r.child("host_info").unwrap().text_of("domain_name"),
            "box & co!?&nbsp;"
        );
        let names: Vec<_> = r
            .children_named("result")
            .map(|x| x.text_of("name"))
            .collect();
        assert_eq!(names, ["r1", "r2"]);
        assert_eq!(r.text_of("missing"), "");
        assert_eq!(r.number::<u64>("authenticator"), None);
    }

    #[test]
    fn refuses_what_is_not_the_document_asked_for() {
        assert_eq!(
            parse(b"<html>hello</html>", "scheduler_request"),
            Err(XmlError::Missing("scheduler_request"))
        );
        assert_eq!(
            parse(b"", "scheduler_request"),
            Err(XmlError::Missing("scheduler_request"))
        );
        let many = "<a/>".repeat(MAX_ELEMENTS + 1);
        assert_eq!(
            parse(format!("<r>{many}</r>").as_bytes(), "r"),
            Err(XmlError::TooLarge)
        );
        // Nesting past MAX_DEPTH is skipped, not followed.
        let deep = format!(
            "<r>{}x{}<k>1</k></r>",
            "<d>".repeat(100),
            "</d>".repeat(100)
        );
        let r = parse(deep.as_bytes(), "r").unwrap();
        assert_eq!(r.text_of("k"), "1");
    }

    #[test]
    fn escapes_what_it_writes() {
        assert_eq!(escape("a<b>&c"), "a&lt;b&gt;&amp;c");
    }
}
