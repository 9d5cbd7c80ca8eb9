//! BOINC's file upload handler protocol: what a client POSTs to the output file's upload URL,
//! read into a typed request, and the `<data_server_reply>` it expects back.
//!
//! An upload is an XML header, a line `<data>`, then the file's raw bytes; a file of 8 KiB or
//! more is preceded by a request for the size the server already holds (to resume). c960 keeps
//! no partial files: an output is a few KiB of JSON, judged as a whole when it arrives, so the
//! size held is the whole file (once accepted) or nothing.

use super::xml::{self, Element};

/// The most header bytes read before `<data>` (BOINC's header is well under 1 KiB).
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// The most output bytes c960 accepts, whatever `max_nbytes` a file names (a self-play result
/// of many games is the largest output; the native protocol's body limit is the same bound).
pub const MAX_OUTPUT_BYTES: u64 = c960_common::wire::MAX_BODY_BYTES as u64;

/// What a client asks of the upload handler.
#[derive(Debug, PartialEq, Eq)]
pub enum UploadRequest<'a> {
    /// How many bytes of this file the server holds (`<get_file_size>`).
    FileSize {
        /// The file.
        name: String,
    },
    /// The file's bytes from `offset` on.
    Upload(Upload<'a>),
}

/// One `<file_upload>`.
#[derive(Debug, PartialEq, Eq)]
pub struct Upload<'a> {
    /// The output file's name.
    pub name: String,
    /// The `<xml_signature>` our scheduler reply gave the file (echoed by the client).
    pub signature: String,
    /// The size cap our reply gave the file.
    pub max_nbytes: u64,
    /// The whole file's size.
    pub nbytes: u64,
    /// MD5 of the whole file, hex, as the client computed it.
    pub md5: String,
    /// Where `data` starts in the file.
    pub offset: u64,
    /// The bytes sent.
    pub data: &'a [u8],
}

/// Why an upload is refused: the text of a `<data_server_reply>` error.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum UploadError {
    /// The header could not be read.
    #[error("bad upload header: {0}")]
    Header(String),
    /// A field is missing or not a number.
    #[error("missing or bad <{0}> in the upload header")]
    Field(&'static str),
    /// More bytes than the cap allows.
    #[error("the file is {nbytes} bytes, over its limit of {limit}")]
    TooLarge {
        /// The file's size.
        nbytes: u64,
        /// The smaller of its cap and ours.
        limit: u64,
    },
    /// The bytes sent do not add up to the size named.
    #[error("the upload sent {sent} bytes from offset {offset} of a {nbytes}-byte file")]
    Length {
        /// Bytes after `<data>`.
        sent: u64,
        /// The offset named.
        offset: u64,
        /// The size named.
        nbytes: u64,
    },
}

/// Reads an upload handler request.
pub fn parse(body: &[u8]) -> Result<UploadRequest<'_>, UploadError> {
    let (header, data) = match find(body, b"<data>") {
        Some(at) if at <= MAX_HEADER_BYTES => {
            // The data starts after the newline that ends the `<data>` line.
            let rest = &body[at + b"<data>".len()..];
            let skip = rest
                .iter()
                .position(|&b| b == b'\n')
                .map(|i| i + 1)
                .unwrap_or(0);
            (&body[..at], Some(&rest[skip..]))
        }
        Some(_) => return Err(UploadError::Header("no <data> in the first 16 KiB".into())),
        None if body.len() > MAX_HEADER_BYTES => {
            return Err(UploadError::Header("no <data> in the first 16 KiB".into()));
        }
        None => (body, None),
    };
    let tree = xml::parse(header, "data_server_request")
        .or_else(|_| xml::parse(header, "file_upload"))
        .map_err(|e| UploadError::Header(e.to_string()))?;
    if let Some(size) = find_element(&tree, "get_file_size") {
        return Ok(UploadRequest::FileSize {
            name: size.text.trim().to_string(),
        });
    }
    let upload = find_element(&tree, "file_upload").unwrap_or(&tree);
    let info = upload
        .child("file_info")
        .ok_or(UploadError::Field("file_info"))?;
    let name = info.text_of("name").to_string();
    if name.is_empty() {
        return Err(UploadError::Field("name"));
    }
    let data = data.ok_or(UploadError::Field("data"))?;
    let number =
        |e: &Element, field: &'static str| e.number::<u64>(field).ok_or(UploadError::Field(field));
    let up = Upload {
        signature: info.text_of("xml_signature").to_string(),
        max_nbytes: number(info, "max_nbytes")?,
        nbytes: number(upload, "nbytes")?,
        md5: upload.text_of("md5_cksum").to_ascii_lowercase(),
        offset: upload.number::<u64>("offset").unwrap_or(0),
        name,
        data,
    };
    let limit = up.max_nbytes.min(MAX_OUTPUT_BYTES);
    if up.nbytes > limit {
        return Err(UploadError::TooLarge {
            nbytes: up.nbytes,
            limit,
        });
    }
    let sent = up.data.len() as u64;
    if up.offset.checked_add(sent) != Some(up.nbytes) {
        return Err(UploadError::Length {
            sent,
            offset: up.offset,
            nbytes: up.nbytes,
        });
    }
    Ok(UploadRequest::Upload(up))
}

fn find_element<'a>(e: &'a Element, name: &str) -> Option<&'a Element> {
    if e.name == name {
        return Some(e);
    }
    e.children.iter().find_map(|c| find_element(c, name))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The reply BOINC's client reads: status 0 (done), 1 (transient: retry later) or -1
/// (permanent: the upload failed), with a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UploadStatus {
    /// Stored (or already held).
    Done,
    /// Try again later.
    Transient,
    /// Never: the result upload fails.
    Permanent,
}

/// `<data_server_reply>` for an upload.
pub fn reply(status: UploadStatus, message: Option<&str>) -> String {
    let code = match status {
        UploadStatus::Done => 0,
        UploadStatus::Transient => 1,
        UploadStatus::Permanent => -1,
    };
    let message = message
        .map(|m| format!("    <message>{}</message>\n", xml::escape(m)))
        .unwrap_or_default();
    format!("<data_server_reply>\n    <status>{code}</status>\n{message}</data_server_reply>\n")
}

/// `<data_server_reply>` for a size request.
pub fn size_reply(size: u64) -> String {
    format!(
        "<data_server_reply>\n    <status>0</status>\n    <file_size>{size}</file_size>\n</data_server_reply>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(nbytes: u64, offset: u64, data: &[u8]) -> Vec<u8> {
        let mut b = format!(
            "<data_server_request>\n    <core_client_major_version>7</core_client_major_version>\n<file_upload>\n<file_info>\n    <name>c960_wu1_l2_0_out</name>\n<xml_signature>\nabcd</xml_signature>\n    <max_nbytes>65536</max_nbytes>\n</file_info>\n<nbytes>{nbytes}</nbytes>\n<md5_cksum>ABC</md5_cksum>\n<offset>{offset}</offset>\n<data>\n"
        )
        .into_bytes();
        b.extend_from_slice(data);
        b
    }

    #[test]
    fn reads_an_upload_as_the_client_sends_it() {
        let b = body(5, 0, b"he<lo");
        let UploadRequest::Upload(u) = parse(&b).unwrap() else {
            panic!("not an upload")
        };
        assert_eq!(u.name, "c960_wu1_l2_0_out");
        assert_eq!(u.signature.trim(), "abcd");
        assert_eq!((u.max_nbytes, u.nbytes, u.offset), (65536, 5, 0));
        assert_eq!(u.md5, "abc");
        assert_eq!(u.data, b"he<lo");
    }

    #[test]
    fn reads_a_size_request() {
        let b = b"<data_server_request>\n<core_client_major_version>7</core_client_major_version>\n<get_file_size>c960_wu1_l2_0_out</get_file_size>\n</data_server_request>\n";
        assert_eq!(
            parse(b).unwrap(),
            UploadRequest::FileSize {
                name: "c960_wu1_l2_0_out".into()
            }
        );
    }

    #[test]
    fn refuses_short_long_and_headerless_uploads() {
        assert!(matches!(
            parse(&body(6, 0, b"hello")),
            Err(UploadError::Length { sent: 5, .. })
        ));
        assert!(matches!(
            parse(&body(70_000, 0, b"x")),
            Err(UploadError::TooLarge { .. })
        ));
        assert!(matches!(parse(b"hello"), Err(UploadError::Header(_))));
        assert!(matches!(
            parse(&vec![b'x'; 20_000]),
            Err(UploadError::Header(_))
        ));
        let no_name = b"<file_upload><file_info></file_info><nbytes>1</nbytes><data>\nx";
        assert_eq!(parse(no_name), Err(UploadError::Field("name")));
    }

    #[test]
    fn replies_as_the_client_parses() {
        assert!(reply(UploadStatus::Permanent, Some("a<b")).contains("<status>-1</status>"));
        assert!(reply(UploadStatus::Permanent, Some("a<b")).contains("a&lt;b"));
        assert!(size_reply(12).contains("<file_size>12</file_size>"));
    }
}
