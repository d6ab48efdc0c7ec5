/** The few styles the CLI uses; each is an SGR code pair. */
const SGR = {
  bold: [1, 22],
  dim: [2, 22],
  red: [31, 39],
  green: [32, 39],
  yellow: [33, 39],
  cyan: [36, 39],
} as const;

export type Style = keyof typeof SGR;

/** `text` in `style` when `colour` is on; the text alone otherwise. */
export function paint(text: string, style: Style | undefined, colour: boolean): string {
  if (!colour || style === undefined || text === '') return text;
  const [on, off] = SGR[style];
  return `\u001b[${on}m${text}\u001b[${off}m`;
}

/**
 * Whether to colour what goes to a stream: only a terminal, and not when NO_COLOR is set to
 * anything but the empty string (https://no-color.org) or TERM is dumb.
 */
export function colourFor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv): boolean {
  if (stream.isTTY !== true) return false;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  return env.TERM !== 'dumb';
}
