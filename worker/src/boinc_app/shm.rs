//! The shared-memory channels between the BOINC client and its app (docs/boinc-design.md §5,
//! BOINC's lib/app_ipc.h), spoken without BOINC's library.
//!
//! With `api_version` ≥ 6 the client maps the slot's [`MMAP_FILE`] shared: 8 channels of 1024
//! bytes. A channel's byte 0 ≠ 0 says a message is pending; the text starts at byte 1, ends at
//! a NUL, and the receiver clears byte 0 (`MSG_CHANNEL::get_msg`); a sender writes only into an
//! empty channel, the text first and the flag last (`send_msg`). The app reads channel 0,
//! process control (`<suspend/>`, `<resume/>`, `<quit/>`, `<abort/>`), and writes channel 5,
//! its status (CPU time and fraction done), which the client reads about once a second.
//!
//! The app reads and writes the file with plain positioned I/O rather than mapping it: on Linux
//! a file's page cache is the very memory the client's shared mapping shows, so both see the
//! same bytes, and no Rust reference ever points at memory another process changes.

use std::fs::{File, OpenOptions};
use std::io::{self, Read as _, Seek as _, SeekFrom, Write as _};
use std::path::Path;

/// The file the client maps in the slot (`MMAPPED_FILE_NAME`).
pub const MMAP_FILE: &str = "boinc_mmap_file";
/// The bytes of one channel (`MSG_CHANNEL_SIZE`).
pub const CHANNEL_BYTES: usize = 1024;
/// The channels in the file (`SHARED_MEM`): the file is at least this many channels long.
const CHANNELS: usize = 8;
/// Client → app: process control (`process_control_request`).
pub const PROCESS_CONTROL_REQUEST: usize = 0;
/// App → client: CPU time and fraction done (`app_status`).
pub const APP_STATUS: usize = 5;

/// What the client asks of a running task on the process-control channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlRequest {
    /// Stop computing, staying in memory (a user's "suspend when in use", CPU throttling).
    Suspend,
    /// Continue after a suspend.
    Resume,
    /// Exit now; the client restarts the task later (it exits, or preempts the task out of
    /// memory).
    Quit,
    /// Exit now; the task is abandoned.
    Abort,
}

impl ControlRequest {
    /// The request a process-control message carries: each tag looked for anywhere in the
    /// text, as the BOINC library's `match_tag` does; when a message held more than one (the
    /// client never sends that), the most final wins. `None` for anything else
    /// (`<reread_app_info/>`, an empty message).
    pub fn parse(message: &str) -> Option<ControlRequest> {
        [
            (ControlRequest::Abort, "<abort/>"),
            (ControlRequest::Quit, "<quit/>"),
            (ControlRequest::Suspend, "<suspend/>"),
            (ControlRequest::Resume, "<resume/>"),
        ]
        .into_iter()
        .find(|(_, tag)| message.contains(tag))
        .map(|(request, _)| request)
    }
}

/// What the app tells the client about itself on the status channel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AppStatus {
    /// The CPU seconds the task has used so far, every thread together.
    pub cpu_seconds: f64,
    /// The fraction done in 0..=1; 0 is "not known yet" (the client ignores it).
    pub fraction_done: f64,
}

impl AppStatus {
    /// The message as the BOINC library sends it (`boinc_report_app_status_aux`), without the
    /// optional fields. The checkpoint CPU time is always 0: the app never checkpoints, and
    /// the client keeps a task that never checkpointed in memory when it preempts it (a
    /// suspend rather than a quit).
    pub fn message(&self) -> String {
        format!(
            "<current_cpu_time>{:.6}</current_cpu_time>\n\
             <checkpoint_cpu_time>0</checkpoint_cpu_time>\n\
             <fraction_done>{:.6}</fraction_done>\n",
            self.cpu_seconds.max(0.0),
            self.fraction_done.clamp(0.0, 1.0),
        )
    }
}

/// Takes the message pending in `channel` (one channel's bytes) and clears its flag; `None`
/// when none is pending. Text past the channel without a NUL ends at the channel's end.
pub fn take_message(channel: &mut [u8]) -> Option<String> {
    if channel.first().is_none_or(|&flag| flag == 0) {
        return None;
    }
    let text = &channel[1..];
    let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
    let message = String::from_utf8_lossy(&text[..end]).into_owned();
    channel[0] = 0;
    Some(message)
}

/// Puts `message` in `channel` with its NUL and sets the flag, unless the last message is
/// still unread (`false` then, nothing written). A message too long for the channel is cut
/// to fit, as `send_msg`'s `strlcpy` cuts it.
pub fn put_message(channel: &mut [u8], message: &str) -> bool {
    if channel.len() < 2 || channel[0] != 0 {
        return false;
    }
    let bytes = message.as_bytes();
    let n = bytes.len().min(channel.len() - 2);
    channel[1..1 + n].copy_from_slice(&bytes[..n]);
    channel[1 + n] = 0;
    channel[0] = 1;
    true
}

/// The slot's channel file, opened for reading and writing.
pub struct Channels {
    file: File,
}

impl Channels {
    /// The channels of the slot `slot`; `None` when the client made none (an app version
    /// below API 6, a slot laid out by hand) or the file is too short to hold them.
    pub fn open(slot: &Path) -> Option<Channels> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(slot.join(MMAP_FILE))
            .ok()?;
        let long_enough = file
            .metadata()
            .is_ok_and(|m| m.len() >= (CHANNELS * CHANNEL_BYTES) as u64);
        long_enough.then_some(Channels { file })
    }

    /// Takes the pending process-control request, if any; a message that is no request is
    /// taken and dropped.
    pub fn take_request(&self) -> io::Result<Option<ControlRequest>> {
        let mut channel = self.read(PROCESS_CONTROL_REQUEST)?;
        let Some(message) = take_message(&mut channel) else {
            return Ok(None);
        };
        self.write(PROCESS_CONTROL_REQUEST, 0, &channel[..1])?;
        Ok(ControlRequest::parse(&message))
    }

    /// Whether the last status is still unread by the client.
    pub fn status_pending(&self) -> io::Result<bool> {
        Ok(self.read(APP_STATUS)?[0] != 0)
    }

    /// Sends `status` unless the last one is still unread (`false` then): the text first,
    /// then the flag, so the client never reads half a message.
    pub fn send_status(&self, status: &AppStatus) -> io::Result<bool> {
        let mut channel = self.read(APP_STATUS)?;
        if !put_message(&mut channel, &status.message()) {
            return Ok(false);
        }
        self.write(APP_STATUS, 1, &channel[1..])?;
        self.write(APP_STATUS, 0, &channel[..1])?;
        Ok(true)
    }

    fn read(&self, index: usize) -> io::Result<[u8; CHANNEL_BYTES]> {
        let mut channel = [0u8; CHANNEL_BYTES];
        let mut file = &self.file;
        file.seek(SeekFrom::Start((index * CHANNEL_BYTES) as u64))?;
        file.read_exact(&mut channel)?;
        Ok(channel)
    }

    fn write(&self, index: usize, offset: usize, bytes: &[u8]) -> io::Result<()> {
        let mut file = &self.file;
        file.seek(SeekFrom::Start((index * CHANNEL_BYTES + offset) as u64))?;
        file.write_all(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_taken_once_and_its_flag_cleared() {
        let mut channel = [0u8; CHANNEL_BYTES];
        assert_eq!(take_message(&mut channel), None);
        // As the client's send_msg leaves it: text at byte 1, its NUL, stale bytes after.
        channel[1..11].copy_from_slice(b"<suspend/>");
        channel[12..16].copy_from_slice(b"junk");
        channel[0] = 1;
        assert_eq!(take_message(&mut channel).as_deref(), Some("<suspend/>"));
        assert_eq!(channel[0], 0);
        assert_eq!(&channel[1..11], b"<suspend/>");
        assert_eq!(take_message(&mut channel), None);
        // Any non-zero flag is pending; a text without its NUL ends with the channel.
        let mut full = [b'x'; CHANNEL_BYTES];
        full[0] = 7;
        assert_eq!(
            take_message(&mut full).map(|m| m.len()),
            Some(CHANNEL_BYTES - 1)
        );
        assert_eq!(take_message(&mut []), None);
    }

    #[test]
    fn a_message_is_put_only_into_an_empty_channel() {
        let mut channel = [0u8; CHANNEL_BYTES];
        channel[1..8].copy_from_slice(b"garbage");
        assert!(put_message(&mut channel, "<quit/>"));
        assert_eq!(channel[0], 1);
        assert_eq!(&channel[1..9], b"<quit/>\0");
        // Unread: refused, left as it was.
        assert!(!put_message(&mut channel, "<resume/>"));
        assert_eq!(take_message(&mut channel).as_deref(), Some("<quit/>"));
        // Too long: cut to fit with its NUL, as strlcpy does.
        let long = "y".repeat(2 * CHANNEL_BYTES);
        assert!(put_message(&mut channel, &long));
        assert_eq!(channel[CHANNEL_BYTES - 1], 0);
        assert_eq!(
            take_message(&mut channel).map(|m| m.len()),
            Some(CHANNEL_BYTES - 2)
        );
    }

    #[test]
    fn requests_are_read_as_the_library_reads_them() {
        use ControlRequest::*;
        for (text, request) in [
            ("<suspend/>", Some(Suspend)),
            ("<resume/>", Some(Resume)),
            ("<quit/>", Some(Quit)),
            ("<abort/>", Some(Abort)),
            ("\n<quit/>\n", Some(Quit)),
            ("<suspend/><abort/>", Some(Abort)),
            ("<quit/><resume/>", Some(Quit)),
            ("<reread_app_info/>", None),
            ("<suspend>", None),
            ("", None),
        ] {
            assert_eq!(ControlRequest::parse(text), request, "{text:?}");
        }
    }

    #[test]
    fn the_status_says_cpu_time_and_fraction_done() {
        let status = AppStatus {
            cpu_seconds: 12.5,
            fraction_done: 0.25,
        };
        assert_eq!(
            status.message(),
            "<current_cpu_time>12.500000</current_cpu_time>\n\
             <checkpoint_cpu_time>0</checkpoint_cpu_time>\n\
             <fraction_done>0.250000</fraction_done>\n"
        );
        let odd = AppStatus {
            cpu_seconds: -1.0,
            fraction_done: 3.0,
        }
        .message();
        assert!(
            odd.contains("<current_cpu_time>0.000000<") && odd.contains("<fraction_done>1.000000<"),
            "{odd}"
        );
        assert!(status.message().len() < CHANNEL_BYTES - 1);
    }

    #[test]
    fn the_file_channels_are_the_bytes_the_client_maps() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Channels::open(dir.path()).is_none());
        std::fs::write(dir.path().join(MMAP_FILE), [0u8; 100]).unwrap();
        assert!(Channels::open(dir.path()).is_none(), "too short");
        let mut bytes = vec![0u8; CHANNELS * CHANNEL_BYTES];
        bytes[1..8].copy_from_slice(b"<quit/>");
        bytes[0] = 1;
        std::fs::write(dir.path().join(MMAP_FILE), &bytes).unwrap();
        let channels = Channels::open(dir.path()).unwrap();
        assert_eq!(channels.take_request().unwrap(), Some(ControlRequest::Quit));
        assert_eq!(channels.take_request().unwrap(), None);
        assert!(!channels.status_pending().unwrap());
        let status = AppStatus {
            cpu_seconds: 1.0,
            fraction_done: 0.5,
        };
        assert!(channels.send_status(&status).unwrap());
        assert!(channels.status_pending().unwrap());
        assert!(!channels.send_status(&status).unwrap(), "unread");
        let mut file = std::fs::read(dir.path().join(MMAP_FILE)).unwrap();
        assert_eq!(file.len(), CHANNELS * CHANNEL_BYTES);
        assert_eq!(file[0], 0, "the request's flag is cleared");
        let app_status = &mut file[APP_STATUS * CHANNEL_BYTES..][..CHANNEL_BYTES];
        assert_eq!(take_message(app_status), Some(status.message()));
    }
}
