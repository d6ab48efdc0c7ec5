/**
 * Characters that could end or fake a log line, or hide or reorder text on a terminal: C0 and
 * C1 controls and DEL (Cc), the format characters (Cf: bidi overrides such as U+202E, zero-width
 * characters, the BOM) and the Unicode line and paragraph separators.
 */
export const CONTROL_CHARACTERS = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;
