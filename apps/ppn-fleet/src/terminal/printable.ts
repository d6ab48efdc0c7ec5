import { CONTROL_CHARACTERS } from '@app/fleet-domain';

/**
 * Text from the controller made safe for a terminal: every control or format character (an ESC
 * starting a terminal sequence, a newline forging a line) becomes `?`. Used on every string of
 * an answer the human output shows; --json prints the answer's bytes as they came.
 */
export function printable(text: string): string {
  return text.replace(CONTROL_CHARACTERS, '?');
}

/** `printable` line by line: the CLI's own line breaks (a hint under a message) stay. */
export function printableLines(text: string): string {
  return text.split('\n').map(printable).join('\n');
}

/**
 * A serial console's text made safe for a terminal: its line breaks and tabs kept, every other
 * control or format character (an escape sequence a guest printed) `?`.
 */
export function printableConsoleText(text: string): string {
  return text
    .split(/(\r?\n|\t)/)
    .map((part) => (/^(\r?\n|\t)$/.test(part) ? part : printable(part)))
    .join('');
}
