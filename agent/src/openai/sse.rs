//! A small server-sent events reader: bytes in (in whatever pieces the network
//! delivers them), the `data` of each complete event out.
//!
//! Stricter than the SSE spec in one way: a line that is not an SSE field is an
//! error rather than ignored, so a server that answers a streamed request with
//! something else (an HTML error page, plain text) is reported instead of read
//! as an empty reply.

/// Why the bytes are not an event stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum SseError {
    /// A line is not UTF-8.
    NotUtf8,
    /// A line is not an SSE field (`data:`, `event:`, `id:`, `retry:`, `:comment`).
    NotSse {
        /// The line.
        line: String,
    },
}

/// Splits a byte stream into lines and lines into events.
#[derive(Debug, Default)]
pub(super) struct SseParser {
    buf: Vec<u8>,
    data: Option<String>,
    started: bool,
}

impl SseParser {
    pub(super) fn new() -> Self {
        Self::default()
    }

    /// Adds the next bytes; the data of every event they complete, in order.
    pub(super) fn push(&mut self, bytes: &[u8]) -> Result<Vec<String>, SseError> {
        self.buf.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        let mut at = 0;
        while at < self.buf.len() {
            let end = match self.buf[at] {
                b'\n' => at + 1,
                // A `\r` may be the first half of `\r\n`: wait for the next byte.
                b'\r' if at + 1 == self.buf.len() => break,
                b'\r' if self.buf[at + 1] == b'\n' => at + 2,
                b'\r' => at + 1,
                _ => {
                    at += 1;
                    continue;
                }
            };
            let line = self.buf[start..at].to_vec();
            self.line(&line, &mut events)?;
            start = end;
            at = end;
        }
        self.buf.drain(..start);
        Ok(events)
    }

    /// The body ended: the data of the events still open (an unterminated last
    /// line or event is taken as complete).
    pub(super) fn finish(&mut self) -> Result<Vec<String>, SseError> {
        let mut events = Vec::new();
        let rest = std::mem::take(&mut self.buf);
        let rest = rest.strip_suffix(b"\r").unwrap_or(&rest);
        if !rest.is_empty() {
            self.line(rest, &mut events)?;
        }
        if let Some(data) = self.data.take() {
            events.push(data);
        }
        Ok(events)
    }

    fn line(&mut self, bytes: &[u8], events: &mut Vec<String>) -> Result<(), SseError> {
        let mut line = std::str::from_utf8(bytes).map_err(|_| SseError::NotUtf8)?;
        if !self.started {
            self.started = true;
            line = line.strip_prefix('\u{feff}').unwrap_or(line);
        }
        if line.is_empty() {
            if let Some(data) = self.data.take() {
                events.push(data);
            }
            return Ok(());
        }
        if line.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            "event" | "id" | "retry" => {}
            _ => {
                return Err(SseError::NotSse {
                    line: line.to_owned(),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(pieces: &[&[u8]]) -> Result<Vec<String>, SseError> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for piece in pieces {
            out.extend(p.push(piece)?);
        }
        out.extend(p.finish()?);
        Ok(out)
    }

    #[test]
    fn events_end_at_blank_lines_with_any_line_ending() {
        let got = all(&[b"data: one\n\ndata: two\r\n\r\ndata: three\r\rdata: [DONE]\n\n"]).unwrap();
        assert_eq!(got, ["one", "two", "three", "[DONE]"]);
    }

    #[test]
    fn events_split_anywhere_across_pieces_are_joined() {
        let text = "data: {\"a\": \"h\u{e9}llo\"}\r\n\r\ndata: x\n\n".as_bytes();
        for cut in 0..text.len() {
            let got = all(&[&text[..cut], &text[cut..]]).unwrap();
            assert_eq!(got, ["{\"a\": \"h\u{e9}llo\"}", "x"], "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(all(&bytes).unwrap(), ["{\"a\": \"h\u{e9}llo\"}", "x"]);
    }

    #[test]
    fn data_lines_of_one_event_join_with_newlines_and_other_fields_are_skipped() {
        let got =
            all(&[b": keep-alive\nevent: message\nid: 7\nretry: 10\ndata: a\ndata:b\n\n"]).unwrap();
        assert_eq!(got, ["a\nb"]);
    }

    #[test]
    fn an_unterminated_last_event_is_still_read() {
        assert_eq!(all(&[b"data: [DONE]"]).unwrap(), ["[DONE]"]);
        assert_eq!(all(&[b"data: x\n"]).unwrap(), ["x"]);
    }

    #[test]
    fn a_body_that_is_not_sse_is_an_error_naming_the_line() {
        let err = all(&[b"<html>bad gateway</html>\n"]).unwrap_err();
        assert_eq!(
            err,
            SseError::NotSse {
                line: "<html>bad gateway</html>".into()
            }
        );
        assert_eq!(
            all(&[b"data: \xff\xfe\n\n"]).unwrap_err(),
            SseError::NotUtf8
        );
    }

    #[test]
    fn a_leading_byte_order_mark_is_skipped() {
        assert_eq!(all(&["\u{feff}data: x\n\n".as_bytes()]).unwrap(), ["x"]);
    }
}
