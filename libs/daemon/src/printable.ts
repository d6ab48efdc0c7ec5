import { CONTROL_CHARACTERS } from '@app/api-basics';

const ESCAPES: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * Text for one log line: every control or format character written as an escape, so it stays
 * one line and reads as it is.
 */
export function escapeControlCharacters(text: string): string {
  return text.replace(CONTROL_CHARACTERS, (character) => {
    const codePoint = character.codePointAt(0)!;
    const hex = codePoint.toString(16).padStart(4, '0');
    return ESCAPES[character] ?? (codePoint > 0xffff ? `\\u{${hex}}` : `\\u${hex}`);
  });
}

/**
 * Text from outside, fit to show in an answer or a log: control characters become spaces and
 * it is cut to `maxLength` characters.
 */
export function excerpt(text: string, maxLength: number): string {
  const clean = text.replace(CONTROL_CHARACTERS, ' ');
  return clean.length > maxLength ? `${clean.slice(0, maxLength - 1)}…` : clean;
}
