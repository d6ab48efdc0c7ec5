/**
 * Terminal escape sequences a guest may write to its serial console: CSI (colours, cursor
 * moves), OSC (titles, hyperlinks, ended by BEL or ST) and two-character escapes.
 */
// eslint-disable-next-line no-control-regex -- escape sequences are made of control characters
const ESCAPES = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]/g;

/** Control and format characters but tab and newline, and Unicode line separators. */
const UNPRINTABLE = /[^\P{C}\t\n]|[\p{Zl}\p{Zp}]/gu;

/**
 * A console's bytes as text an operator's terminal or a page shows as it is: UTF-8 (invalid
 * bytes replaced), CRLF as LF, escapes and every other control character left out.
 */
export function printableConsole(bytes: Uint8Array): string {
  return Buffer.from(bytes)
    .toString('utf8')
    .replace(/\r\n/g, '\n')
    .replace(ESCAPES, '')
    .replace(UNPRINTABLE, '');
}
