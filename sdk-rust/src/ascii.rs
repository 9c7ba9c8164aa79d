//! Bulk text scans for hot loops. The gateway runs plugins with wazero's termination guard
//! (WithCloseOnContextDone), which turns every wasm loop iteration into a trip out to Go: on a 2 GHz core about
//! 50 ns, far more than the body of a per-character loop. So these functions handle 64 bytes per iteration,
//! eight u64 words tested together (SWAR), and leave per-character loops to the rare non-ASCII stretches.

/// Bytes handled per loop iteration.
pub const CHUNK: usize = 64;

const HIGH: u64 = 0x8080_8080_8080_8080;
const ONES: u64 = 0x0101_0101_0101_0101;

#[inline(always)]
fn word(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3], b[at + 4], b[at + 5], b[at + 6], b[at + 7]])
}

/// The eight words of the chunk at `at`, which must be in bounds; written out so that no loop remains.
#[inline(always)]
fn words(b: &[u8], at: usize) -> [u64; 8] {
    let c = &b[at..at + CHUNK];
    [word(c, 0), word(c, 8), word(c, 16), word(c, 24), word(c, 32), word(c, 40), word(c, 48), word(c, 56)]
}

#[inline(always)]
fn any_high(w: &[u64; 8]) -> bool {
    (w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7]) & HIGH != 0
}

/// The number of bytes of `b` before its first non-ASCII byte.
pub fn ascii_prefix_len(b: &[u8]) -> usize {
    let mut i = 0;
    while i + CHUNK <= b.len() && !any_high(&words(b, i)) {
        i += CHUNK;
    }
    i + b[i..].iter().position(|&c| c >= 0x80).unwrap_or(b.len() - i)
}

/// `b` as text when it is valid UTF-8, in few loop iterations when it is mostly ASCII: ASCII chunks are skipped
/// whole and std validates only the chunks around other bytes.
pub fn to_str(b: &[u8]) -> Result<&str, std::str::Utf8Error> {
    let mut i = 0;
    while i < b.len() {
        if i + CHUNK <= b.len() {
            if !any_high(&words(b, i)) {
                i += CHUNK;
                continue;
            }
        }
        // A stretch that ends at a char boundary (not before a continuation byte): valid UTF-8 is valid
        // stretch by stretch.
        let mut end = (i + CHUNK).min(b.len());
        while end < b.len() && b[end] & 0xC0 == 0x80 {
            end += 1;
        }
        std::str::from_utf8(&b[i..end])?;
        i = end;
    }
    // Every stretch is valid and begins at a char boundary.
    Ok(unsafe { std::str::from_utf8_unchecked(b) })
}

/// The number of bytes in `w` that are UTF-8 continuation bytes (0b10xxxxxx).
#[inline(always)]
fn continuations(w: u64) -> u32 {
    (w & !(w << 1) & HIGH).count_ones()
}

/// The number of characters of `s` (`s.chars().count()`).
pub fn count_chars(s: &str) -> usize {
    let b = s.as_bytes();
    let mut cont = 0usize;
    let mut i = 0;
    while i + CHUNK <= b.len() {
        let w = words(b, i);
        cont += (continuations(w[0])
            + continuations(w[1])
            + continuations(w[2])
            + continuations(w[3])
            + continuations(w[4])
            + continuations(w[5])
            + continuations(w[6])
            + continuations(w[7])) as usize;
        i += CHUNK;
    }
    cont += b[i..].iter().filter(|&&c| c & 0xC0 == 0x80).count();
    b.len() - cont
}

/// 0x80 in each byte of `w` (all ASCII) that lies in lo..=hi (both ASCII).
#[inline(always)]
fn in_range(w: u64, lo: u8, hi: u8) -> u64 {
    // With every byte below 0x80 the additions carry into no other byte.
    let ge_lo = w + ONES * (0x80 - lo as u64);
    let gt_hi = w + ONES * (0x80 - hi as u64 - 1);
    ge_lo & !gt_hi & HIGH
}

#[inline(always)]
fn ascii_letters(w: u64) -> u32 {
    in_range(w | ONES * 0x20, b'a', b'z').count_ones()
}

/// When the chunk at `at` is all ASCII, its number of ASCII letters.
pub fn chunk_ascii_letters(b: &[u8], at: usize) -> Option<usize> {
    let w = words(b, at);
    if any_high(&w) {
        return None;
    }
    let n = ascii_letters(w[0])
        + ascii_letters(w[1])
        + ascii_letters(w[2])
        + ascii_letters(w[3])
        + ascii_letters(w[4])
        + ascii_letters(w[5])
        + ascii_letters(w[6])
        + ascii_letters(w[7]);
    Some(n as usize)
}

/// The ASCII bytes of `w` (all ASCII) lower-cased.
#[inline(always)]
fn lower_word(w: u64) -> u64 {
    w | (in_range(w, b'A', b'Z') >> 2)
}

/// `s.to_lowercase()`, 64 bytes at a time when `s` is all ASCII. Other text goes to std as a whole, since its
/// final-sigma rule depends on the context.
pub fn to_lowercase(s: &str) -> String {
    let b = s.as_bytes();
    if ascii_prefix_len(b) < b.len() {
        return s.to_lowercase();
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i + CHUNK <= b.len() {
        for w in words(b, i) {
            out.extend_from_slice(&lower_word(w).to_le_bytes());
        }
        i += CHUNK;
    }
    out.extend(b[i..].iter().map(u8::to_ascii_lowercase));
    // ASCII in, ASCII out.
    unsafe { String::from_utf8_unchecked(out) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts() -> Vec<String> {
        let mut t: Vec<String> = ["", "a", "Hello, World!", "héllo", "ÀB ΣΑΣ. ΟΔΟΣ", "@[`{ AZaz09 \u{7f}", "日本語のテキスト"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let base = "The Quarterly REPORT, [covers] @revenue` {and} costs. ";
        for n in [63, 64, 65, 127, 128, 200] {
            let ascii: String = base.chars().cycle().take(n).collect();
            t.push(ascii.clone());
            for mix in ["é", "Σ", "日", "\u{10348}", " ΑΣ", "AΣ"] {
                t.push(format!("{ascii}{mix}{ascii}"));
                t.push(format!("{mix}{ascii}"));
                t.push(format!("{ascii}{mix}"));
            }
        }
        t
    }

    #[test]
    fn same_as_std() {
        for s in texts() {
            assert_eq!(count_chars(&s), s.chars().count(), "{s:?}");
            assert_eq!(to_lowercase(&s), s.to_lowercase(), "{s:?}");
            assert_eq!(ascii_prefix_len(s.as_bytes()), s.bytes().position(|c| c >= 0x80).unwrap_or(s.len()), "{s:?}");
            assert_eq!(to_str(s.as_bytes()), Ok(s.as_str()));
            let b = s.as_bytes();
            let mut at = 0;
            while at + CHUNK <= b.len() {
                let want = b[at..at + CHUNK].iter().all(u8::is_ascii).then(|| b[at..at + CHUNK].iter().filter(|c| c.is_ascii_alphabetic()).count());
                assert_eq!(chunk_ascii_letters(b, at), want, "{s:?} at {at}");
                at += 1;
            }
        }
    }

    #[test]
    fn invalid_utf8() {
        for s in texts() {
            for cut in 0..s.len() {
                let mut b = s.as_bytes().to_vec();
                b.insert(cut, 0xFF);
                assert!(to_str(&b).is_err());
                let mut b = s.as_bytes().to_vec();
                b[cut] = 0xC3; // a lead byte where it does not belong, or a truncated sequence at the end
                assert_eq!(to_str(&b).is_ok(), std::str::from_utf8(&b).is_ok(), "{b:?}");
            }
        }
        let all: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        assert_eq!(to_str(&all).is_ok(), std::str::from_utf8(&all).is_ok());
    }
}
