//! The wire encoding of ABI v1, as package hostapi of the gateway defines it (hostapi/wire.go): an Input or an
//! Output is a sequence of fields `[tag u8][len u32 little-endian][len bytes]`. Unknown tags are skipped;
//! decoding is strict where the encoder never varies (a repeated singular field, a key without its value, a flag
//! that is not one byte of 0 or 1, a length past the end are errors), and never panics.

use std::borrow::Cow;
use std::fmt;

/// Size of a field header: the tag byte and the little-endian u32 length.
pub const HEADER_SIZE: usize = 5;

/// Input field tags.
pub const TAG_TEXT: u8 = 1;
pub const TAG_MODEL: u8 = 2;
pub const TAG_METADATA_KEY: u8 = 3;
pub const TAG_METADATA_VALUE: u8 = 4;
pub const TAG_PARAM_NAME: u8 = 5;
pub const TAG_PARAM_VALUE: u8 = 6;
pub const TAG_CHECK_ID: u8 = 7;
pub const TAG_STAGE: u8 = 8;
pub const TAG_ENDPOINT: u8 = 9;
pub const TAG_TOOL: u8 = 10;
pub const TAG_MCP_SERVER: u8 = 11;
/// ABI v1.1: the JSON body a transform call rewrites.
pub const TAG_BODY: u8 = 12;

/// Output field tags.
pub const TAG_VERDICT: u8 = 1;
pub const TAG_DATA: u8 = 2;
pub const TAG_TRANSFORMED_TEXT: u8 = 3;
pub const TAG_ERROR: u8 = 4;
pub const TAG_MATCH: u8 = 5;
/// ABI v1.1: a transform's replacement body, one JSON object.
pub const TAG_TRANSFORMED_BODY: u8 = 6;

/// Call kinds of gateway_call.
pub const KIND_CHECK: i32 = 1;
pub const KIND_CONDITION: i32 = 2;
/// The kind of a call of gateway_transform.
pub const KIND_TRANSFORM: i32 = 3;

/// What went wrong in a decoding; the messages are hostapi's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// A field header or value runs past the end of the buffer.
    Truncated,
    /// A field that may appear once appears twice.
    Duplicate,
    /// A metadata key or parameter name not directly followed by its value, or a value without its key.
    Unpaired,
    /// A verdict or match field that is not one byte of 0 or 1.
    BadFlag,
}

impl DecodeErrorKind {
    fn message(self) -> &'static str {
        match self {
            DecodeErrorKind::Truncated => "truncated field",
            DecodeErrorKind::Duplicate => "duplicate field",
            DecodeErrorKind::Unpaired => "unpaired key or value",
            DecodeErrorKind::BadFlag => "flag field is not one byte of 0 or 1",
        }
    }
}

/// Where a decoding failed. It prints as hostapi's DecodeError does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// "input" or "output".
    pub what: &'static str,
    /// Offset of the offending field header in the buffer.
    pub offset: usize,
    /// Tag of the offending field (0 when the header itself is truncated).
    pub tag: u8,
    pub kind: DecodeErrorKind,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "hostapi: decode {}: {} (tag {} at offset {})",
            self.what,
            self.kind.message(),
            self.tag,
            self.offset
        )
    }
}

impl std::error::Error for DecodeError {}

/// An Input as it travels: every string borrowed from the buffer decoded when it is valid UTF-8, and replaced
/// (invalid sequences as U+FFFD) otherwise, as a Go string would print.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WireInput<'a> {
    pub text: Cow<'a, str>,
    pub model: Cow<'a, str>,
    pub metadata: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    pub params: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    pub check_id: Cow<'a, str>,
    pub stage: Cow<'a, str>,
    pub endpoint: Cow<'a, str>,
    pub tool: Cow<'a, str>,
    pub mcp_server: Cow<'a, str>,
    /// The body of a transform call (empty otherwise).
    pub body: Cow<'a, [u8]>,
}

/// An Output as it travels. `Default` is the ABI's default, a pass with nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireOutput {
    pub verdict: bool,
    pub data: Option<Vec<u8>>,
    pub transformed_text: Option<String>,
    pub error: String,
    pub matched: bool,
    /// A transform's replacement body; None leaves the body as it was.
    pub body: Option<Vec<u8>>,
}

impl Default for WireOutput {
    fn default() -> Self {
        WireOutput { verdict: true, data: None, transformed_text: None, error: String::new(), matched: false, body: None }
    }
}

/// Appends one field. Every value must be shorter than 4 GiB.
pub fn append_field(dst: &mut Vec<u8>, tag: u8, value: &[u8]) {
    dst.push(tag);
    dst.extend_from_slice(&(value.len() as u32).to_le_bytes());
    dst.extend_from_slice(value);
}

/// Appends a one-byte flag field.
pub fn append_flag(dst: &mut Vec<u8>, tag: u8, value: bool) {
    dst.extend_from_slice(&[tag, 1, 0, 0, 0, value as u8]);
}

/// Returns the length of `input`'s encoding.
pub fn input_len(input: &WireInput<'_>) -> usize {
    let singles = [&input.text, &input.model, &input.check_id, &input.stage, &input.endpoint, &input.tool, &input.mcp_server];
    let mut n: usize = singles.iter().filter(|s| !s.is_empty()).map(|s| HEADER_SIZE + s.len()).sum();
    for (k, v) in input.metadata.iter().chain(input.params.iter()) {
        n += 2 * HEADER_SIZE + k.len() + v.len();
    }
    if !input.body.is_empty() {
        n += HEADER_SIZE + input.body.len();
    }
    n
}

/// Appends the encoding of `input` in hostapi.AppendInput's order; empty strings are left out.
pub fn encode_input(dst: &mut Vec<u8>, input: &WireInput<'_>) {
    dst.reserve(input_len(input));
    let single = |dst: &mut Vec<u8>, tag: u8, s: &str| {
        if !s.is_empty() {
            append_field(dst, tag, s.as_bytes());
        }
    };
    single(dst, TAG_TEXT, &input.text);
    single(dst, TAG_MODEL, &input.model);
    for (k, v) in &input.metadata {
        append_field(dst, TAG_METADATA_KEY, k.as_bytes());
        append_field(dst, TAG_METADATA_VALUE, v.as_bytes());
    }
    for (k, v) in &input.params {
        append_field(dst, TAG_PARAM_NAME, k.as_bytes());
        append_field(dst, TAG_PARAM_VALUE, v.as_bytes());
    }
    single(dst, TAG_CHECK_ID, &input.check_id);
    single(dst, TAG_STAGE, &input.stage);
    single(dst, TAG_ENDPOINT, &input.endpoint);
    single(dst, TAG_TOOL, &input.tool);
    single(dst, TAG_MCP_SERVER, &input.mcp_server);
    if !input.body.is_empty() {
        append_field(dst, TAG_BODY, &input.body);
    }
}

/// Reads the field header at `off`: its tag and the bounds of its value, or the tag seen (0 when the header is
/// cut) and why not.
fn field(b: &[u8], off: usize) -> Result<(u8, usize, usize), (u8, DecodeErrorKind)> {
    if b.len() - off < HEADER_SIZE {
        return Err((0, DecodeErrorKind::Truncated));
    }
    let tag = b[off];
    let n = u32::from_le_bytes([b[off + 1], b[off + 2], b[off + 3], b[off + 4]]) as u64;
    let start = off + HEADER_SIZE;
    if n > (b.len() - start) as u64 {
        return Err((tag, DecodeErrorKind::Truncated));
    }
    Ok((tag, start, start + n as usize))
}

fn text(b: &[u8]) -> Cow<'_, str> {
    match crate::ascii::to_str(b) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(b),
    }
}

/// Decodes an Input strictly, as hostapi.DecodeInput does.
pub fn decode_input(b: &[u8]) -> Result<WireInput<'_>, DecodeError> {
    let mut input = WireInput::default();
    let err = |offset, tag, kind| DecodeError { what: "input", offset, tag, kind };
    let mut seen: u16 = 0;
    let mut off = 0;
    while off < b.len() {
        let (tag, start, end) = field(b, off).map_err(|(tag, kind)| err(off, tag, kind))?;
        let mut next = end;
        match tag {
            TAG_TEXT | TAG_MODEL | TAG_CHECK_ID | TAG_STAGE | TAG_ENDPOINT | TAG_TOOL | TAG_MCP_SERVER => {
                if seen & (1 << tag) != 0 {
                    return Err(err(off, tag, DecodeErrorKind::Duplicate));
                }
                seen |= 1 << tag;
                let v = text(&b[start..end]);
                match tag {
                    TAG_TEXT => input.text = v,
                    TAG_MODEL => input.model = v,
                    TAG_CHECK_ID => input.check_id = v,
                    TAG_STAGE => input.stage = v,
                    TAG_ENDPOINT => input.endpoint = v,
                    TAG_TOOL => input.tool = v,
                    _ => input.mcp_server = v,
                }
            }
            TAG_METADATA_KEY | TAG_PARAM_NAME => {
                if end == b.len() {
                    return Err(err(off, tag, DecodeErrorKind::Unpaired));
                }
                let (vtag, vstart, vend) = field(b, end).map_err(|(vtag, kind)| err(end, vtag, kind))?;
                if vtag != tag + 1 {
                    return Err(err(off, tag, DecodeErrorKind::Unpaired));
                }
                let kv = (text(&b[start..end]), text(&b[vstart..vend]));
                if tag == TAG_METADATA_KEY {
                    input.metadata.push(kv);
                } else {
                    input.params.push(kv);
                }
                next = vend;
            }
            TAG_METADATA_VALUE | TAG_PARAM_VALUE => return Err(err(off, tag, DecodeErrorKind::Unpaired)),
            TAG_BODY => {
                if seen & (1 << tag) != 0 {
                    return Err(err(off, tag, DecodeErrorKind::Duplicate));
                }
                seen |= 1 << tag;
                input.body = Cow::Borrowed(&b[start..end]);
            }
            _ => {}
        }
        off = next;
    }
    Ok(input)
}

/// Appends the encoding of `out` as hostapi.AppendOutput does: the verdict always, data when present, the
/// transformed text when present, the error when non-empty, the match when true.
pub fn encode_output(dst: &mut Vec<u8>, out: &WireOutput) {
    append_flag(dst, TAG_VERDICT, out.verdict);
    if let Some(data) = &out.data {
        append_field(dst, TAG_DATA, data);
    }
    if let Some(t) = &out.transformed_text {
        append_field(dst, TAG_TRANSFORMED_TEXT, t.as_bytes());
    }
    if !out.error.is_empty() {
        append_field(dst, TAG_ERROR, out.error.as_bytes());
    }
    if out.matched {
        append_flag(dst, TAG_MATCH, true);
    }
    if let Some(body) = &out.body {
        append_field(dst, TAG_TRANSFORMED_BODY, body);
    }
}

/// Decodes an Output strictly, as hostapi.DecodeOutput does; an empty buffer is the default Output.
pub fn decode_output(b: &[u8]) -> Result<WireOutput, DecodeError> {
    let mut out = WireOutput::default();
    let err = |offset, tag, kind| DecodeError { what: "output", offset, tag, kind };
    let mut seen: u16 = 0;
    let mut off = 0;
    while off < b.len() {
        let (tag, start, end) = field(b, off).map_err(|(tag, kind)| err(off, tag, kind))?;
        if (TAG_VERDICT..=TAG_TRANSFORMED_BODY).contains(&tag) {
            if seen & (1 << tag) != 0 {
                return Err(err(off, tag, DecodeErrorKind::Duplicate));
            }
            seen |= 1 << tag;
        }
        let v = &b[start..end];
        match tag {
            TAG_VERDICT | TAG_MATCH => {
                if v.len() != 1 || v[0] > 1 {
                    return Err(err(off, tag, DecodeErrorKind::BadFlag));
                }
                if tag == TAG_VERDICT {
                    out.verdict = v[0] == 1;
                } else {
                    out.matched = v[0] == 1;
                }
            }
            TAG_DATA => out.data = Some(v.to_vec()),
            TAG_TRANSFORMED_TEXT => out.transformed_text = Some(String::from_utf8_lossy(v).into_owned()),
            TAG_ERROR => out.error = String::from_utf8_lossy(v).into_owned(),
            TAG_TRANSFORMED_BODY => out.body = Some(v.to_vec()),
            _ => {}
        }
        off = end;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Cow<'_, str> {
        Cow::Borrowed(v)
    }

    #[test]
    fn input_round_trip() {
        let input = WireInput {
            text: s("héllo"),
            model: s("m"),
            metadata: vec![(s("k"), s("v")), (s("k"), s(""))],
            params: vec![(s("p"), s("[1]"))],
            check_id: s("x.y"),
            stage: s("before"),
            endpoint: s("mcp"),
            tool: s("t"),
            mcp_server: s("srv"),
            body: Cow::Borrowed(b"{\"model\":\"m\"}"),
        };
        let mut b = Vec::new();
        encode_input(&mut b, &input);
        assert_eq!(b.len(), input_len(&input));
        assert_eq!(decode_input(&b).unwrap(), input);
    }

    #[test]
    fn body_fields() {
        let mut b = Vec::new();
        append_field(&mut b, TAG_BODY, b"{}");
        append_field(&mut b, TAG_TEXT, b"t");
        let input = decode_input(&b).unwrap();
        assert_eq!((&*input.body, &*input.text), (&b"{}"[..], "t"));
        append_field(&mut b, TAG_BODY, b"{}");
        assert_eq!(decode_input(&b).unwrap_err().kind, DecodeErrorKind::Duplicate);
        let mut out = Vec::new();
        append_field(&mut out, TAG_TRANSFORMED_BODY, b"{}");
        assert_eq!(decode_output(&out).unwrap().body.as_deref(), Some(&b"{}"[..]));
        append_field(&mut out, TAG_TRANSFORMED_BODY, b"{}");
        assert_eq!(decode_output(&out).unwrap_err().kind, DecodeErrorKind::Duplicate);
    }

    #[test]
    fn input_strict() {
        let mut dup = Vec::new();
        append_field(&mut dup, TAG_TEXT, b"a");
        append_field(&mut dup, TAG_TEXT, b"b");
        assert_eq!(decode_input(&dup).unwrap_err().kind, DecodeErrorKind::Duplicate);
        let mut unpaired = Vec::new();
        append_field(&mut unpaired, TAG_PARAM_NAME, b"a");
        append_field(&mut unpaired, TAG_METADATA_VALUE, b"b");
        assert_eq!(decode_input(&unpaired).unwrap_err().kind, DecodeErrorKind::Unpaired);
        assert_eq!(decode_input(&unpaired[..6]).unwrap_err().kind, DecodeErrorKind::Unpaired);
        assert_eq!(decode_input(&[1, 9, 0, 0, 0, b'a']).unwrap_err().to_string(), "hostapi: decode input: truncated field (tag 1 at offset 0)");
        assert_eq!(decode_input(&[1, 0]).unwrap_err().tag, 0);
        let mut unknown = Vec::new();
        append_field(&mut unknown, 200, b"skip");
        append_field(&mut unknown, TAG_TEXT, b"t");
        assert_eq!(decode_input(&unknown).unwrap().text, "t");
    }

    #[test]
    fn output_strict() {
        let out = WireOutput { verdict: false, data: Some(b"{}".to_vec()), transformed_text: Some(String::new()), error: "e".into(), matched: true, body: Some(b"{}".to_vec()) };
        let mut b = Vec::new();
        encode_output(&mut b, &out);
        assert_eq!(decode_output(&b).unwrap(), out);
        assert_eq!(decode_output(&[]).unwrap(), WireOutput::default());
        assert_eq!(decode_output(&[TAG_VERDICT, 1, 0, 0, 0, 2]).unwrap_err().kind, DecodeErrorKind::BadFlag);
        assert_eq!(decode_output(&[TAG_MATCH, 2, 0, 0, 0, 1, 1]).unwrap_err().kind, DecodeErrorKind::BadFlag);
        let mut dup = Vec::new();
        append_flag(&mut dup, TAG_VERDICT, true);
        append_flag(&mut dup, TAG_VERDICT, true);
        assert_eq!(decode_output(&dup).unwrap_err().kind, DecodeErrorKind::Duplicate);
    }

    #[test]
    fn never_panics_on_cut_buffers() {
        let input = WireInput { text: s("abc"), metadata: vec![(s("k"), s("v"))], ..Default::default() };
        let mut b = Vec::new();
        encode_input(&mut b, &input);
        for n in 0..b.len() {
            let _ = decode_input(&b[..n]);
            let _ = decode_output(&b[..n]);
        }
    }
}
