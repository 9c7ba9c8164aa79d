//! Unicode classes Go's unicode package has and Rust's std lacks, close enough for a plugin's heuristics: std
//! has Alphabetic and Numeric, not the general categories or scripts, and a plugin cannot pull in a table crate.
//! The tables below cover the commonly written ranges, not every assigned code point.

const MARKS: &[(u32, u32)] = &[
    (0x0300, 0x036F), (0x0483, 0x0489), (0x0591, 0x05BD), (0x05BF, 0x05BF), (0x05C1, 0x05C2), (0x05C4, 0x05C5),
    (0x05C7, 0x05C7), (0x0610, 0x061A), (0x064B, 0x065F), (0x0670, 0x0670), (0x06D6, 0x06DC), (0x06DF, 0x06E4),
    (0x06E7, 0x06E8), (0x06EA, 0x06ED), (0x0900, 0x0903), (0x093A, 0x093C), (0x093E, 0x094F), (0x0951, 0x0957),
    (0x0962, 0x0963), (0x0981, 0x0983), (0x09BC, 0x09BC), (0x09BE, 0x09CD), (0x0E31, 0x0E31), (0x0E34, 0x0E3A),
    (0x0E47, 0x0E4E), (0x1AB0, 0x1AFF), (0x1DC0, 0x1DFF), (0x20D0, 0x20FF), (0x302A, 0x302F), (0x3099, 0x309A),
    (0xFE00, 0xFE0F), (0xFE20, 0xFE2F),
];

const LATIN: &[(u32, u32)] = &[
    (0x0041, 0x005A), (0x0061, 0x007A), (0x00AA, 0x00AA), (0x00BA, 0x00BA), (0x00C0, 0x00D6), (0x00D8, 0x00F6),
    (0x00F8, 0x02B8), (0x02E0, 0x02E4), (0x1D00, 0x1D25), (0x1D2C, 0x1D5C), (0x1D62, 0x1D65), (0x1D6B, 0x1D77),
    (0x1D79, 0x1DBE), (0x1E00, 0x1EFF), (0x2071, 0x2071), (0x207F, 0x207F), (0x2090, 0x209C), (0x212A, 0x212B),
    (0x2132, 0x2132), (0x214E, 0x214E), (0x2160, 0x2188), (0x2C60, 0x2C7F), (0xA722, 0xA787), (0xA78B, 0xA7FF),
    (0xAB30, 0xAB5A), (0xAB5C, 0xAB64), (0xAB66, 0xAB69), (0xFB00, 0xFB06), (0xFF21, 0xFF3A), (0xFF41, 0xFF5A),
    (0x10780, 0x107BA), (0x1DF00, 0x1DF1E),
];

fn in_table(table: &[(u32, u32)], c: char) -> bool {
    let c = c as u32;
    table
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// A combining mark (Go's unicode.IsMark), for the common scripts.
pub fn is_mark(c: char) -> bool {
    !c.is_ascii() && in_table(MARKS, c)
}

/// A letter (Go's unicode.IsLetter): alphabetic and not a mark.
pub fn is_letter(c: char) -> bool {
    c.is_alphabetic() && !is_mark(c)
}

/// A character of the Latin script (Go's unicode.Is(unicode.Latin, c)).
pub fn is_latin(c: char) -> bool {
    in_table(LATIN, c)
}

/// A decimal digit of any script (Go's unicode.IsDigit), approximated by std's Numeric minus the letter-like
/// numbers (Roman numerals) and fractions.
pub fn is_digit(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && c.is_numeric() && !c.is_alphabetic() && c.to_digit(10).is_none() && !matches!(c, '\u{00B2}'..='\u{00BE}' | '\u{2150}'..='\u{218B}' | '\u{2460}'..='\u{24FF}'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        assert!(is_letter('é') && is_letter('日') && !is_letter('\u{0301}') && is_mark('\u{0301}'));
        assert!(is_latin('é') && is_latin('ß') && !is_latin('π') && !is_latin('Ж'));
        assert!(is_digit('7') && is_digit('٣') && !is_digit('½') && !is_digit('a'));
    }
}
